"""Inference memory: weights at a precision, the KV cache, the runtime reserve, and how many sequences fit.

KV cache (GQA-aware; Pope et al. 2022, "Efficiently Scaling Transformer Inference", arXiv 2211.05102,
Sec. 2; Ainslie et al. 2023, GQA): ``2 (K and V) x layers x n_kv_heads x head_dim x tokens x batch x
bytes``. Layers with a sliding window keep at most ``window`` tokens (Mistral 7B rolling buffer, Jiang et
al. 2023, arXiv 2310.06825, Sec. 2; Gemma-2 on every other layer).

Guide G2's 70B example writes ``32 x 8192 x 80 x 128 x 2 x 2 bytes = ~85 GB``: that product is 10.7 GB;
the ~85 GB answer is right only with the factor n_kv_heads = 8 (Llama-2-70B's GQA), which the formula omits.
Its 4096-token variant ("~42 GB") has the same omission. Without GQA (64 KV heads) it would be 687 GB.

Runtime reserve: Transformer Math 101 puts forward-pass overhead at <= 20% of the weights (``Total ~= 1.2 x
model memory``); vLLM uses ``gpu_memory_utilization`` = 0.9 of the GPU by default, leaving 10% for the CUDA
context, allocator and other processes, and fills what remains after weights and activations with
PagedAttention KV blocks of 16 tokens (Kwon et al. 2023, arXiv 2309.06180).
"""

from __future__ import annotations

import math

from engine.sizing._checks import (
    check_fraction,
    check_non_negative,
    check_non_negative_int,
    check_positive,
    check_positive_int,
    checked,
)
from engine.sizing.conventions import (
    INFERENCE_OVERHEAD_FRACTION,
    VLLM_BLOCK_SIZE,
    VLLM_GPU_MEMORY_UTILIZATION,
)
from engine.sizing.params import linear_weight_params, total_params
from engine.sizing.precision import (
    DEFAULT_QUANT_GROUP_SIZE,
    DEFAULT_QUANT_SCALE_BITS,
    DEFAULT_QUANT_ZERO_POINT_BITS,
    KvCacheDtype,
    WeightPrecision,
    kv_cache_bytes_per_element,
    weight_bytes_per_param,
)
from engine.sizing.shape import TransformerShape

__all__ = [
    "inference_memory_bytes",
    "kv_cache_bytes",
    "kv_cache_bytes_per_token",
    "max_concurrent_sequences",
    "model_kv_cache_bytes",
    "model_weights_bytes",
    "paged_tokens",
    "recurrent_state_bytes",
    "runtime_reserve_bytes",
    "weights_bytes",
]


def weights_bytes(
    n_params: float,
    precision: WeightPrecision = "bf16",
    *,
    unquantized_params: float = 0,
    unquantized_bytes_per_param: float = 2.0,
    group_size: int = DEFAULT_QUANT_GROUP_SIZE,
    scale_bits: float = DEFAULT_QUANT_SCALE_BITS,
    zero_point_bits: float = DEFAULT_QUANT_ZERO_POINT_BITS,
    double_quant: bool = True,
) -> float:
    """Memory of the model weights (bytes).

    Formula: ``(n_params - unquantized_params) * bytes_per_param(precision) + unquantized_params *
    unquantized_bytes_per_param``; 4-bit formats include their group-scale overhead
    (:func:`engine.sizing.precision.weight_bytes_per_param`: int4 0.520 B, nf4 0.516 B).
    7B at fp16 = 14 GB and 70B = 140 GB (seeds 000-002); 70B at int4 = 36.4 GB (guide G2 and 004 say
    ~35 GB, ignoring scales). Source: Transformer Math 101, "Model Weights".
    """
    p = check_positive("n_params", n_params)
    keep = check_non_negative("unquantized_params", unquantized_params)
    if keep > p:
        raise ValueError(f"unquantized_params ({unquantized_params}) cannot exceed n_params ({n_params})")
    per = weight_bytes_per_param(
        precision,
        group_size=group_size,
        scale_bits=scale_bits,
        zero_point_bits=zero_point_bits,
        double_quant=double_quant,
    )
    return (p - keep) * per + keep * check_non_negative(
        "unquantized_bytes_per_param", unquantized_bytes_per_param
    )


def model_weights_bytes(
    shape: TransformerShape,
    precision: WeightPrecision = "bf16",
    *,
    quantize_embeddings: bool = False,
    group_size: int = DEFAULT_QUANT_GROUP_SIZE,
    double_quant: bool = True,
) -> float:
    """Weights of a model given by its shape (bytes).

    Formula: :func:`weights_bytes` with ``n_params = total_params(shape)``; for 8- and 4-bit formats the
    parameters outside the layers' linear projections (embeddings, LM head, norms, biases, router) stay in
    16-bit unless ``quantize_embeddings``, as in GPTQ/AWQ/bitsandbytes checkpoints. Llama-3.1-8B at int4:
    5.7 GB (the 1.05B embedding + head parameters at 2 bytes), not 4.2 GB.
    """
    if not isinstance(quantize_embeddings, bool):
        raise ValueError(f"quantize_embeddings must be a bool, got {quantize_embeddings!r}")
    n = total_params(shape)
    quantized = precision in ("int8", "int4", "nf4", "fp8")
    keep = 0 if (quantize_embeddings or not quantized) else n - linear_weight_params(shape)
    return weights_bytes(
        n, precision, unquantized_params=keep, group_size=group_size, double_quant=double_quant
    )


def kv_cache_bytes(
    n_layers: int,
    n_kv_heads: int,
    head_dim: int,
    context_tokens: int,
    batch: int = 1,
    *,
    bytes_per_element: float = 2.0,
    sliding_window: int | None = None,
    windowed_layers: int | None = None,
    tensor_parallel: int = 1,
    tensors_per_head: int = 2,
) -> float:
    """KV cache for ``batch`` sequences of ``context_tokens`` tokens, per GPU (bytes).

    Formula: ``2 x sum_layers(min(context, window) for windowed layers else context) x kv_heads_per_gpu x
    head_dim x batch x bytes_per_element``, with ``kv_heads_per_gpu = ceil(n_kv_heads / tensor_parallel)``
    (heads are replicated when ``tensor_parallel`` exceeds them). ``windowed_layers`` defaults to all layers
    when ``sliding_window`` is set. ``tensors_per_head`` is 2 (a key and a value); multi-head latent
    attention caches one joint latent (1, with ``n_kv_heads`` 1 and ``head_dim`` the latent width).
    Llama-2-70B (80 layers, 8 KV heads, head_dim 128), 8192 tokens, batch 32,
    fp16: 85.9 GB (guide G2's ~85 GB; see the module docstring).
    """
    layers = check_positive_int("n_layers", n_layers)
    heads = check_positive_int("n_kv_heads", n_kv_heads)
    dim = check_positive_int("head_dim", head_dim)
    tokens = check_non_negative_int("context_tokens", context_tokens)
    b = check_positive_int("batch", batch)
    per = check_positive("bytes_per_element", bytes_per_element)
    tp = check_positive_int("tensor_parallel", tensor_parallel)
    windowed = 0
    window_tokens = tokens
    if sliding_window is not None:
        window = check_positive_int("sliding_window", sliding_window)
        windowed = (
            layers if windowed_layers is None else check_non_negative_int("windowed_layers", windowed_layers)
        )
        if windowed > layers:
            raise ValueError(f"windowed_layers ({windowed}) cannot exceed n_layers ({layers})")
        window_tokens = min(tokens, window)
    elif windowed_layers is not None:
        raise ValueError("windowed_layers needs sliding_window")
    token_layers = (layers - windowed) * tokens + windowed * window_tokens
    heads_per_gpu = math.ceil(heads / tp)
    tensors = check_positive_int("tensors_per_head", tensors_per_head)
    return float(tensors) * token_layers * heads_per_gpu * dim * b * per


def kv_cache_bytes_per_token(shape: TransformerShape, dtype: KvCacheDtype = "bf16") -> float:
    """KV cache per token of context, below any sliding window (bytes/token).

    Formula: ``attention_layers * kv_elements_per_token_layer * bytes`` (``2 * n_kv_heads * head_dim``, or
    the MLA latent; a linear-attention or Mamba layer caches none). Llama-3.1-8B bf16: 131,072 B (128 KiB);
    Llama-2-70B: 327,680 B; DeepSeek-V3: 70,272 B.
    """
    layers = shape.attention_layers
    return float(layers * shape.kv_elements_per_token_layer) * kv_cache_bytes_per_element(dtype)


def model_kv_cache_bytes(
    shape: TransformerShape,
    context_tokens: int,
    batch: int = 1,
    *,
    dtype: KvCacheDtype = "bf16",
    tensor_parallel: int = 1,
) -> float:
    """KV cache of a model given by its shape (bytes): :func:`kv_cache_bytes` with the shape's attention
    layers, KV heads, head width and sliding window (all layers for Mistral 7B v0.1, half for Gemma-2),
    plus each sequence's recurrent state in the layers that keep one (:func:`recurrent_state_bytes`). A
    multi-head latent attention model caches one latent of ``kv_lora_rank + qk_rope_head_dim`` per token
    and layer, the same on every tensor-parallel GPU (vLLM and SGLang replicate it)."""
    state = recurrent_state_bytes(shape, batch, tensor_parallel=tensor_parallel)
    if shape.attention_layers == 0:
        return state
    mla = shape.is_mla
    return state + kv_cache_bytes(
        shape.attention_layers,
        1 if mla else shape.n_kv_heads,
        shape.kv_elements_per_token_layer if mla else shape.head_dim,
        context_tokens,
        batch,
        bytes_per_element=kv_cache_bytes_per_element(dtype),
        sliding_window=shape.sliding_window,
        windowed_layers=shape.windowed_layers if shape.sliding_window is not None else None,
        tensor_parallel=tensor_parallel,
        tensors_per_head=1 if mla else 2,
    )


def recurrent_state_bytes(shape: TransformerShape, batch: int = 1, *, tensor_parallel: int = 1) -> float:
    """The fixed-size state of a shape's linear-attention or Mamba layers for ``batch`` sequences, per GPU
    (bytes): ``state_layers x state_bytes_per_layer x batch / tensor_parallel`` (their heads split over the
    GPUs as attention's do), whatever the context's length. Qwen3-Next's 36 Gated DeltaNet layers keep
    32 x 128 x 128 values and a 3-step convolution window a sequence each."""
    if not shape.state_layers:
        return 0.0
    sequences = check_positive_int("batch", batch)
    return (
        shape.state_layers
        * shape.state_bytes_per_layer
        * sequences
        / check_positive_int("tensor_parallel", tensor_parallel)
    )


def paged_tokens(context_tokens: int, *, block_size: int = VLLM_BLOCK_SIZE) -> int:
    """Tokens of KV cache a sequence occupies with paged allocation (tokens).

    Formula: ``ceil(context_tokens / block_size) * block_size``. Source: Kwon et al. 2023, PagedAttention
    (arXiv 2309.06180), Sec. 4.1; vLLM ``block_size`` default 16.
    """
    tokens = check_non_negative_int("context_tokens", context_tokens)
    block = check_positive_int("block_size", block_size)
    return math.ceil(tokens / block) * block


def runtime_reserve_bytes(
    gpu_memory_bytes: float, *, gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION
) -> float:
    """Memory left outside the inference engine's budget for CUDA context, allocator and others (bytes).

    Formula: ``(1 - gpu_memory_utilization) * gpu_memory_bytes``; 8 GB of an 80 GB GPU at vLLM's default 0.9
    (vLLM engine arguments, https://docs.vllm.ai/en/latest/models/engine_args.html).
    """
    memory = check_positive("gpu_memory_bytes", gpu_memory_bytes)
    return (1.0 - check_fraction("gpu_memory_utilization", gpu_memory_utilization)) * memory


def inference_memory_bytes(
    weights: float, kv_cache: float = 0.0, *, overhead_fraction: float = INFERENCE_OVERHEAD_FRACTION
) -> float:
    """Total inference memory (bytes).

    Formula: ``weights * (1 + overhead_fraction) + kv_cache``; with no KV cache this is Transformer Math
    101's ``Total Memory_Inference ~= 1.2 x Model Memory`` (https://blog.eleuther.ai/transformer-math/).
    """
    w = check_positive("weights", weights)
    kv = check_non_negative("kv_cache", kv_cache)
    return w * (1.0 + check_non_negative("overhead_fraction", overhead_fraction)) + kv


@checked(
    gpu_memory_bytes=check_positive,
    weights=check_positive,
    kv_bytes_per_sequence=check_positive,
    n_gpus=check_positive_int,
    gpu_memory_utilization=check_fraction,
    activation_reserve_bytes=check_non_negative,
)
def max_concurrent_sequences(
    gpu_memory_bytes: float,
    weights: float,
    kv_bytes_per_sequence: float,
    *,
    n_gpus: int = 1,
    gpu_memory_utilization: float = VLLM_GPU_MEMORY_UTILIZATION,
    activation_reserve_bytes: float = 0.0,
) -> int:
    """How many sequences' KV caches fit next to the weights (count; 0 if the weights do not fit).

    Formula: ``floor((n_gpus * gpu_memory_bytes * gpu_memory_utilization - weights -
    activation_reserve_bytes) / kv_bytes_per_sequence)`` (vLLM's KV budget: the utilization share of the
    GPUs minus weights minus profiled peak activations; Kwon et al. 2023). ``weights`` and the KV cache are
    totals over the ``n_gpus`` tensor-parallel GPUs; compute ``kv_bytes_per_sequence`` over
    :func:`paged_tokens` to include block rounding.
    """
    free = n_gpus * gpu_memory_bytes * gpu_memory_utilization - weights - activation_reserve_bytes
    if free <= 0:
        return 0
    return math.floor(free / kv_bytes_per_sequence)
