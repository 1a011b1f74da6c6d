"""A request as the rules see it: named scalar input facts.

Every set scalar field becomes a fact under its dotted path (`workload.params_b`, `constraints.os`,
`workload.serving.requests_per_min`); the top-level `objective` and `top_k` live under `request.`.
A list becomes `<path>.count` plus, for lists of ids or names, one `true` fact per member with `-`
written as `_` (`constraints.parallelism.zero_3`); `existing_hardware` also gives `.gpus`, the GPUs
owned in all. Unset (None) fields give no fact, so `exists: false` means "the user did not say".
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from engine.models.request import HardwareCount, RecommendRequest
from engine.models.rule import Scalar


def request_facts(request: RecommendRequest) -> dict[str, Scalar]:
    facts: dict[str, Scalar] = {}
    _flatten(request.workload, "workload", facts)
    _flatten(request.constraints, "constraints", facts)
    facts["request.objective"] = request.objective
    facts["request.top_k"] = request.top_k
    return facts


NOT_FACTS = frozenset({"workload.hf_config"})
"""request fields rules do not read: a pasted config becomes the job's architecture and `sizing.*`"""


def _flatten(model: BaseModel, prefix: str, facts: dict[str, Scalar]) -> None:
    for name in type(model).model_fields:
        value: Any = getattr(model, name)
        path = f"{prefix}.{name}"
        if value is None or path in NOT_FACTS:
            continue
        if isinstance(value, BaseModel):
            _flatten(value, path, facts)
        elif isinstance(value, list):
            facts[f"{path}.count"] = len(value)
            if value and isinstance(value[0], HardwareCount):
                facts[f"{path}.gpus"] = sum(item.count for item in value)
            elif value and isinstance(value[0], str):
                for member in value:
                    facts[f"{path}.{member.replace('-', '_')}"] = True
        else:
            facts[path] = value
