"""Schemathesis hooks for this API, used by tests/test_schemathesis.py and by the schemathesis CLI:

    SCHEMATHESIS_HOOKS=tests.schemathesis_hooks schemathesis run URL/openapi.json --checks all ...

Six request rules relate values, which no JSON Schema can state: a MoE's active parameters
cannot exceed its total (the request's, or its KB model's, also when params_b is given beside the
model); n_heads is a multiple of n_kv_heads
(grouped-query attention shares each key/value head among n_heads / n_kv_heads query heads);
without head_dim, hidden_size is a multiple of n_heads (head_dim = hidden_size / n_heads); the
parameters an architecture's given sizes imply at the least are at most twice the model's count;
gpu_count cannot exceed max_gpus; and an hf_config's sizes must make a model (its heads a multiple
of its KV heads, an MoE's experts per token given, at most 100T parameters). A body that breaks one
is rightly a 422 naming the field (tests/test_api.py asks each), but the OpenAPI document calls it
valid, so the
positive_data_acceptance check (ST202) would count that 422 as a failure. Each positive case is
therefore brought within these rules before it is sent, changing one number (or, for an
architecture too large for any allowed params_b, leaving the architecture out): the generator is
told the rules rather than the check being dropped. Negative cases are left as generated. `POST /compare`
takes the same request under `request`, brought within the same rules.
"""

from __future__ import annotations

import copy
from typing import Any

import schemathesis
from pydantic import ValidationError

from engine.models.request import MAX_PARAMS_B, ArchitectureIn, HfConfig
from engine.planning.architecture import MAX_PARAMS_RATIO, least_params
from engine.planning.hf_config import sized_config
from engine.recommend import default_advisor

RECOMMEND_BODIES = ("/recommend", "/report")
"""the routes whose body is a RecommendRequest"""


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    positive = case.meta is None or case.meta.generation.mode.is_positive
    if positive and isinstance(case.body, dict):
        if case.operation.path in RECOMMEND_BODIES:
            case.body = within_relational_rules(case.body)
        elif case.operation.path == "/compare" and isinstance(case.body.get("request"), dict):
            case.body = {**case.body, "request": within_relational_rules(case.body["request"])}
    return case


def within_relational_rules(body: dict[str, Any]) -> dict[str, Any]:
    """`body`, with the number that breaks each relational rule moved just inside it."""
    body = copy.deepcopy(body)
    workload, constraints = body.get("workload"), body.get("constraints")
    if isinstance(workload, dict):
        architecture = workload.get("architecture")
        if isinstance(architecture, dict):
            _whole_heads(architecture)
            _within_params(workload, architecture)
        _within_model(workload)
        _sizable_config(workload)
        total = _total_params_b(workload)
        if _number(workload.get("active_params_b")) and total is not None:
            workload["active_params_b"] = min(workload["active_params_b"], total)
    if isinstance(constraints, dict):
        count, cap = constraints.get("gpu_count"), constraints.get("max_gpus")
        if _number(count) and _number(cap):
            constraints["max_gpus"] = max(count, cap)
    return body


def _whole_heads(architecture: dict[str, Any]) -> None:
    heads, kv_heads = architecture.get("n_heads"), architecture.get("n_kv_heads")
    if _number(heads) and _number(kv_heads) and kv_heads >= 1:
        architecture["n_heads"] = heads = kv_heads * max(1, heads // kv_heads)
    hidden = architecture.get("hidden_size")
    if architecture.get("head_dim") is None and _number(heads) and _number(hidden) and heads >= 1:
        architecture["hidden_size"] = heads * max(1, hidden // heads)


def _within_params(workload: dict[str, Any], architecture: dict[str, Any]) -> None:
    """params_b raised to half the least the architecture implies, or the architecture left out."""
    try:
        least_b = least_params(ArchitectureIn.model_validate(architecture)) / 1e9
    except ValidationError:
        return  # another field is out of range: the request is a 422 whatever params_b is
    total = _total_params_b(workload)
    if total is None or least_b <= MAX_PARAMS_RATIO * total:
        return
    needed = least_b / MAX_PARAMS_RATIO * (1 + 1e-9)
    if needed <= MAX_PARAMS_B:
        workload["params_b"] = needed
    else:
        del workload["architecture"]


def _within_model(workload: dict[str, Any]) -> None:
    """A params_b given beside a KB MoE model is raised to the model's active parameters, which the
    engine uses unless the request gives its own active_params_b."""
    model = default_advisor().kb.models.get(str(workload.get("model")))
    params = workload.get("params_b")
    if model is None or model.active_params_b is None or not _number(params):
        return
    if not _number(workload.get("active_params_b")):
        workload["params_b"] = max(params, model.active_params_b)


SIZABLE_CONFIG: dict[str, Any] = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 1000,
}
"""a config every rule of `sized_config` accepts, standing in for one that breaks them"""


def _sizable_config(workload: dict[str, Any]) -> None:
    """An hf_config whose sizes contradict each other (heads not a multiple of the KV heads, an MoE
    without its experts per token, a missing MLP width, more than 100T parameters) is replaced."""
    config = workload.get("hf_config")
    if not isinstance(config, dict):
        return
    try:
        sized_config(HfConfig.model_validate(config))
    except ValidationError:
        return  # a value is out of range: the request is a 422 whatever the rest says
    except ValueError:
        workload["hf_config"] = dict(SIZABLE_CONFIG)


def _total_params_b(workload: dict[str, Any]) -> float | None:
    if _number(workload.get("params_b")):
        return float(workload["params_b"])
    config = workload.get("hf_config")
    if isinstance(config, dict):
        try:
            return sized_config(HfConfig.model_validate(config)).params / 1e9
        except ValueError:  # pydantic's ValidationError is one
            return None
    model = default_advisor().kb.models.get(str(workload.get("model")))
    return model.params_b if model else None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
