"""Hugging Face generate's mixture-of-experts decode (engine/sizing/serving_engines.py, MOE_GATHER_NOTE):
each decode step copies one expert per sequence and routed slot, reads, writes and reads the copy again,
and holds one layer's copies at once. Figures: Mixtral 8x7B's config.json (32 layers, hidden 4,096, 8
experts of 14,336, 2 per token) and its measurements on an H200 (data/calibration/h200-2026-11-27-f.json:
5.69 GB held beside the weights at batch 8, 127.2 ms a step)."""

from __future__ import annotations

import pytest

from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest
from engine.planning.calibration import SINGLE_GPU
from engine.planning.memory import Layout, per_gpu
from engine.planning.performance import decode_work, inference_speed
from engine.planning.workload import Job, resolve
from engine.sizing import moe_routed_params_per_token
from engine.sizing.serving_engines import MOE_GATHER_BANDWIDTH_EFFICIENCY, MOE_GATHER_PASSES
from tests.support import model_shape

EXPERT = 3 * 4096 * 14336  # one SwiGLU expert's gate, up and down projections: 176,160,768
H200_BANDWIDTH = 4.8e12
LAYOUT = Layout(method="inference", precision="bf16")


def mixtral(kb: KB, engine: str, batch: int) -> Job:
    workload = {
        "task": "inference",
        "model": "mixtral-8x7b",
        "batch_size": batch,
        "precision": "bf16",
        "serving": {"avg_input_tokens": 128, "avg_output_tokens": 32, "engine": engine},
    }
    return resolve(RecommendRequest.model_validate({"workload": workload}), kb)


def test_a_token_visits_its_routed_experts_in_every_moe_layer() -> None:
    assert moe_routed_params_per_token(model_shape("mixtral-8x7b")) == 32 * 2 * EXPERT
    assert moe_routed_params_per_token(model_shape("llama-3-1-8b")) == 0


def test_generate_copies_one_expert_per_sequence_and_slot_where_vllm_streams_each_visited_once(
    kb: KB,
) -> None:
    eager = decode_work(mixtral(kb, "hf-eager", 8), LAYOUT)
    # 8 sequences x 2 slots x 32 layers of 176M parameters in bf16: 180 GB copied a step
    assert eager.gathered_bytes == pytest.approx(8 * 2 * 32 * EXPERT * 2, rel=1e-4)
    vllm = decode_work(mixtral(kb, "vllm", 8), LAYOUT)
    assert vllm.gathered_bytes == 0.0
    # vLLM streams the experts the batch visits (7.2 of 8 a layer at batch 8, uniform routing); generate
    # streams only the shared weights, which are what the two leave out of each other
    visited = 32 * 8 * (1 - 0.75**8) * EXPERT * 2
    assert vllm.weight_bytes - eager.weight_bytes == pytest.approx(visited, rel=1e-3)


def test_the_copies_take_three_passes_and_set_the_eager_step_at_batch_8(kb: KB) -> None:
    job = mixtral(kb, "hf-eager", 8)
    work = decode_work(job, LAYOUT)
    gathers = MOE_GATHER_PASSES * work.gathered_bytes / (H200_BANDWIDTH * MOE_GATHER_BANDWIDTH_EFFICIENCY)
    assert gathers == pytest.approx(0.119, abs=0.001)  # of the 127.2 ms measured
    speed = inference_speed(job, kb.gpus["nvidia-h200-sxm"], LAYOUT, SINGLE_GPU)
    assert speed is not None
    assert 1 / speed.tokens_per_s == pytest.approx(0.1272, rel=0.1)
    # at batch 1 the copies are an eighth as many (15 ms): 46 ms a step against 40.5 ms measured
    one = inference_speed(mixtral(kb, "hf-eager", 1), kb.gpus["nvidia-h200-sxm"], LAYOUT, SINGLE_GPU)
    assert one is not None and 1 / one.tokens_per_s == pytest.approx(0.0405, rel=0.15)
    assert 1 / one.tokens_per_s < 1 / speed.tokens_per_s / 2


def test_a_decode_step_holds_one_layers_copies(kb: KB) -> None:
    held = per_gpu(mixtral(kb, "hf-eager", 8), LAYOUT).activations
    assert held == pytest.approx(16 * EXPERT * 2, rel=1e-4)  # 5.64 GB; 5.69 GB measured
    assert per_gpu(mixtral(kb, "vllm", 8), LAYOUT).activations < 2e9  # vLLM's workspace instead
