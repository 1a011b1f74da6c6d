"""Training speed that depends on the job: the FLOPs a step really does (method, checkpointing,
attention), and the share of the GPU's peak a software stack reaches at a model's width.

* FLOPs per token: a forward pass costs ``2 N`` for the matmuls plus attention; the backward pass costs
  twice the forward when every weight trains (gradients for inputs and for weights), and once the
  forward when the weights are frozen (LoRA: inputs' gradients only; the adapters' own are negligible);
  full checkpointing runs the forward again (Narayanan et al. 2021, arXiv 2104.04473, Sec. 5.1).
  Causal attention adds ``2 x n_layers x seq x q_dim`` per token to the forward (Kaplan et al. 2020,
  arXiv 2001.08361, Table 1, ``2 n_layer n_ctx d_attn``, halved for the causal mask as FlashAttention
  counts it).
* A step is its matmuls at a share of the dense peak plus, on a Hugging Face-class stack, its
  memory-bound work at the GPU's bandwidth: ``t = F / (peak x u(h)) + (5.5 A + 6.5 W + 5.7 O / m) /
  bandwidth``, ``A`` the activations a micro-step keeps, ``W`` the weights, ``O`` the optimizer state,
  per GPU, and ``m`` the micro-steps an optimizer step accumulates. The
  matmuls' share rises with the hidden size, ``u(h) = min(ceiling, 1.26 x h / (h + 4,400))`` (0.24 at
  h 1,024, the 0.40 ceiling from about 2,050), and LoRA's is 0.85 of it (PEFT's cast, two thin matmuls,
  a scale and an add beside every adapted projection). The bandwidth term is why an H100 trains the
  same job 9-17% slower than an H200 of the same peak (Qwen3-1.7B full fine-tuning, Qwen3-8B LoRA), and
  why small models and small batches reach less of the peak. The six figures are fitted to the 29
  training runs of data/calibration/h200-2026-11-26.json and h100-2026-11-26.json (Qwen3 0.6B-14B,
  Llama 3.2 1B and 3B and 3.1 8B, Qwen2.5 7B, Mistral 7B, SmolLM2 1.7B; full fine-tuning and LoRA,
  2,048 to 8,192 tokens, with and without checkpointing, one with 4 micro-steps): every run within
  23%, 8.1% rms. Fitted first to 23 of them, the curve held six later runs within the 25% band but one
  (Qwen3-4B LoRA at 4 x 2,048 tokens, predicted 1.27x as fast), which the refit brings to 1.22x. Tuned
  stacks' MFU is published end to end, so they take their ceiling alone.
"""

from __future__ import annotations

from typing import Literal, get_args

from engine.sizing._checks import (
    check_choice,
    check_non_negative,
    check_non_negative_int,
    check_positive,
    check_positive_int,
    checked,
)

__all__ = [
    "FP8_TRAINING_SPEEDUP",
    "STACKS",
    "Stack",
    "achieved_utilization",
    "memory_bound_seconds",
    "stack_ceiling",
    "training_flops_per_token",
]

Stack = Literal["huggingface", "megatron-lm", "torchtitan"]
STACKS: tuple[str, ...] = get_args(Stack)

HALF_WIDTH = 4400.0
"""Hidden size at which the utilisation curve is half its asymptote (fitted, see the module docstring)."""
ASYMPTOTE = 1.26
"""The curve's limit on infinitely wide models, before a stack's ceiling (fitted; the ceiling binds)."""
ADAPTER_EFFICIENCY = 0.85
"""LoRA's share of the full-training utilisation at the same width (fitted)."""
ACTIVATION_PASSES = 5.5
"""Bytes a Hugging Face-class step moves through memory-bound kernels per byte of activations it keeps
(norms, activations, the loss's fp32 logits, dropout-free element-wise work; fitted)."""
WEIGHT_PASSES = 6.5
"""Bytes moved per byte of weights each micro-step (autocast's casts, the weights' gradients added into
theirs, LoRA's frozen weights read forward and backward; fitted)."""
OPTIMIZER_PASSES = 5.7
"""Bytes moved per byte of optimizer state each optimizer step (AdamW's reads and writes; fitted)."""

_CEILING: dict[str, float] = {
    # Transformer Math 101: ~120 of 312 TFLOP/s (0.38) "always achievable" on A100s, 150-180 with care.
    "huggingface": 0.40,
    # Megatron-Core on H100: 'up to 47% MFU' for GPT-3 175B (NVIDIA, Megatron-LM README,
    # https://github.com/NVIDIA/Megatron-LM).
    "megatron-lm": 0.47,
    # torchtitan: Llama 3.1 8B on 8 and 128 H100s with FSDP and torch.compile in bf16, '33% to 39% MFU'
    # (pytorch/torchtitan, benchmarks/llama3_h100_202412_torchtitan.md).
    "torchtitan": 0.39,
}

FP8_TRAINING_SPEEDUP = 1.3
"""End-to-end speed of fp8 training over bf16 on the same GPUs. The tensor cores' fp8 peak is 2x, but
attention, norms, the loss and communication stay 16-bit and scaling adds casts: torchtitan measures
6,667 -> 8,532 tokens/s per H100 for Llama 3.1 8B on 8 GPUs (1.28x) and 1.29x on 128
(pytorch/torchtitan, benchmarks/llama3_h100_202412_torchtitan.md); NeMo reports 'over 1.2x' on 8 H100s;
FP8-LM (Peng et al. 2023, arXiv 2310.18313) 1.64x for GPT-175B against its own Megatron-LM bf16 run."""

MASKED_ATTENTION_NOTE = (
    "A layer with a sliding window, trained at sequences as long as its window or longer, attends through "
    "an explicit mask on a Hugging Face stack: transformers drops the mask only where the keys are fewer "
    "than the window (masking_utils._ignore_causal_mask_sdpa), and PyTorch's SDPA then runs its "
    "memory-efficient kernel, which takes a mask but skips no masked block, so the layer computes every "
    "query-key pair, twice the causal count (PyTorch, torch.nn.functional.scaled_dot_product_attention: "
    "the flash kernel takes no attn_mask). Mistral 7B LoRA at 8,192 tokens, every layer windowed at 4,096, "
    "trains 1.21x slower than the causal count predicts and 1.06x with it "
    "(data/calibration/h200-2026-11-27-d.json)."
)
"""Why windowed layers cost full attention on a Hugging Face-class stack (`masked_layers`)."""


def training_flops_per_token(
    matmul_params: float,
    *,
    n_layers: int,
    seq_len: int,
    q_dim: int,
    trains_weights: bool = True,
    checkpointing: bool = False,
    masked_layers: int = 0,
) -> float:
    """FLOPs one training token costs (FLOP).

    Formula: forward ``f = 2 N + 2 (L + M) s q`` (``N`` the active matmul parameters, causal attention
    on ``L`` layers, of which ``M`` attend through an explicit mask and so compute every query-key pair:
    :data:`MASKED_ATTENTION_NOTE`); backward ``2 f`` when the weights train, ``f`` when they are frozen
    (LoRA); ``+ f`` to recompute with full checkpointing. Full training without checkpointing is ``6 N``
    plus attention (Kaplan et al. 2020; Transformer Math 101), with it ``8 N`` (Narayanan et al. 2021,
    Sec. 5.1); LoRA ``4 N``.
    """
    n = check_positive("matmul_params", matmul_params)
    layers = check_non_negative_int("n_layers", n_layers) + check_non_negative_int(
        "masked_layers", masked_layers
    )
    attention = 2.0 * layers * check_positive_int("seq_len", seq_len)
    forward = 2.0 * n + attention * check_non_negative_int("q_dim", q_dim)
    backward = 2.0 * forward if trains_weights else forward
    return forward + backward + (forward if checkpointing else 0.0)


@checked(
    activation_bytes=check_non_negative,
    weight_bytes=check_non_negative,
    optimizer_bytes=check_non_negative,
    bandwidth_bytes_per_s=check_positive,
    micro_steps=check_positive,
)
def memory_bound_seconds(
    activation_bytes: float,
    weight_bytes: float,
    optimizer_bytes: float,
    bandwidth_bytes_per_s: float,
    micro_steps: float = 1.0,
) -> float:
    """A Hugging Face-class training micro-step's memory-bound time on one GPU (s).

    Formula: ``(5.5 x activations + 6.5 x weights + 5.7 x optimizer state / micro-steps) / bandwidth``
    (see the module docstring): the activations and weights move every micro-step, the optimizer's
    state once per optimizer step. Qwen3-8B LoRA at 1 x 2,048 tokens on an H100 keeps about 20 GB of
    activations beside 16.6 GB of weights: about 65 ms of its 276 ms step.
    """
    moved = ACTIVATION_PASSES * activation_bytes + WEIGHT_PASSES * weight_bytes
    return (moved + OPTIMIZER_PASSES * optimizer_bytes / micro_steps) / bandwidth_bytes_per_s


def stack_ceiling(stack: Stack) -> float:
    """The share of the dense peak a stack reaches on wide models (fraction)."""
    return _CEILING[check_choice("stack", stack, STACKS)]


def achieved_utilization(stack: Stack, hidden_size: int, *, adapters: bool = False) -> float:
    """Share of the dense peak FLOPS a training step reaches (fraction).

    Formula: ``min(ceiling, 1.26 x h / (h + 4,400))``, times 0.85 for LoRA (see the module docstring);
    Hugging Face ceiling 0.40, Megatron-LM 0.47, torchtitan 0.39. Hugging Face, full training: h 1,024
    -> 0.238; 2,048 and wider -> 0.40; tuned stacks reach their ceiling from about 2,600.
    """
    h = check_positive_int("hidden_size", hidden_size)
    share = min(stack_ceiling(stack), ASYMPTOTE * h / (h + HALF_WIDTH))
    return share * (ADAPTER_EFFICIENCY if adapters else 1.0)
