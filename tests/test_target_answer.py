"""A question about named hardware ("will it run on my RTX 4090?") is answered first, and a training
step too large for it is offered the change experts make first: one sequence a micro-step,
accumulating the gradients of the batch asked for, with a fused loss where the logits need it. A
training request with no plan at all is answered planned that way, saying so."""

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


def test_a_target_whose_plan_changes_the_method_says_first_what_keeps_it() -> None:
    """Llama 3.1 8B LoRA at one sequence of 32,768 tokens on one H100: the standard loss's fp32 logits
    and their gradient alone are 32,768 x 128,256 x 14 bytes = 58.8 GB, so the only plan there as the
    request stands is QLoRA with offload. With a fused loss LoRA fits as asked (34.3 GB): the summary
    said QLoRA, the fused loss only in the fit's list of ways."""
    answer = ask({**LORA, "seq_len": 32_768, "batch_size": 1}, {"gpu": "nvidia-h100-sxm", "count": 1})
    fit = answer.target_fit
    assert fit is not None and not fit.fits and fit.alternatives[0].startswith("a fused cross-entropy loss")
    lead = "For LoRA fine-tuning a 8.03B-parameter model on NVIDIA H100 SXM5 80GB: as asked it fits with "
    assert answer.summary.startswith(lead + fit.alternatives[0] + "; as the request stands, QLoRA")
    assert "34.3 GB per GPU" in fit.alternatives[0]


def test_a_target_that_fits_keeps_its_own_first_sentence() -> None:
    answer = ask({**LORA, "seq_len": 1024, "batch_size": 1}, {"gpu": "nvidia-h100-sxm", "count": 1})
    assert answer.target_fit is not None and answer.target_fit.fits
    assert answer.summary.startswith("For LoRA fine-tuning a 8.03B-parameter model")


def ask_to_buy(workload: dict[str, Any], budget: float) -> RecommendResponse:
    body = {"workload": workload, "constraints": {"acquisition": "buy", "budget_usd": budget}}
    return advisor().recommend(RecommendRequest.model_validate(body))


def test_an_infeasible_training_step_is_retried_one_sequence_at_a_time() -> None:
    """Bought within $4,000, LoRA at 4 x 8,192 tokens fits no card (93 GB at best): the answer was
    infeasible, pointing at rented H100s. An engineer steps one sequence at a time with a fused loss:
    a used RTX 3090 in a tower holds it (22.1 GB), and the answer says what it changed."""
    answer = ask_to_buy(LORA, 4000)
    assert answer.feasible
    first = answer.recommendations[0]
    assert first.acquisition == "buy" and first.memory.per_gpu_gb < 24
    assert "Planned at one sequence a micro-step (accumulating 4 for each optimizer step), with a fused" in (
        answer.summary
    )
    assert "no option within the constraints runs it as asked" in answer.summary
    assert "micro_step" in answer.assumptions
    # the plan is the one asked for with those settings
    stated = ask_to_buy({**LORA, "batch_size": 1, "fused_loss": True}, 4000)
    assert (stated.recommendations[0].gpu, stated.recommendations[0].memory.per_gpu_gb) == (
        first.gpu,
        first.memory.per_gpu_gb,
    )
    assert "micro_step" not in stated.assumptions


def test_no_retry_where_the_activations_are_not_what_does_not_fit() -> None:
    """A full fine-tune of a 405B model on one card: its states are 6.5 TB, one sequence a step changes
    nothing, and the answer stays infeasible with its way out (nothing planned three times over)."""
    body = {
        "workload": {"task": "full_finetune", "model": "llama-3-1-405b", "batch_size": 4},
        "constraints": {"acquisition": "buy", "max_gpus": 1},
    }
    answer = advisor().recommend(RecommendRequest.model_validate(body))
    assert not answer.feasible and answer.relaxation is not None
    assert "micro_step" not in answer.assumptions


def test_a_method_change_gives_way_to_one_sequence_at_a_time() -> None:
    """LoRA of Qwen3-4B at 8 x 2,048 tokens on a Mac within $3,000 was answered as QLoRA on a 64 GB M4
    Max (45.2 GB, 34.9 of it logits): a change of method where one sequence a micro-step keeps LoRA.
    A Mac runs no fused loss (its kernels are Triton's), so the micro-step alone is planned: LoRA in
    bf16, as asked."""
    body = {
        "workload": {"task": "lora", "model": "qwen3-4b", "seq_len": 2048, "batch_size": 8},
        "constraints": {"os": "macos", "acquisition": "buy", "budget_usd": 3000},
    }
    answer = advisor().recommend(RecommendRequest.model_validate(body))
    first = answer.recommendations[0]
    assert (first.method, first.precision) == ("lora", "bf16")
    assert "Set workload.batch_size to 1 to ask for this plan." in answer.summary
    assert "fused" not in answer.assumptions["micro_step"]


def test_no_fused_loss_is_offered_on_a_mac() -> None:
    """Fused cross-entropy kernels are Triton's (Liger Kernel), which runs on NVIDIA and AMD GPUs:
    the logits warning on a Mac offers one sequence a micro-step instead, and a Mac target's ways to
    run are planned without the fused loss."""
    body = {
        "workload": {"task": "lora", "model": "qwen3-4b", "seq_len": 4096, "batch_size": 4},
        "constraints": {"os": "macos", "acquisition": "buy", "budget_usd": 5000},
    }
    answer = advisor().recommend(RecommendRequest.model_validate(body))
    (logits,) = [w for w in answer.warnings if w.startswith("The loss's logits take")]
    assert (
        "runs no fused cross-entropy kernel" in logits and "workload.batch_size 1, accumulating 4" in logits
    )
    assert "workload.fused_loss" not in logits
    fit = ask(LORA, {"gpu": "apple-m4-max-36gb", "count": 1}).target_fit
    assert fit is not None and not fit.fits
    assert not [way for way in fit.alternatives if "fused" in way], fit.alternatives


def test_a_fused_loss_is_planned_only_where_it_runs() -> None:
    """rules/libraries/fused-loss-needs-triton.yaml: a full fine-tune of Llama 3.2 1B at 16 x 4,096
    tokens within $2,000 was retried with a fused loss and landed on a Mac mini sized without its
    logits, which its GPU would hold. Fused plans are on NVIDIA or AMD GPUs; on macOS the fused loss is
    refused, naming the rule."""
    answer = ask_to_buy(
        {"task": "full_finetune", "model": "llama-3-2-1b", "seq_len": 4096, "batch_size": 16}, 2000
    )
    assert answer.feasible and "fused" in answer.assumptions["micro_step"]
    assert all(r.platform in ("cuda", "rocm") for r in answer.recommendations), [
        (r.gpu, r.platform) for r in answer.recommendations
    ]
    body = {
        "workload": {"task": "lora", "model": "qwen3-4b", "fused_loss": True},
        "constraints": {"os": "macos", "acquisition": "buy"},
    }
    refused = advisor().recommend(RecommendRequest.model_validate(body))
    assert not refused.feasible
    assert any(r.rule == "fused-loss-needs-triton" for r in refused.rejected)
