"""Inference memory: weights per precision, KV cache, runtime reserve, concurrent sequences.

Each test names the published figure it reproduces and its tolerance.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from engine.sizing import (
    GB,
    inference_memory_bytes,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    linear_weight_params,
    max_concurrent_sequences,
    model_kv_cache_bytes,
    model_weights_bytes,
    paged_tokens,
    runtime_reserve_bytes,
    total_params,
    weight_bits_per_param,
    weight_bytes_per_param,
    weights_bytes,
)
from tests.support import DEEPSEEK_V3, model_shape

_shape = model_shape


# --- Weights ----------------------------------------------------------------------------------------------


def test_seed_weights_7b_and_70b_fp16() -> None:
    """Seeds 000/001/002: 7B at fp16 = 14 GB; 70B at fp16 = 140 GB; guide G2's table: fp32 280 GB,
    int8 70 GB. Exact."""
    assert weights_bytes(7e9, "fp16") / GB == 14.0
    assert weights_bytes(70e9, "fp16") / GB == 140.0
    assert weights_bytes(70e9, "fp32") / GB == 280.0
    assert weights_bytes(70e9, "int8") / GB == 70.0


def test_int4_includes_group_scales() -> None:
    """Seeds 002/004: 70B at INT4 'about 35 GB' = 0.5 bytes/param, ignoring scales. GPTQ/AWQ store an fp16
    scale and a 4-bit zero per group of 128: 4.156 bits -> 36.4 GB. Exact (35 GB with no scale overhead)."""
    assert weight_bits_per_param("int4") == pytest.approx(4 + 20 / 128)
    assert weights_bytes(70e9, "int4") / GB == pytest.approx(70 * 4.15625 / 8)
    assert weights_bytes(70e9, "int4", scale_bits=0, zero_point_bits=0) / GB == pytest.approx(35.0)


def test_qlora_nf4_double_quant_overhead() -> None:
    """QLoRA Sec. 3: double quantization cuts the constants' overhead from 0.5 to 0.127 bits per parameter.
    Tolerance 0.0005 bits."""
    assert weight_bits_per_param("nf4") - 4 == pytest.approx(0.127, abs=0.0005)
    assert weight_bits_per_param("nf4", double_quant=False) - 4 == 0.5
    assert weight_bytes_per_param("bf16") == 2


def test_quantized_model_keeps_embeddings_16bit() -> None:
    """Llama-3.1-8B at int4: linear weights at 4.156 bits, the 1.05B embedding + head parameters at 2 bytes
    (as GPTQ/AWQ checkpoints keep them): 5.7 GB, not the naive 4.2 GB. Exact arithmetic."""
    shape = _shape("llama-3-1-8b")
    linear = linear_weight_params(shape)
    expected = linear * 4.15625 / 8 + (total_params(shape) - linear) * 2
    assert model_weights_bytes(shape, "int4") == pytest.approx(expected)
    assert model_weights_bytes(shape, "int4") / GB == pytest.approx(5.7, abs=0.05)
    assert model_weights_bytes(shape, "bf16") == total_params(shape) * 2


def test_transformer_math_101_inference_is_1_2x_weights() -> None:
    """Transformer Math 101: Total Memory_Inference ~= 1.2 x Model Memory. Exact."""
    assert inference_memory_bytes(14e9) == pytest.approx(1.2 * 14e9)
    assert inference_memory_bytes(14e9, 2e9) == pytest.approx(1.2 * 14e9 + 2e9)


# --- KV cache ---------------------------------------------------------------------------------------------


def test_seed_002_70b_kv_cache_needs_gqa_factor() -> None:
    """Guide G2: 70B, 8192 context, batch 32, fp16: '~85 GB' (and '~42 GB' at 4096). Its formula
    32 x 8192 x 80 x 128 x 2 x 2 omits n_kv_heads and evaluates to 10.7 GB; the ~85 GB answer needs
    Llama-2-70B's 8 KV heads (GQA). Tolerance 1%."""
    shape = _shape("llama-2-70b")
    assert model_kv_cache_bytes(shape, 8192, 32, dtype="fp16") / GB == pytest.approx(85.9, rel=0.01)
    assert model_kv_cache_bytes(shape, 4096, 32, dtype="fp16") / GB == pytest.approx(42.9, rel=0.01)
    seed_formula = 32 * 8192 * 80 * 128 * 2 * 2
    assert seed_formula / GB == pytest.approx(10.7, rel=0.01)
    assert model_kv_cache_bytes(shape, 8192, 32, dtype="fp16") == 8 * seed_formula
    # Without GQA (64 KV heads, multi-head attention) it would be 8x more again.
    assert kv_cache_bytes(80, 64, 128, 8192, 32) / GB == pytest.approx(687.2, rel=0.01)


def test_kv_per_token_llama_3_1_8b_and_llama_2_70b() -> None:
    """2 x layers x kv_heads x head_dim x 2 bytes: Llama-3.1-8B 131,072 B/token (128 KiB; 1.07 GB at 8k),
    Llama-2-70B 327,680 B/token (2.68 GB at 8k). Exact."""
    assert kv_cache_bytes_per_token(_shape("llama-3-1-8b")) == 131_072
    assert kv_cache_bytes_per_token(_shape("llama-2-70b")) == 327_680
    assert model_kv_cache_bytes(_shape("llama-3-1-8b"), 8192) / GB == pytest.approx(1.074, abs=0.001)


def test_sliding_window_caps_kv() -> None:
    """Mistral 7B v0.1: rolling buffer of 4096 tokens on every layer (Jiang et al. 2023, Sec. 2); Gemma-2:
    the window applies to every other layer, the rest keep the full context. Exact."""
    mistral = _shape("mistral-7b")
    assert model_kv_cache_bytes(mistral, 32768) == model_kv_cache_bytes(mistral, 4096)
    gemma = _shape("gemma-2-9b")
    per_token_layer = 2 * 8 * 256 * 2
    assert model_kv_cache_bytes(gemma, 8192) == per_token_layer * (21 * 4096 + 21 * 8192)


def test_kv_dtype_and_tensor_parallel() -> None:
    """fp8 KV halves bf16 (vLLM --kv-cache-dtype fp8); tensor parallelism splits KV heads, replicating them
    when t > n_kv_heads (llm-analysis: max(n_kv_heads / t, 1) heads per GPU). Exact."""
    shape = _shape("llama-3-1-70b")
    bf16 = model_kv_cache_bytes(shape, 4096, 4)
    assert model_kv_cache_bytes(shape, 4096, 4, dtype="fp8") == bf16 / 2
    assert model_kv_cache_bytes(shape, 4096, 4, tensor_parallel=4) == bf16 / 4
    assert model_kv_cache_bytes(shape, 4096, 4, tensor_parallel=16) == bf16 / 8


@pytest.mark.parametrize(
    ("args", "kwargs", "name"),
    [
        ((0, 8, 128, 10), {}, "n_layers"),
        ((32, 8, 128, -1), {}, "context_tokens"),
        ((32, 8, 128, 10, 0), {}, "batch"),
        ((32, 8, 128, 10), {"bytes_per_element": float("nan")}, "bytes_per_element"),
        ((32, 8, 128, 10), {"windowed_layers": 3}, "windowed_layers"),
        ((32, 8, 128, 10), {"sliding_window": 16, "windowed_layers": 40}, "windowed_layers"),
    ],
)
def test_kv_cache_rejects_invalid(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        kv_cache_bytes(*args, **kwargs)


# --- Reserve and concurrency ------------------------------------------------------------------------------


def test_vllm_reserve_and_paged_blocks() -> None:
    """vLLM defaults: gpu_memory_utilization 0.9 leaves 8 GB of an 80 GB GPU; 16-token KV blocks. Exact."""
    assert runtime_reserve_bytes(80 * GB) == pytest.approx(8 * GB)
    assert paged_tokens(8192) == 8192
    assert paged_tokens(8193) == 8208
    assert paged_tokens(0) == 0


def test_max_concurrent_sequences_llama_3_1_8b_on_80gb() -> None:
    """Llama-3.1-8B bf16 (16.06 GB) on one 80 GB GPU at 0.9 utilization: (72 - 16.06) / 1.074 GB per 8k
    sequence = 52 sequences. Exact arithmetic."""
    shape = _shape("llama-3-1-8b")
    weights = model_weights_bytes(shape)
    per_seq = model_kv_cache_bytes(shape, paged_tokens(8192))
    expected = math.floor((0.9 * 80 * GB - weights) / per_seq)
    assert max_concurrent_sequences(80 * GB, weights, per_seq) == expected == 52
    # 70B in bf16 does not fit one 80 GB GPU at all; it does on two.
    big = model_weights_bytes(_shape("llama-3-1-70b"))
    assert max_concurrent_sequences(80 * GB, big, per_seq) == 0
    assert max_concurrent_sequences(80 * GB, big, per_seq, n_gpus=2) > 0


def test_inference_validation() -> None:
    with pytest.raises(ValueError, match="precision"):
        weights_bytes(7e9, "int3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unquantized_params"):
        weights_bytes(7e9, "int4", unquantized_params=8e9)
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        runtime_reserve_bytes(80 * GB, gpu_memory_utilization=1.5)
    with pytest.raises(ValueError, match="dtype"):
        model_kv_cache_bytes(_shape("llama-3-1-8b"), 10, dtype="int4")  # type: ignore[arg-type]


def test_latent_attention_caches_one_compressed_latent_per_token() -> None:
    """DeepSeek-V2 (arXiv 2405.04434), Sec. 2.1.3 and Table 1: MLA caches (d_c + d_h^R) = 4.5 d_h elements per
    token and layer; DeepSeek-V3 (d_c 512, rope 64): 576 per layer, 61 layers, bf16 -> 70,272 bytes per token,
    the same on every tensor-parallel GPU."""
    assert kv_cache_bytes_per_token(DEEPSEEK_V3) == 61 * 576 * 2 == 70_272
    one = model_kv_cache_bytes(DEEPSEEK_V3, 4096, 2)
    assert one == 70_272 * 4096 * 2
    assert model_kv_cache_bytes(DEEPSEEK_V3, 4096, 2, tensor_parallel=8) == one
