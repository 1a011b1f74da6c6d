"""Speed of one plan on one GPU model: decode tokens/s for inference, training tokens/s and hours.

A roofline over the sizing functions (engine/sizing/throughput.py): decoding streams the weights (and
KV cache) once per step, so it is bound by memory bandwidth until the batch reaches the GPU's
FLOPs-per-byte ridge; training is bound by FLOPS at the model FLOPs utilization, plus the gradient
all-reduce over the GPU-to-GPU link and, with offload, traffic over the host link. No overlap of
communication with compute is assumed, so times are upper bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import floor

from engine.models.kb import Gpu
from engine.planning.memory import (
    Breakdown,
    Layout,
    frozen_base_bytes,
    kv_dtype,
    micro_batch,
    per_gpu,
    weight_precision,
)
from engine.planning.workload import ADAPTER_METHODS, Job
from engine.sizing import (
    GB,
    LORA_ALL_LINEAR,
    TFLOPS,
    TransformerShape,
    attended_layer_tokens,
    decode_bytes_per_step,
    forward_flops_per_token,
    input_embedding_params,
    lora_params,
    model_kv_cache_bytes,
    moe_decode_params_read,
    moe_routed_params_per_token,
    total_params,
    weight_bytes_per_param,
)
from engine.sizing._checks import check_positive
from engine.sizing.conventions import ALLREDUCE_LATENCY_S
from engine.sizing.serving_engines import (
    MOE_GATHER_BANDWIDTH_EFFICIENCY,
    MOE_GATHER_PASSES,
    encoder_efficiency,
    moe_pass_seconds,
    profile,
)
from engine.sizing.throughput import (
    allreduce_seconds,
    tensor_parallel_comm_seconds,
)
from engine.sizing.training_speed import (
    FP8_TRAINING_SPEEDUP,
    achieved_utilization,
    generation_share,
    memory_bound_seconds,
    normalised_elements,
    training_flops_per_token,
)

ZERO3_COMM_VOLUME = 1.5
"""ZeRO-3 moves 1.5x the data of DDP's all-reduce per step (Rajbhandari et al. 2020, Sec. 7.2.2)."""
TP_TRAINING_COMM_FACTOR = 3
"""Tensor-parallel training does the forward all-reduces and twice as many backward (Narayanan et al.
2021, arXiv 2104.04473, Sec. 3.2: 2 all-reduces forward and 2 backward per layer, gradients included)."""


@dataclass(slots=True, eq=False)
class Speed:
    """A plan's speed (a value: never changed once made; not frozen as searches make hundreds)."""

    tokens_per_s: float
    """per sequence (inference) or per replica (training)"""
    aggregate_tokens_per_s: float
    max_concurrent_sequences: int | None = None
    training_hours: float | None = None
    prefill_tokens_per_s: float | None = None
    """inference: prompt tokens the plan's replicas process per second when they do nothing else"""
    time_to_first_token_s: float | None = None
    """inference: one average prompt's prefill on an idle replica"""
    corpus_hours: float | None = None
    """encoders: hours the plan takes to embed the request's corpus"""
    reads_only: bool = False
    """inference: an encoder or embedding model, whose speed is the input it reads (it generates nothing)"""


@dataclass(frozen=True)
class Links:
    """Bandwidths (bytes/s) a plan's traffic crosses: between GPUs of a node, between nodes, to the host."""

    gpu_to_gpu: float
    inter_node: float
    host: float
    latency_s: float = ALLREDUCE_LATENCY_S
    """a small all-reduce's fixed cost between a node's GPUs (decode's tensor-parallel messages)"""


def peak_flops(gpu: Gpu, precision: str) -> float | None:
    """Dense peak FLOP/s for the plan's compute format: fp8 where native, 16-bit tensor cores for
    16-bit and weight-only integer formats, TF32 (else vector) for fp32; times the card's
    `sustained_tensor_share` where its power limit keeps it below the datasheet's boost clock.

    The model's utilizations (engine/sizing/training_speed.py, serving_engines.py) are calibrated on
    cards that hold their clocks, an H200 reaching 788 of its 989 TFLOPS in an 8192^3 bf16 matmul
    (data/calibration/h200-2026-11-26.json); a 72 W L4 reaches 59 of its 121, so the datasheet alone
    would rank it 1.7x an RTX 3090 that measures faster (kb/gpus/nvidia-l4.yaml)."""
    if precision == "fp8" and gpu.fp8_dense_tflops:
        tflops: float | None = gpu.fp8_dense_tflops
    elif precision == "fp32":
        tflops = gpu.tf32_dense_tflops or gpu.fp32_tflops
    else:
        tflops = gpu.bf16_dense_tflops or gpu.fp16_dense_tflops or gpu.fp32_tflops
    return None if tflops is None else tflops * (gpu.sustained_tensor_share or 1.0) * TFLOPS


@dataclass(frozen=True)
class DecodeWork:
    """What one decode step of a layout moves and computes: the same on every GPU model, so a
    search computes it once per layout."""

    sequences: int
    step_bytes: float
    """weights and KV cache read per step by one replica (all its GPUs together)"""
    weight_bytes: float
    """the weights of `step_bytes`"""
    prompt_weight_bytes: float
    """the weights a forward pass over the prompts reads at the least: every expert the prompts' tokens
    visit, all of them once a few hundred tokens are read, where a decode step reads those of one token
    a sequence"""
    flops_per_token: float
    prefill_flops_per_token: float
    """a prompt token's forward FLOPs, attention over the prompt included"""
    prompt_tokens: int
    prefill_share: float
    """the share of the dense peak the prompts' matmuls reach (`prefill_share`)"""
    gathered_bytes: float = 0.0
    """the expert weights a step's gathers copy, one expert per sequence and routed slot, where the
    engine gathers them (serving_engines.MOE_GATHER_NOTE); those experts are then not in `weight_bytes`"""
    prefill_norm_bytes: float = 0.0
    """bytes a prompt token's norms move on an engine that runs them eagerly
    (EngineProfile.prefill_norm_bytes x the elements its layers normalise); 0 for an encoder"""
    kv_per_sequence: float = 0.0
    """the KV cache one sequence reads a step (0 for an encoder)"""


def params_read(job: Job, tokens: int) -> float:
    """The parameters a forward pass over `tokens` tokens reads: every weight of a dense model; of an
    MoE, the shared weights and the experts the tokens are expected to visit (`moe_decode_params_read`)."""
    if job.is_moe and not job.shape.is_moe:
        # an MoE given by its counts alone: its shape is dense and stands for the active parameters, so
        # the experts a step reads are estimated as if each token used a share active/total of them,
        # independently: total x (1 - (1 - share)^tokens), the active count at one token and towards
        # the total as the tokens grow (moe_expected_experts' formula with that share)
        share = job.active_params / job.params
        return job.params * (1.0 - (1.0 - share) ** tokens)
    return job.params * _share_read(job.shape, tokens)


@lru_cache(maxsize=4096)
def _share_read(shape: TransformerShape, tokens: int) -> float:
    """The share of a model's parameters a forward pass over `tokens` reads (`moe_decode_params_read`
    over the total): kept, as a serving plan's batch search asks it of one shape many times."""
    return moe_decode_params_read(shape, tokens) / total_params(shape)


def decode_work(job: Job, layout: Layout) -> DecodeWork:
    precision = weight_precision(layout.precision)
    sequences = micro_batch(job, layout)
    context = job.context_tokens
    per_param = weight_bytes_per_param(precision)
    weight_bytes, gathered_bytes = _streamed_and_gathered(job, sequences, per_param)
    # each sequence's cache as held: capped by a sliding window, and a recurrent layer's fixed state
    # in place of its keys and values
    kv_per_sequence = model_kv_cache_bytes(job.shape, context, 1, dtype=kv_dtype(job, layout.precision))
    kv_per_sequence = 0.0 if job.reads_only else kv_per_sequence
    step_bytes = decode_bytes_per_step(weight_bytes, kv_per_sequence, sequences)
    prompt = job.serving.avg_input_tokens if job.serving is not None else job.seq_len
    prompt = context if job.reads_only else max(1, min(prompt, context))
    shape = job.shape
    return DecodeWork(
        sequences=sequences,
        step_bytes=step_bytes,
        weight_bytes=weight_bytes,
        prompt_weight_bytes=params_read(job, sequences * prompt) * per_param,
        flops_per_token=forward_flops_per_token(matmul_params(job)),
        # attention: 2 x seq x q_dim per layer for the scores and as much again for their sum of the
        # values (4 L s q a token, FlashAttention's count), halved under the causal mask; the formula's
        # 2 L n_ctx q counts the scores alone, so it is given twice the context (an encoder) or the
        # prompt (causal), a sliding window's layers their window (`attended_layer_tokens`). Counting
        # half of this put bge-m3 at 8,192 tokens 1.4x off its 512-token efficiency on an H100
        # (data/calibration/h100-2026-11-26.json).
        prefill_flops_per_token=forward_flops_per_token(
            matmul_params(job),
            n_layers=1,
            context_tokens=max(1, attended_layer_tokens(shape, prompt, bidirectional=job.encoder)),
            attention_dim=shape.q_dim,
        ),
        prompt_tokens=prompt,
        prefill_share=prefill_share(job),
        gathered_bytes=gathered_bytes,
        prefill_norm_bytes=0.0 if job.encoder else _prefill_norm_bytes(job),
        kv_per_sequence=kv_per_sequence,
    )


def decode_work_at(job: Job, layout: Layout, work: DecodeWork, sequences: int) -> DecodeWork:
    """`work` (the layout's, sized by `decode_work`) for `sequences` a replica instead: only what the
    batch changes is sized again (the weights a step streams and gathers, the KV cache it reads, the
    weights the prompts visit), a fifth of `decode_work`'s cost for a serving plan's batch search."""
    per_param = weight_bytes_per_param(weight_precision(layout.precision))
    weight_bytes, gathered_bytes = _streamed_and_gathered(job, sequences, per_param)
    return DecodeWork(  # each field named: `dataclasses.replace` takes twice as long
        sequences=sequences,
        step_bytes=decode_bytes_per_step(weight_bytes, work.kv_per_sequence, sequences),
        weight_bytes=weight_bytes,
        prompt_weight_bytes=params_read(job, sequences * work.prompt_tokens) * per_param,
        flops_per_token=work.flops_per_token,
        prefill_flops_per_token=work.prefill_flops_per_token,
        prompt_tokens=work.prompt_tokens,
        prefill_share=work.prefill_share,
        gathered_bytes=gathered_bytes,
        prefill_norm_bytes=work.prefill_norm_bytes,
        kv_per_sequence=work.kv_per_sequence,
    )


def _prefill_norm_bytes(job: Job) -> float:
    per_element = profile(job.engine).prefill_norm_bytes
    return per_element * normalised_elements(job.shape, 1.0) if per_element else 0.0


def _streamed_and_gathered(job: Job, sequences: int, per_param: float) -> tuple[float, float]:
    """The weight bytes a decode step of `sequences` streams, and those its expert gathers copy: an
    engine that gathers (serving_engines.MOE_GATHER_NOTE) streams the shared weights once and copies one
    expert per sequence and routed slot; the others stream every expert the batch visits once."""
    if profile(job.engine).moe_decode_gathers and job.shape.is_moe:
        routed = moe_routed_params_per_token(job.shape) * job.params / total_params(job.shape)
        return (params_read(job, 1) - routed) * per_param, sequences * routed * per_param
    return params_read(job, sequences) * per_param, 0.0


def _gather_seconds(work: DecodeWork, gpu: Gpu, ways: int) -> float:
    """The time a decode step's expert gathers take on a replica's GPUs: each copied expert read, written
    and read again (MOE_GATHER_PASSES) at MOE_GATHER_BANDWIDTH_EFFICIENCY of the peak bandwidth."""
    if not work.gathered_bytes:
        return 0.0
    bandwidth = gpu.memory_bandwidth_gbs * GB * ways * MOE_GATHER_BANDWIDTH_EFFICIENCY
    return MOE_GATHER_PASSES * work.gathered_bytes / bandwidth


def inference_speed(
    job: Job,
    gpu: Gpu,
    layout: Layout,
    links: Links,
    work: DecodeWork | None = None,
    *,
    memory: Breakdown | None = None,
    budget: float | None = None,
) -> Speed | None:
    """Decode speed per sequence and for all replicas, prefill speed and time to first token (None
    when the GPU has no FLOPS figure); an encoder's speed is its prefill.

    Each step streams the replica's weights and KV cache at the engine's share of the bandwidth, adds
    the decode matmuls at its share of the FLOPS and each MoE layer's fixed cost, and is at least the
    host's time to launch the layers (engine/sizing/serving_engines.py). Tensor parallelism reads each
    weight shard from its own GPU, so bandwidth and FLOPS add up, less two all-reduces per layer (of
    one token per sequence when decoding, of the whole prompts when prefilling) at the link's bandwidth
    and latency; a pipeline split reads the stages one after another, so one sequence decodes at one
    GPU's speed. `budget` (bytes per GPU the plan may fill) and `memory` (the layout's bytes per
    GPU) give the sequences the KV cache holds, by the rule the plan's fit uses.
    """
    peak = peak_flops(gpu, layout.precision)
    if peak is None:
        return None
    engine = profile(job.engine)
    work = work or decode_work(job, layout)
    ways = layout.tp if layout.split == "tensor" else 1
    tensor_parallel = layout.split == "tensor" and layout.tp > 1
    link = check_positive("link_bandwidth_bytes_per_s", links.gpu_to_gpu) if tensor_parallel else 0.0

    def all_reduces(tokens: int) -> float:
        """Two all-reduces of tokens x hidden per layer (Megatron-LM), at the link's bandwidth and latency."""
        if not tensor_parallel:
            return 0.0
        shape = job.shape
        return tensor_parallel_comm_seconds.unchecked(
            tokens, shape.hidden_size, shape.n_layers, layout.tp, link, latency_s=links.latency_s
        )

    compute_rate = 1.0 / _prefill_token_seconds(work, gpu, peak * ways, ways)
    batch_prompts = work.sequences * work.prompt_tokens  # read in one forward pass
    bandwidth = gpu.memory_bandwidth_gbs * GB * ways
    launch = _prefill_launch(job, work.prompt_weight_bytes / bandwidth)
    bandwidth *= engine.bandwidth_efficiency
    prefill_rate = batch_prompts / max(launch, batch_prompts / compute_rate + all_reduces(batch_prompts))
    first_token = max(launch, work.prompt_tokens / compute_rate + all_reduces(work.prompt_tokens))
    if job.reads_only:
        return _encoder_speed(job, work, layout, prefill_rate, first_token)
    streaming = work.step_bytes / bandwidth + _gather_seconds(work, gpu, ways)
    matmuls = work.sequences * work.flops_per_token / (peak * ways * engine.decode_compute_efficiency)
    experts = moe_pass_seconds(job.shape, ways)
    step = max(engine.launch_seconds(job.shape), streaming + matmuls + experts) + engine.step_overhead_s
    step += all_reduces(work.sequences)  # one new token per sequence
    concurrent = _concurrent(memory, budget, work, layout)
    per_sequence = 1.0 / step
    # Every sequence in flight decodes at the replica's step rate; idle replicas add nothing.
    return Speed(
        per_sequence, per_sequence * job.batch, concurrent, None, prefill_rate * layout.dp, first_token
    )


def _prefill_launch(job: Job, streaming_s: float) -> float:
    """The least time a prompt's forward pass takes whatever its FLOPs: the host launching one layer
    after another, then the weights streamed once at the memory's peak bandwidth (`streaming_s`).
    Measured in eager mode, the stream is partly hidden behind the launches, by how much depending on
    the host: Qwen3-32B reads a 128-token prompt in 123 ms on one H200 machine, where its launches take
    70 ms and its 65.5 GB stream in 14 ms at the peak; Qwen3-14B in 34 ms on another, its launches
    taking 31 ms there and its stream 6 ms (data/calibration/h200-2026-11-26-b.json, -c.json). Both are
    within the engine's band of launches plus the stream at the peak. An engine without launches (CUDA
    graphs) is bound by the stream alone."""
    return profile(job.engine).launch_seconds(job.shape, prefill=True) + streaming_s


def _prefill_token_seconds(work: DecodeWork, gpu: Gpu, peak: float, ways: int) -> float:
    """A prompt token's time on a replica of `ways` GPUs of `peak` FLOP/s in all: its FLOPs at the
    engine's prefill share, plus the bytes its norms move where the engine runs them eagerly
    (EngineProfile.prefill_norm_bytes) at the peak bandwidth."""
    seconds = work.prefill_flops_per_token / (peak * work.prefill_share)
    if not work.prefill_norm_bytes:
        return seconds
    return seconds + work.prefill_norm_bytes / (gpu.memory_bandwidth_gbs * GB * ways)


def prefill_share(job: Job) -> float:
    """The share of the dense peak the job's prompts (an encoder's inputs) are read at."""
    if job.encoder:
        return encoder_efficiency(job.shape.hidden_size)
    experts = job.shape.expert_size if job.is_moe else None
    return profile(job.engine).prefill_share(hidden_size=job.shape.hidden_size, expert_width=experts)


def _encoder_speed(
    job: Job, work: DecodeWork, layout: Layout, prefill_rate: float, first_token: float
) -> Speed:
    """An encoder's speed is its prefill: each sequence is done when its batch is, so it sees the
    replica's rate shared by the batch; a corpus takes its tokens over every replica's rate."""
    documents = job.serving.corpus_documents if job.serving is not None else None
    rate = prefill_rate * layout.dp
    hours = None if documents is None else documents * job.chunks_per_input * work.prompt_tokens / rate / 3600
    return Speed(prefill_rate / work.sequences, rate, None, None, rate, first_token, hours, reads_only=True)


def _concurrent(
    memory: Breakdown | None, budget: float | None, work: DecodeWork, layout: Layout
) -> int | None:
    """The sequences the replicas' KV cache holds within `budget` bytes per GPU (None when unknown)."""
    if memory is None or budget is None or memory.kv_cache <= 0:
        return None
    per_sequence_kv = memory.kv_cache / work.sequences
    return max(0, floor((budget - (memory.total - memory.kv_cache)) / per_sequence_kv)) * layout.dp


def training_peak_flops(gpu: Gpu, precision: str) -> float | None:
    """The dense peak a training step is timed against: fp8 training counts as the 16-bit peak times
    its measured end-to-end gain (FP8_TRAINING_SPEEDUP), not the tensor cores' 2x; a card older than
    Ampere at PRE_AMPERE_TRAINING_SHARE of its peak, a data-center Ampere at A100_TRAINING_SHARE."""
    if precision == "fp8" and gpu.fp8_dense_tflops:
        sixteen = peak_flops(gpu, "bf16")
        return None if sixteen is None else sixteen * FP8_TRAINING_SPEEDUP
    peak = peak_flops(gpu, precision)
    if peak is None:
        return None
    return peak * generation_share(gpu.compute_capability)


def matmul_params(job: Job) -> float:
    """The active parameters a token is multiplied by: less the tables that are looked up. A decoder's
    untied input embedding is a lookup (a tied one is also its LM head, a matmul); an encoder has no LM
    head, so its whole input embedding (tokens, positions, types) is: bge-m3's 250,002-token table is
    256M of its 568M parameters, and counting it halved the encode speed against an H100's measurement
    (data/calibration/h100-2026-11-26.json)."""
    shape = job.shape
    if job.reads_only:  # no LM head: an embedding model's tied table is looked up and never multiplied
        lookup = float(input_embedding_params(shape))
    else:
        lookup = 0.0 if shape.tie_word_embeddings else float(shape.vocab_size * shape.hidden_size)
    lookup *= job.params / total_params(shape)  # an estimated shape's count differs from the stated one
    # a floor against a shape estimated from a count alone (its embedding guessed too large)
    return max(job.active_params - lookup, job.active_params / (10 if job.encoder else 2))


def training_flops(job: Job, layout: Layout) -> float:
    """FLOPs per trained token for the layout's method and checkpointing (training_flops_per_token over
    the matmul parameters, `matmul_params`)."""
    shape = job.shape
    return training_flops_per_token(
        matmul_params(job),
        n_layers=shape.attention_layers,
        seq_len=job.seq_len,
        q_dim=shape.q_dim,
        trains_weights=layout.method not in ADAPTER_METHODS,
        checkpointing=layout.checkpointing,
        masked_layers=masked_attention_layers(job),
    )


def masked_attention_layers(job: Job) -> int:
    """The layers whose attention computes every query-key pair in training: on a Hugging Face stack,
    those with a sliding window no longer than the sequence (`training_speed.MASKED_ATTENTION_NOTE`);
    tuned stacks run windows in their attention kernels."""
    shape = job.shape
    if (
        job.training_stack != "huggingface"
        or shape.sliding_window is None
        or job.seq_len < shape.sliding_window
    ):
        return 0
    return shape.windowed_layers


def trained_params(job: Job, method: str) -> float:
    """Parameters that receive gradients: all of them, or the LoRA adapters (QLoRA: every linear layer)."""
    if method == "lora":
        return float(lora_params(job.shape, job.lora_rank, targets=LORA_ALL_LINEAR))
    if method == "qlora":
        return float(lora_params(job.shape, job.lora_rank, targets=LORA_ALL_LINEAR))
    return job.params


GLOBAL_BATCH_TOKENS = {"pretrain": 2**22, "full_finetune": 2**18, "lora": 2**18, "qlora": 2**18}
"""Tokens per optimizer step assumed for gradient synchronisation: 4M to pretrain (Llama 2, Touvron et
al. 2023, Sec. 2.2: a 4M-token batch; GPT-3, Table 2.1: 0.5-3.2M), 262,144 (128 sequences of 2,048) to
fine-tune (Alpaca: 128 sequences). A larger request batch_size x seq_len is used as given."""
CPU_ADAM_SECONDS_PER_PARAM = 0.22e-9
"""DeepSpeed's CPU-Adam steps 1B parameters in 0.22 s on a DGX-2's host CPUs, 6.4x faster than PyTorch's
CPU Adam (ZeRO-Offload, Ren et al. 2021, arXiv 2101.06840, Sec. 6.2.4, Table 4); without the delayed
parameter update it is not hidden behind GPU compute."""
BACKWARD_SHARE = 2 / 3
"""The backward pass's share of a training step's compute (4 of 6 FLOPs per parameter and token)."""


@dataclass(frozen=True)
class TrainingWork:
    """What a training layout's method costs per token, the same on every GPU model: a search computes
    it once per method and checkpointing."""

    trained: float
    """parameters that receive gradients (`trained_params`)"""
    flops_per_token: float
    """`training_flops`"""
    utilization: float
    """the share of the dense peak the job's stack reaches at its width, for this method"""
    norm_elements_per_token: float = 0.0
    """the elements a training token's norms normalise (training_speed.normalised_elements)"""


def training_work(job: Job, layout: Layout) -> TrainingWork:
    return TrainingWork(
        trained=trained_params(job, layout.method),
        flops_per_token=training_flops(job, layout),
        utilization=method_utilization(job, layout.method),
        norm_elements_per_token=normalised_elements(job.shape, 1.0, checkpointing=layout.checkpointing),
    )


def method_utilization(job: Job, method: str) -> float:
    """The share of the dense peak the job's stack reaches at its width with this method."""
    experts = job.shape.expert_size if job.shape.is_moe else None  # an MoE given by counts: its active shape
    return achieved_utilization(
        job.training_stack, job.shape.hidden_size, adapters=method in ADAPTER_METHODS, expert_width=experts
    )


def _memory_bound(
    job: Job, gpu: Gpu, layout: Layout, memory: Breakdown | None, micro_steps: float, norms: float
) -> float:
    """A Hugging Face-class micro-step's memory-bound time on each GPU
    (training_speed.memory_bound_seconds), `norms` the elements its norms normalise on each GPU (a
    tensor-parallel group splits them with the heads, the norms sequence-parallel); a tuned stack's
    published MFU is end to end, so it adds none."""
    if job.training_stack != "huggingface":
        return 0.0
    held = memory or per_gpu(job, layout)
    # ZeRO-3 gathers each layer's whole weights on every GPU to compute with them: their casts and
    # gradients move there unsharded; the optimizer updates only the GPU's shard
    weights = held.weights * (layout.shard_ways if layout.zero == 3 else 1)
    return memory_bound_seconds.unchecked(
        held.activations, weights, held.optimizer, gpu.memory_bandwidth_gbs * GB, micro_steps, norms
    )


def _exposed_sync(
    layout: Layout,
    trained: float,
    compute: float,
    link: float,
    micro_steps: float,
    links: Links,
    frozen: float = 0.0,
) -> float:
    """The data-parallel communication a micro-step leaves exposed (see `training_speed`); `frozen` the
    bytes of a frozen base ZeRO-3 shards (`_frozen_gathered`)."""
    if layout.dp <= 1:
        return 0.0
    if layout.shard_ways < layout.dp:
        return _hybrid_sync(layout, 2.0 * trained / layout.tp, compute, links, frozen)
    sync = allreduce_seconds.unchecked(2.0 * trained / layout.tp, layout.dp, link)
    if layout.zero == 3 or layout.offload:
        gathers = allreduce_seconds.unchecked(frozen, layout.dp, link) if frozen else 0.0
        return max(0.0, ZERO3_COMM_VOLUME * sync + gathers - compute)
    if layout.zero == 2:
        # Gradients reduce-scattered during every micro-step's backward (half an all-reduce);
        # the updated weights all-gathered once per optimizer step, behind the next forward.
        every = max(0.0, sync / 2 - BACKWARD_SHARE * compute)
        return every + max(0.0, sync / 2 - (1 - BACKWARD_SHARE) * compute) / micro_steps
    # DDP, and ZeRO-1, whose reduce-scatter plus all-gather move what one all-reduce does
    return max(0.0, sync - BACKWARD_SHARE * compute) / micro_steps


def _frozen_gathered(job: Job, layout: Layout) -> float:
    """The frozen base (bytes, a tensor-parallel shard's) ZeRO-3 all-gathers for each forward and again
    for each backward, where an adapter method shards it over the ranks (FSDP-QLoRA: Answer.AI, "You can
    now train a 70b language model at home", 2024): two all-gathers, one all-reduce's bytes a micro-step.
    0 where nothing frozen is sharded. The adapters' own gradients are `trained`'s. Offloaded, each GPU
    also copies its shard in from host RAM for each of the two."""
    if layout.zero != 3 or (layout.shard_ways <= 1 and not layout.offload):
        return 0.0
    return frozen_base_bytes(job, layout) / layout.tp


def _hybrid_sync(
    layout: Layout, gradient_bytes: float, compute: float, links: Links, frozen: float = 0.0
) -> float:
    """Hybrid sharding's exposed communication a micro-step: ZeRO-3's gathers and reduce-scatters among
    the `shard` GPUs of a node on their own links (ZERO3_COMM_VOLUME x an all-reduce), then each GPU's
    reduced shard all-reduced with the same shard of every other node's copy across the network: a
    node's share of DDP's traffic on the slow link. Both run behind the compute, as ZeRO-3's do (PyTorch
    FSDP's HYBRID_SHARD, Zhao et al. 2023, arXiv 2304.11277, Sec. 3.2.2; MiCS, Zhang et al. 2022, arXiv
    2205.00119, which measured up to 2.89x the throughput of ZeRO-3 across the nodes of a public cloud)."""
    inside = ZERO3_COMM_VOLUME * allreduce_seconds.unchecked(gradient_bytes, layout.shard, links.gpu_to_gpu)
    if frozen:  # a frozen base sharded inside the node is gathered there, never across nodes
        inside += allreduce_seconds.unchecked(frozen, layout.shard, links.gpu_to_gpu)
    copies = layout.dp // layout.shard
    across = allreduce_seconds.unchecked(gradient_bytes / layout.shard, copies, links.inter_node)
    return max(0.0, inside + across - compute)


def _tensor_parallel_seconds(job: Job, layout: Layout, tokens: int, link: float) -> float:
    """A training micro-step's tensor-parallel all-reduces, for the `tokens` of one data-parallel rank
    (TP_TRAINING_COMM_FACTOR times a forward pass's); 0 without tensor parallelism (a pipeline's stages
    pass one activation tensor to the next instead, behind the compute)."""
    if layout.tp <= 1 or layout.split != "tensor":
        return 0.0
    shape = job.shape
    return TP_TRAINING_COMM_FACTOR * tensor_parallel_comm_seconds.unchecked(
        max(1, tokens),
        shape.hidden_size,
        shape.n_layers,
        layout.tp,
        link,
    )


def _pipeline_bubble(layout: Layout, micro_steps: float) -> float:
    """How much longer a micro-step takes in a pipeline of p stages: each optimizer step's m micro-batches
    fill and drain it, the first stage idle p - 1 slots of m + p - 1 (1F1B or GPipe, Narayanan et al.
    2021, arXiv 2104.04473, Sec. 2.2.1: bubble fraction (p - 1) / m); 1 without a pipeline."""
    if layout.split != "pipeline" or layout.tp <= 1:
        return 1.0
    return 1.0 + (layout.tp - 1) / micro_steps


def _tensor_link(layout: Layout, links: Links, nodes: int, data_link: float) -> float:
    """The link a tensor-parallel group's all-reduces cross: the GPUs' own inside one node, where the
    group fits in a node (Narayanan et al. 2021, arXiv 2104.04473, Takeaway 1: tensor parallelism up to
    the GPUs of a server, data or pipeline parallelism across servers); else the data-parallel link.
    Across nodes' links, a 70B model's all-reduces on 32 nodes of 8 H100s took three times its compute
    (torchtitan's 829 tokens/s a GPU, FSDP 32 x TP 8, were predicted at 294)."""
    # `training_speed` has checked the data-parallel link, which is at most the GPUs' own
    return links.gpu_to_gpu if layout.tp <= layout.tp * layout.dp // nodes else data_link


def training_speed(
    job: Job,
    gpu: Gpu,
    layout: Layout,
    links: Links,
    *,
    nodes: int = 1,
    work: TrainingWork | None = None,
    memory: Breakdown | None = None,
    micro_steps: float | None = None,
) -> Speed | None:
    """Training tokens/s over all GPUs, and the hours for `training_tokens` (None without a FLOPS figure).

    Each data-parallel replica runs at least one sequence per micro-step. Per micro-step: compute (the
    FLOPs the method does per token, `training_flops`, at the share of the peak the job's stack reaches
    at the model's width, engine/sizing/training_speed.py) + the communication left
    exposed + tensor-parallel all-reduces (x a pipeline's bubble) + with offload the 16-bit gradients and
    weights of the trained parameters crossing the host link. The exposed communication follows how the
    frameworks run:
    - DDP all-reduces gradients once per optimizer step of GLOBAL_BATCH_TOKENS (micro-steps accumulate),
      bucketed during the last micro-step's backward pass (Li et al. 2020, PyTorch Distributed, Sec.
      3.2.3), so only what the backward (2/3 of the compute) cannot hide is added, spread over the
      micro-steps;
    - ZeRO-1 moves the same data as DDP at the same moment (reduce-scatter then all-gather, Rajbhandari
      et al. 2020, Sec. 7.2.1); ZeRO-2 reduce-scatters the gradients every micro-step, since each rank
      keeps only its shard of them, and all-gathers the updated weights once per optimizer step;
    - ZeRO-3 / FSDP gathers parameters and reduce-scatters gradients every micro-step (1.5x DDP's volume,
      Rajbhandari et al. 2020), prefetched while computing, so only what exceeds the compute is added.
    An all-reduce per 2,048-token micro-step left exposed made 8 H100s deliver 12% of their peak, and
    more GPUs slower than fewer.
    `work` is `training_work(job, layout)` and `memory` the layout's bytes per GPU (`per_gpu`), when
    the caller has them already; `micro_steps` per optimizer step are those of GLOBAL_BATCH_TOKENS
    unless given (a measured step states its own).
    """
    peak = training_peak_flops(gpu, layout.precision)
    if peak is None:
        return None
    gpus = layout.tp * layout.dp
    step_tokens = max(job.batch, layout.dp) * job.seq_len
    work = work or training_work(job, layout)
    micro_steps = micro_steps or max(1.0, GLOBAL_BATCH_TOKENS.get(layout.method, 2**18) / step_tokens)
    compute = work.flops_per_token * step_tokens / (gpus * peak * work.utilization)
    norms = work.norm_elements_per_token * step_tokens / (layout.dp * layout.tp)  # split like the heads
    compute += _memory_bound(job, gpu, layout, memory, micro_steps, norms)
    trained, frozen = work.trained, _frozen_gathered(job, layout)
    link = links.gpu_to_gpu if nodes == 1 else min(links.gpu_to_gpu, links.inter_node)
    if layout.dp > 1 or layout.tp > 1:  # the sizing below is unchecked, and a KB link may be 0
        link = check_positive("link_bandwidth_bytes_per_s", link)
    step = compute + _exposed_sync(layout, trained, compute, link, micro_steps, links, frozen)
    tensor_link = _tensor_link(layout, links, nodes, link)
    step += _tensor_parallel_seconds(job, layout, step_tokens // layout.dp, tensor_link)
    step *= _pipeline_bubble(layout, micro_steps)
    if layout.offload:
        step += (2.0 * 2.0 * trained + 2.0 * frozen) / gpus / links.host
        # the optimizer step on each node's CPUs, once per optimizer step, over that node's share
        step += CPU_ADAM_SECONDS_PER_PARAM * trained / nodes / micro_steps
    rate = step_tokens / step
    hours = None if job.training_tokens is None else job.training_tokens / rate / 3600
    return Speed(rate / layout.dp, rate, None, hours)
