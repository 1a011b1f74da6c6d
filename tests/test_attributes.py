"""The candidate attributes are one registry (engine/models/attributes.py): its producers set every
attribute it lists and nothing else, and the rule schema and docs/rule-facts.md are read from it."""

from __future__ import annotations

import json

import pytest

from engine.knowledge import paths
from engine.models import attributes
from engine.models.attributes import ATTRIBUTE_NAMES, ATTRIBUTES, PLAN_ATTRIBUTES, attribute_tables
from engine.models.request import RecommendRequest
from engine.planning.candidates import context_for
from engine.planning.workload import resolve
from engine.reasoning.policy import policy_from
from engine.reasoning.ruledocs import GENERATED_BEGIN, with_attribute_tables
from engine.recommend import Advisor

OPTION_NAMES = {a.name for a in ATTRIBUTES if a.known == "option"}


def test_names_are_unique_and_each_is_known_once() -> None:
    assert len(set(ATTRIBUTE_NAMES)) == len(ATTRIBUTE_NAMES)
    assert set(ATTRIBUTE_NAMES) == OPTION_NAMES | PLAN_ATTRIBUTES
    assert not OPTION_NAMES & PLAN_ATTRIBUTES


def test_options_carry_every_option_attribute_and_no_other(advisor: Advisor) -> None:
    """candidates.py sets them: across the options of one context every one appears (a rented option
    adds its provider's), and an option never carries a name the registry lacks (a rule could not
    filter on it)."""
    request = RecommendRequest.model_validate({"workload": {"task": "inference", "params_b": 7}})
    options = advisor.searcher.options(context_for(request, spot=True), None)
    seen = set().union(*(option.attrs for option in options))
    # an option also carries its own GPU count, which the plan replaces when a fleet adds copies
    assert seen == OPTION_NAMES | {"gpu_count"}


def test_plans_carry_every_plan_attribute_and_no_other(advisor: Advisor) -> None:
    """planner.py sets them on every candidate it sizes."""
    request = RecommendRequest.model_validate(
        {"workload": {"task": "lora", "params_b": 7}, "constraints": {"budget_usd": 5000}}
    )
    job = resolve(request, advisor.kb)
    outcome = advisor.engine.run(advisor.facts(request, job))
    planner = advisor.planner(job, policy_from(outcome, advisor.rules), request)
    found = advisor.searcher.search(planner, context_for(request, spot=False), None)
    assert found.candidates
    for candidate in found.candidates:
        assert set(candidate.plan_attrs) == PLAN_ATTRIBUTES


def test_the_rule_schema_lists_the_registry() -> None:
    schema = json.loads((paths.PROJECT_ROOT / "docs" / "schema" / "rules.schema.json").read_text())
    enums = {tuple(d["enum"]) for d in _walk(schema) if isinstance(d, dict) and "enum" in d}
    assert tuple(ATTRIBUTE_NAMES) in enums


def test_rule_facts_tables_are_generated_from_the_registry() -> None:
    text = (paths.PROJECT_ROOT / "docs" / "rule-facts.md").read_text(encoding="utf-8")
    assert GENERATED_BEGIN in text
    assert with_attribute_tables(text) == text, "docs/rule-facts.md is stale: run `gpu-advisor kb docs`"
    for name in ATTRIBUTE_NAMES:
        assert f"`{name}`" in attribute_tables()


def test_a_new_attribute_shows_in_the_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = attributes.Attribute("gpu_power_w", "option", "watts", "planning/candidates.py")
    monkeypatch.setattr(attributes, "ATTRIBUTES", (*attributes.ATTRIBUTES, extra))
    text = (paths.PROJECT_ROOT / "docs" / "rule-facts.md").read_text(encoding="utf-8")
    assert "| `gpu_power_w` | watts |" in with_attribute_tables(text)


def _walk(node: object) -> list[object]:
    found = [node]
    if isinstance(node, dict):
        for value in node.values():
            found += _walk(value)
    elif isinstance(node, list):
        for value in node:
            found += _walk(value)
    return found
