"""An answer lists the assumptions its figures rest on and no others (issue: "only the assumptions
that the request used"): a served model's answer states no optimizer bytes and no 16-bit weight size
its fp8 plan contradicts; a training run's states no serving engine's block size, and of the
optimizers' state sizes only its own."""

from __future__ import annotations

from typing import Any

from engine.answer.parts import SERVING_CONVENTIONS, TRAINING_CONVENTIONS
from engine.models.request import RecommendRequest
from engine.models.response import RecommendResponse
from engine.recommend import Advisor


def ask(advisor: Advisor, workload: dict[str, Any], constraints: dict[str, Any]) -> RecommendResponse:
    body = {"workload": workload, "constraints": constraints}
    return advisor.recommend(RecommendRequest.model_validate(body))


def test_a_served_model_lists_no_training_constant(advisor: Advisor) -> None:
    answer = ask(advisor, {"task": "inference", "model": "llama-3-1-70b"}, {"acquisition": "rent"})
    assert answer.recommendations[0].precision == "fp8"
    listed = set(answer.assumptions)
    assert not listed & TRAINING_CONVENTIONS, listed & TRAINING_CONVENTIONS
    assert "weight_bytes" not in listed  # 2 bytes a weight would contradict the fp8 plan beside it
    assert {"gpu_memory_utilization", "kv_block_size"} <= listed


def test_a_training_run_lists_its_optimizer_and_no_serving_constant(advisor: Advisor) -> None:
    workload = {"task": "full_finetune", "model": "llama-3-1-8b", "optimizer": "adamw_8bit"}
    answer = ask(advisor, workload, {"acquisition": "rent"})
    listed = set(answer.assumptions)
    assert not listed & SERVING_CONVENTIONS, listed & SERVING_CONVENTIONS
    assert {"weight_bytes", "gradient_bytes", "adam_8bit_state_bytes"} <= listed
    assert "adam_state_bytes" not in listed and "qlora_lora_rank" not in listed
