"""Parameter-efficient fine-tuning memory: LoRA on a 16-bit base, QLoRA on a 4-bit NF4 base.

Only the adapters train, so gradients and optimizer states exist for the adapter parameters alone; the
frozen base costs its weights only. A rank-r adapter on a ``d_in -> d_out`` projection adds
``r * (d_in + d_out)`` parameters (Hu et al. 2021, LoRA, arXiv 2106.09685, Sec. 4.1).

QLoRA (Dettmers et al. 2023, arXiv 2305.14314): linear weights in NF4 with double quantization
(4.127 bits), embeddings and LM head in bf16, LoRA (r = 64) on every linear layer, adapters in bf16 stepped
by paged 32-bit AdamW (artidoro/qlora ``qlora.py``), gradient checkpointing on. The paper fine-tunes
LLaMA-65B on one 48 GB GPU; :func:`qlora_memory` puts the model states at ~44.1 GB
(``tests/test_sizing_training.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from engine.sizing._checks import check_choice, check_non_negative, check_positive_int
from engine.sizing.conventions import (
    ADAFACTOR_STATE_BYTES,
    ADAM_8BIT_STATE_BYTES,
    QLORA_ADAPTER_MASTER_WEIGHTS,
    QLORA_LORA_RANK,
)
from engine.sizing.params import linear_weight_params, mlp_params_per_expert, total_params
from engine.sizing.precision import WeightPrecision, weight_bytes_per_param
from engine.sizing.shape import TransformerShape
from engine.sizing.training_memory import ModelStateMemory, Optimizer, model_state_memory

__all__ = [
    "LORA_ALL_LINEAR",
    "LORA_DEFAULT_TARGETS",
    "LORA_TARGETS",
    "LoraTarget",
    "PeftMemory",
    "lora_memory",
    "lora_params",
    "merged_expert_bytes",
    "qlora_memory",
]

LoraTarget = Literal["q", "k", "v", "o", "gate", "up", "down"]
LORA_TARGETS: tuple[str, ...] = get_args(LoraTarget)

LORA_ALL_LINEAR: tuple[LoraTarget, ...] = ("q", "k", "v", "o", "gate", "up", "down")
"""Every linear layer of a block, as QLoRA does (``find_all_linear_names`` in artidoro/qlora ``qlora.py``)."""

LORA_DEFAULT_TARGETS: tuple[LoraTarget, ...] = ("q", "v")
"""W_q and W_v: the LoRA paper's choice (Hu et al. 2021, Sec. 7.1) and PEFT's default for Llama."""


def lora_params(
    shape: TransformerShape, rank: int, *, targets: Sequence[LoraTarget] = LORA_DEFAULT_TARGETS
) -> int:
    """LoRA adapter parameters (count).

    Formula: ``n_layers * sum_targets rank * (d_in + d_out)``: q ``h -> n_heads*head_dim``, k and v
    ``h -> n_kv_heads*head_dim``, o ``n_heads*head_dim -> h``, gate and up ``h -> i``, down ``i -> h``; MLP
    targets count once per expert (routed and shared) on MoE layers and once on dense layers.
    ``gate`` is skipped for a dense (two-matrix) MLP, where ``up`` and
    ``down`` are its two projections. Source: Hu et al. 2021 (arXiv 2106.09685), Sec. 4.1.
    """
    r = check_positive_int("rank", rank)
    if isinstance(targets, str) or not targets:
        raise ValueError(f"targets must be a non-empty sequence of {list(LORA_TARGETS)}, got {targets!r}")
    chosen = {check_choice("targets", t, LORA_TARGETS) for t in targets}
    h, q, k = shape.hidden_size, shape.q_dim, shape.kv_dim
    # d_in + d_out of one MLP projection summed over the stack: the dense layers' MLPs and every expert
    # (routed and shared) of the MoE layers.
    mlp = shape.n_dense_layers * (h + shape.intermediate_size) + shape.n_moe_layers * (
        shape.n_experts + shape.n_shared_experts
    ) * (h + shape.expert_size)
    attention = {"q": h + q, "k": h + k, "v": h + k, "o": q + h}
    mlp_targets = {"gate": mlp if shape.mlp == "gated" else 0, "up": mlp, "down": mlp}
    per_layer = sum(attention.get(t, 0) for t in chosen)
    return r * (shape.n_layers * per_layer + sum(mlp_targets.get(t, 0) for t in chosen))


@dataclass(frozen=True, slots=True)
class PeftMemory:
    """Per-GPU memory of a LoRA/QLoRA run's model states (bytes): frozen base plus trained adapters."""

    base_weights_bytes: float
    adapter: ModelStateMemory

    @property
    def gpu_bytes(self) -> float:
        """Frozen base weights + adapter weights, gradients and optimizer states (bytes)."""
        return self.base_weights_bytes + self.adapter.gpu_bytes


def lora_memory(
    shape: TransformerShape,
    rank: int,
    *,
    targets: Sequence[LoraTarget] = LORA_DEFAULT_TARGETS,
    base_weight_bytes: float = 2.0,
    optimizer: Optimizer = "adamw",
    adapter_weight_bytes: float = 4.0,
    adapter_gradient_bytes: float = 4.0,
    adapter_master_weights: bool = False,
    adam_8bit_state_bytes: float = ADAM_8BIT_STATE_BYTES,
    adafactor_state_bytes: float = ADAFACTOR_STATE_BYTES,
) -> PeftMemory:
    """LoRA on a frozen 16-bit base, one GPU (bytes).

    Formula: ``total_params * base_weight_bytes`` + ``lora_params * (adapter_weight_bytes +
    adapter_gradient_bytes + optimizer_state_bytes)``. Defaults: bf16 base (2 B); fp32 adapters and
    gradients (PEFT's ``autocast_adapter_dtype=True`` upcasts bf16/fp16 adapter weights to fp32,
    https://huggingface.co/docs/peft/package_reference/peft_model) with AdamW (8 B): 16 B per adapter
    parameter. Activations are separate (:func:`engine.sizing.activations.activation_bytes`).
    """
    base = total_params(shape) * check_non_negative("base_weight_bytes", base_weight_bytes)
    adapter = model_state_memory(
        lora_params(shape, rank, targets=targets),
        optimizer=optimizer,
        weight_bytes=adapter_weight_bytes,
        gradient_bytes=adapter_gradient_bytes,
        master_weights=adapter_master_weights,
        adam_8bit_state_bytes=adam_8bit_state_bytes,
        adafactor_state_bytes=adafactor_state_bytes,
    )
    return PeftMemory(base_weights_bytes=base, adapter=adapter)


def qlora_memory(
    shape: TransformerShape,
    rank: int = QLORA_LORA_RANK,
    *,
    targets: Sequence[LoraTarget] = LORA_ALL_LINEAR,
    base_precision: WeightPrecision = "nf4",
    double_quant: bool = True,
    unquantized_bytes: float = 2.0,
    optimizer: Optimizer = "adamw",
    adapter_weight_bytes: float = 2.0,
    adapter_gradient_bytes: float = 2.0,
    adapter_master_weights: bool = QLORA_ADAPTER_MASTER_WEIGHTS,
    adam_8bit_state_bytes: float = ADAM_8BIT_STATE_BYTES,
    adafactor_state_bytes: float = ADAFACTOR_STATE_BYTES,
    quantized_experts: bool = True,
) -> PeftMemory:
    """QLoRA: a frozen 4-bit base with 16-bit adapters, one GPU (bytes).

    Formula: ``linear_weight_params * bytes(nf4 + double quant = 4.127 bits)`` + ``(total_params -
    linear_weight_params) * unquantized_bytes`` (embeddings, LM head, norms in bf16) + ``lora_params *
    (2 + 2 + 8)`` (bf16 adapters and gradients, 32-bit AdamW states, no master copy). Sources: Dettmers et
    al. 2023, QLoRA (arXiv 2305.14314), Sec. 3; artidoro/qlora ``qlora.py`` defaults (``lora_r=64``,
    all linear layers, ``paged_adamw_32bit``, LoRA modules cast to bf16). Paged optimizers page states to
    CPU only during memory spikes, so they are counted on the GPU here.

    ``quantized_experts=False``: a mixture of experts' routed experts stay at ``unquantized_bytes``.
    bitsandbytes quantizes `nn.Linear` modules, and transformers 5 keeps each MoE layer's experts as
    3-D parameters, which it skips and leaves in full precision (bitsandbytes issue 1849, open; the fix
    proposed in PR 1965 is not merged). For Qwen3-30B-A3B that is 29B of its 30.5B parameters.
    """
    linear = linear_weight_params(shape)
    experts = 0 if quantized_experts else shape.n_moe_layers * shape.n_experts * mlp_params_per_expert(shape)
    rest = total_params(shape) - linear + experts
    per_quantized = weight_bytes_per_param(base_precision, double_quant=double_quant)
    base = (linear - experts) * per_quantized + rest * check_non_negative(
        "unquantized_bytes", unquantized_bytes
    )
    adapter = model_state_memory(
        lora_params(shape, rank, targets=targets),
        optimizer=optimizer,
        weight_bytes=adapter_weight_bytes,
        gradient_bytes=adapter_gradient_bytes,
        master_weights=adapter_master_weights,
        adam_8bit_state_bytes=adam_8bit_state_bytes,
        adafactor_state_bytes=adafactor_state_bytes,
    )
    return PeftMemory(base_weights_bytes=base, adapter=adapter)


def merged_expert_bytes(
    shape: TransformerShape, *, checkpointing: bool, base_weight_bytes: float = 2.0
) -> float:
    """Memory peft holds for LoRA on a mixture of experts' expert weights beside the activations (bytes).

    transformers 5 keeps an MoE layer's experts as 3-D parameters, which peft adapts through
    `target_parameters` (tuners/lora/layer.py, ``ParamWrapper``): for each forward pass it computes the
    delta ``B A`` of every expert at once and multiplies the inputs by ``W + B A``, a full copy of the
    layer's expert weights in the base's dtype, which autograd keeps for the backward pass; there the
    gradient with respect to that copy is another. Formula: ``experts x mlp_params_per_expert x
    base_weight_bytes x (kept + 1)``, ``kept`` every MoE layer, or the one recomputed with checkpointing;
    0 for a dense model. Qwen3-30B-A3B in bf16: 1.2 GB a layer, 58 GB over its 48 layers without
    checkpointing.
    """
    if not shape.is_moe:
        return 0.0
    check_non_negative("base_weight_bytes", base_weight_bytes)
    per_layer = shape.n_experts * mlp_params_per_expert(shape) * base_weight_bytes
    kept = 1 if checkpointing else shape.n_moe_layers
    return per_layer * (kept + 1)
