"""Bytes per stored value for weight and KV-cache formats, including quantization scale overhead.

A b-bit quantized tensor also stores its scales (and zero points), one set per group of weights, so
it costs ``b + (scale_bits + zero_point_bits) / group_size`` bits per weight:

* ``int4`` (GPTQ / AWQ style): 4 bits + one fp16 scale and one 4-bit zero point per group of 128
  -> 4 + 20/128 = 4.156 bits = 0.520 bytes per parameter. Group size 128 is the default of GPTQ
  (Frantar et al. 2022, arXiv 2210.17323, Sec. 5) and AWQ (Lin et al. 2023, arXiv 2306.00978, Sec. 5.1).
* ``nf4`` (bitsandbytes 4-bit NormalFloat, QLoRA): 4 bits + one fp32 absmax per block of 64 = 0.5 bits,
  reduced by double quantization (8-bit second-level constants, block 256) to
  8/64 + 32/(64*256) = 0.127 bits -> 4.127 bits = 0.516 bytes per parameter.
  Source: Dettmers et al. 2023, QLoRA (arXiv 2305.14314), Sec. 3 "Double Quantization".
* ``int8`` / ``fp8``: 1 byte; their per-channel or per-tensor scales add under 0.01 bits per parameter
  for hidden sizes >= 2048 and are ignored.
* ``fp32`` 4 bytes, ``fp16`` / ``bf16`` 2 bytes. Source: EleutherAI, "Transformer Math 101"
  (https://blog.eleuther.ai/transformer-math/), "Model Weights".
"""

from __future__ import annotations

from typing import Literal, get_args

from engine.sizing._checks import check_choice, check_non_negative, check_positive_int

__all__ = [
    "DEFAULT_QUANT_GROUP_SIZE",
    "DEFAULT_QUANT_SCALE_BITS",
    "DEFAULT_QUANT_ZERO_POINT_BITS",
    "KV_CACHE_DTYPES",
    "NF4_DOUBLE_QUANT_OVERHEAD_BITS",
    "NF4_OVERHEAD_BITS",
    "WEIGHT_PRECISIONS",
    "KvCacheDtype",
    "WeightPrecision",
    "kv_cache_bytes_per_element",
    "weight_bits_per_param",
    "weight_bytes_per_param",
]

WeightPrecision = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4", "nf4"]
WEIGHT_PRECISIONS: tuple[str, ...] = get_args(WeightPrecision)

KvCacheDtype = Literal["fp32", "fp16", "bf16", "fp8", "int8"]
KV_CACHE_DTYPES: tuple[str, ...] = get_args(KvCacheDtype)

_BASE_BITS: dict[str, float] = {
    "fp32": 32.0,
    "fp16": 16.0,
    "bf16": 16.0,
    "fp8": 8.0,
    "int8": 8.0,
    "int4": 4.0,
    "nf4": 4.0,
}

DEFAULT_QUANT_GROUP_SIZE: int = 128
"""Weights per quantization group for ``int4`` (GPTQ and AWQ default group size)."""

DEFAULT_QUANT_SCALE_BITS: int = 16
"""Bits per group scale for ``int4`` (fp16 scales in GPTQ/AWQ checkpoints)."""

DEFAULT_QUANT_ZERO_POINT_BITS: int = 4
"""Bits per group zero point for ``int4`` (asymmetric quantization, packed 4-bit zeros)."""

NF4_OVERHEAD_BITS: float = 32.0 / 64.0
"""NF4 without double quantization: one fp32 absmax per block of 64 weights = 0.5 bits/param
(QLoRA Sec. 3)."""

NF4_DOUBLE_QUANT_OVERHEAD_BITS: float = 8.0 / 64.0 + 32.0 / (64.0 * 256.0)
"""NF4 with double quantization: 8/64 + 32/(64*256) = 0.127 bits/param (QLoRA Sec. 3)."""


def weight_bits_per_param(
    precision: WeightPrecision,
    *,
    group_size: int = DEFAULT_QUANT_GROUP_SIZE,
    scale_bits: float = DEFAULT_QUANT_SCALE_BITS,
    zero_point_bits: float = DEFAULT_QUANT_ZERO_POINT_BITS,
    double_quant: bool = True,
) -> float:
    """Bits stored per weight, scale overhead included (bits).

    Formula: ``int4``: ``4 + (scale_bits + zero_point_bits) / group_size`` (4.156 at the defaults);
    ``nf4``: ``4 + 0.127`` with double quantization, ``4 + 0.5`` without; other formats: their width.
    ``group_size``, ``scale_bits`` and ``zero_point_bits`` apply to ``int4`` only; ``double_quant`` to
    ``nf4`` only. Sources: GPTQ (arXiv 2210.17323), AWQ (arXiv 2306.00978), QLoRA (arXiv 2305.14314) Sec. 3.
    """
    check_choice("precision", precision, WEIGHT_PRECISIONS)
    check_positive_int("group_size", group_size)
    scale = check_non_negative("scale_bits", scale_bits)
    zero = check_non_negative("zero_point_bits", zero_point_bits)
    if not isinstance(double_quant, bool):
        raise ValueError(f"double_quant must be a bool, got {double_quant!r}")
    bits = _BASE_BITS[precision]
    if precision == "int4":
        return bits + (scale + zero) / group_size
    if precision == "nf4":
        return bits + (NF4_DOUBLE_QUANT_OVERHEAD_BITS if double_quant else NF4_OVERHEAD_BITS)
    return bits


def weight_bytes_per_param(
    precision: WeightPrecision,
    *,
    group_size: int = DEFAULT_QUANT_GROUP_SIZE,
    scale_bits: float = DEFAULT_QUANT_SCALE_BITS,
    zero_point_bits: float = DEFAULT_QUANT_ZERO_POINT_BITS,
    double_quant: bool = True,
) -> float:
    """Bytes stored per weight, scale overhead included (bytes): :func:`weight_bits_per_param` / 8.

    ``fp32`` 4, ``fp16``/``bf16`` 2 (Transformer Math 101), ``fp8``/``int8`` 1, ``int4`` 0.520,
    ``nf4`` 0.516 (QLoRA double quantization) at the defaults.
    """
    return (
        weight_bits_per_param(
            precision,
            group_size=group_size,
            scale_bits=scale_bits,
            zero_point_bits=zero_point_bits,
            double_quant=double_quant,
        )
        / 8.0
    )


_KV_BYTES: dict[str, float] = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0}


def kv_cache_bytes_per_element(dtype: KvCacheDtype) -> float:
    """Bytes per cached key or value element (bytes): fp32 4, fp16/bf16 2, fp8/int8 1.

    fp8 KV cache as in vLLM's ``--kv-cache-dtype fp8`` (vLLM engine arguments,
    https://docs.vllm.ai/en/latest/models/engine_args.html); per-tensor scales are ignored.
    """
    check_choice("dtype", dtype, KV_CACHE_DTYPES)
    return _KV_BYTES[dtype]
