"""Memory of one plan, per GPU: which bytes each GPU holds for a method, precision and layout.

Pure composition of the sizing functions (engine/sizing); the formulas and their sources live there.
A layout is how the job is spread over the GPUs of one replica: `tp` ways of tensor (or pipeline)
splitting, `dp` data-parallel ranks, and the ZeRO stage its model states are sharded to
(1-3; stage 3 is FSDP full sharding), over all the ranks or, hybrid, over each node's (`shard`), and
whether they are offloaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from math import ceil
from typing import Literal

from engine.models.kb import Gpu
from engine.planning.workload import ADAPTER_METHODS, Job
from engine.sizing import (
    GB,
    PeftMemory,
    Sharding,
    TransformerShape,
    lora_memory,
    merged_expert_bytes,
    mlp_params_per_expert,
    model_kv_cache_bytes,
    model_state_memory,
    qlora_memory,
    total_params,
    weights_bytes,
)
from engine.sizing.kept_activations import ADAPTED_ALL, KeptActivations, TrainedPart, kept_activations
from engine.sizing.precision import KvCacheDtype, WeightPrecision
from engine.sizing.serving_engines import CUDA_GRAPH_POOL_BYTES, profile, workspace_bytes

INFERENCE_CONTEXT_BYTES = 0.4e9
"""The CUDA context with lazy module loading (CUDA >= 11.7): 'around 400MB' (PyTorch forums and issue
109888, NVIDIA); vLLM logs 'non_torch_memory takes 0.39GiB' (vLLM issue 11251)."""
MIB = 2**20

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
    shard: int = 0
    """ZeRO-3: the data-parallel ranks one copy of the model states is sharded over, where fewer than `dp`
    (hybrid sharding: sharded inside each node, whole copies across nodes); 0 for all of them"""

    @property
    def shard_ways(self) -> int:
        """The ranks each model state is split over by ZeRO (all `dp` unless the sharding is hybrid)."""
        return self.shard or self.dp

    def per_rank(self, batch: int) -> int:
        """Sequences of a batch each data-parallel rank (or inference replica) holds: at least one."""
        return max(1, ceil(batch / self.dp))


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
    logits: float = 0.0
    """Of `activations`: the loss's logits, their fp32 copy and its gradient (a training step without a
    fused loss; `kept_activations.loss_bytes_per_token`)."""

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


def per_gpu(job: Job, layout: Layout, *, gradients_resident: bool = True) -> Breakdown:
    """Memory on each GPU of the layout at its peak (bytes). A planned job accumulates gradients over
    micro-batches, so they are resident when the loss's backward peaks; `gradients_resident=False`
    sizes one step whose gradients were freed before it (a measured single step)."""
    if layout.method == "inference":
        return _inference(job, layout)
    if layout.method in ADAPTER_METHODS:
        return _adapters(job, layout)
    return _full_training(job, layout, gradients_resident=gradients_resident)


def _inference(job: Job, layout: Layout) -> Breakdown:
    """What a serving engine holds on each GPU: its weight shard, the KV cache of its share of the
    sequences at their full context, the activation workspace of its largest forward pass, and the
    CUDA context and graph pool (engine/sizing/serving_engines.py)."""
    engine = profile(job.engine)
    weights = weights_bytes(job.params, weight_precision(layout.precision))
    # Replicas share the concurrent sequences; each holds its share's KV cache.
    sequences = micro_batch(job, layout)
    tensor = layout.split == "tensor"
    kv = 0.0
    if not job.reads_only:
        dtype = kv_dtype(job, layout.precision)
        if tensor:  # KV heads split over the GPUs (replicated past their count; MLA's latent everywhere)
            kv = model_kv_cache_bytes(
                job.shape, job.context_tokens, sequences, dtype=dtype, tensor_parallel=layout.tp
            )
        else:
            kv = model_kv_cache_bytes(job.shape, job.context_tokens, sequences, dtype=dtype) / layout.tp
    batched = engine.batched_tokens or sequences * (
        job.serving.avg_input_tokens if job.serving else job.seq_len
    )
    if job.reads_only:
        batched = sequences * job.context_tokens
    workspace = workspace_bytes(
        job.shape, batched, sequences, tensor_parallel=layout.tp if tensor else 1, logits=not job.reads_only
    )
    if engine.moe_decode_gathers and job.shape.is_moe and not job.reads_only:
        # a decode step holds one layer's gathered experts, after the prompts' workspace is freed
        # (serving_engines.MOE_GATHER_NOTE)
        workspace = max(workspace, _gathered_layer_bytes(job, layout, sequences))
    # embedding servers (Text Embeddings Inference) run their batches without captured graphs
    graphs = CUDA_GRAPH_POOL_BYTES if engine.cuda_graphs and not job.reads_only else 0.0
    return Breakdown(
        weights=weights / layout.tp,
        gradients=0.0,
        optimizer=0.0,
        activations=workspace,
        kv_cache=kv,
        overhead=INFERENCE_CONTEXT_BYTES + graphs,
    )


def _gathered_layer_bytes(job: Job, layout: Layout, sequences: int) -> float:
    """One MoE layer's expert copies in a gathering engine's decode step, on each GPU: a copy of one
    expert per sequence and routed slot (Mixtral 8x7B at batch 8: 16 x 352 MB, 5.64 GB; 5.69 GB
    measured on an H200)."""
    shape = job.shape
    per_expert = mlp_params_per_expert(shape) * job.params / total_params(shape)
    copies = sequences * shape.experts_per_token * per_expert
    return weights_bytes(copies, weight_precision(layout.precision)) / layout.tp


def reported_bytes(gpu: Gpu) -> float:
    """The memory the driver reports for one GPU (bytes): the KB's sourced `memory_reported_mib`, else
    its stated capacity in decimal GB, a floor (cards report their binary size less reservations: an
    H100 80GB 81,559 MiB, 85.5e9 bytes)."""
    if gpu.memory_reported_mib is not None:
        return gpu.memory_reported_mib * MIB
    return (gpu.usable_memory_gb or gpu.memory_gb) * GB


def serving_budget(gpu: Gpu, job: Job) -> float | None:
    """The bytes a serving engine allots itself on one GPU (its share of what the driver reports), or
    None when the engine sets none aside and the training headroom applies."""
    share = profile(job.engine).memory_utilization
    return reported_bytes(gpu) * share if share < 1.0 else None


FUSED_LOSS_PLATFORMS = frozenset({"cuda", "rocm"})
"""where a fused linear cross-entropy runs: its kernels are Triton's (Liger Kernel, Hsu et al. 2024;
Cut Cross-Entropy, Wijmans et al. 2024), and Triton compiles for NVIDIA and AMD GPUs, not Apple's"""


def runs_fused_loss(platforms: Iterable[str]) -> bool:
    """Whether a GPU with these software platforms runs a fused linear cross-entropy."""
    return not FUSED_LOSS_PLATFORMS.isdisjoint(platforms)


def micro_batch(job: Job, layout: Layout) -> int:
    """Sequences each data-parallel rank (or inference replica) holds."""
    return layout.per_rank(job.batch)


HF_GRADIENT_BYTES = 4.0
"""Gradients of fp32 parameters are fp32 (Hugging Face, Model training anatomy: 'gradients: 4 bytes *
number of parameters'); DeepSpeed's bf16 and ZeRO paths keep an fp32 gradient buffer too."""
LORA_TARGETS = ADAPTED_ALL
"""LoRA is planned on every linear projection: QLoRA (Dettmers et al. 2023, arXiv 2305.14314, Sec. 4)
finds adapters on all linear layers needed to match full fine-tuning, and PEFT's 'all-linear' and
TRL's recipes default to it."""


def trained_part(layout: Layout, stack: str = "huggingface") -> TrainedPart:
    """How a layout's stack holds activations: fp32 weights under autocast for full training (an fp32
    residual stream), a 16-bit base for LoRA and QLoRA, fp32 throughout for fp32 training. A tuned
    stack computes with 16-bit copies of its weights, so its residual stream is 16-bit too (Megatron-LM's
    `fp32_residual_connection` is off by default; torchtitan's FSDP2 mixed precision casts the
    parameters to bf16 for the forward)."""
    return _trained_part(layout.method in ADAPTER_METHODS, layout.precision == "fp32", stack)


@lru_cache(maxsize=64)
def _trained_part(adapters: bool, fp32: bool, stack: str) -> TrainedPart:
    """`trained_part`, one object per kind (the activations' cache then compares it by identity)."""
    compute = 4.0 if fp32 else 2.0
    if adapters:
        return TrainedPart(adapters=LORA_TARGETS, residual_bytes=compute, compute_bytes=compute)
    residual = 4.0 if stack == "huggingface" else compute
    return TrainedPart(adapters=None, residual_bytes=residual, compute_bytes=compute)


def _activations(job: Job, layout: Layout) -> KeptActivations:
    """The activations and logits one GPU keeps for its micro-batch (engine/sizing/kept_activations)."""
    # Tensor parallelism splits activations; a pipeline does not (Korthikanti et al. 2022, Sec. 4.2.3).
    # A tuned stack runs sequence parallelism beside it (Megatron-LM's --sequence-parallel, torchtitan's
    # tensor-parallel plan), which splits the rest.
    ways = layout.tp if layout.split == "tensor" else 1
    kept = kept_activations(
        job.shape,
        micro_batch(job, layout) * job.seq_len,
        trained_part(layout, job.training_stack),
        checkpointing=layout.checkpointing,
        fused_loss=job.fused_loss,
        tensor_parallel=ways,
        sequence_parallel=ways > 1 and job.training_stack != "huggingface",
    )
    return kept


def _full_training(job: Job, layout: Layout, *, gradients_resident: bool = True) -> Breakdown:
    fp32 = layout.precision == "fp32"
    states = model_state_memory(
        job.params / layout.tp,
        n_gpus=layout.shard_ways,
        sharding="zero3" if layout.offload else ZERO_SHARDING[layout.zero],
        optimizer=job.optimizer,
        weight_bytes=4.0 if fp32 else 2.0,
        gradient_bytes=HF_GRADIENT_BYTES,
        master_weights=not fp32,
        offload_optimizer=layout.offload,
    )
    kept = _activations(job, layout)
    activations = kept.total
    gradients = states.gradients_bytes
    if not gradients_resident:
        # Without gradient accumulation the gradients are freed (set to None) before each forward and
        # do not exist yet when the loss's backward peaks; they all exist at the optimizer step, when
        # the activations and autocast's 16-bit copies of the weights are gone. That step is the peak
        # where the gradients outweigh those: Llama 3.1 8B fully fine-tuned at 1 x 4,096 tokens with
        # checkpointing held 129.7 GB on an H200, 16 bytes a parameter (h200-2026-11-27-g.json).
        working = 0.0 if fp32 else states.weights_bytes
        gradients = max(0.0, gradients - working - activations)
    return Breakdown(
        weights=states.weights_bytes,
        gradients=gradients,
        optimizer=states.optimizer_bytes,
        activations=activations,
        kv_cache=0.0,
        overhead=CUDA_CONTEXT_BYTES,
        host=states.host_bytes,
        logits=kept.loss,
    )


def frozen_base_bytes(job: Job, layout: Layout) -> float:
    """An adapter method's frozen base, whole (bytes): its 16-bit weights (fp32 when training in fp32;
    4-bit with 16-bit embeddings and head for QLoRA), which the adapters train beside; 0 for full
    training."""
    if layout.method not in ADAPTER_METHODS:
        return 0.0
    return _adapter_states(job, layout)[0]


def _adapter_states(job: Job, layout: Layout) -> tuple[float, PeftMemory]:
    base_bytes = 4.0 if layout.precision == "fp32" else 2.0
    # bitsandbytes under transformers 5 leaves an MoE's 3-D expert weights unquantized (qlora_memory)
    huggingface = job.training_stack == "huggingface"
    peft = _peft(
        job.shape, job.lora_rank, layout.method == "qlora", base_bytes, job.optimizer, not huggingface
    )
    # The shape's count can differ from the stated size (estimated shapes): scale the frozen base to it.
    return peft.base_weights_bytes * job.params / total_params(job.shape), peft


def _adapters(job: Job, layout: Layout) -> Breakdown:
    base, peft = _adapter_states(job, layout)
    shards = layout.tp * (layout.shard_ways if layout.zero == 3 else 1)  # ZeRO-1/2 keep the base whole
    on_gpu, host = (_offloaded_base(job, base), base / shards) if layout.offload else (base / shards, 0.0)
    kept = _activations(job, layout)
    return Breakdown(
        weights=on_gpu + peft.adapter.weights_bytes,
        gradients=peft.adapter.gradients_bytes,
        optimizer=peft.adapter.optimizer_bytes,
        activations=kept.total + _merged_experts(job, layout),
        kv_cache=0.0,
        overhead=CUDA_CONTEXT_BYTES,
        host=host,
        logits=kept.loss,
    )


def _merged_experts(job: Job, layout: Layout) -> float:
    """What peft's LoRA on a mixture of experts' 3-D expert weights keeps beside the activations on one
    GPU (`merged_expert_bytes`), on the Hugging Face stack; tensor parallelism splits the experts. QLoRA
    too: bitsandbytes leaves those experts in 16 bits (qlora_memory), and peft merges them the same way."""
    if layout.method not in ADAPTER_METHODS or job.training_stack != "huggingface" or not job.shape.is_moe:
        return 0.0
    base_bytes = 4.0 if layout.precision == "fp32" else 2.0
    return (
        merged_expert_bytes(job.shape, checkpointing=layout.checkpointing, base_weight_bytes=base_bytes)
        / layout.tp
    )


def _offloaded_base(job: Job, base: float) -> float:
    """The frozen base a GPU holds when FSDP offloads it to host RAM (CPUOffload(offload_params=True), as
    Answer.AI's FSDP-QLoRA trains a 70B model on two 24 GB cards): the unit being computed and the next,
    prefetched; the largest unit is a layer or, in 16 bits, an embedding table."""
    shape = job.shape
    table = 2.0 * shape.vocab_size * shape.hidden_size
    return 2.0 * max(base / shape.n_layers, table)


@lru_cache(maxsize=256)  # per workload: the sizing cache holds some 30 (a few objects each for the GC)
def _peft(
    shape: TransformerShape,
    rank: int,
    qlora: bool,
    base_bytes: float,
    optimizer: str,
    quantized_experts: bool,
) -> PeftMemory:
    """LoRA/QLoRA model states: the same for every layout of a job, so computed once (pure)."""
    if qlora:
        return qlora_memory(shape, rank, optimizer=optimizer, quantized_experts=quantized_experts)  # type: ignore[arg-type]
    return lora_memory(
        shape,
        rank,
        targets=tuple(sorted(LORA_TARGETS)),  # type: ignore[arg-type]
        base_weight_bytes=base_bytes,
        optimizer=optimizer,  # type: ignore[arg-type]
    )


def weight_precision(precision: str) -> WeightPrecision:
    if precision not in ("fp32", "fp16", "bf16", "fp8", "int8", "int4", "nf4"):
        raise ValueError(f"precision {precision!r} is not a weights format")
    return precision  # type: ignore[return-value]


def whole_job(job: Job, method: str, precision: str, checkpointing: bool) -> Breakdown:
    """The job before any sharding: one GPU's worth, as `requirements.memory` reports it."""
    return per_gpu(job, Layout(method=method, precision=precision, checkpointing=checkpointing))
