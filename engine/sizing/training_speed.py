"""Training speed that depends on the job: the FLOPs a step really does (method, checkpointing,
attention), and the share of the GPU's peak a software stack reaches at a model's width.

* FLOPs per token: a forward pass costs ``2 N`` for the matmuls plus attention; the backward pass costs
  twice the forward when every weight trains (gradients for inputs and for weights), and once the
  forward when the weights are frozen (LoRA: inputs' gradients only; the adapters' own are negligible);
  full checkpointing runs the forward again (Narayanan et al. 2021, arXiv 2104.04473, Sec. 5.1).
  Causal attention adds ``2 x n_layers x seq x q_dim`` per token to the forward (Kaplan et al. 2020,
  arXiv 2001.08361, Table 1, ``2 n_layer n_ctx d_attn``, halved for the causal mask as FlashAttention
  counts it).
* Achieved share of the dense peak (hardware FLOPs utilisation): narrow models run narrow matmuls
  and, relative to them, many memory-bound element-wise kernels, so the share rises with the hidden
  size, ``u(h) = 0.6245 x h / (h + 2,272)``, up to the ceiling a software stack reaches on wide models.
  The curve is fitted to the H200 calibration's full fine-tuning (data/calibration/h200-2026-11-26.json):
  0.194 at h 1,024 (Qwen3-0.6B) and 0.288-0.304 at 2,048 (1.7B). LoRA runs PEFT's cast, two thin
  matmuls, a scale and an add beside every adapted projection: 0.77 of the full-training share
  (Qwen3-8B LoRA: 0.286-0.330 where full training would reach the 0.40 ceiling).
"""

from __future__ import annotations

from typing import Literal, get_args

from engine.sizing._checks import check_choice, check_non_negative_int, check_positive, check_positive_int

__all__ = [
    "FP8_TRAINING_SPEEDUP",
    "STACKS",
    "Stack",
    "achieved_utilization",
    "stack_ceiling",
    "training_flops_per_token",
]

Stack = Literal["huggingface", "megatron-lm", "torchtitan"]
STACKS: tuple[str, ...] = get_args(Stack)

HALF_WIDTH = 2272.0
"""Hidden size at which the utilisation curve is half its asymptote (fitted, see the module docstring)."""
ASYMPTOTE = 0.6245
"""The curve's limit on infinitely wide models, before a stack's ceiling (fitted)."""
ADAPTER_EFFICIENCY = 0.77
"""LoRA's share of the full-training utilisation at the same width (Qwen3-8B LoRA r16 on an H200)."""

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


def training_flops_per_token(
    matmul_params: float,
    *,
    n_layers: int,
    seq_len: int,
    q_dim: int,
    trains_weights: bool = True,
    checkpointing: bool = False,
) -> float:
    """FLOPs one training token costs (FLOP).

    Formula: forward ``f = 2 N + 2 L s q`` (``N`` the active matmul parameters, causal attention);
    backward ``2 f`` when the weights train, ``f`` when they are frozen (LoRA); ``+ f`` to recompute
    with full checkpointing. Full training without checkpointing is ``6 N`` plus attention (Kaplan et
    al. 2020; Transformer Math 101), with it ``8 N`` (Narayanan et al. 2021, Sec. 5.1); LoRA ``4 N``.
    """
    n = check_positive("matmul_params", matmul_params)
    attention = 2.0 * check_non_negative_int("n_layers", n_layers) * check_positive_int("seq_len", seq_len)
    forward = 2.0 * n + attention * check_non_negative_int("q_dim", q_dim)
    backward = 2.0 * forward if trains_weights else forward
    return forward + backward + (forward if checkpointing else 0.0)


def stack_ceiling(stack: Stack) -> float:
    """The share of the dense peak a stack reaches on wide models (fraction)."""
    return _CEILING[check_choice("stack", stack, STACKS)]


def achieved_utilization(stack: Stack, hidden_size: int, *, adapters: bool = False) -> float:
    """Share of the dense peak FLOPS a training step reaches (fraction).

    Formula: ``min(ceiling, 0.6245 x h / (h + 2,272))``, times 0.77 for LoRA (see the module
    docstring); Hugging Face ceiling 0.40, Megatron-LM 0.47, torchtitan 0.39. Hugging Face, full
    training: h 1,024 -> 0.194; 2,048 -> 0.296; 4,096 and wider -> 0.40.
    """
    h = check_positive_int("hidden_size", hidden_size)
    share = min(stack_ceiling(stack), ASYMPTOTE * h / (h + HALF_WIDTH))
    return share * (ADAPTER_EFFICIENCY if adapters else 1.0)
