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


def test_inference_holds_the_weights_the_kv_cache_and_the_engines_workspace(llama_serving: Job) -> None:
    memory = per_gpu(llama_serving, Layout("inference", "bf16"))
    # 8.03e9 parameters x 2 bytes; 131,072 B/token x 8,192 tokens = 1,073,741,824 B (exactly 1 GiB).
    # rel=1e-12: only float rounding of 8.03e9 (resolved from 8.03 x 1e9) separates the figures.
    assert memory.weights == pytest.approx(LLAMA_8B_PARAMS * 2, rel=1e-12)
    assert memory.kv_cache == LLAMA_8B_KV_BYTES_PER_TOKEN * 8192 == 1_073_741_824
    # vLLM profiles a forward of 8,192 batched tokens: 2 x (3 x 14,336 + 2 x 4,096 + 2 x 1,024) bytes each
    # (MLP gate, up and product; q, k, v and output), plus one sequence's fp32 logits and sampler copies
    # (128,256 x 16 B); then the CUDA context (0.4 GB) and the CUDA graph pool (0.4 GB).
    assert memory.activations == 8192 * 2 * (3 * 14336 + 2 * 4096 + 2 * 1024) + 128_256 * 16
    assert memory.overhead == pytest.approx(0.8e9)
    assert memory.gradients == memory.optimizer == memory.host == 0.0


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
    # weights and KV heads (8 of them) split over tp=2; the CUDA context and graph pool do not
    assert (tp2.weights, tp2.kv_cache, tp2.overhead) == (one.weights / 2, one.kv_cache / 2, one.overhead)
    # two replicas each hold all the weights and the cache of 8 / 2 = 4 sequences
    assert dp2.weights == one.weights
    assert dp2.kv_cache == LLAMA_8B_KV_BYTES_PER_TOKEN * 2048 * 4


def test_micro_batch_rounds_a_share_of_sequences_up() -> None:
    class Batch:
        batch = 5

    # 5 sequences over 2 ranks: one rank holds ceil(5 / 2) = 3; more ranks than sequences: still 1
    assert micro_batch(Batch(), Layout("pretrain", "bf16", dp=2)) == 3  # type: ignore[arg-type]
    assert micro_batch(Batch(), Layout("pretrain", "bf16", dp=8)) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_zero_stages_shard_the_model_states_as_the_paper_does(kb: KB, zero: int) -> None:
    """ZeRO (Rajbhandari et al. 2020), Figure 1: 7.5B parameters on 64 GPUs. Its K = 12 (fp32 master
    weights and Adam m, v) is sharded from stage 1, the gradients from stage 2, the 16-bit weights at
    stage 3. The plans keep the gradients in fp32 (4 B/param, as DeepSpeed's buffer and PyTorch's fp32
    parameters do), where the paper's 120 / 31.4 / 16.6 / 1.9 GB count 2."""
    job = job_of(kb, task="pretrain", params_b=7.5)
    memory = per_gpu(job, Layout("pretrain", "bf16", dp=64, zero=zero))
    p, n = 7.5e9, 64
    expected = {
        0: p * (2 + 4 + 12),
        1: p * (2 + 4) + p * 12 / n,
        2: p * 2 + p * (4 + 12) / n,
        3: p * (2 + 4 + 12) / n,
    }[zero]
    states = memory.weights + memory.gradients + memory.optimizer
    # stage 3 adds the gathered working set of the largest layer (DeepSpeed's estimator)
    assert states == pytest.approx(expected, rel=0.02 if zero == 3 else 1e-12)
    assert memory.overhead == 1.3e9  # HF model training anatomy: 'kernels ... 1.3GB'


def test_offload_moves_optimizer_states_and_gradients_to_host_bytes(kb: KB) -> None:
    job = job_of(kb, task="full_finetune", params_b=3, seq_len=512)
    memory = per_gpu(job, Layout("full_finetune", "bf16", zero=3, offload=True))
    # ZeRO-Offload (Ren et al. 2021): fp32 master weights + Adam m and v = 12 B/param, and the fp32
    # gradients (4 B/param), go to CPU RAM; the 16-bit weights (2 B/param) stay on the GPU.
    assert memory.optimizer == memory.gradients == 0.0
    assert memory.host == pytest.approx(3e9 * (12 + 4), rel=1e-12)  # float rounding only
    assert memory.weights == pytest.approx(3e9 * 2, rel=1e-12)
    # host bytes are not GPU memory
    assert memory.total == pytest.approx(memory.weights + memory.activations + 1.3e9, rel=1e-12)


def test_pure_fp32_training_keeps_no_master_copy(kb: KB) -> None:
    job = job_of(kb, task="pretrain", params_b=1.0)
    memory = per_gpu(job, Layout("pretrain", "fp32"))
    # fp32 AdamW: 4 (weights) + 4 (gradients) + 8 (m, v) = 16 B/param, no separate master copy
    assert (memory.weights, memory.gradients, memory.optimizer) == pytest.approx((4e9, 4e9, 8e9), rel=1e-12)
    mixed = per_gpu(job, Layout("pretrain", "bf16"))
    # mixed precision: 16-bit working weights 2 + fp32 gradients 4 + (4 master + 8) = 18 B/param (Hugging
    # Face, Model training anatomy)
    assert (mixed.weights, mixed.gradients, mixed.optimizer) == pytest.approx((2e9, 4e9, 12e9), rel=1e-12)


def test_tensor_split_shares_activations_and_a_pipeline_does_not(kb: KB) -> None:
    job = job_of(kb, task="pretrain", params_b=7.5, seq_len=2048)
    one = per_gpu(job, Layout("pretrain", "bf16"))
    tensor = per_gpu(job, Layout("pretrain", "bf16", tp=2, split="tensor"))
    pipeline = per_gpu(job, Layout("pretrain", "bf16", tp=2, split="pipeline"))
    # both splits halve the model states (each GPU holds half the layers or half of each layer)...
    for split in (tensor, pipeline):
        assert split.weights == one.weights / 2 and split.optimizer == one.optimizer / 2
    # ...but a 1F1B pipeline's first stage holds one micro-batch's activations of every layer
    # (Korthikanti et al. 2022 Sec. 4.2.3). The estimated shape is GPT-style (LayerNorm, multi-head
    # attention, 4h MLP) under autocast with fp32 weights (engine/sizing/kept_activations.py), per token
    # and layer: two norms' fp32 inputs 8h, the projections' bf16 input copies (q, k, v, up) 8h,
    # attention 10h (q, k, v, output, output projection input), the MLP 16h (up and GELU outputs of
    # 4h): 42h, of which tensor parallelism splits attention and MLP, 26h (Sec. 4.2.1). The head keeps
    # 6h (its norm and LM-head input) and the loss 14 bytes a logit, split by the vocabulary-parallel loss.
    s, h, layers, vocab = 2048, job.shape.hidden_size, job.shape.n_layers, job.shape.vocab_size
    assert pipeline.activations == one.activations
    assert one.activations == pytest.approx(s * (42 * h * layers + 6 * h + 14 * vocab), rel=1e-12)
    assert tensor.activations == pytest.approx(
        s * ((16 + 26 / 2) * h * layers + 6 * h + 7 * vocab), rel=1e-12
    )


def test_checkpointing_keeps_only_each_layers_input(kb: KB) -> None:
    job = job_of(kb, task="pretrain", model="llama-3-1-8b", seq_len=2048)
    plain = per_gpu(job, Layout("pretrain", "bf16"))
    recomputed = per_gpu(job, Layout("pretrain", "bf16", checkpointing=True))
    s, h, kv, i, layers, vocab = 2048, 4096, 1024, 14336, 32, 128256
    # engine/sizing/kept_activations.py, per token and layer of Llama 3.1 8B under autocast with fp32
    # weights: norms 2 x (4 + 4) h, input copies (q, k, v, gate, up) 10 h, attention 6 q + 4 kv with
    # q = h, the gated MLP 8 i.
    layer = 16 * h + 10 * h + 6 * h + 4 * kv + 8 * i
    head = 10 * h
    loss = 14 * vocab  # bf16 logits, the fp32 log-softmax, its gradient and the upcast's gradient
    assert plain.activations == pytest.approx(s * (layers * layer + head + loss), rel=1e-12)
    # full recomputation keeps each layer's fp32 input, and the layer being recomputed its own set
    assert recomputed.activations == pytest.approx(s * (layers * 4 * h + layer + head + loss), rel=1e-12)


def test_lora_base_is_sharded_only_by_zero_3(kb: KB) -> None:
    job = job_of(kb, task="lora", model="llama-3-1-8b")
    single = per_gpu(job, Layout("lora", "bf16"))
    zero2 = per_gpu(job, Layout("lora", "bf16", dp=4, zero=2))
    zero3 = per_gpu(job, Layout("lora", "bf16", dp=4, zero=3))
    # LoRA r=16 on every linear projection of Llama 3.1 8B: 32 x 16 x ((4096 + 4096) + 2 x (4096 + 1024)
    # + (4096 + 4096) + 3 x (4096 + 14336)) = 41,943,040 adapter parameters, kept in fp32 (PEFT's
    # autocast_adapter_dtype upcasts them: 4 bytes); the frozen base is 8.03e9 x 2 bytes.
    adapter = 41_943_040 * 4
    assert single.weights == pytest.approx(LLAMA_8B_PARAMS * 2 + adapter, rel=1e-12)
    assert zero2.weights == single.weights  # ZeRO-1/2 keep the frozen base whole
    assert zero3.weights == pytest.approx(LLAMA_8B_PARAMS * 2 / 4 + adapter, rel=1e-12)


def test_whole_job_is_one_unsharded_gpu_and_unknown_formats_are_refused(kb: KB) -> None:
    job = job_of(kb, task="full_finetune", params_b=1.0)
    assert whole_job(job, "full_finetune", "bf16", False) == per_gpu(job, Layout("full_finetune", "bf16"))
    assert weight_precision("nf4") == "nf4"
    with pytest.raises(ValueError, match="not a weights format"):
        weight_precision("tf32")
