"""engine/planning/performance.py: a plan's decode and training speed, a roofline over the sizing functions.

GPU figures are the KB's (kb/gpus/nvidia-h100-sxm.yaml: NVIDIA's datasheet, dense: 989.4 TFLOPS BF16,
1,978.9 FP8, 494.7 TF32, 3,350 GB/s); the rest is arithmetic written in each test."""

from __future__ import annotations

from typing import Any

import pytest

from engine.knowledge.kb import KB
from engine.models.kb import Gpu
from engine.models.request import RecommendRequest
from engine.planning.memory import Layout, per_gpu
from engine.planning.performance import (
    Links,
    decode_work,
    inference_speed,
    peak_flops,
    trained_params,
    training_flops,
    training_peak_flops,
    training_speed,
)
from engine.planning.workload import Job, resolve
from engine.sizing.training_speed import achieved_utilization, memory_bound_seconds, normalised_elements

TFLOPS = 1e12
# rel=1e-12 wherever it appears: the roofline's figures differ from the arithmetic written in the test by
# float rounding only.
H100_BANDWIDTH = 3350e9
# vLLM/SGLang: the bytes stream at 0.80 of the bandwidth beside 1.4 ms a step, fitted to Llama-3-8B bf16
# at 141.6 tokens/s on an H100 (SGLang PR 1401) and gpt-fast's batch-1 runs on 1-8 A100s
DECODE_EFFICIENCY = 0.80
STEP_OVERHEAD = 1.4e-3
DECODE_MATMULS = 0.4  # the decode matmuls' share of the dense peak (engine/sizing/serving_engines.py)
ALLREDUCE_LATENCY = 8e-6  # llm-analysis: 8 us per all-reduce (a Links' default)
H100_BUDGET = 81_559 * 2**20 * 0.9  # vLLM's 0.9 of the 81,559 MiB the driver reports
FAST = Links(gpu_to_gpu=450e9, inter_node=50e9, host=32e9)
# Llama 3.1 8B config.json: 32 layers, 8 KV heads of 128, hidden 4,096, vocabulary 128,256;
# 8,030,261,248 parameters in its shape, 8.03e9 as stated.
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2
SHAPE_PARAMS = 8_030_261_248
EMBEDDING = 128_256 * 4_096
# a token's matmuls: every parameter but the untied input embedding, a lookup (2 x 7.505e9 FLOPs)
MATMUL_FLOPS = 2 * (SHAPE_PARAMS - EMBEDDING) * 8.03e9 / SHAPE_PARAMS


def memory_seconds(job: Job, layout: Layout, gpu: Gpu, micro_steps: float) -> float:
    """A Hugging Face-class micro-step's memory-bound time (engine/sizing/training_speed.py) over the
    batch x sequence tokens each replica reads."""
    held = per_gpu(job, layout)
    bandwidth = gpu.memory_bandwidth_gbs * 1e9
    norms = normalised_elements(job.shape, job.batch * job.seq_len, checkpointing=layout.checkpointing)
    return memory_bound_seconds(held.activations, held.weights, held.optimizer, bandwidth, micro_steps, norms)


def job_of(kb: KB, **workload: Any) -> Job:
    return resolve(RecommendRequest.model_validate({"workload": workload}), kb)


@pytest.fixture(scope="module")
def h100(kb: KB) -> Gpu:
    return kb.gpus["nvidia-h100-sxm"]


@pytest.fixture(scope="module")
def llama(kb: KB) -> Job:
    return job_of(kb, task="inference", model="llama-3-1-8b", seq_len=8192, batch_size=1, precision="bf16")


def test_peak_flops_picks_the_compute_format(kb: KB, h100: Gpu) -> None:
    assert peak_flops(h100, "fp8") == 1978.9 * TFLOPS  # native fp8
    assert peak_flops(h100, "bf16") == 989.4 * TFLOPS
    assert peak_flops(h100, "fp32") == 494.7 * TFLOPS  # TF32 tensor cores
    assert peak_flops(h100, "int4") == 989.4 * TFLOPS  # weight-only integers compute in 16-bit
    a100 = kb.gpus["nvidia-a100-sxm-80gb"]
    assert a100.fp8_dense_tflops is None
    assert peak_flops(a100, "fp8") == a100.bf16_dense_tflops * TFLOPS  # type: ignore[operator]
    vector_only = h100.model_copy(update={"tf32_dense_tflops": None})
    assert peak_flops(vector_only, "fp32") == 67 * TFLOPS  # no TF32: the vector FP32 figure
    bare = h100.model_copy(
        update={
            name: None
            for name in ("fp8_dense_tflops", "bf16_dense_tflops", "fp16_dense_tflops", "fp32_tflops")
        }
    )
    assert peak_flops(bare, "bf16") is None


def test_decode_reads_the_weights_less_the_embedding_lookup_and_the_whole_kv_cache(llama: Job) -> None:
    work = decode_work(llama, Layout("inference", "bf16"))
    # The input embedding is a lookup of one row, not read whole: 8,030,261,248 - 128,256 x 4,096 params,
    # scaled to the stated 8.03e9, x 2 bytes; plus 131,072 B/token x 8,192 tokens of KV cache.
    read = (SHAPE_PARAMS - EMBEDDING) * 8.03e9 / SHAPE_PARAMS * 2
    # rel=1e-12: float rounding only
    assert work.step_bytes == pytest.approx(read + KV_PER_TOKEN * 8192, rel=1e-12)
    assert work.flops_per_token == pytest.approx(MATMUL_FLOPS, rel=1e-12)  # Kaplan et al.: 2N per token
    assert work.sequences == 1


def test_batch_one_decoding_streams_the_weights_at_the_engines_share(llama: Job, h100: Gpu) -> None:
    layout = Layout("inference", "bf16")
    work = decode_work(llama, layout)
    memory = per_gpu(llama, layout)
    speed = inference_speed(llama, h100, layout, FAST, memory=memory, budget=H100_BUDGET)
    assert speed is not None
    # 16.1 GB / (3,350 GB/s x 0.80) = 6.0 ms of streaming, plus 15 GFLOP / (989 TFLOP/s x 0.4) = 0.04 ms,
    # plus the engine's 1.4 ms a step
    step = (
        work.step_bytes / (H100_BANDWIDTH * DECODE_EFFICIENCY)
        + MATMUL_FLOPS / (989.4 * TFLOPS * DECODE_MATMULS)
        + STEP_OVERHEAD
    )
    assert speed.tokens_per_s == pytest.approx(1 / step, rel=1e-12)
    assert speed.tokens_per_s == pytest.approx(134.4, abs=0.05)  # abs: the figure printed to 0.1 tok/s
    # the sequences the budget holds beside everything else the GPU keeps, 1 GiB of KV cache each
    held = (H100_BUDGET - (memory.total - memory.kv_cache)) // memory.kv_cache
    assert speed.max_concurrent_sequences == held == 55


def test_a_tensor_split_adds_bandwidth_and_a_pipeline_decodes_at_one_gpus_speed(
    llama: Job, h100: Gpu
) -> None:
    one = inference_speed(llama, h100, Layout("inference", "bf16"), FAST)
    pipeline = inference_speed(llama, h100, Layout("inference", "bf16", tp=2, split="pipeline"), FAST)
    no_wire = Links(gpu_to_gpu=1e30, inter_node=1e30, host=1e30)  # only the all-reduce latency is left
    tensor = inference_speed(llama, h100, Layout("inference", "bf16", tp=2, split="tensor"), no_wire)
    assert one is not None and pipeline is not None and tensor is not None
    assert pipeline.tokens_per_s == one.tokens_per_s
    work = decode_work(llama, Layout("inference", "bf16"))
    # two GPUs read half the bytes and do half the FLOPs each; 32 layers x 2 all-reduces x 8 us per step;
    # the engine's fixed part of a step does not split
    step = (
        work.step_bytes / (2 * H100_BANDWIDTH * DECODE_EFFICIENCY)
        + MATMUL_FLOPS / (2 * 989.4 * TFLOPS * DECODE_MATMULS)
        + 32 * 2 * ALLREDUCE_LATENCY
        + STEP_OVERHEAD
    )
    assert tensor.tokens_per_s == pytest.approx(1 / step, rel=1e-9)  # rel: the 1e30 link's residue


def test_a_training_pipeline_pays_its_bubble_not_all_reduces(kb: KB, h100: Gpu) -> None:
    """A pipeline's stages hand one activation tensor to the next; they do not all-reduce each layer as
    a tensor-parallel group does, so the link's speed does not slow them. What a pipeline of p stages
    loses is its fill and drain: (p - 1) idle slots of every m + p - 1 (Narayanan et al. 2021, arXiv
    2104.04473, Sec. 2.2.1). A tuned stack, so that nothing else in the step depends on m."""
    job = job_of(kb, task="pretrain", model="llama-3-1-8b", seq_len=2048, training_stack="megatron-lm")
    layout = Layout("pretrain", "bf16", tp=4, split="pipeline", checkpointing=True)
    pcie = Links(gpu_to_gpu=32e9, inter_node=12.5e9, host=32e9, latency_s=24e-6)
    many = training_speed(job, h100, layout, FAST, micro_steps=1000)
    slow_link = training_speed(job, h100, layout, pcie, micro_steps=1000)
    few = training_speed(job, h100, layout, FAST, micro_steps=4)
    assert many is not None and slow_link is not None and few is not None
    assert slow_link.aggregate_tokens_per_s == pytest.approx(many.aggregate_tokens_per_s, rel=1e-12)
    assert few.aggregate_tokens_per_s / many.aggregate_tokens_per_s == pytest.approx(
        (1 + 3 / 1000) / (1 + 3 / 4), rel=1e-12
    )


def test_every_sequence_in_flight_decodes_at_the_step_rate(kb: KB, h100: Gpu) -> None:
    job = job_of(kb, task="inference", model="llama-3-1-8b", seq_len=2048, batch_size=8, precision="bf16")
    layout = Layout("inference", "bf16", dp=2)
    memory = per_gpu(job, layout)
    speed = inference_speed(job, h100, layout, FAST, memory=memory, budget=H100_BUDGET)
    assert speed is not None
    assert speed.aggregate_tokens_per_s == pytest.approx(8 * speed.tokens_per_s, rel=1e-12)
    work = decode_work(job, layout)
    # each replica decodes 4 sequences per step; both replicas' KV budgets count
    assert work.sequences == 4
    per_sequence = memory.kv_cache / 4
    per_replica = int((H100_BUDGET - (memory.total - memory.kv_cache)) // per_sequence)
    assert speed.max_concurrent_sequences == 2 * per_replica


def test_single_gpu_training_is_its_matmuls_at_the_stacks_share_and_its_memory_bound_work(
    kb: KB, h100: Gpu
) -> None:
    job = job_of(kb, task="pretrain", params_b=1.0, training_tokens_b=20)
    plain, checkpointed = Layout("pretrain", "bf16"), Layout("pretrain", "bf16", checkpointing=True)
    speed = training_speed(job, h100, plain, FAST)
    recomputed = training_speed(job, h100, checkpointed, FAST)
    assert speed is not None and recomputed is not None
    # engine/sizing/training_speed.py: the FLOPs a token costs (6 N plus attention) at the share a
    # Hugging Face stack reaches at this width, plus the activations, weights and (once per 4M-token
    # optimizer step) the optimizer state moved at the H100's 3.35 TB/s
    share = achieved_utilization("huggingface", job.shape.hidden_size)
    tokens = job.batch * job.seq_len
    micro_steps = 2**22 / tokens
    step = training_flops(job, plain) * tokens / (989.4 * TFLOPS * share)
    step += memory_seconds(job, plain, h100, micro_steps)
    assert speed.aggregate_tokens_per_s == pytest.approx(tokens / step, rel=1e-12)
    assert speed.training_hours == pytest.approx(20e9 / (tokens / step) / 3600, rel=1e-12)
    # full recomputation runs the forward twice (8 N per token instead of 6 N) and keeps less
    again = training_flops(job, checkpointed) * tokens / (989.4 * TFLOPS * share)
    again += memory_seconds(job, checkpointed, h100, micro_steps)
    assert recomputed.aggregate_tokens_per_s == pytest.approx(tokens / again, rel=1e-12)
    assert training_flops(job, checkpointed) / training_flops(job, plain) == pytest.approx(8 / 6)


def test_ddp_and_zero_1_sync_alike_and_expose_what_backward_cannot_hide(kb: KB, h100: Gpu) -> None:
    job = job_of(kb, task="pretrain", params_b=1.0, training_tokens_b=20)
    slow = Links(gpu_to_gpu=4e9, inter_node=4e9, host=32e9)  # 32 Gb/s: the sync shows
    ddp = training_speed(job, h100, Layout("pretrain", "bf16", dp=8, zero=0), slow)
    zero1 = training_speed(job, h100, Layout("pretrain", "bf16", dp=8, zero=1), slow)
    assert ddp is not None and zero1 is not None
    # ZeRO-1 moves what DDP moves; each rank updates an eighth of the optimizer state, once per
    # optimizer step: faster by a hair
    assert 1 < zero1.aggregate_tokens_per_s / ddp.aggregate_tokens_per_s < 1.01
    # 8 ranks x 2,048 tokens per micro-step; compute = FLOPs x 16,384 / (8 x 989.4e12 x the stack's share);
    # ring all-reduce of 2 bytes x 1e9 gradients: 8 us + 2 x 7/8 x 2e9 / 4e9; exposed beyond the
    # backward's 2/3 of compute, once per 4,194,304-token optimizer step (256 micro-steps)
    tokens = 8 * 2048
    share = achieved_utilization("huggingface", job.shape.hidden_size)
    compute = training_flops(job, Layout("pretrain", "bf16")) * tokens / (8 * 989.4 * TFLOPS * share)
    compute += memory_seconds(job, Layout("pretrain", "bf16", dp=8, zero=0), h100, 2**22 / tokens)
    sync = ALLREDUCE_LATENCY + 2 * 7 / 8 * 2e9 / 4e9
    step = compute + (sync - 2 / 3 * compute) / (2**22 / tokens)
    assert ddp.aggregate_tokens_per_s == pytest.approx(tokens / step, rel=1e-12)
    assert ddp.tokens_per_s == pytest.approx(ddp.aggregate_tokens_per_s / 8, rel=1e-12)  # per replica


def test_offload_pays_the_host_link_and_the_cpu_adam_step(kb: KB, h100: Gpu) -> None:
    job = job_of(kb, task="full_finetune", params_b=1.0, training_tokens_b=1)
    plain = training_speed(job, h100, Layout("full_finetune", "bf16"), FAST)
    offload = training_speed(job, h100, Layout("full_finetune", "bf16", zero=3, offload=True), FAST)
    assert plain is not None and offload is not None
    # per micro-step of 2,048 tokens: 16-bit gradients out and weights back over the 32 GB/s host link
    # (2 x 2 bytes x 1e9 / 32e9 s), and ZeRO-Offload's CPU-Adam at 0.22 s per 1B parameters
    # (Ren et al. 2021, Table 4) once per 262,144-token optimizer step (128 micro-steps); the GPU's
    # memory-bound work is its own: no optimizer state on it
    on_gpu = Layout("full_finetune", "bf16")
    compute = 2048 / plain.aggregate_tokens_per_s - memory_seconds(job, on_gpu, h100, 128)
    compute += memory_seconds(job, Layout("full_finetune", "bf16", zero=3, offload=True), h100, 128)
    step = compute + 4e9 / 32e9 + 0.22 / 128
    assert offload.aggregate_tokens_per_s == pytest.approx(2048 / step, rel=1e-12)


def test_zero_3_lora_gathers_its_frozen_base_for_every_forward_and_backward(kb: KB, h100: Gpu) -> None:
    """LoRA on Llama 3.1 8B sharded with ZeRO-3 over 8 GPUs: besides the adapters' 1.5 x all-reduce,
    every micro-step all-gathers the frozen 16-bit base for the forward and again for the backward
    (FSDP-QLoRA, Answer.AI 2024), one all-reduce's bytes: 8.03e9 parameters (as stated) x 2 bytes, on a
    4 GB/s link 2 x 7/8 x 16.06 GB / 4 GB/s = 7.0 s, beyond the compute. Without it a sharded 70B LoRA
    over PCIe read as if the base never moved."""
    job = job_of(kb, task="lora", model="llama-3-1-8b", training_tokens_b=1)
    slow = Links(gpu_to_gpu=4e9, inter_node=4e9, host=32e9)
    layout = Layout("lora", "bf16", dp=8, zero=3)
    sharded = training_speed(job, h100, layout, slow)
    assert sharded is not None
    compute = training_flops(job, layout) * 8 * 2048 / (8 * 989.4 * TFLOPS * method_share(job))
    compute += memory_seconds(job, layout, h100, 2**18 / (8 * 2048))
    adapters = ALLREDUCE_LATENCY + 2 * 7 / 8 * 2 * trained_params(job, "lora") / 4e9
    base = ALLREDUCE_LATENCY + 2 * 7 / 8 * 2 * 8.03e9 / 4e9
    step = compute + max(0.0, 1.5 * adapters + base - compute)
    assert sharded.aggregate_tokens_per_s == pytest.approx(8 * 2048 / step, rel=1e-9)
    assert step > base  # the gathers, not the compute, set this step


def method_share(job: Job) -> float:
    return achieved_utilization(job.training_stack, job.shape.hidden_size, adapters=True)


def test_lora_trains_the_adapters_and_full_training_every_parameter(kb: KB) -> None:
    job = job_of(kb, task="lora", model="llama-3-1-8b")
    # Hu et al. 2021 on Llama 3.1 8B at r=16 on every linear layer, as QLoRA and PEFT's 'all-linear' do:
    # 32 x 16 x 81,920 = 41,943,040 (what PEFT's print_trainable_parameters reports).
    assert trained_params(job, "lora") == 41_943_040
    assert trained_params(job, "qlora") == 41_943_040
    assert trained_params(job, "full_finetune") == job.params


def test_a_zero_link_is_refused_and_no_flops_figure_gives_no_speed(kb: KB, h100: Gpu, llama: Job) -> None:
    job = job_of(kb, task="pretrain", params_b=1.0, training_tokens_b=20)
    dead = Links(gpu_to_gpu=0.0, inter_node=0.0, host=32e9)
    with pytest.raises(ValueError, match="link_bandwidth"):
        training_speed(job, h100, Layout("pretrain", "bf16", dp=2), dead)
    with pytest.raises(ValueError, match="link_bandwidth"):
        inference_speed(llama, h100, Layout("inference", "bf16", tp=2), dead)
    # one GPU crosses no link: a zero link does not matter
    assert training_speed(job, h100, Layout("pretrain", "bf16"), dead) is not None
    bare = h100.model_copy(
        update={
            name: None
            for name in ("fp8_dense_tflops", "bf16_dense_tflops", "fp16_dense_tflops", "fp32_tflops")
        }
    )
    assert training_speed(job, bare, Layout("pretrain", "bf16"), FAST) is None
    assert inference_speed(llama, bare, Layout("inference", "bf16"), FAST) is None


def test_a_card_older_than_ampere_trains_at_a_share_of_its_peak(kb: KB) -> None:
    """Megatron-LM sustained 39 TFLOP/s, 30% of a V100's 125 (Shoeybi et al. 2019, abstract), where
    Megatron-Core reaches 47% on H100s: the Hopper-fitted utilisation is taken at 30/47 of a Volta or
    Turing card's peak in training (no bf16, no FlashAttention-2); decoding keeps the datasheet. A
    data-center Ampere reaches more of its peak than the Hopper cards (IBM and Meta's FSDP runs: 0.57 MFU
    on A100s, 0.37 on H100s): 1.3x, fitted to five published A100 and A800 runs; an Ada card, 1x."""
    v100, a100 = kb.gpus["nvidia-v100-sxm2-16gb"], kb.gpus["nvidia-a100-sxm-80gb"]
    ada = kb.gpus["nvidia-l40s"]
    assert v100.compute_capability == "7.0" and a100.compute_capability == "8.0"
    assert training_peak_flops(v100, "fp16") == pytest.approx(125 * TFLOPS * 0.64)
    assert peak_flops(v100, "fp16") == pytest.approx(125 * TFLOPS)
    assert peak_flops(a100, "bf16") == pytest.approx(312 * TFLOPS)
    assert training_peak_flops(a100, "bf16") == pytest.approx(312 * TFLOPS * 1.3)
    assert training_peak_flops(ada, "bf16") == peak_flops(ada, "bf16")
