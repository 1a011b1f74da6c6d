"""Memory of one plan, per GPU: which bytes each GPU holds for a method, precision and layout.

Pure composition of the sizing functions (engine/sizing); the formulas and their sources live there.
A layout is how the job is spread over the GPUs of one replica: `tp` ways of tensor (or pipeline)
splitting, `dp` data-parallel ranks, and the ZeRO stage its model states are sharded to
(1-3; stage 3 is FSDP full sharding) and whether they are offloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import ceil
from typing import Literal

from engine.planning.workload import Job
from engine.sizing import (
    PeftMemory,
    Sharding,
    TransformerShape,
    activation_bytes,
    logits_bytes,
    lora_memory,
    model_kv_cache_bytes,
    model_state_memory,
    qlora_memory,
    total_params,
    weights_bytes,
)
from engine.sizing.activations import Recompute
from engine.sizing.conventions import INFERENCE_OVERHEAD_FRACTION
from engine.sizing.precision import KvCacheDtype, WeightPrecision

CUDA_CONTEXT_BYTES = 1.3e9
"""CUDA context and kernels loaded by PyTorch before any tensor: 'the kernels alone take up 1.3GB'
(Hugging Face, Model training anatomy, https://huggingface.co/docs/transformers/model_memory_anatomy)."""


Split = Literal["tensor", "pipeline"]
ZERO_SHARDING: dict[int, Sharding] = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}
"""`Layout.zero` as the sizing's sharding name"""


@dataclass(frozen=True)
class Layout:
    method: str
    """inference | pretrain | full_finetune | lora | qlora"""
    precision: str
    """weights format: fp32 | fp16 | bf16 | fp8 | int8 | int4 (inference); training: the compute format"""
    tp: int = 1
    """GPUs one copy of the weights is split over"""
    split: Split = "tensor"
    """how the weights are split when tp > 1: tensor parallel, or layers across GPUs (pipeline)"""
    dp: int = 1
    """data-parallel ranks (replicas for inference)"""
    zero: int = 0
    """ZeRO stage of the model states over the dp ranks: 0 none (DDP), 1 optimizer states, 2 and
    gradients, 3 and weights (ZeRO-3 / FSDP full sharding)"""
    offload: bool = False
    """optimizer states and master weights in host memory (ZeRO-Offload); sized and timed as ZeRO-3
    whatever `zero` says, the only stage the planner offloads with"""
    checkpointing: bool = False
    """activation recomputation (full)"""


@dataclass(frozen=True)
class Breakdown:
    """Bytes on each GPU (or, for the whole job, in all)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    kv_cache: float
    overhead: float
    host: float = 0.0
    """Bytes each GPU's process keeps in host RAM (CPU offload), not counted in `total`."""

    @property
    def total(self) -> float:
        return (
            self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache + self.overhead
        )


def kv_dtype(job: Job, precision: str) -> KvCacheDtype:
    """The KV cache format: as requested, else fp32 for fp32 weights, else 16-bit."""
    if job.kv_dtype is not None:
        return job.kv_dtype
    return "fp32" if precision == "fp32" else "fp16" if precision == "fp16" else "bf16"


def per_gpu(job: Job, layout: Layout) -> Breakdown:
    """Memory on each GPU of the layout (bytes)."""
    if layout.method == "inference":
        return _inference(job, layout)
    if layout.method in ("lora", "qlora"):
        return _adapters(job, layout)
    return _full_training(job, layout)


def _inference(job: Job, layout: Layout) -> Breakdown:
    weights = weights_bytes(job.params, weight_precision(layout.precision))
    # Replicas share the concurrent sequences; each holds its share's KV cache.
    sequences = micro_batch(job, layout)
    kv = model_kv_cache_bytes(job.shape, job.seq_len, sequences, dtype=kv_dtype(job, layout.precision))
    # Transformer Math 101: inference total ~= 1.2 x the weights; the 20% rides with each weight shard.
    return Breakdown(
        weights=weights / layout.tp,
        gradients=0.0,
        optimizer=0.0,
        activations=0.0,
        kv_cache=kv / layout.tp,
        overhead=weights * INFERENCE_OVERHEAD_FRACTION / layout.tp,
    )


def micro_batch(job: Job, layout: Layout) -> int:
    """Sequences each data-parallel rank (or inference replica) holds."""
    return max(1, ceil(job.batch / layout.dp))


def _activations(job: Job, layout: Layout) -> float:
    micro = micro_batch(job, layout)
    # Without checkpointing, attention is fused: PyTorch's scaled_dot_product_attention runs flash or
    # memory-efficient kernels (Rabe & Staats 2021) that never store the s x s score matrix, which is
    # Korthikanti's "selective" figure, 34 s b h per layer
    # (https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html).
    recompute: Recompute = "full" if layout.checkpointing else "selective"
    # Tensor parallelism splits activations; a pipeline does not (Korthikanti et al. 2022, Sec. 4.2.3).
    ways = layout.tp if layout.split == "tensor" else 1
    return (
        activation_bytes(job.shape, job.seq_len, micro, recompute=recompute, tensor_parallel=ways)
        + logits_bytes(job.seq_len, micro, job.shape.vocab_size) / ways
    )


def _full_training(job: Job, layout: Layout) -> Breakdown:
    fp32 = layout.precision == "fp32"
    states = model_state_memory(
        job.params / layout.tp,
        n_gpus=layout.dp,
        sharding="zero3" if layout.offload else ZERO_SHARDING[layout.zero],
        optimizer=job.optimizer,
        weight_bytes=4.0 if fp32 else 2.0,
        gradient_bytes=4.0 if fp32 else 2.0,
        master_weights=not fp32,
        offload_optimizer=layout.offload,
    )
    return Breakdown(
        weights=states.weights_bytes,
        gradients=states.gradients_bytes,
        optimizer=states.optimizer_bytes,
        activations=_activations(job, layout),
        kv_cache=0.0,
        overhead=CUDA_CONTEXT_BYTES,
        host=states.host_bytes,
    )


def _adapters(job: Job, layout: Layout) -> Breakdown:
    base_bytes = 4.0 if layout.precision == "fp32" else 2.0
    peft = _peft(job.shape, job.lora_rank, layout.method == "qlora", base_bytes, job.optimizer)
    # The shape's count can differ from the stated size (estimated shapes): scale the frozen base to it.
    base = peft.base_weights_bytes * job.params / total_params(job.shape)
    shards = layout.tp * (layout.dp if layout.zero == 3 else 1)  # ZeRO-1/2 keep the frozen base whole
    return Breakdown(
        weights=base / shards + peft.adapter.weights_bytes,
        gradients=peft.adapter.gradients_bytes,
        optimizer=peft.adapter.optimizer_bytes,
        activations=_activations(job, layout),
        kv_cache=0.0,
        overhead=CUDA_CONTEXT_BYTES,
    )


@lru_cache(maxsize=1024)
def _peft(shape: TransformerShape, rank: int, qlora: bool, base_bytes: float, optimizer: str) -> PeftMemory:
    """LoRA/QLoRA model states: the same for every layout of a job, so computed once (pure)."""
    if qlora:
        return qlora_memory(shape, rank, optimizer=optimizer)  # type: ignore[arg-type]
    return lora_memory(shape, rank, base_weight_bytes=base_bytes, optimizer=optimizer)  # type: ignore[arg-type]


def weight_precision(precision: str) -> WeightPrecision:
    if precision not in ("fp32", "fp16", "bf16", "fp8", "int8", "int4", "nf4"):
        raise ValueError(f"precision {precision!r} is not a weights format")
    return precision  # type: ignore[return-value]


def whole_job(job: Job, method: str, precision: str, checkpointing: bool) -> Breakdown:
    """The job before any sharding: one GPU's worth, as `requirements.memory` reports it."""
    return per_gpu(job, Layout(method=method, precision=precision, checkpointing=checkpointing))
