"""API version 2 of the answers (`POST /v2/recommend`, `POST /v2/compare`): each source's text once per
answer, in `sources`, which the trace steps and the recommendations cite by id. Version 1 repeats a
rule's sources in every recommendation it shaped and again in the trace (docs/api-contract.md, "Version
2"); everything else is the same, field for field."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.models.compare import ComparedChoice, CompareResponse
from engine.models.response import Recommendation, RecommendResponse, TraceStep

API_VERSION: Literal["2"] = "2"
CITED_BY_ID = "ids into the answer's `sources` (s1, s2, ...)"
SOURCES = (
    "each source's text once, by id, numbered in the order the answer first cites it: title and "
    "section, then <URL> where one exists"
)


class RecommendationV2(Recommendation):
    citations: list[str] = Field(description=f"sources of the rules behind this option: {CITED_BY_ID}")


class TraceStepV2(TraceStep):
    citations: list[str] = Field(description=f"the rule's sources: {CITED_BY_ID}")


class RecommendResponseV2(RecommendResponse):
    """Body of a `POST /v2/recommend` answer (200): version 1's, with sources cited by id."""

    api_version: Literal["2"] = Field(API_VERSION, description="the answer's API version")
    recommendations: list[RecommendationV2] = Field(description="best first; at most top_k")  # type: ignore[assignment]
    trace: list[TraceStepV2] = Field(description="forward-chaining record, in firing order")  # type: ignore[assignment]
    sources: dict[str, str] = Field(description=SOURCES)


class ComparedChoiceV2(ComparedChoice):
    option: RecommendationV2 | None = Field(
        description="the best plan on this choice as a POST /v2/recommend option, its sources cited by id"
    )


class CompareResponseV2(CompareResponse):
    """Body of a `POST /v2/compare` answer (200): version 1's, with sources cited by id."""

    api_version: Literal["2"] = Field(API_VERSION, description="the answer's API version")
    choices: list[ComparedChoiceV2] = Field(description="each choice judged, in the order asked")  # type: ignore[assignment]
    trace: list[TraceStepV2] = Field(description="forward-chaining record, in firing order")  # type: ignore[assignment]
    sources: dict[str, str] = Field(description=SOURCES)
