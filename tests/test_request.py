"""The request model (docs/api-contract.md) and its facts for the rules."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from engine.knowledge.paths import PROJECT_ROOT
from engine.models.free_json import MAX_JSON_DEPTH, MAX_JSON_VALUES
from engine.models.request import RecommendRequest
from engine.reasoning.facts import request_facts
from tests.support_json import SMALL_CONFIG, nested

FACT_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")


def contract_example() -> dict[str, Any]:
    """The request body of docs/api-contract.md, comments stripped."""
    text = (PROJECT_ROOT / "docs/api-contract.md").read_text()
    block = text.split("### Request body", 1)[1].split("```jsonc", 1)[1].split("```", 1)[0]
    return json.loads(re.sub(r"//[^\n]*", "", block))


def test_the_contract_example_validates() -> None:
    request = RecommendRequest.model_validate(contract_example())
    assert request.workload.params_b == 8.03
    assert request.constraints.horizon_months == 36
    assert request.top_k == 5


def test_defaults_from_the_contract() -> None:
    request = RecommendRequest.model_validate({"workload": {"task": "inference", "params_b": 7}})
    assert (request.workload.batch_size, request.workload.seq_len, request.workload.optimizer) == (
        1,
        2048,
        "adamw",
    )
    assert (request.constraints.acquisition, request.constraints.allow_quantization) == ("any", True)
    assert (request.objective, request.top_k) == ("balanced", 5)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"workload": {"task": "inference", "params_b": 7, "colour": 1}}, "colour"),
        ({"workload": {"task": "inference", "params_b": float("nan")}}, "params_b"),
        ({"workload": {"task": "inference", "params_b": float("inf")}}, "params_b"),
        ({"workload": {"task": "inference", "params_b": -7}}, "params_b"),
        ({"workload": {"task": "inference", "params_b": 1e9}}, "params_b"),
        ({"workload": {"task": "dance", "params_b": 7}}, "task"),
        ({"workload": {"task": "inference"}}, "params_b"),
        ({"workload": {"task": "inference", "params_b": 7, "batch_size": 0}}, "batch_size"),
        (
            {
                "workload": {
                    "task": "lora",
                    "params_b": 7,
                    "serving": {"requests_per_min": 1, "avg_input_tokens": 1, "avg_output_tokens": 1},
                }
            },
            "serving",
        ),
        ({"workload": {"task": "inference", "params_b": 7}, "constraints": {"os": "beos"}}, "os"),
        (
            {"workload": {"task": "inference", "params_b": 7}, "constraints": {"utilization_pct": 140}},
            "utilization",
        ),
        (
            {
                "workload": {"task": "inference", "params_b": 7},
                "constraints": {"on_prem_only": True, "acquisition": "rent"},
            },
            "on_prem",
        ),
        ({"workload": {"task": "inference", "params_b": 7}, "top_k": 21}, "top_k"),
    ],
)
def test_bad_input_names_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        RecommendRequest.model_validate(body)
    errors = raised.value.errors()
    # Named in the error's location, or in the message of the model's own check between fields.
    assert any(field in ".".join(map(str, error["loc"])) or field in error["msg"] for error in errors), errors


BASE = {"workload": {"task": "inference", "params_b": 7}}


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({**BASE, "top_k": True}, ("top_k",)),
        ({**BASE, "top_k": "5"}, ("top_k",)),
        ({**BASE, "top_k": 5.5}, ("top_k",)),
        ({"workload": {"task": "inference", "params_b": "7"}}, ("workload", "params_b")),
        ({**BASE, "constraints": {"on_prem_only": 1}}, ("constraints", "on_prem_only")),
        (
            {**BASE, "constraints": {"electricity_usd_per_kwh": False}},
            ("constraints", "electricity_usd_per_kwh"),
        ),
        ({"workload": {"task": "inference", "params_b": 1e-9}}, ("workload", "params_b")),
        (
            {"workload": {"task": "inference", "params_b": 7, "active_params_b": 9}},
            ("workload", "active_params_b"),
        ),
        ({**BASE, "constraints": {"max_gpus": 2, "gpu_count": 4}}, ("constraints", "gpu_count")),
        (
            {**BASE, "constraints": {"utilization_pct": 5, "hours_per_week": 5}},
            ("constraints", "hours_per_week"),
        ),
        (
            {"workload": {**BASE["workload"], "architecture": {"n_heads": 32, "n_kv_heads": 5}}},
            ("workload", "architecture", "n_kv_heads"),
        ),
        (
            {"workload": {**BASE["workload"], "architecture": {"hidden_size": 4000, "n_heads": 48}}},
            ("workload", "architecture", "n_heads"),
        ),
        (
            {"workload": {**BASE["workload"], "serving": {"min_tokens_per_s_per_user": 0}}},
            ("workload", "serving", "min_tokens_per_s_per_user"),
        ),
    ],
)
def test_values_are_not_coerced_and_relations_name_the_later_field(
    body: dict[str, Any], loc: tuple[str, ...]
) -> None:
    """JSON types are kept (the JSON Schema is what is accepted), and a check between two fields
    names the later one, so a 422 points at a field rather than at the whole object."""
    with pytest.raises(ValidationError) as raised:
        RecommendRequest.model_validate(body)
    assert loc in [error["loc"] for error in raised.value.errors()]


def test_integral_floats_count_as_integers() -> None:
    """JSON Schema: "8.0" is an integer; a JSON encoder may well write it so."""
    request = RecommendRequest.model_validate(
        {
            "workload": {"task": "inference", "params_b": 7, "batch_size": 8.0, "seq_len": 4096.0},
            "constraints": {"target_hardware": {"gpu": "nvidia-rtx-3090", "count": 2.0}, "max_gpus": 4.0},
            "top_k": 3.0,
        }
    )
    assert (request.workload.batch_size, request.workload.seq_len, request.top_k) == (8, 4096, 3)
    assert request.constraints.target_hardware is not None
    assert request.constraints.target_hardware.count == 2 and request.constraints.max_gpus == 4
    assert isinstance(request.top_k, int)


def test_request_facts() -> None:
    body = contract_example()
    body["constraints"].update(
        parallelism=["zero-3"], existing_hardware=[{"gpu": "nvidia-rtx-4090", "count": 2}]
    )
    facts = request_facts(RecommendRequest.model_validate(body))
    assert facts["workload.task"] == "inference"
    assert facts["workload.params_b"] == 8.03
    assert facts["workload.architecture.n_kv_heads"] == 8
    assert facts["workload.serving.requests_per_min"] == 1000
    assert facts["constraints.os"] == "linux"
    assert facts["constraints.on_prem_only"] is False
    assert facts["constraints.parallelism.zero_3"] is True
    assert (facts["constraints.existing_hardware.count"], facts["constraints.existing_hardware.gpus"]) == (
        1,
        2,
    )
    assert facts["request.objective"] == "balanced"
    assert "workload.active_params_b" not in facts  # null: the user did not say
    assert all(FACT_NAME.match(name) for name in facts)


@pytest.mark.parametrize(
    "architecture",
    [
        {},
        {"n_layers": 32},
        {"n_layers": 32, "hidden_size": 4096, "n_heads": 32, "n_kv_heads": 8},  # no vocab_size
        {"n_heads": 32, "head_dim": 128},
        {"hidden_size": 3072, "n_heads": 16, "head_dim": 256},  # Gemma: head_dim != hidden / heads
        {"hidden_size": 4000, "n_heads": 48, "head_dim": 83},  # given head_dim: no divisibility rule
    ],
)
def test_any_part_of_an_architecture_is_a_request(architecture: dict[str, int]) -> None:
    request = RecommendRequest.model_validate(
        {"workload": {**BASE["workload"], "architecture": architecture}}
    )
    assert request.workload.architecture is not None


def test_serving_with_only_a_per_user_speed() -> None:
    """One user who must get at least 30 tokens/s: no traffic, so no fact for a traffic rule."""
    body = {"workload": {"task": "inference", "params_b": 8, "serving": {"min_tokens_per_s_per_user": 30}}}
    facts = request_facts(RecommendRequest.model_validate(body))
    assert facts["workload.serving.min_tokens_per_s_per_user"] == 30
    assert "workload.serving.requests_per_min" not in facts
    assert "workload.serving.avg_output_tokens" not in facts  # a default is not something the user said


def test_sgd_with_momentum_is_an_optimizer() -> None:
    body = {"workload": {"task": "full_finetune", "params_b": 1, "optimizer": "sgd_momentum"}}
    assert RecommendRequest.model_validate(body).workload.optimizer == "sgd_momentum"


# --- free-form JSON in an hf_config: bounded (engine/models/free_json.py) -----------------------


def _with_config(config: dict[str, Any]) -> dict[str, Any]:
    return {"workload": {"task": "inference", "hf_config": config}}


FREE_FORM = [("x",), ("quantization_config",), ("text_config", "x")]
"""where in an hf_config a free-form value may sit"""


def _placed(where: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A config holding `value` at `where`."""
    if where[0] == "text_config":
        return {"text_config": _placed(where[1:], value)}
    return {**SMALL_CONFIG, where[0]: value}


@pytest.mark.parametrize("where", FREE_FORM, ids=".".join)
def test_free_form_json_nests_at_most_32_levels(where: tuple[str, ...]) -> None:
    """A key the sizing does not read may hold any JSON up to MAX_JSON_DEPTH levels deep (a real
    config.json nests 3 or 4); one level more is a 422 naming the key, whatever holds it."""
    RecommendRequest.model_validate(_with_config(_placed(where, nested(MAX_JSON_DEPTH))))
    with pytest.raises(ValidationError) as raised:
        RecommendRequest.model_validate(_with_config(_placed(where, nested(MAX_JSON_DEPTH + 1))))
    (error,) = raised.value.errors()
    assert error["loc"] == ("workload", "hf_config", *where)
    assert f"more than {MAX_JSON_DEPTH} levels" in error["msg"]


@pytest.mark.parametrize("depth", [300, 5000])
def test_a_value_hundreds_of_levels_deep_is_refused_without_recursion(depth: int) -> None:
    """Deeper than Python's recursion limit: the check walks with a stack of its own."""
    with pytest.raises(ValidationError) as raised:
        RecommendRequest.model_validate(_with_config({**SMALL_CONFIG, "x": nested(depth)}))
    assert raised.value.errors()[0]["loc"] == ("workload", "hf_config", "x")


def test_free_form_json_holds_at_most_10000_values() -> None:
    """The list itself counts one value: 9,999 numbers in it make 10,000."""
    RecommendRequest.model_validate(_with_config({**SMALL_CONFIG, "x": list(range(MAX_JSON_VALUES - 1))}))
    with pytest.raises(ValidationError) as raised:
        RecommendRequest.model_validate(_with_config({**SMALL_CONFIG, "x": list(range(MAX_JSON_VALUES))}))
    assert raised.value.errors()[0]["loc"] == ("workload", "hf_config", "x")


@pytest.mark.parametrize(
    ("key", "value", "accepted"),
    [
        ("num_hidden_layers", 2.0, True),  # JSON Schema counts 2.0 an integer
        ("num_hidden_layers", "2", False),
        ("num_hidden_layers", True, False),
        ("tie_word_embeddings", 1, False),
        ("mlp_only_layers", [0.0, 1], True),
        ("mlp_only_layers", ["0"], False),
        ("rms_norm_eps", 1, True),
    ],
)
def test_config_keys_take_their_json_types(key: str, value: Any, accepted: bool) -> None:
    """As the OpenAPI document types them: a string or a boolean is not a number."""
    body = _with_config({**SMALL_CONFIG, key: value})
    if accepted:
        RecommendRequest.model_validate(body)
        return
    with pytest.raises(ValidationError) as raised:
        RecommendRequest.model_validate(body)
    assert raised.value.errors()[0]["loc"][:3] == ("workload", "hf_config", key)


def test_a_machines_ram_is_stated_for_owned_gpus_only() -> None:
    """`host_ram_gib` bounds an owned machine's offload plans; target hardware and a comparison's
    choices have no such machine in the plan, so there it is an unknown key (422), not one accepted and
    ignored."""
    owned = {"gpu": "nvidia-rtx-3090", "count": 2, "host_ram_gib": 64}
    request = RecommendRequest.model_validate(
        {"workload": {"task": "qlora", "params_b": 70}, "constraints": {"existing_hardware": [owned]}}
    )
    assert request.constraints.existing_hardware[0].host_ram_gib == 64
    with pytest.raises(ValidationError, match=r"target_hardware\.host_ram_gib"):
        RecommendRequest.model_validate(
            {"workload": {"task": "qlora", "params_b": 70}, "constraints": {"target_hardware": owned}}
        )
