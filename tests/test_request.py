"""The request model (docs/api-contract.md) and its facts for the rules."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from engine.facts import request_facts
from engine.models.request import RecommendRequest
from engine.paths import PROJECT_ROOT

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
    assert field in str(raised.value)


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
