"""The sizing terms fitted to data/calibration/h100-2026-11-26.json and h200-2026-11-26.json: a
training step's memory-bound work, an encoder's width-dependent share of the peak and its workspace, and
an eager engine's launches of a mixture-of-experts layer. Figures are those measurements'."""

from __future__ import annotations

import pytest

from engine.knowledge import paths
from engine.models.calibration import DecodeRun
from engine.planning.calibration import load
from engine.sizing.serving_engines import (
    ENCODER_EFFICIENCY,
    HF_MOE_DISPATCH_FACTOR,
    encoder_efficiency,
    moe_pass_seconds,
    profile,
    workspace_bytes,
)
from engine.sizing.training_speed import (
    NORM_PASSES,
    achieved_utilization,
    memory_bound_seconds,
    normalised_elements,
    normalised_width,
)
from tests.support import model_shape

H100_BANDWIDTH = 3.35e12
H200_BANDWIDTH = 4.8e12

BGE_M3 = model_shape("bge-m3")
QWEN3_30B_A3B = model_shape("qwen3-30b-a3b")
QWEN3_8B = model_shape("qwen3-8b")


def test_the_memory_bound_term_slows_a_gpu_of_the_same_peak_by_its_bandwidth() -> None:
    """Qwen3-8B LoRA, 1 x 2,048 tokens: 8,979 tokens/s on the H200, 7,421 on the H100, both 989
    TFLOP/s: 48 ms a step apart, of which the bytes moved at 3.35 against 4.8 TB/s explain 31 ms (the
    rest is within the 25% band: data/calibration, tests/test_calibration.py)."""
    activations, weights = 20e9, 16.6e9
    # 36 layers, each normalising two 4,096-wide hidden states and, QK-norm, 32 query and 8 key heads
    # of 128 (Qwen3-8B config.json)
    norms = normalised_elements(QWEN3_8B, 2048)
    assert norms == 2048 * 36 * (2 * 4096 + 32 * 128 + 8 * 128)
    h100 = memory_bound_seconds(activations, weights, 0.0, H100_BANDWIDTH, norm_elements=norms)
    h200 = memory_bound_seconds(activations, weights, 0.0, H200_BANDWIDTH, norm_elements=norms)
    assert h100 == pytest.approx((4.3 * 20e9 + 1.5 * 16.6e9 + 240 * norms) / H100_BANDWIDTH)
    assert h100 / h200 == pytest.approx(4.8 / 3.35)
    assert h100 - h200 == pytest.approx(0.031, abs=0.0005)


def test_a_qk_norm_model_normalises_its_queries_and_keys_too() -> None:
    """Qwen3-0.6B (QK-norm, 16 query and 8 key heads of 128 on a 1,024-wide stream) normalises 2.5x the
    elements per layer of Qwen2.5-0.5B (896 wide, no QK-norm): the norms' term is why it trained at
    44,520 tokens/s against Qwen2.5-0.5B's 75,569 at 8 x 2,048 tokens on an H200
    (data/calibration/h200-2026-11-26.json, h200-2026-11-27-f.json) for 1.34x the FLOPs per token."""
    assert normalised_width(model_shape("qwen3-0-6b")) == 2 * 1024 + 16 * 128 + 8 * 128
    assert normalised_width(model_shape("qwen2-5-0-5b")) == 2 * 896
    plain = normalised_elements(model_shape("qwen2-5-0-5b"), 16384)
    assert plain == 16384 * 24 * 2 * 896
    assert normalised_elements(model_shape("qwen2-5-0-5b"), 16384, checkpointing=True) == pytest.approx(
        plain * 4 / 3
    )


def test_the_optimizer_state_moves_once_per_optimizer_step() -> None:
    one = memory_bound_seconds(0.0, 0.0, 8e9, H100_BANDWIDTH)
    accumulated = memory_bound_seconds(0.0, 0.0, 8e9, H100_BANDWIDTH, micro_steps=4)
    assert accumulated == pytest.approx(one / 4)
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        memory_bound_seconds(1.0, 1.0, 1.0, 0.0)


def test_narrow_models_reach_less_of_the_peak_and_wide_ones_the_stacks_ceiling() -> None:
    # engine/sizing/training_speed.py: min(ceiling, 0.74 h / (h + 1,100)), 0.88 of it for LoRA
    assert achieved_utilization("huggingface", 896) == pytest.approx(0.332, abs=0.001)  # Qwen2.5-0.5B
    assert achieved_utilization("huggingface", 1024) == pytest.approx(0.357, abs=0.001)  # Qwen3-0.6B
    assert achieved_utilization("huggingface", 4096) == 0.47
    assert achieved_utilization("huggingface", 5120, adapters=True) == pytest.approx(0.47 * 0.88)
    assert achieved_utilization("megatron-lm", 8192) == 0.47
    assert achieved_utilization("torchtitan", 1024) < achieved_utilization("torchtitan", 4096) == 0.39


def test_an_eager_prompt_read_moves_its_norms_where_vllm_fuses_them() -> None:
    """Prompt matmuls at min(0.53, 0.8 h / (h + 1,000)); an eager engine adds 80 bytes per normalised
    element, a third of a training step's (forward only); a Hugging Face MoE reads at half the curve
    taken at its expert's width (Mixtral 8x7B 0.31 of the peak at 8 x 128 tokens on an H200)."""
    eager, vllm = profile("hf-eager"), profile("vllm")
    assert eager.prefill_norm_bytes == NORM_PASSES / 3 == 80
    assert vllm.prefill_norm_bytes == 0
    assert vllm.prefill_share(hidden_size=896) == pytest.approx(0.8 * 896 / 1896)  # Qwen2.5-0.5B
    assert vllm.prefill_share(hidden_size=4096) == 0.53
    assert eager.prefill_share(hidden_size=4096, expert_width=14336) == pytest.approx(0.265)
    assert eager.prefill_share(hidden_size=2048, expert_width=768) == pytest.approx(0.5 * 0.8 * 768 / 1768)
    assert vllm.prefill_share(hidden_size=2048, expert_width=768) == vllm.prefill_share(hidden_size=2048)


def test_a_compiled_generate_step_waits_for_its_loop_on_the_host() -> None:
    """Qwen3-8B, static cache, compiled, batch 1: 7.453 ms a step on an H200 (4.8 TB/s) and 9.092 ms
    on an H100 (3.35 TB/s) (data/calibration/h200-2026-11-26.json, h100-2026-11-26.json). One
    bandwidth efficiency e for both and a fixed cost o: the difference gives e, the rest o."""
    weights = 16.4e9
    e = weights * (1 / H100_BANDWIDTH - 1 / H200_BANDWIDTH) / (9.092e-3 - 7.453e-3)
    o = 7.453e-3 - weights / (H200_BANDWIDTH * e)
    static, eager = profile("hf-static-compile"), profile("hf-eager")
    assert static.bandwidth_efficiency == pytest.approx(e, abs=0.01)
    assert static.step_overhead_s == pytest.approx(o, abs=0.1e-3)
    # eager decode is bounded by the host's launches, which include the loop: no second overhead
    assert eager.step_overhead_s == 0.0 and eager.bandwidth_efficiency == 0.44


def test_an_encoders_share_grows_with_its_width_between_a_server_and_the_bare_forward() -> None:
    """The bare forward on an H100 reached 0.20-0.23 of the peak at h 384, 0.39 at 768, 0.46-0.47 at
    1,024 (0.49 on an H200); TEI reached 0.35 with bge-large on an L4. 0.40 at 1,024 sits between."""
    assert encoder_efficiency(1024) == pytest.approx(ENCODER_EFFICIENCY)
    assert 0.35 < ENCODER_EFFICIENCY < 0.46
    assert encoder_efficiency(384) == pytest.approx(0.186, abs=0.001)
    assert encoder_efficiency(768) == pytest.approx(0.325, abs=0.001)
    assert encoder_efficiency(384) / encoder_efficiency(1024) == pytest.approx(0.21 / 0.455, rel=0.05)
    assert encoder_efficiency(16384) == 0.53  # no encoder beats a decoder's prefill share


def test_an_encoder_has_no_logits_and_a_dense_mlp_in_its_workspace() -> None:
    """bge-m3 over 64 x 512 tokens held 0.74 GB beside its weights on an H100."""
    tokens = 64 * 512
    encoder = workspace_bytes(BGE_M3, tokens, 64, logits=False)
    assert encoder == pytest.approx(tokens * 2 * (2 * 4096 + 2 * 1024 + 2 * 1024))
    assert encoder == pytest.approx(0.74e9, rel=0.1)
    with_head = workspace_bytes(BGE_M3, tokens, 64)
    assert with_head - encoder == pytest.approx(64 * 250_002 * 16)


def test_an_eager_moe_layer_launches_the_kernels_of_one_and_a_half_dense_layers() -> None:
    """transformers 5.17's grouped_mm experts: one eager decode forward of Qwen3-30B-A3B launches 4,390
    kernels (48 layers), Qwen3-8B 2,218 (36 layers) (torch.profiler, data/calibration/h200-2026-11-27-b.json):
    91.5 against 61.6 a layer, whatever the batch. The step is those launches: 78.7 ms for Qwen3-30B-A3B,
    against 50.9-122 ms measured at batch 1-32 on five machines."""
    runs = load(paths.data_dir() / "calibration" / "h200-2026-11-27-b.json").runs
    kernels = {
        run.model: run.forward_kernels
        for run in runs
        if isinstance(run, DecodeRun) and run.batch in (1, 32) and run.model in ("qwen3-8b", "qwen3-30b-a3b")
    }
    assert kernels == {"qwen3-8b": 2218, "qwen3-30b-a3b": 4390}
    per_layer = kernels["qwen3-30b-a3b"] / QWEN3_30B_A3B.n_layers, kernels["qwen3-8b"] / QWEN3_8B.n_layers
    assert per_layer[0] / per_layer[1] == pytest.approx(HF_MOE_DISPATCH_FACTOR, rel=0.02)
    eager, vllm = profile("hf-eager"), profile("vllm")
    assert eager.launch_seconds(QWEN3_30B_A3B) == pytest.approx(48 * 0.9e-3 * 1.22 * 1.49)
    assert eager.launch_seconds(QWEN3_30B_A3B) == pytest.approx(0.0787, abs=0.0005)
    assert vllm.launch_seconds(QWEN3_30B_A3B) == 0.0  # CUDA graphs: no host launches a step
    # the GPU's fixed cost of a fused MoE layer, the same at every batch, 92 us a layer on one GPU
    assert moe_pass_seconds(QWEN3_30B_A3B) == pytest.approx(48 * 92e-6)
    assert moe_pass_seconds(BGE_M3) == 0.0
