"""Throughput: memory-bound decode, roofline, prefill, tensor-parallel communication, MoE reads.

Each test names the published figure it reproduces and its tolerance.
"""

from __future__ import annotations

import pytest

from engine.sizing import (
    GB,
    TB,
    TFLOPS,
    allreduce_seconds,
    attended_layer_tokens,
    compute_seconds,
    decode_bytes_per_step,
    decode_params_read_per_token,
    decode_step_seconds,
    decode_tokens_per_second,
    forward_flops_per_token,
    moe_decode_params_read,
    moe_expected_experts,
    prefill_seconds,
    tensor_parallel_comm_seconds,
    total_params,
)
from tests.support import model_shape

_shape = model_shape


@pytest.mark.parametrize(
    ("bandwidth_tb_s", "tok_7b", "tok_70b"),
    [(3.35, 240, 24), (2.0, 143, 14), (1.0, 71, 7), (0.936, 67, None)],
    ids=["h100-sxm", "a100-sxm", "rtx-4090", "rtx-3090"],
)
def test_seed_002_bandwidth_bound_tables(bandwidth_tb_s: float, tok_7b: int, tok_70b: int | None) -> None:
    """Guide G2, 'Bandwidth-per-Dollar Analysis': 7B FP16 (14 GB) and 70B FP16 (140 GB) batch-1 tokens/s.
    The tables equal bandwidth / model size at 100% efficiency (its '70% efficiency' remark does not match
    them). Tolerance: the guide's rounding, +-1 token/s."""
    bw = bandwidth_tb_s * TB
    assert decode_tokens_per_second(14 * GB, bw, efficiency=1.0) == pytest.approx(tok_7b, abs=1.0)
    if tok_70b is not None:
        assert decode_tokens_per_second(140 * GB, bw, efficiency=1.0) == pytest.approx(tok_70b, abs=1.0)


def test_seed_002_rtx_4090_at_70_percent() -> None:
    """Guide G2, Q3: '14 GB / (1 TB/s x 0.7) = 20 ms. Throughput: ~50 tokens/sec'. Default efficiency 0.7.
    Exact."""
    assert decode_tokens_per_second(14 * GB, 1 * TB) == pytest.approx(50.0)
    # Its H100 claim '~239 tokens/sec ... 70% efficiency' is 167.5 tokens/s at 70%.
    assert decode_tokens_per_second(14 * GB, 3.35 * TB) == pytest.approx(167.5)


def test_decode_reads_kv_cache_too() -> None:
    """Bytes per step = weights + batch x KV (Pope et al. 2022): 8k-token context adds 1.07 GB to
    Llama-3.1-8B's 16 GB per token at batch 1. Exact."""
    shape = _shape("llama-3-1-8b")
    weights = decode_params_read_per_token(shape) * 2
    kv = 131_072 * 8192
    assert decode_bytes_per_step(weights, kv) == weights + kv
    assert decode_bytes_per_step(weights, kv, batch=4) == weights + 4 * kv


def test_roofline_crossover() -> None:
    """Batched decode is memory bound at small batch (step time flat) and compute bound at large batch
    (step time linear in batch); A100: 312 TFLOPS, 2.0 TB/s. Exact at the two ends."""
    f, w = 2 * 7e9, 14 * GB
    small = decode_step_seconds(1, f, w, 312 * TFLOPS, 2 * TB)
    assert small == pytest.approx(w / (2 * TB * 0.7))
    big = 100_000
    step = decode_step_seconds(big, f, w, 312 * TFLOPS, 2 * TB)
    assert step == pytest.approx(big * f / (312 * TFLOPS * 0.4))


def test_prefill_and_compute_time() -> None:
    """Prefill of 2,048 tokens on a 7B model, H100 dense BF16 989 TFLOPS at MFU 0.4: 2 x 7e9 x 2048 /
    (989e12 x 0.4) = 72.5 ms. Forward FLOPs 2N + 2 n_layer n_ctx d_attn (Kaplan et al. 2020, Table 1).
    Exact."""
    f = forward_flops_per_token(7e9)
    assert f == 14e9
    assert prefill_seconds(2048, f, 989 * TFLOPS) == pytest.approx(2048 * 14e9 / (989e12 * 0.4))
    assert forward_flops_per_token(
        7e9, n_layers=32, context_tokens=2048, attention_dim=4096
    ) == pytest.approx(14e9 + 2 * 32 * 2048 * 4096)
    assert compute_seconds(0, 1e12) == 0


def test_allreduce_ring_model() -> None:
    """Ring all-reduce moves 2(n-1)/n of the message per GPU (NCCL tests PERFORMANCE.md) plus a fixed 8 us
    latency (llm-analysis). Exact."""
    assert allreduce_seconds(1e6, 1, 300e9) == 0.0
    assert allreduce_seconds(1e6, 2, 300e9) == pytest.approx(8e-6 + 1e6 / 300e9)
    assert allreduce_seconds(1e6, 8, 300e9, latency_s=0) == pytest.approx(2 * 7 / 8 * 1e6 / 300e9)


def test_tensor_parallel_comm_nvlink_vs_pcie() -> None:
    """Megatron-LM: 2 all-reduces per layer in the forward pass. Prefill of 2,048 tokens of Llama-2-70B at
    TP 4: NVLink (300 GB/s per direction) vs PCIe 4.0 x16 (32 GB/s): PCIe ~9x slower, in line with seed
    002's '10-20x longer'. Tolerance: ratio between 8 and 10."""
    args = (2048, 8192, 80, 4)
    nvlink = tensor_parallel_comm_seconds(*args, 300e9)
    pcie = tensor_parallel_comm_seconds(*args, 32e9)
    assert nvlink == pytest.approx(80 * 2 * (8e-6 + 1.5 * 2048 * 8192 * 2 / 300e9))
    assert 8 < pcie / nvlink < 10
    assert tensor_parallel_comm_seconds(2048, 8192, 80, 1, 300e9) == 0


def test_moe_reads_active_parameters() -> None:
    """Mixtral 8x7B decodes at batch 1 reading only 2 of 8 experts per layer: ~12.7B parameters (the 12.9B
    active minus the input embedding table), growing toward all 46.7B as the batch touches every expert.
    Tolerance 1%."""
    shape = _shape("mixtral-8x7b")
    assert moe_decode_params_read(shape, 1) == decode_params_read_per_token(shape)
    assert moe_decode_params_read(shape, 1) / 1e9 == pytest.approx(12.75, rel=0.01)
    assert moe_decode_params_read(shape, 64) / 1e9 == pytest.approx(
        total_params(shape) / 1e9 - 0.131, rel=0.01
    )
    assert moe_expected_experts(8, 2, 1) == pytest.approx(2.0)
    assert moe_expected_experts(8, 2, 8) == pytest.approx(7.2, abs=0.01)
    dense = _shape("llama-3-1-8b")
    assert moe_decode_params_read(dense, 64) == decode_params_read_per_token(dense)


def test_throughput_validation() -> None:
    with pytest.raises(ValueError, match="efficiency"):
        decode_tokens_per_second(14 * GB, 1 * TB, efficiency=0)
    with pytest.raises(ValueError, match="memory_bandwidth"):
        decode_tokens_per_second(14 * GB, float("inf"))
    with pytest.raises(ValueError, match="mfu"):
        compute_seconds(1e12, 1e12, mfu=1.2)
    with pytest.raises(ValueError, match="experts_per_token"):
        moe_expected_experts(2, 3, 4)


def test_a_sliding_windows_layers_attend_to_their_window_when_a_prompt_is_read() -> None:
    """Gemma 3 27B (kb/models/gemma-3-27b.yaml): 52 of its 62 layers attend within 1,024 tokens. Reading a
    32,768-token prompt, a query of such a layer attends 1,024 - 1,024^2 / (2 x 32,768) keys on average,
    not 16,384, so those layers add 2 x that each to the attention term, and the 10 global ones the whole
    prompt; a prompt inside the window is read as by full attention. ModernBERT-base (kb/models/
    modernbert-base.yaml) reads bidirectionally: 8 global layers attend the whole input twice over, 14
    local ones their 128-token window."""
    gemma = _shape("gemma-3-27b")
    prompt = 32_768
    assert attended_layer_tokens(gemma, prompt) == round(10 * prompt + 52 * (2 * 1024 - 1024**2 / prompt))
    assert attended_layer_tokens(gemma, 512) == 62 * 512
    assert attended_layer_tokens(gemma, prompt) < 0.25 * 62 * prompt
    modernbert = _shape("modernbert-base")
    assert attended_layer_tokens(modernbert, 8192, bidirectional=True) == 8 * 2 * 8192 + 14 * 2 * 128
