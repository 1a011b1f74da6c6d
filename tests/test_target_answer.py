"""A question about named hardware ("will it run on my RTX 4090?") is answered first, and a training
step too large for it is offered the change experts make first: one sequence a micro-step,
accumulating the gradients of the batch asked for, with a fused loss where the logits need it."""

from __future__ import annotations

from typing import Any

from engine.models.request import RecommendRequest
from engine.models.response import RecommendResponse
from tests.golden_support import advisor

LORA = {"task": "lora", "model": "llama-3-1-8b", "seq_len": 8192, "batch_size": 4}


def ask(workload: dict[str, Any], target: dict[str, Any]) -> RecommendResponse:
    body = {"workload": workload, "constraints": {"target_hardware": target}}
    return advisor().recommend(RecommendRequest.model_validate(body))


def test_a_target_that_does_not_fit_is_the_summarys_first_sentence() -> None:
    """It was a warning after the table: the summary began with two rented H100s."""
    answer = ask(LORA, {"gpu": "nvidia-rtx-4090", "count": 1})
    fit = answer.target_fit
    assert fit is not None and not fit.fits
    assert answer.summary.startswith("LoRA in bf16 needs 93.1 GB per GPU at best on NVIDIA GeForce RTX 4090")
    assert "it does not fit" in answer.summary.split(". The best option overall is ")[0]
    assert answer.summary.index("The best option overall is") > answer.summary.index("Ways to make it run")


def test_one_sequence_a_micro_step_is_offered_first_with_what_it_needs() -> None:
    """Activations and logits grow with the sequences a GPU steps at once: four of 8,192 tokens need
    93.1 GB, one with a fused loss 22.1 GB (the target's plan for batch_size 1 with fused_loss says
    the same), within the 24.5 GB a 4090 leaves a plan."""
    fit = ask(LORA, {"gpu": "nvidia-rtx-4090", "count": 1}).target_fit
    assert fit is not None and fit.alternatives
    first = fit.alternatives[0]
    assert first.startswith("one sequence a micro-step and a fused cross-entropy loss")
    assert "accumulating 4 for each optimizer step" in first and first.endswith("22.1 GB per GPU")
    single = ask({**LORA, "batch_size": 1, "fused_loss": True}, {"gpu": "nvidia-rtx-4090", "count": 1})
    assert single.target_fit is not None and single.target_fit.fits
    assert round(single.target_fit.per_gpu_gb, 1) == 22.1


def test_one_sequence_without_the_fused_loss_where_it_is_enough() -> None:
    """At 2,048 tokens the logits are small: one sequence a step fits a 4090 as it is."""
    fit = ask({**LORA, "seq_len": 2048, "batch_size": 16}, {"gpu": "nvidia-rtx-4090", "count": 1}).target_fit
    assert fit is not None and not fit.fits
    assert fit.alternatives[0].startswith("one sequence a micro-step, accumulating 16")


def test_a_target_that_fits_keeps_its_own_first_sentence() -> None:
    answer = ask({**LORA, "seq_len": 1024, "batch_size": 1}, {"gpu": "nvidia-h100-sxm", "count": 1})
    assert answer.target_fit is not None and answer.target_fit.fits
    assert answer.summary.startswith("For LoRA fine-tuning a 8.03B-parameter model")
