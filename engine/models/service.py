"""Response shapes of the service endpoints that are not in the KB's own schema: rule metadata,
admin reload and error bodies (api-contract.md, "Read-only endpoints")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class RuleSummary(BaseModel):
    """One row of `GET /rules`: what a rule decides and why, without its conditions."""

    id: str = Field(description="rule id (its file stem)")
    title: str = Field(description="one line: what the rule decides")
    category: str = Field(description="the rule's folder under rules/, e.g. precision or acquisition")
    status: str = Field(description="experimental | stable | deprecated")
    replaced_by: str | None = Field(description="for a deprecated rule: the rule that replaces it")
    rationale: str = Field(description="why the rule holds, in plain words")
    citations: list[str] = Field(description="the sources behind the rule: URL, else source name")


class RuleAction(BaseModel):
    """One action of a rule's `then`."""

    verb: str = Field(description="derive | require | exclude | prefer | suggest | warn")
    message: str = Field(description="what the trace says when the rule fires; {fact} placeholders filled")
    arguments: dict[str, Any] = Field(description="the verb's arguments as written in the rule file")


class RuleDetail(RuleSummary):
    """`GET /rules/{id}`: the rule's metadata, its condition in words and its actions."""

    priority: int = Field(
        description="scheduling order among rules that match together; answers never depend on it"
    )
    when: str = Field(description="the rule's condition as one line")
    then: list[RuleAction] = Field(description="what the rule does when it fires, in order")
    caveats: list[str] = Field(description="limits of the rule, including where its sources disagree")
    test_cases: int = Field(description="number of the rule's own test cases (`gpu-advisor kb test`)")


class Reloaded(BaseModel):
    """`POST /admin/reload` succeeded: the service now answers from the new KB and rules."""

    kb_version: str = Field(description="content hash of the knowledge base and rules now in use")
    previous_kb_version: str = Field(description="the version served before the reload")
    gpus: int = Field(description="accelerators in the new knowledge base")
    offers: int = Field(description="priced offers in the new knowledge base")
    rules: int = Field(description="rules in the new rule set")
    changed: bool = Field(description="false when the files on disk were what was already served")
    workers: int = Field(description="worker processes now serving `kb_version` (all of them)")


class ReloadUnfinished(BaseModel):
    """`POST /admin/reload` checked the new KB but could not confirm that every worker serves it."""

    detail: str = Field(description="what happened, and what to do")
    kb_version: str = Field(description="the version published for every worker")
    workers_switched: int = Field(description="worker processes known to serve `kb_version`")
    workers: int = Field(description="worker processes the service runs")


class ReloadRefused(BaseModel):
    """`POST /admin/reload` found problems: the last good KB and rules stay in service."""

    detail: str = Field(description="what happened, and the version still served")
    problems: list[str] = Field(description="each problem as `path:line: check: message (how to fix)`")
