"""A model released with quantization-aware-trained int4 weights is served in them where 16-bit and fp8
do not fit (rules/precision/serve-qat-releases-where-16-bit-does-not-fit.yaml). Figures from the Google
Developers Blog, "Gemma 3 QAT Models: Bringing state-of-the-Art AI to consumer GPUs" (2025-04-18):
Gemma 3 27B takes 54 GB in BF16 and 14.1 GB in int4, and runs on one desktop RTX 3090 (24 GB)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest
from engine.models.response import RecommendResponse
from engine.recommend import Advisor

RULE = "serve-qat-releases-where-16-bit-does-not-fit"
WINDOWS_BOX = {"os": "windows", "acquisition": "buy", "budget_usd": 5000}
"""the question that showed the gap: Gemma 3 27B at home on Windows for $5,000, answered before with four
RTX 4060 Ti 16GB in fp8 on an open-frame EPYC rig"""


def _answer(
    advisor: Advisor, workload: dict[str, Any], constraints: dict[str, Any], **rest: Any
) -> RecommendResponse:
    body = {"workload": {"task": "inference", **workload}, "constraints": constraints, **rest}
    return advisor.recommend(RecommendRequest.model_validate(body))


def test_only_models_with_a_qat_release_carry_one(kb: KB) -> None:
    released = sorted(m.id for m in kb.models.values() if m.qat_precision is not None)
    assert released == ["gemma-3-12b", "gemma-3-1b", "gemma-3-27b", "gemma-3-4b"]
    assert {kb.models[m].qat_precision for m in released} == {"int4"}


def test_gemma_3_27b_at_home_is_one_24_gb_card_with_the_qat_weights(advisor: Advisor) -> None:
    answer = _answer(advisor, {"model": "gemma-3-27b"}, WINDOWS_BOX)
    top = answer.recommendations[0]
    assert (top.gpu_count, top.precision) == (1, "int4")
    assert top.vram_per_gpu_gb <= 24 and top.memory.fits  # one RTX 3090-class card, as Google says
    assert "quantization-aware-trained int4" in top.why
    assert not top.why.count("quality trade-off")  # a release of the model, not the escape hatch
    assert RULE in {step.rule for step in answer.trace}
    # its weights are sized as Google states them: 14.1 GB in int4 (27.43B at 4.125 bits, the vision
    # tower included)
    assert answer.requirements.precision == "int4"
    assert answer.requirements.memory.weights_gb == pytest.approx(14.1, rel=0.03)


def test_fp8_and_16_bit_are_planned_first_where_they_fit(advisor: Advisor, kb: KB) -> None:
    answer = _answer(advisor, {"model": "gemma-3-27b"}, {"acquisition": "rent"}, top_k=10)
    plans = {(r.gpu, r.gpu_count, r.precision) for r in answer.recommendations}
    assert any(precision == "int4" for _, _, precision in plans)
    for gpu, count, precision in plans:
        big_fp8_card = "fp8" in kb.gpus[gpu].native_precisions and kb.gpus[gpu].memory_gb * count >= 40
        assert precision != "int4" or not big_fp8_card, (gpu, count, precision)


@pytest.mark.parametrize(
    ("workload", "constraints"),
    [
        ({"model": "gemma-3-27b", "precision": "bf16"}, WINDOWS_BOX),  # a stated precision is kept
        ({"model": "gemma-3-27b"}, {**WINDOWS_BOX, "allow_quantization": False}),
        ({"model": "qwen3-32b"}, WINDOWS_BOX),  # no QAT release: int4 stays the escape hatch
    ],
)
def test_no_qat_plan_where_the_request_or_the_model_rules_it_out(
    advisor: Advisor, workload: dict[str, Any], constraints: dict[str, Any]
) -> None:
    answer = _answer(advisor, workload, constraints)
    assert RULE not in {step.rule for step in answer.trace}
    assert all(r.precision != "int4" or "quality trade-off" in r.why for r in answer.recommendations)
