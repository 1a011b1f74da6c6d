"""GPUs by the names people use (engine/knowledge/names.py, engine/planning/named_gpus.py): a request may
name its owned, target or compared GPUs as `RTX 4090`, `4090` or `NVIDIA GeForce RTX 4090` (the KB's
aliases and names), and is answered as if it had named `nvidia-rtx-4090`; an unknown name is a 422
naming the closest ids."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from engine.knowledge.kb import KB
from engine.models.compare import CompareRequest
from engine.models.request import RecommendRequest
from engine.planning.named_gpus import with_gpu_ids
from engine.recommend import Advisor


def _body(gpu: str) -> dict[str, Any]:
    return {
        "workload": {"task": "qlora", "model": "mistral-7b"},
        "constraints": {"existing_hardware": [{"gpu": gpu, "count": 1}], "target_hardware": {"gpu": gpu}},
    }


@pytest.mark.parametrize(
    "name", ["RTX 4090", "4090", "NVIDIA GeForce RTX 4090", "rtx-4090", "Nvidia-RTX-4090"]
)
def test_a_gpu_is_found_by_its_aliases_and_its_name(kb: KB, name: str) -> None:
    gpu = kb.gpu_named(name)
    assert gpu is not None and gpu.id == "nvidia-rtx-4090"


def test_a_request_naming_gpus_by_name_is_answered_as_by_id(advisor: Advisor) -> None:
    by_id = advisor.recommend(RecommendRequest.model_validate(_body("nvidia-rtx-4090")))
    by_name = advisor.recommend(RecommendRequest.model_validate(_body("RTX 4090")))
    assert by_name.recommendations[0].gpu == "nvidia-rtx-4090"
    assert by_name.recommendations[0].acquisition == "owned"
    assert by_name.target_fit is not None and by_name.target_fit.gpu == "nvidia-rtx-4090"
    strip = {"request_id"}
    assert by_name.model_dump(exclude=strip) == by_id.model_dump(exclude=strip)


def test_a_request_naming_gpus_by_id_is_passed_on_as_it_is(kb: KB) -> None:
    request = RecommendRequest.model_validate(_body("nvidia-rtx-4090"))
    assert with_gpu_ids(request, kb) is request  # nothing copied on the common path


def test_a_comparison_takes_names_too(advisor: Advisor) -> None:
    body = {
        "request": {"workload": {"task": "inference", "model": "llama-3-1-8b"}},
        "choices": [{"gpu": "3090"}, {"gpu": "H100 SXM", "acquisition": "rent"}],
    }
    compared = advisor.compare(CompareRequest.model_validate(body))
    assert [choice.gpu for choice in compared.choices] == ["nvidia-rtx-3090", "nvidia-h100-sxm"]


def test_an_unknown_gpu_is_a_422_naming_the_closest_ids(client: TestClient) -> None:
    answered = client.post("/recommend", json=_body("rtx-4099"))
    assert answered.status_code == 422
    (error,) = answered.json()["detail"]
    assert error["loc"] == ["body", "constraints", "existing_hardware", "0", "gpu"]
    assert "did you mean nvidia-rtx-4090" in error["msg"], json.dumps(error)


def test_a_name_several_gpus_share_is_answered_with_all_of_them(client: TestClient) -> None:
    """`H100` is three GPUs in the KB (SXM, PCIe, NVL) and an alias of none: the 422 names the three,
    where difflib's closest was the P100, one letter away."""
    answered = client.post("/recommend", json=_body("H100"))
    assert answered.status_code == 422
    (error,) = answered.json()["detail"]
    assert "did you mean nvidia-h100-nvl, nvidia-h100-sxm, nvidia-h100-pcie?" in error["msg"], error
    assert "p100" not in error["msg"]
