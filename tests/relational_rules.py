"""The request rules that relate two values, which no JSON Schema keyword can state (draft 2020-12
compares a value with constants only: `maximum`, `multipleOf`, `const`), and a function that moves a
body just inside each of them.

Each rule is a 422 naming the field (tests/test_api.py asks each); the OpenAPI document states it in
the field's description. tests/schemathesis_hooks.py uses `within_relational_rules` to keep the
generator's positive cases positive; tests/schemathesis_hookless.py uses it to tell a rejection for
one of these rules from a rejection the JSON Schema should have stated. Importing this module
registers no Schemathesis hook.
"""

from __future__ import annotations

import copy
from typing import Any, TypeGuard

from pydantic import ValidationError

from engine.models.request import MAX_PARAMS_B, MIN_PARAMS_B, ArchitectureIn, HfConfig
from engine.planning.architecture import MAX_PARAMS_RATIO, least_params
from engine.planning.hf_config import from_hf_config, sized_config
from engine.recommend import default_advisor
from engine.sizing import shape_from_architecture, total_params

EXPERT_COUNTS = ("num_local_experts", "num_experts", "n_routed_experts")
"""where a config gives its experts, in the order engine/planning/hf_config.py looks"""


RECOMMEND_BODIES = ("/recommend", "/v2/recommend", "/report")
"""the routes whose body is a RecommendRequest; `POST /compare` and `/v2/compare` take one under
`request`"""
COMPARE_BODIES = ("/compare", "/v2/compare")


def body_within_rules(path: str, body: Any) -> Any:
    """An operation's body with the RecommendRequest in it (if any) within the rules."""
    if not isinstance(body, dict):
        return body
    if path in RECOMMEND_BODIES:
        return within_relational_rules(body)
    if path in COMPARE_BODIES and isinstance(body.get("request"), dict):
        return {**body, "request": within_relational_rules(body["request"])}
    return body


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
        _active_within_total(workload)
    if isinstance(constraints, dict):
        count, cap = constraints.get("gpu_count"), constraints.get("max_gpus")
        if _number(count) and _number(cap):
            constraints["max_gpus"] = max(count, cap)
    return body


def _active_within_total(workload: dict[str, Any]) -> None:
    """active_params_b lowered to the total, or left out when the total (a tiny hf_config's) is below
    the least count a request may state."""
    total, active = _total_params_b(workload), workload.get("active_params_b")
    if not _number(active) or total is None:
        return
    if total < MIN_PARAMS_B:
        del workload["active_params_b"]
    else:
        workload["active_params_b"] = min(active, total)


def _whole_heads(shape: dict[str, Any], heads_key: str = "n_heads", kv_key: str = "n_kv_heads") -> None:
    """The heads made a multiple of the KV heads and, without head_dim, the width of the heads."""
    heads, kv_heads = shape.get(heads_key), shape.get(kv_key)
    if _number(heads) and _number(kv_heads) and kv_heads >= 1:
        shape[heads_key] = heads = kv_heads * max(1, heads // kv_heads)
    hidden = shape.get("hidden_size")
    if shape.get("head_dim") is None and _number(heads) and _number(hidden) and heads >= 1:
        shape["hidden_size"] = heads * max(1, hidden // heads)


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
"""a config of a few thousand parameters, standing in for one of more than 100T"""


def _sizable_config(workload: dict[str, Any]) -> None:
    """An hf_config's heads made a multiple of its KV heads (and its width of its heads, without
    head_dim), its experts per token at most its experts; one of more than 100T parameters replaced."""
    config = workload.get("hf_config")
    if not isinstance(config, dict):
        return
    read = _level_read(config)
    if not _number(read.get("kv_lora_rank")):  # latent attention has as many KV heads as heads
        _whole_heads(read, "num_attention_heads", "num_key_value_heads")
    experts = next((read[key] for key in EXPERT_COUNTS if read.get(key) is not None), None)
    per_token = read.get("num_experts_per_tok")
    if _number(experts) and experts > 1 and _number(per_token):
        read["num_experts_per_tok"] = min(per_token, experts)
    params_b = _config_params_b(config, cap=False)
    if params_b is not None and params_b > MAX_PARAMS_B:
        workload["hf_config"] = dict(SIZABLE_CONFIG)


def _level_read(config: dict[str, Any]) -> dict[str, Any]:
    """The config, or its text_config when it gives no num_hidden_layers (as the reader takes it)."""
    nested = config.get("text_config")
    return nested if config.get("num_hidden_layers") is None and isinstance(nested, dict) else config


def _config_params_b(config: dict[str, Any], *, cap: bool) -> float | None:
    """The parameters the config describes, billions (None when it does not make a model); with
    `cap`, None too above the most a request may size."""
    try:
        if cap:
            return sized_config(HfConfig.model_validate(config)).params / 1e9
        read = from_hf_config(HfConfig.model_validate(config))
        return total_params(shape_from_architecture(read.architecture, kind=read.kind)) / 1e9
    except ValueError:  # pydantic's ValidationError is one
        return None


def _total_params_b(workload: dict[str, Any]) -> float | None:
    if _number(workload.get("params_b")):
        return float(workload["params_b"])
    config = workload.get("hf_config")
    if isinstance(config, dict):
        return _config_params_b(config, cap=True)
    model = default_advisor().kb.models.get(str(workload.get("model")))
    return model.params_b if model else None


def _number(value: Any) -> TypeGuard[float]:
    """A JSON number (a bool is an int to Python, not to JSON)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
