"""Throughput: memory-bound decoding, compute-bound prefill and training, the batched-decode roofline,
tensor-parallel communication, and what an MoE model reads per step.

* Batch-1 decode streams every active weight (and the sequence's KV cache) from memory once per token:
  ``tokens/s = bandwidth x efficiency / bytes_per_token`` (guide G2; Pope et al. 2022, arXiv 2211.05102).
  Guide G2's tables (7B fp16 on H100 "~240", A100 "~143", RTX 4090 "~71", RTX 3090 "~67"; 70B: 24/14/7
  tokens/s) are bandwidth / model size at **100%** efficiency, although its text attributes 239 tokens/s to
  "70% efficiency"; at its own 0.7 (used in its Q3 and its DataFrame) H100 gives 168 tokens/s. We default to
  0.7 and reproduce the tables with ``efficiency=1``.
* Prefill and training are compute bound: ``seconds = FLOPs / (peak dense FLOPS x MFU)``; forward FLOPs per
  token ``2 N + 2 n_layers n_ctx d_attn`` (Kaplan et al. 2020, arXiv 2001.08361, Table 1).
* Batched decode: ``step = max(FLOPs / (peak x MFU), bytes / (bandwidth x efficiency))`` (roofline,
  Williams et al. 2009).
* Tensor parallelism: 2 all-reduces of ``tokens x hidden`` activations per layer in the forward pass
  (Shoeybi et al. 2019, Megatron-LM, arXiv 1909.08053, Sec. 3), each a ring all-reduce moving
  ``2 (t-1)/t`` of the message over each GPU's link (NCCL tests, PERFORMANCE.md "bus bandwidth").
"""

from __future__ import annotations

from engine.sizing._checks import (
    check_fraction,
    check_non_negative,
    check_non_negative_int,
    check_positive,
    check_positive_int,
    checked,
)
from engine.sizing.conventions import ALLREDUCE_LATENCY_S, DECODE_BANDWIDTH_EFFICIENCY, MFU
from engine.sizing.params import decode_params_read_per_token, mlp_params_per_expert
from engine.sizing.shape import TransformerShape

__all__ = [
    "allreduce_seconds",
    "compute_seconds",
    "decode_bytes_per_step",
    "decode_step_seconds",
    "decode_tokens_per_second",
    "forward_flops_per_token",
    "moe_decode_params_read",
    "moe_expected_experts",
    "moe_routed_params_per_token",
    "prefill_seconds",
    "tensor_parallel_comm_seconds",
]


def decode_tokens_per_second(
    bytes_per_token: float,
    memory_bandwidth_bytes_per_s: float,
    *,
    efficiency: float = DECODE_BANDWIDTH_EFFICIENCY,
) -> float:
    """Batch-1 decode speed when memory bandwidth is the bottleneck (tokens/s).

    Formula: ``memory_bandwidth x efficiency / bytes_per_token``, where ``bytes_per_token`` is the active
    weights plus the sequence's KV cache read per step (:func:`decode_bytes_per_step`). Source: guide G2
    ("Theoretical token throughput for single-request inference"; efficiency 0.7).
    """
    need = check_positive("bytes_per_token", bytes_per_token)
    bw = check_positive("memory_bandwidth_bytes_per_s", memory_bandwidth_bytes_per_s)
    return bw * check_fraction("efficiency", efficiency) / need


def decode_bytes_per_step(
    weight_bytes_read: float, kv_bytes_per_sequence: float = 0.0, batch: int = 1
) -> float:
    """Bytes read from memory per decode step (bytes).

    Formula: ``weight_bytes_read + batch x kv_bytes_per_sequence``: the weights are read once per step and
    shared by the batch; each sequence reads its own KV cache (Pope et al. 2022, Sec. 3.3).
    For MoE use :func:`moe_decode_params_read` for the weights.
    """
    w = check_positive("weight_bytes_read", weight_bytes_read)
    kv = check_non_negative("kv_bytes_per_sequence", kv_bytes_per_sequence)
    return w + check_positive_int("batch", batch) * kv


def forward_flops_per_token(
    n_params: float, *, n_layers: int = 0, context_tokens: int = 0, attention_dim: int = 0
) -> float:
    """Forward-pass FLOPs per token (FLOP).

    Formula: ``2 N + 2 n_layers n_ctx d_attn`` (Kaplan et al. 2020, Table 1), ``N`` the active
    non-embedding parameters (MoE: active per token). The attention term is omitted when its arguments are 0.
    """
    n = check_positive("n_params", n_params)
    layers = check_non_negative_int("n_layers", n_layers)
    ctx = check_non_negative_int("context_tokens", context_tokens)
    dim = check_non_negative_int("attention_dim", attention_dim)
    return 2.0 * n + 2.0 * layers * ctx * dim


def attended_layer_tokens(shape: TransformerShape, prompt_tokens: int, *, bidirectional: bool = False) -> int:
    """The ``n_layers x n_ctx`` of :func:`forward_flops_per_token`'s attention term for reading a prompt:
    over the attention layers, twice the keys a query attends on average (its ``2 L n_ctx d`` counts the
    scores; the values' sum costs as much again, so ``n_ctx`` is twice the keys attended). A causal layer
    attends ``P / 2`` keys on average, a bidirectional one ``P``; a sliding window of ``W`` caps that at
    ``W - W^2 / 2P`` (causal, once ``P > W``) or ``W`` (bidirectional, ModernBERT's window in total), as
    FlashAttention's windowed kernels skip the blocks outside it (Dao 2023, FlashAttention-2, window_size).
    Linear-attention and Mamba layers (``state_layers``) attend over no context."""
    prompt = check_non_negative_int("prompt_tokens", prompt_tokens)
    full = 2.0 * prompt if bidirectional else float(prompt)
    windowed = shape.windowed_layers
    if windowed and shape.sliding_window is not None:
        window = shape.sliding_window
        if bidirectional:
            capped = 2.0 * min(prompt, window)
        else:
            capped = float(prompt) if prompt <= window else 2.0 * window - window * window / prompt
    else:
        capped = 0.0
    return round((shape.attention_layers - windowed) * full + windowed * capped)


def compute_seconds(flops: float, peak_flops_per_s: float, *, mfu: float = MFU) -> float:
    """Time to execute ``flops`` on hardware with a dense peak of ``peak_flops_per_s`` (s).

    Formula: ``flops / (peak_flops_per_s x mfu)``; MFU 0.4 by default (Transformer Math 101: 120-180 of 312
    TFLOP/s per A100). Use the dense (non-sparse) tensor peak for the compute precision.
    """
    f = check_non_negative("flops", flops)
    peak = check_positive("peak_flops_per_s", peak_flops_per_s)
    return f / (peak * check_fraction("mfu", mfu))


def prefill_seconds(
    prompt_tokens: int,
    flops_per_token: float,
    peak_flops_per_s: float,
    *,
    batch: int = 1,
    mfu: float = MFU,
) -> float:
    """Prompt processing (prefill) time, compute bound (s).

    Formula: ``batch x prompt_tokens x flops_per_token / (peak x mfu)`` (:func:`compute_seconds`).
    """
    tokens = check_positive_int("prompt_tokens", prompt_tokens) * check_positive_int("batch", batch)
    return compute_seconds(
        tokens * check_positive("flops_per_token", flops_per_token), peak_flops_per_s, mfu=mfu
    )


@checked(
    batch=check_positive_int,
    flops_per_token=check_positive,
    flops=lambda v: check_non_negative("flops", v["batch"] * v["flops_per_token"]),  # may overflow
    peak_flops_per_s=check_positive,
    mfu=check_fraction,
    bytes_per_step=check_positive,
    memory_bandwidth_bytes_per_s=check_positive,
    bandwidth_efficiency=check_fraction,
)
def decode_step_seconds(
    batch: int,
    flops_per_token: float,
    bytes_per_step: float,
    peak_flops_per_s: float,
    memory_bandwidth_bytes_per_s: float,
    *,
    mfu: float = MFU,
    bandwidth_efficiency: float = DECODE_BANDWIDTH_EFFICIENCY,
) -> float:
    """One batched decode step as a roofline (s).

    Formula: ``max(batch x flops_per_token / (peak x mfu), bytes_per_step / (bandwidth x efficiency))``.
    Throughput is ``batch / step`` tokens/s; each sequence sees ``1 / step`` tokens/s. Source: Williams et
    al. 2009 (roofline); Pope et al. 2022, Sec. 3.
    """
    compute = batch * flops_per_token / (peak_flops_per_s * mfu)
    memory = bytes_per_step / (memory_bandwidth_bytes_per_s * bandwidth_efficiency)
    return max(compute, memory)


@checked(
    message_bytes=check_non_negative,
    n_gpus=check_positive_int,
    link_bandwidth_bytes_per_s=check_positive,
    latency_s=check_non_negative,
)
def allreduce_seconds(
    message_bytes: float,
    n_gpus: int,
    link_bandwidth_bytes_per_s: float,
    *,
    latency_s: float = ALLREDUCE_LATENCY_S,
) -> float:
    """Ring all-reduce of ``message_bytes`` across ``n_gpus`` (s); 0 for one GPU.

    Formula: ``latency_s + 2 (n-1)/n x message_bytes / link_bandwidth`` (alpha-beta model; the ``2(n-1)/n``
    bus-bandwidth factor from NCCL tests' PERFORMANCE.md). ``link_bandwidth_bytes_per_s`` is one direction
    of one GPU's link: halve an NVLink "bidirectional" figure (A100 600 GB/s -> 300 GB/s, as llm-analysis
    does). Latency default 8 us (llm-analysis ``intra_node_min_message_latency``).
    """
    if n_gpus == 1:
        return 0.0
    return latency_s + 2.0 * (n_gpus - 1) / n_gpus * message_bytes / link_bandwidth_bytes_per_s


@checked(
    tokens=check_positive_int,
    hidden_size=check_positive_int,
    n_layers=check_positive_int,
    allreduces_per_layer=check_positive_int,
    bytes_per_value=check_positive,
    # what allreduce_seconds checks, in its order (the message may overflow to infinity)
    message_bytes=lambda v: check_non_negative(
        "message_bytes", float(v["tokens"]) * v["hidden_size"] * v["bytes_per_value"]
    ),
    n_gpus=lambda v: check_positive_int("n_gpus", v["tensor_parallel"]),
    link_bandwidth_bytes_per_s=check_positive,
    latency_s=check_non_negative,
)
def tensor_parallel_comm_seconds(
    tokens: int,
    hidden_size: int,
    n_layers: int,
    tensor_parallel: int,
    link_bandwidth_bytes_per_s: float,
    *,
    bytes_per_value: float = 2.0,
    allreduces_per_layer: int = 2,
    latency_s: float = ALLREDUCE_LATENCY_S,
) -> float:
    """Tensor-parallel communication time of one forward pass over ``tokens`` tokens (s).

    Formula: ``n_layers x allreduces_per_layer x allreduce_seconds(tokens x hidden x bytes)``. Megatron-LM
    needs 2 all-reduces per layer in the forward pass (attention and MLP output) and 2 more in the backward
    pass (Shoeybi et al. 2019, Sec. 3): pass ``allreduces_per_layer=4`` for a training step. For decoding,
    ``tokens`` is the batch size (one new token per sequence).
    """
    message = float(tokens) * hidden_size * bytes_per_value
    one = allreduce_seconds.unchecked(
        message, tensor_parallel, link_bandwidth_bytes_per_s, latency_s=latency_s
    )
    return n_layers * allreduces_per_layer * one


def moe_expected_experts(n_experts: int, experts_per_token: int, tokens: int) -> float:
    """Expected distinct experts one MoE layer touches for ``tokens`` tokens (count).

    Formula: ``E x (1 - (1 - k/E) ** tokens)``, assuming uniform, independent routing: ``k`` at batch 1,
    approaching ``E`` as the batch grows (8 experts, top-2: 2.0 at 1 token, 7.2 at 8, 8.0 at 64).
    """
    e = check_positive_int("n_experts", n_experts)
    k = check_positive_int("experts_per_token", experts_per_token)
    t = check_positive_int("tokens", tokens)
    if k > e:
        raise ValueError(f"experts_per_token ({k}) cannot exceed n_experts ({e})")
    return e * (1.0 - (1.0 - k / e) ** t)


def moe_routed_params_per_token(shape: TransformerShape) -> int:
    """Parameters of the routed experts one token visits over all MoE layers (count): ``MoE layers x
    experts_per_token x`` :func:`~engine.sizing.params.mlp_params_per_expert`; 0 for a dense model.
    Mixtral 8x7B: 32 x 2 x 176,160,768 = 11.3B of its 12.9B active parameters."""
    if not shape.is_moe:
        return 0
    return shape.n_moe_layers * shape.experts_per_token * mlp_params_per_expert(shape)


def moe_decode_params_read(shape: TransformerShape, batch: int = 1) -> float:
    """Parameters read per decode step for a batch of ``batch`` sequences (count).

    Formula: :func:`~engine.sizing.params.decode_params_read_per_token` (active parameters at batch 1) plus
    ``MoE layers x (expected experts - experts_per_token) x expert parameters``. A dense model reads the same
    parameters at any batch. Mixtral 8x7B: 12.7B at batch 1, 42B at batch 8, 46B at batch 16.
    """
    b = check_positive_int("batch", batch)
    base = float(decode_params_read_per_token(shape))
    if not shape.is_moe:
        return base
    extra_experts = (
        moe_expected_experts(shape.n_experts, shape.experts_per_token, b) - shape.experts_per_token
    )
    return base + shape.n_moe_layers * extra_experts * mlp_params_per_expert(shape)
