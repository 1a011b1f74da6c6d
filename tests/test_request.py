"""The request model (docs/api-contract.md) and its facts for the rules."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from engine.knowledge.paths import PROJECT_ROOT
from engine.models.request import RecommendRequest
from engine.reasoning.facts import request_facts

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
