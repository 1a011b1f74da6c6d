"""Training memory for model states: weights, gradients, optimizer states and fp32 master weights,
sharded across data-parallel GPUs (DDP, ZeRO-1/2/3, FSDP) and optionally offloaded to CPU memory.

Per-parameter bytes (defaults in :mod:`engine.sizing.conventions`):

============================  ===================================================================
weights                       2 (bf16/fp16 working copy; 4 for pure fp32 training)
gradients                     2 (ZeRO paper, Transformer Math 101); 4 in HF's anatomy, DeepSpeed, llm-analysis
fp32 master weights           4 under mixed precision (none in pure fp32 or pure bf16 training)
optimizer states              AdamW/Adam 8, 8-bit Adam 2, SGD+momentum 4, SGD 0, Adafactor <= 4
============================  ===================================================================

Mixed-precision AdamW therefore costs 2 + 2 + 4 + 8 = **16 bytes/param** by default (ZeRO paper,
Sec. 3.1: "2Psi + 2Psi + 12Psi = 16Psi"; Transformer Math 101), or **18** with fp32 gradients (Hugging Face
"model memory anatomy"; guide G2; DeepSpeed's estimator counts 18 for the sharded part). 8-bit Adam: 10 or 12.

Sharding over N data-parallel GPUs (ZeRO paper, Sec. 5 and Fig. 1; PyTorch FSDP docs):

* ``none`` / ``ddp``: every GPU holds W + G + O;
* ``zero1``: optimizer states (with the master weights) sharded: W + G + O/N;
* ``zero2`` / ``fsdp_shard_grad_op``: gradients too: W + G/N + O/N;
* ``zero3`` / ``fsdp`` (FULL_SHARD): parameters too: (W + G + O)/N, plus the gathered working set of the
  largest layer (DeepSpeed's ``estimate_zero3_model_states_mem_needs``: ``4 * largest_layer_params``).

CPU offload (ZeRO-Offload, Ren et al. 2021, arXiv 2101.06840; DeepSpeed ``offload_optimizer`` /
``offload_param``): ``offload_optimizer`` moves the optimizer states and master weights (and, from ZeRO-2
on, the gradient partition) to host memory; ``offload_params`` (ZeRO-3/FSDP only, and only together with
``offload_optimizer``) moves the parameter partition too, leaving the working set on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from engine.sizing._checks import (
    check_choice,
    check_non_negative,
    check_non_negative_int,
    check_positive,
    check_positive_int,
)
from engine.sizing.conventions import (
    ADAFACTOR_STATE_BYTES,
    ADAM_8BIT_STATE_BYTES,
    ADAM_STATE_BYTES,
    DEFAULT_GRADIENT_BYTES,
    DEFAULT_WEIGHT_BYTES,
    MASTER_WEIGHT_BYTES,
    SGD_MOMENTUM_STATE_BYTES,
)

__all__ = [
    "OPTIMIZERS",
    "SHARDINGS",
    "ModelStateMemory",
    "Optimizer",
    "Sharding",
    "model_state_bytes_per_param",
    "model_state_memory",
    "optimizer_state_bytes_per_param",
]

Optimizer = Literal["adamw", "adam", "adamw_8bit", "sgd_momentum", "sgd", "adafactor"]
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)

Sharding = Literal["none", "ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp_shard_grad_op"]
SHARDINGS: tuple[str, ...] = get_args(Sharding)

_STAGE: dict[str, int] = {
    "none": 0,
    "ddp": 0,
    "zero1": 1,
    "zero2": 2,
    "fsdp_shard_grad_op": 2,
    "zero3": 3,
    "fsdp": 3,
}


def optimizer_state_bytes_per_param(
    optimizer: Optimizer,
    *,
    adam_state_bytes: float = ADAM_STATE_BYTES,
    adam_8bit_state_bytes: float = ADAM_8BIT_STATE_BYTES,
    sgd_momentum_state_bytes: float = SGD_MOMENTUM_STATE_BYTES,
    adafactor_state_bytes: float = ADAFACTOR_STATE_BYTES,
) -> float:
    """Optimizer-state bytes per trained parameter, master weights excluded (bytes/param).

    Formula: ``adamw``/``adam`` 8 (fp32 m and v), ``adamw_8bit`` 2 (8-bit m and v), ``sgd_momentum`` 4,
    ``sgd`` 0, ``adafactor`` 4 (upper bound; see :data:`~engine.sizing.conventions.ADAFACTOR_STATE_BYTES`).
    Sources: Hugging Face "model memory anatomy" (Optimizer States); Transformer Math 101 (Optimizer States,
    there quoted with the 4-byte master copy: 12 / 6 / 8); Dettmers et al. 2021 (8-bit optimizers).
    """
    check_choice("optimizer", optimizer, OPTIMIZERS)
    table = {
        "adamw": check_non_negative("adam_state_bytes", adam_state_bytes),
        "adam": adam_state_bytes,
        "adamw_8bit": check_non_negative("adam_8bit_state_bytes", adam_8bit_state_bytes),
        "sgd_momentum": check_non_negative("sgd_momentum_state_bytes", sgd_momentum_state_bytes),
        "sgd": 0.0,
        "adafactor": check_non_negative("adafactor_state_bytes", adafactor_state_bytes),
    }
    return table[optimizer]


def _master_bytes(master_weights: bool | None, weight_bytes: float, master_weight_bytes: float) -> float:
    if master_weights is None:
        master_weights = weight_bytes < master_weight_bytes
    if not isinstance(master_weights, bool):
        raise ValueError(f"master_weights must be a bool or None, got {master_weights!r}")
    return master_weight_bytes if master_weights else 0.0


def model_state_bytes_per_param(
    optimizer: Optimizer = "adamw",
    *,
    weight_bytes: float = DEFAULT_WEIGHT_BYTES,
    gradient_bytes: float = DEFAULT_GRADIENT_BYTES,
    master_weights: bool | None = None,
    master_weight_bytes: float = MASTER_WEIGHT_BYTES,
    adam_8bit_state_bytes: float = ADAM_8BIT_STATE_BYTES,
    adafactor_state_bytes: float = ADAFACTOR_STATE_BYTES,
) -> float:
    """Unsharded model-state bytes per trained parameter (bytes/param).

    Formula: ``weight_bytes + gradient_bytes + master + optimizer_state_bytes``, where ``master`` is
    ``master_weight_bytes`` (4) when ``master_weights`` is true; ``None`` (default) means "mixed precision
    if the weights are narrower than the master copy". Defaults give 2 + 2 + 4 + 8 = 16 for mixed-precision
    AdamW (ZeRO paper Sec. 3.1; Transformer Math 101); ``gradient_bytes=4`` gives 18 (HF model memory
    anatomy); ``weight_bytes=4, gradient_bytes=4`` gives 16 for fp32 AdamW; ``master_weights=False`` gives
    12 for pure bf16 AdamW (QLoRA abstract: ">780GB" to finetune 65B in 16-bit).
    """
    w = check_non_negative("weight_bytes", weight_bytes)
    g = check_non_negative("gradient_bytes", gradient_bytes)
    m = _master_bytes(master_weights, w, check_non_negative("master_weight_bytes", master_weight_bytes))
    o = optimizer_state_bytes_per_param(
        optimizer, adam_8bit_state_bytes=adam_8bit_state_bytes, adafactor_state_bytes=adafactor_state_bytes
    )
    return w + g + m + o


@dataclass(frozen=True, slots=True)
class ModelStateMemory:
    """Per-GPU model-state memory (bytes) and what each GPU's process keeps in host memory (bytes)."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    """Optimizer states plus the fp32 master weights, on the GPU."""
    host_bytes: float
    """Offloaded states held in CPU memory, per GPU (multiply by GPUs per node for a node's RAM)."""

    @property
    def gpu_bytes(self) -> float:
        """Weights + gradients + optimizer on one GPU (bytes)."""
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes


def _offloaded(
    weights: float, grads: float, opt: float, stage: int, offload_optimizer: bool, offload_params: bool
) -> tuple[float, float, float, float]:
    """(weights, gradients, optimizer, host) bytes per GPU once offload moves its share to the host:
    the optimizer states, from stage 2 the gradient partition too, and with `offload_params` the
    weights (DeepSpeed ZeRO-Offload / ZeRO-Infinity)."""
    host = 0.0
    if offload_optimizer:
        host, opt = host + opt, 0.0
        if stage >= 2:
            host, grads = host + grads, 0.0
    if offload_params:
        host, weights = host + weights, 0.0
    return weights, grads, opt, host


def _check_offload(sharding: str, stage: int, offload_optimizer: bool, offload_params: bool) -> None:
    """ValueError unless the offload flags are booleans the sharding allows: optimizer offload needs
    ZeRO-1 or more, parameter offload ZeRO-3 and optimizer offload too (DeepSpeed, FSDP)."""
    for name, flag in (("offload_optimizer", offload_optimizer), ("offload_params", offload_params)):
        if not isinstance(flag, bool):
            raise ValueError(f"{name} must be a bool, got {flag!r}")
    if offload_optimizer and stage == 0:
        raise ValueError(
            "offload_optimizer needs ZeRO-1/2/3 or FSDP sharding, got sharding='" + sharding + "'"
        )
    if offload_params and stage < 3:
        raise ValueError("offload_params needs ZeRO-3 or FSDP full sharding, got sharding='" + sharding + "'")
    if offload_params and not offload_optimizer:
        raise ValueError("offload_params needs offload_optimizer=True (DeepSpeed and FSDP offload both)")


def model_state_memory(
    n_params: float,
    *,
    n_gpus: int = 1,
    sharding: Sharding = "none",
    optimizer: Optimizer = "adamw",
    weight_bytes: float = DEFAULT_WEIGHT_BYTES,
    gradient_bytes: float = DEFAULT_GRADIENT_BYTES,
    master_weights: bool | None = None,
    master_weight_bytes: float = MASTER_WEIGHT_BYTES,
    adam_8bit_state_bytes: float = ADAM_8BIT_STATE_BYTES,
    adafactor_state_bytes: float = ADAFACTOR_STATE_BYTES,
    offload_optimizer: bool = False,
    offload_params: bool = False,
    largest_layer_params: int = 0,
) -> ModelStateMemory:
    """Model-state memory per GPU for ``n_params`` trained parameters (bytes).

    Formula (W, G, O = n_params x weight, gradient, optimizer+master bytes; N = ``n_gpus``):
    ``none``/``ddp`` W + G + O; ``zero1`` W + G + O/N; ``zero2``/``fsdp_shard_grad_op`` W + G/N + O/N;
    ``zero3``/``fsdp`` (W + G + O)/N + ``largest_layer_params * (weight_bytes + gradient_bytes)``.
    Offload moves O (and from stage 2 the G partition; with ``offload_params`` the W partition) to
    ``host_bytes``. Source: Rajbhandari et al. 2020, ZeRO (arXiv 1910.02054), Sec. 5 / Fig. 1 (7.5B on 64
    GPUs: 120, 31.4, 16.6, 1.9 GB for stages 0-3); DeepSpeed ``estimate_zero2_model_states_mem_needs`` /
    ``estimate_zero3_model_states_mem_needs`` for offload and the ZeRO-3 working set.
    ``n_gpus`` > 1 with ``none`` is plain replication (DDP).
    """
    p = check_positive("n_params", n_params)
    n = check_positive_int("n_gpus", n_gpus)
    check_choice("sharding", sharding, SHARDINGS)
    stage = _STAGE[sharding]
    largest = check_non_negative_int("largest_layer_params", largest_layer_params)
    if largest > p:
        raise ValueError(f"largest_layer_params ({largest}) cannot exceed n_params ({p})")
    _check_offload(sharding, stage, offload_optimizer, offload_params)
    w = check_non_negative("weight_bytes", weight_bytes)
    g = check_non_negative("gradient_bytes", gradient_bytes)
    master = _master_bytes(master_weights, w, check_non_negative("master_weight_bytes", master_weight_bytes))
    state = optimizer_state_bytes_per_param(
        optimizer, adam_8bit_state_bytes=adam_8bit_state_bytes, adafactor_state_bytes=adafactor_state_bytes
    )
    weights = p * w / (n if stage >= 3 else 1)
    grads = p * g / (n if stage >= 2 else 1)
    opt = p * (master + state) / (n if stage >= 1 else 1)
    working_set = largest * (w + g) if stage >= 3 else 0.0

    weights, grads, opt, host = _offloaded(weights, grads, opt, stage, offload_optimizer, offload_params)
    return ModelStateMemory(
        weights_bytes=weights + working_set,
        gradients_bytes=grads,
        optimizer_bytes=opt,
        host_bytes=host,
    )
