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
  memory-bound work at the GPU's bandwidth: ``t = F / (peak x u(h)) + (4.3 A + 1.5 W + 3.5 O / m + 240
  E) / bandwidth``, ``A`` the activations a micro-step keeps, ``W`` the weights, ``O`` the optimizer
  state, per GPU, ``m`` the micro-steps an optimizer step accumulates and ``E`` the elements the step's
  RMSNorms normalise (tokens x layers x the widths each layer normalises: its hidden-size norms, and the
  queries and keys of a QK-norm model; a third more with checkpointing, which runs the forward's again).
  The matmuls' share rises with the hidden size, ``u(h) = min(ceiling, 0.74 x h / (h + 1,100))`` (0.35
  at h 1,024, the 0.47 ceiling from about 1,900), and LoRA's is 0.88 of it (PEFT's cast, two thin
  matmuls, a scale and an add beside every adapted projection).
* Two of the memory-bound figures are counted, not fitted: fused AdamW reads the fp32 weight, gradient
  and both moments and writes the weight and the moments, 28 bytes per parameter, 3.5 x its 8 bytes of
  state (PyTorch, torch.optim.AdamW ``fused=True``); autocast reads each fp32 weight and writes its bf16
  copy once per forward, 1.5 x the weight's bytes (PyTorch, Automatic Mixed Precision). The other five
  figures are fitted. The norms' term is why Qwen3, whose QK-norm normalises every query and key head,
  trains slower than a Qwen2.5 or Llama of its width (Qwen3-0.6B full fine-tuning reaches 0.59x the
  tokens/s of Qwen2.5-0.5B on an H200 at 8 x 2,048 tokens, for 1.34x the FLOPs per token): an eager
  RMSNorm upcasts to fp32, squares, averages, rescales and casts back, forward and backward, about 130
  bytes an element counted by its operations, and the rotary embedding and the transposes around the
  QK-norm move the rest. The bandwidth terms are why an H100 trains the same job 9-17% slower than an
  H200 of the same peak, and why small models and small batches reach less of the peak.
* Fitted to the 84 training runs of data/calibration (one H100, one H200; Qwen3 0.6B-32B, Qwen2.5
  0.5B-32B, Llama 2 7B and 13B, Llama 3.x 1B-8B, Mistral 7B, Nemo 12B and Small 24B, Gemma 2 2B-27B,
  Gemma 3 1B, Phi-4 and Phi-4-mini, SmolLM2 and 3, TinyLlama; full fine-tuning and LoRA, 1,024 to
  32,768 tokens, with and without checkpointing and accumulation): every run within 17%, 8.7% rms.
  Measured after the fit to test it, the 11 training runs of h200-2026-11-27-g.json came within
  0.88-1.17x; the 95 runs together lie within 0.85-1.20x, 9.1% rms. Fitted without the 13 runs of
  h200-2026-11-27-f.json, the same form predicted them within 22%, where
  the curve it replaces (``min(0.40, 1.26 h / (h + 4,400))`` with no norms' term) missed five of them
  by more than 25%: Qwen2.5-0.5B 0.66x, Mistral Small 24B LoRA 0.74x, and LoRA on wide models in
  general, which reaches more of the peak than 0.40 allows. Tuned stacks' MFU is published end to
  end, so they take their ceiling alone.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal, get_args

from engine.sizing._checks import (
    check_choice,
    check_non_negative,
    check_non_negative_int,
    check_positive,
    check_positive_int,
    checked,
)
from engine.sizing.serving_engines import MOE_PREFILL_SHARE
from engine.sizing.shape import TransformerShape

__all__ = [
    "A100_CAPABILITY",
    "A100_TRAINING_SHARE",
    "FP8_TRAINING_SPEEDUP",
    "PRE_AMPERE_CAPABILITY",
    "PRE_AMPERE_TRAINING_SHARE",
    "STACKS",
    "Stack",
    "achieved_utilization",
    "generation_share",
    "memory_bound_seconds",
    "normalised_elements",
    "normalised_width",
    "stack_ceiling",
    "training_flops_per_token",
]

Stack = Literal["huggingface", "megatron-lm", "torchtitan"]
STACKS: tuple[str, ...] = get_args(Stack)

HALF_WIDTH = 1100.0
"""Hidden size at which the utilisation curve is half its asymptote (fitted, see the module docstring)."""
ASYMPTOTE = 0.74
"""The curve's limit on infinitely wide models, before a stack's ceiling (fitted; the ceiling binds)."""
ADAPTER_EFFICIENCY = 0.88
"""LoRA's share of the full-training utilisation at the same width (fitted)."""
MOE_TRAINING_SHARE = MOE_PREFILL_SHARE
"""A mixture of experts trains at this share of the curve taken at its experts' width, the share its
prompts are read at under transformers 5 on an H200 (serving_engines.MOE_PREFILL_SHARE): a training step
runs the same grouped expert matmuls forward and backward, as narrow as one expert (Qwen3-30B-A3B, 768
wide: 0.15 of the peak, where its 2,048-wide hidden size alone gave 0.47). No MoE training run is in
data/calibration; published ones bracket the share (tests/test_published_training.py). ms-swift fully
fine-tuned Qwen1.5-MoE-A2.7B (1,408-wide experts) on one host of 8 A800s: Megatron-LM 2.95 s an
iteration, DeepSpeed ZeRO-2 under transformers 4 6.02 s, whose loop over expert modules transformers 5
replaced with grouped matmuls, about 6x faster (Unsloth with Hugging Face, unsloth.ai/docs/new/faster-moe).
The share puts the Hugging Face-class run between the two and Megatron-LM's at 0.97x its measured speed
(with A100_TRAINING_SHARE); the dense curve at the hidden size put both above Megatron-LM's measured
speed."""

ACTIVATION_PASSES = 4.3
"""Bytes a Hugging Face-class step moves through memory-bound kernels per byte of activations it keeps
(norms, activations, the loss's fp32 logits, dropout-free element-wise work; fitted)."""
WEIGHT_PASSES = 1.5
"""Bytes moved per byte of weights each micro-step: autocast reads each fp32 weight and writes its bf16
copy once per forward (counted; see the module docstring)."""
OPTIMIZER_PASSES = 3.5
"""Bytes moved per byte of optimizer state each optimizer step: fused AdamW reads weight, gradient and
both moments and writes the weight and the moments, 28 bytes per 8 bytes of state (counted)."""
NORM_PASSES = 240.0
"""Bytes moved per element an eager RMSNorm normalises in a training step, forward and backward, with
the rotary embedding and transposes beside the QK-norm (fitted; see the module docstring)."""
RECOMPUTED_NORM_SHARE = 4 / 3
"""Full checkpointing runs each layer's forward again: its norms' forward, about a third of their
forward-and-backward bytes, moves twice."""

_CEILING: dict[str, float] = {
    # The matmuls' share alone (the memory-bound time is added beside it). Transformer Math 101 puts an
    # A100's end to end at ~120 of 312 TFLOP/s (0.38) "always achievable", but on an H200 Mistral Small
    # 24B LoRA reaches 0.44 of the dense peak end to end (data/calibration/h200-2026-11-27-f.json), so
    # the matmuls reach more; capped at Megatron-Core's published 47% so that an eager stack is never
    # taken for a faster one than a tuned stack.
    "huggingface": 0.47,
    # Megatron-Core on H100: 'up to 47% MFU' for GPT-3 175B (NVIDIA, Megatron-LM README,
    # https://github.com/NVIDIA/Megatron-LM).
    "megatron-lm": 0.47,
    # torchtitan: Llama 3.1 8B on 8 and 128 H100s with FSDP and torch.compile in bf16, '33% to 39% MFU'
    # (pytorch/torchtitan, benchmarks/llama3_h100_202412_torchtitan.md).
    "torchtitan": 0.39,
}

PRE_AMPERE_TRAINING_SHARE = 0.64
"""The share of its 16-bit peak a card older than compute capability 8.0 (Volta, Turing) trains at,
relative to the Hopper cards the utilisation above is fitted on: such a card has neither bf16 nor
FlashAttention-2. Megatron-LM sustained 39 TFLOP/s on one V100 for a 1.2B model, 30% of its 125 TFLOP/s
fp16 peak (Shoeybi et al. 2019, arXiv 1909.08053, abstract), where Megatron-Core reaches up to 47% on
H100s (the `megatron-lm` ceiling): 30 / 47 = 0.64."""
PRE_AMPERE_CAPABILITY = 8.0
"""compute capability of the first cards with bf16 and FlashAttention-2 (Ampere)"""
A100_TRAINING_SHARE = 1.3
"""The share of its 16-bit peak a data-center Ampere card (compute capability 8.0: A100, A800, A30) trains
at, relative to the Hopper cards the utilisation above is fitted on. The H100 tripled the A100's peak
but not its bandwidth or the work between matmuls, so the same code reaches less of it: IBM and Meta's
FSDP runs of Llama 2 7B reached 0.57 MFU on A100s and 0.37 on H100s (pytorch.org/blog/maximizing-training).
Fitted to the five published A100 and A800 training runs in tests/test_published_training.py (fms-fsdp's
7B and 13B, ms-swift's 14B under ZeRO-2 and ZeRO-3 and its MoE under Megatron-LM), which the Hopper share
put at 0.77, 0.87, 0.66, 0.67 and 0.75 of their measured speed, and now at 1.00, 1.13, 0.83, 0.85 and 0.97."""
A100_CAPABILITY = 8.0
"""compute capability of the data-center Ampere cards (GA100)"""

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


def normalised_width(shape: TransformerShape) -> int:
    """Elements one layer's RMSNorms (or LayerNorms) normalise per token: ``norms_per_layer x hidden``,
    plus the queries and keys of a QK-norm model (Qwen3, Gemma 3: ``q_dim + kv_dim``)."""
    width = shape.norms_per_layer * shape.hidden_size
    return width + (shape.q_dim + shape.kv_dim if shape.qk_norm else 0)


def normalised_elements(shape: TransformerShape, tokens: float, *, checkpointing: bool = False) -> float:
    """Elements a training micro-step's norms normalise over `tokens` tokens: ``tokens x n_layers x
    normalised_width``, a third more with full checkpointing (`RECOMPUTED_NORM_SHARE`)."""
    elements = check_non_negative("tokens", tokens) * shape.n_layers * normalised_width(shape)
    return elements * (RECOMPUTED_NORM_SHARE if checkpointing else 1.0)


@checked(
    activation_bytes=check_non_negative,
    weight_bytes=check_non_negative,
    optimizer_bytes=check_non_negative,
    bandwidth_bytes_per_s=check_positive,
    micro_steps=check_positive,
    norm_elements=check_non_negative,
)
def memory_bound_seconds(
    activation_bytes: float,
    weight_bytes: float,
    optimizer_bytes: float,
    bandwidth_bytes_per_s: float,
    micro_steps: float = 1.0,
    norm_elements: float = 0.0,
) -> float:
    """A Hugging Face-class training micro-step's memory-bound time on one GPU (s).

    Formula: ``(4.3 x activations + 1.5 x weights + 3.5 x optimizer state / micro-steps + 240 x
    norm_elements) / bandwidth`` (see the module docstring; `norm_elements` from `normalised_elements`):
    the activations, weights and norms move every micro-step, the optimizer's state once per optimizer
    step. Qwen3-8B LoRA at 1 x 2,048 tokens on an H100 keeps about 21 GB of activations beside 16.6 GB
    of weights, and its norms normalise 0.98 G elements: about 104 ms of its 276 ms step.
    """
    moved = ACTIVATION_PASSES * activation_bytes + WEIGHT_PASSES * weight_bytes + NORM_PASSES * norm_elements
    return (moved + OPTIMIZER_PASSES * optimizer_bytes / micro_steps) / bandwidth_bytes_per_s


def stack_ceiling(stack: Stack) -> float:
    """The share of the dense peak a stack reaches on wide models (fraction)."""
    return _CEILING[check_choice("stack", stack, STACKS)]


@lru_cache(maxsize=64)
def generation_share(capability: str | None) -> float:
    """The share of its peak a card's generation trains at, against the Hopper cards the utilisation is
    fitted on: older than Ampere PRE_AMPERE_TRAINING_SHARE, a data-center Ampere (`capability` 8.0)
    A100_TRAINING_SHARE, any other 1 (also where the KB gives no compute capability)."""
    if capability is None:
        return 1.0
    version = float(capability)
    if version < PRE_AMPERE_CAPABILITY:
        return PRE_AMPERE_TRAINING_SHARE
    return A100_TRAINING_SHARE if version == A100_CAPABILITY else 1.0


def achieved_utilization(
    stack: Stack, hidden_size: int, *, adapters: bool = False, expert_width: int | None = None
) -> float:
    """Share of the dense peak FLOPS a training step reaches (fraction).

    Formula: ``min(ceiling, 0.74 x h / (h + 1,100))``, times 0.88 for LoRA (see the module docstring);
    Hugging Face and Megatron-LM ceiling 0.47, torchtitan 0.39. Hugging Face, full training: h 896 ->
    0.33, 1,024 -> 0.36; about 1,900 and wider -> 0.47; torchtitan reaches its ceiling from about 1,220.
    A mixture of experts (`expert_width`, its experts' width): MOE_TRAINING_SHARE of the curve at that
    width, under the stack's ceiling (Qwen3-30B-A3B, 768 wide: 0.15).
    """
    h = check_positive_int("hidden_size", hidden_size)
    if expert_width is not None:
        width = check_positive_int("expert_width", expert_width)
        share = MOE_TRAINING_SHARE * min(stack_ceiling(stack), ASYMPTOTE * width / (width + HALF_WIDTH))
    else:
        share = min(stack_ceiling(stack), ASYMPTOTE * h / (h + HALF_WIDTH))
    return share * (ADAPTER_EFFICIENCY if adapters else 1.0)
