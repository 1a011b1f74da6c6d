"""`POST /compare`: one request and two to four hardware choices, answered side by side with the
figures of a recommendation and a verdict per choice ("why not X?"). Additive to docs/api-contract.md."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from engine.models.request import HardwareCount, RecommendRequest, RequestModel
from engine.models.response import Recommendation, Requirements, ResponseModel, TargetFit, TraceStep

MIN_CHOICES, MAX_CHOICES = 2, 4


class Choice(HardwareCount):
    """One hardware choice to compare: a number of GPUs of one kind, and optionally how they are got."""

    acquisition: Literal["buy", "rent", "owned"] | None = Field(
        None,
        description="how the GPUs are got: buy, rent, or owned (already yours: no capex); absent: the "
        "best way the request allows",
    )


class CompareRequest(RequestModel):
    """Body of `POST /compare`: the workload and constraints of `POST /recommend`, and the choices."""

    request: RecommendRequest = Field(description="the same body as POST /recommend's")
    choices: Annotated[list[Choice], Field(min_length=MIN_CHOICES, max_length=MAX_CHOICES)] = Field(
        description="two to four hardware choices, answered in this order"
    )


class ComparedChoice(ResponseModel):
    """One choice, judged: whether the job fits it and runs on it within the constraints, and how."""

    gpu: str = Field(description="KB gpu id of the choice")
    gpu_name: str = Field(description="the GPU's name")
    count: int = Field(description="number of GPUs in the choice")
    acquisition: str | None = Field(
        description="buy | rent | owned as asked; null: any way the request allows"
    )
    verdict: str = Field(
        description='the verdict in a few words, e.g. "fits, 46 tok/s, $0.61/h" or '
        '"does not fit: needs 31 GB of 24"'
    )
    feasible: bool = Field(description="a plan on this choice passes every constraint (`option` is set)")
    fit: TargetFit = Field(
        description="whether the job as asked fits this choice's memory, by how much, the ways to make it "
        "run, and the best plan on it: what target_fit says of constraints.target_hardware"
    )
    ruled_out: str | None = Field(
        description="why no plan on this choice passes, when none does (the first rule's reason)"
    )
    rule: str | None = Field(description="the rule that ruled it out, when one did")
    option: Recommendation | None = Field(
        description="the best plan on this choice with the figures of a POST /recommend option (memory "
        "per GPU, tokens/s, cost, plan, why); `rank` orders the feasible choices, those that run the job "
        "as asked first, then by the objective; `score` is the first's measure over this one's"
    )


class CompareResponse(ResponseModel):
    """Body of a `POST /compare` answer (200): the choices side by side, in the order asked."""

    request_id: str = Field(description="unique per call")
    kb_version: str = Field(description="content hash of the knowledge base and rules used")
    prices_as_of: str = Field(description="date of the newest price snapshot in the knowledge base")
    summary: str = Field(description="1-3 sentences a chat bot can post as-is: the best choice, and the rest")
    best: int | None = Field(
        description="index into `choices` of the best feasible choice by the objective; null: none is"
    )
    requirements: Requirements = Field(description="the workload, before any hardware is chosen")
    choices: list[ComparedChoice] = Field(description="each choice judged, in the order asked")
    trace: list[TraceStep] = Field(description="forward-chaining record, in firing order")
    warnings: list[str] = Field(description="caveats about the request or the figures")
    assumptions: dict[str, float | str] = Field(description="conventions and defaults behind the numbers")
