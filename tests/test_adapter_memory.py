"""engine/planning/memory.py: the bytes each GPU of one plan holds, composed from the sizing functions.

Figures come from published configurations and papers, or from arithmetic written beside them."""

from __future__ import annotations

from typing import Any

import pytest

from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest
from engine.planning.memory import Layout, micro_batch, per_gpu, weight_precision, whole_job
from engine.planning.workload import Job, resolve

GB = 1e9
# rel=1e-12 wherever it appears: the adapter's figures differ from the arithmetic written in the test by
# float rounding only (8.03e9 is resolved as 8.03 x 1e9; a shape's count is scaled to the stated size).

# Llama 3.1 8B config.json (kb/models/llama-3-1-8b.yaml): 32 layers, 8 KV heads, head_dim 128.
# KV bytes per token in 16-bit = 2 (K and V) x 32 x 8 x 128 x 2 bytes = 131,072.
LLAMA_8B_KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2
LLAMA_8B_PARAMS = 8.03e9  # model card: 8.03B parameters (kb params_b)


def job_of(kb: KB, **workload: Any) -> Job:
    return resolve(RecommendRequest.model_validate({"workload": workload}), kb)


@pytest.fixture(scope="module")
def llama_serving(kb: KB) -> Job:
    return job_of(kb, task="inference", model="llama-3-1-8b", seq_len=8192, batch_size=1, precision="bf16")


def test_inference_holds_the_weights_the_kv_cache_and_a_fifth_of_the_weights(llama_serving: Job) -> None:
    memory = per_gpu(llama_serving, Layout("inference", "bf16"))
    # 8.03e9 parameters x 2 bytes; 131,072 B/token x 8,192 tokens = 1,073,741,824 B (exactly 1 GiB);
    # Transformer Math 101: inference total ~= 1.2 x the weights, so 20% overhead.
    # rel=1e-12: only float rounding of 8.03e9 (resolved from 8.03 x 1e9) separates the figures.
    assert memory.weights == pytest.approx(LLAMA_8B_PARAMS * 2, rel=1e-12)
    assert memory.kv_cache == LLAMA_8B_KV_BYTES_PER_TOKEN * 8192 == 1_073_741_824
    assert memory.overhead == pytest.approx(0.2 * LLAMA_8B_PARAMS * 2, rel=1e-12)
    assert memory.gradients == memory.optimizer == memory.activations == memory.host == 0.0
    assert memory.total == pytest.approx(1.2 * 16.06e9 + 1_073_741_824, rel=1e-12)


def test_kv_cache_follows_the_weights_format_unless_the_request_names_one(kb: KB) -> None:
    bf16 = job_of(kb, task="inference", model="llama-3-1-8b", seq_len=4096, precision="bf16")
    fp32 = job_of(kb, task="inference", model="llama-3-1-8b", seq_len=4096, precision="fp32")
    fp8_kv = job_of(
        kb, task="inference", model="llama-3-1-8b", seq_len=4096, precision="bf16", kv_cache_precision="fp8"
    )
    tokens = 4096
    # fp32 weights keep a 4-byte cache; a requested fp8 cache holds 1 byte per value.
    assert per_gpu(bf16, Layout("inference", "bf16")).kv_cache == LLAMA_8B_KV_BYTES_PER_TOKEN * tokens
    assert per_gpu(fp32, Layout("inference", "fp32")).kv_cache == 2 * LLAMA_8B_KV_BYTES_PER_TOKEN * tokens
    assert per_gpu(fp8_kv, Layout("inference", "bf16")).kv_cache == LLAMA_8B_KV_BYTES_PER_TOKEN * tokens / 2


def test_tensor_parallel_halves_every_share_and_replicas_split_the_sequences(kb: KB) -> None:
    job = job_of(kb, task="inference", model="llama-3-1-8b", seq_len=2048, batch_size=8, precision="bf16")
    one = per_gpu(job, Layout("inference", "bf16"))
    tp2 = per_gpu(job, Layout("inference", "bf16", tp=2))
    dp2 = per_gpu(job, Layout("inference", "bf16", dp=2))
    # weights_per_gpu halves with tp=2, and so do its cache and overhead shares
    assert (tp2.weights, tp2.kv_cache, tp2.overhead) == (one.weights / 2, one.kv_cache / 2, one.overhead / 2)
    # two replicas each hold all the weights and the cache of 8 / 2 = 4 sequences
    assert dp2.weights == one.weights
    assert dp2.kv_cache == LLAMA_8B_KV_BYTES_PER_TOKEN * 2048 * 4


def test_micro_batch_rounds_a_share_of_sequences_up() -> None:
    class Batch:
        batch = 5

    # 5 sequences over 2 ranks: one rank holds ceil(5 / 2) = 3; more ranks than sequences: still 1
    assert micro_batch(Batch(), Layout("pretrain", "bf16", dp=2)) == 3  # type: ignore[arg-type]
    assert micro_batch(Batch(), Layout("pretrain", "bf16", dp=8)) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("zero", "states_gb"),
    # ZeRO (Rajbhandari et al. 2020), Figure 1: 7.5B parameters, mixed-precision Adam (K = 12), 64 GPUs:
    # baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB of model states per GPU.
    [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)],
)
def test_zero_stages_hold_the_papers_model_states(kb: KB, zero: int, states_gb: float) -> None:
    job = job_of(kb, task="pretrain", params_b=7.5)
    memory = per_gpu(job, Layout("pretrain", "bf16", dp=64, zero=zero))
    states = memory.weights + memory.gradients + memory.optimizer
    # abs=0.05 GB: the paper prints one decimal (1.875 GB is shown as 1.9)
    assert states / GB == pytest.approx(states_gb, abs=0.05)
    assert memory.overhead == 1.3e9  # HF model training anatomy: 'kernels ... 1.3GB'


def test_offload_moves_optimizer_states_and_gradients_to_host_bytes(kb: KB) -> None:
    job = job_of(kb, task="full_finetune", params_b=3, seq_len=512)
    memory = per_gpu(job, Layout("full_finetune", "bf16", zero=3, offload=True))
    # ZeRO-Offload (Ren et al. 2021): fp32 master weights + Adam m and v = 12 B/param, and the 16-bit
    # gradients (2 B/param), go to CPU RAM; the 16-bit weights (2 B/param) stay on the GPU.
    assert memory.optimizer == memory.gradients == 0.0
    assert memory.host == pytest.approx(3e9 * (12 + 2), rel=1e-12)  # float rounding only
    assert memory.weights == pytest.approx(3e9 * 2, rel=1e-12)
    # host bytes are not GPU memory
    assert memory.total == pytest.approx(memory.weights + memory.activations + 1.3e9, rel=1e-12)


def test_pure_fp32_training_keeps_no_master_copy(kb: KB) -> None:
    job = job_of(kb, task="pretrain", params_b=1.0)
    memory = per_gpu(job, Layout("pretrain", "fp32"))
    # fp32 AdamW: 4 (weights) + 4 (gradients) + 8 (m, v) = 16 B/param, no separate master copy
    assert (memory.weights, memory.gradients, memory.optimizer) == pytest.approx((4e9, 4e9, 8e9), rel=1e-12)
    mixed = per_gpu(job, Layout("pretrain", "bf16"))
    # mixed precision: 2 + 2 + (4 master + 8) = 16 B/param as well, but split differently
    assert (mixed.weights, mixed.gradients, mixed.optimizer) == pytest.approx((2e9, 2e9, 12e9), rel=1e-12)


def test_tensor_split_shares_activations_and_a_pipeline_does_not(kb: KB) -> None:
    job = job_of(kb, task="pretrain", params_b=7.5, seq_len=2048)
    one = per_gpu(job, Layout("pretrain", "bf16"))
    tensor = per_gpu(job, Layout("pretrain", "bf16", tp=2, split="tensor"))
    pipeline = per_gpu(job, Layout("pretrain", "bf16", tp=2, split="pipeline"))
    # both splits halve the model states (each GPU holds half the layers or half of each layer)...
    for split in (tensor, pipeline):
        assert split.weights == one.weights / 2 and split.optimizer == one.optimizer / 2
    # ...but Korthikanti et al. 2022 Sec. 4.2.3: a 1F1B pipeline's first stage holds one micro-batch's
    # activations of every layer. Table 2, selective recompute: s b h (10 + 24 / t) per layer under
    # t-way tensor parallelism without sequence parallelism (the 10 s b h of norms and dropout stay
    # whole); the fp32 logits (4 s b V) are split over the t ranks too.
    s, b, h, layers, vocab = 2048, 1, job.shape.hidden_size, job.shape.n_layers, job.shape.vocab_size
    assert pipeline.activations == one.activations
    assert one.activations == pytest.approx(s * b * h * 34 * layers + 4 * s * b * vocab, rel=1e-12)
    assert tensor.activations == pytest.approx(
        s * b * h * (10 + 24 / 2) * layers + 2 * s * b * vocab, rel=1e-12
    )


def test_checkpointing_keeps_only_each_layers_input(kb: KB) -> None:
    job = job_of(kb, task="pretrain", model="llama-3-1-8b", seq_len=2048)
    plain = per_gpu(job, Layout("pretrain", "bf16"))
    recomputed = per_gpu(job, Layout("pretrain", "bf16", checkpointing=True))
    s, b, h, layers, vocab = 2048, 1, 4096, 32, 128256
    logits = 4 * s * b * vocab  # fp32 logits kept for the loss
    # Korthikanti et al. 2022 Table 2: selective 34 s b h per layer; full recomputation 2 s b h per layer,
    # plus the layer being recomputed briefly holding its selective 34 s b h again.
    assert plain.activations == pytest.approx(34 * s * b * h * layers + logits, rel=1e-12)
    assert recomputed.activations == pytest.approx(
        2 * s * b * h * layers + 34 * s * b * h + logits, rel=1e-12
    )


def test_lora_base_is_sharded_only_by_zero_3(kb: KB) -> None:
    job = job_of(kb, task="lora", model="llama-3-1-8b")
    single = per_gpu(job, Layout("lora", "bf16"))
    zero2 = per_gpu(job, Layout("lora", "bf16", dp=4, zero=2))
    zero3 = per_gpu(job, Layout("lora", "bf16", dp=4, zero=3))
    # LoRA r=16 on q and v of Llama 3.1 8B: 32 x 16 x ((4096 + 4096) + (4096 + 1024)) = 6,815,744 adapter
    # parameters, kept in fp32 (PEFT's autocast_adapter_dtype upcasts them: 4 bytes); the frozen base is
    # 8.03e9 x 2 bytes.
    adapter = 6_815_744 * 4
    assert single.weights == pytest.approx(LLAMA_8B_PARAMS * 2 + adapter, rel=1e-12)
    assert zero2.weights == single.weights  # ZeRO-1/2 keep the frozen base whole
    assert zero3.weights == pytest.approx(LLAMA_8B_PARAMS * 2 / 4 + adapter, rel=1e-12)


def test_whole_job_is_one_unsharded_gpu_and_unknown_formats_are_refused(kb: KB) -> None:
    job = job_of(kb, task="full_finetune", params_b=1.0)
    assert whole_job(job, "full_finetune", "bf16", False) == per_gpu(job, Layout("full_finetune", "bf16"))
    assert weight_precision("nf4") == "nf4"
    with pytest.raises(ValueError, match="not a weights format"):
        weight_precision("tf32")
