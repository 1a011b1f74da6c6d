"""Multi-GPU training held against published measurements: torchtitan's fully sharded runs of Llama 3.1
8B on 8 and 128 H100s, and of Llama 3.1 70B on 256 (FSDP 32 x tensor parallel 8), speed and memory a GPU;
IBM's and Meta's hybrid-sharded runs of Llama 2 7B and 13B on 128 A100s (fms-fsdp).

torchtitan, benchmarks/llama3_h100_202412_torchtitan.md (the team's runs of December 2024): Grand Teton
hosts of 8 H100s (96 GB HBM2e, 500 W power limit) over NVLink, 400 Gb/s RDMA a GPU between hosts, 8,192
tokens a sequence. Its "Memory(GiB)" is the caching allocator's peak reservation
(torchtitan/components/metrics.py logs `max_reserved_gib`), so it includes what fragmentation holds; the
sizing counts what tensors hold."""

from __future__ import annotations

import pytest

from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest
from engine.planning.memory import Layout, per_gpu
from engine.planning.performance import Links, training_speed
from engine.planning.workload import resolve
from engine.sizing import GIB

GRAND_TETON = Links(gpu_to_gpu=450e9, inter_node=50e9, host=32e9, latency_s=10e-6)
"""NVLink 4 inside a host; 400 Gb/s (50 GB/s) a GPU between hosts"""


A100_HOSTS = Links(gpu_to_gpu=300e9, inter_node=50e9, host=32e9, latency_s=10e-6)
"""NVLink 3 inside a host (600 GB/s both ways); 400 Gb/s between hosts, read as a GPU's"""


def _sized(
    kb: KB,
    model: str,
    sequences: int,
    layout: Layout,
    nodes: int,
    *,
    gpu: str = "nvidia-h100-sxm",
    links: Links = GRAND_TETON,
    seq_len: int = 8192,
) -> tuple[float, float]:
    """Tokens/s and GiB a GPU of a pretraining run on an FSDP-based tuned stack (torchtitan's class),
    `sequences` of `seq_len` tokens a micro-step over all data-parallel ranks."""
    workload = {
        "task": "pretrain",
        "model": model,
        "batch_size": sequences,
        "seq_len": seq_len,
        "training_stack": "torchtitan",
        "training_tokens_b": 1,
        "precision": layout.precision,
    }
    job = resolve(RecommendRequest.model_validate({"workload": workload}), kb)
    memory = per_gpu(job, layout)
    speed = training_speed(job, kb.gpus[gpu], layout, links, nodes=nodes, memory=memory)
    assert speed is not None
    return speed.aggregate_tokens_per_s / (layout.tp * layout.dp), memory.total / GIB


def test_fsdp_on_eight_h100s_lies_between_full_and_no_checkpointing(kb: KB) -> None:
    """Table 1: FSDP on 8 GPUs, 2 sequences a GPU, selective activation checkpointing (each layer's matmul
    outputs kept, the element-wise ops recomputed), bf16: 5,762 tokens/s and 82.4 GiB a GPU; its authors
    put the run at 33-39% MFU. Selective checkpointing recomputes less than full checkpointing and keeps
    less than none: the measurement lies between the two plans the sizing knows, and the one with full
    checkpointing, which a planner offers where the other does not fit, is within the training band."""
    full_speed, full_memory = _sized(
        kb, "llama-3-1-8b", 16, Layout("pretrain", "bf16", dp=8, zero=3, checkpointing=True), 1
    )
    none_speed, none_memory = _sized(kb, "llama-3-1-8b", 16, Layout("pretrain", "bf16", dp=8, zero=3), 1)
    assert full_speed < 5_762 < none_speed
    assert full_memory < 82.4 < none_memory
    assert full_speed == pytest.approx(5_762, rel=0.25)


def test_fsdp_over_sixteen_hosts_keeps_its_speed(kb: KB) -> None:
    """Table 3: the same run on 128 GPUs (16 hosts), 2 sequences a GPU: 5,605 tokens/s a GPU, 97% of the
    8-GPU figure: the gathers and reductions across hosts stay behind the compute."""
    speed, _ = _sized(
        kb, "llama-3-1-8b", 256, Layout("pretrain", "bf16", dp=128, zero=3, checkpointing=True), 16
    )
    assert speed == pytest.approx(5_605, rel=0.25)


def test_a_70b_model_over_256_h100s_tensor_parallel_inside_each_host(kb: KB) -> None:
    """Table 4: Llama 3.1 70B on 256 GPUs, FSDP 32 x tensor parallel 8, 16 sequences a tensor-parallel
    group, full activation checkpointing, Float8 and torch.compile: 829 tokens/s and 71.9 GiB a GPU.
    The tensor-parallel group is one host, its all-reduces on NVLink; taken across the hosts' links they
    put the run at 294 tokens/s. Sequence parallelism, which torchtitan's tensor-parallel plan applies,
    splits each layer's kept input eight ways; without it the plan needed 393 GiB a GPU. The reservation
    measured holds fragmentation beside the tensors: the sizing is below it, and within a quarter."""
    layout = Layout("pretrain", "fp8", tp=8, dp=32, zero=3, checkpointing=True)
    speed, memory = _sized(kb, "llama-3-1-70b", 16 * 32, layout, 32)
    assert speed == pytest.approx(829, rel=0.25)
    assert 0.75 * 71.9 < memory < 71.9


@pytest.mark.parametrize(
    ("model", "sequences_a_gpu", "published"),
    [
        # Table 1: 7B, 2 sequences a GPU, no activation checkpointing: 3,700 tokens/s (MFU 0.57)
        ("llama-2-7b", 2, 3_700),
        # the repository's README: 13B with HSDP, 1 sequence a GPU, no activation checkpointing: 1,700
        ("llama-2-13b", 1, 1_700),
    ],
)
def test_hybrid_sharding_over_sixteen_a100_hosts(
    kb: KB, model: str, sequences_a_gpu: int, published: float
) -> None:
    """IBM and Meta, "Maximizing training throughput using PyTorch FSDP" (March 2024,
    pytorch.org/blog/maximizing-training) and foundation-model-stack/fms-fsdp's README: Llama 2 on 128
    A100 80GB (16 hosts) with 400 Gb/s between hosts, 4,096 tokens a sequence, sharded with HSDP (FSDP
    inside each host, copies across hosts). Hybrid sharding keeps the run computing whether the 400 Gb/s
    is a GPU's or a host's; sharding over all 128 GPUs would, on a host's 400 Gb/s, wait on the network
    for under half the published speed. The A100 reaches a higher share of its peak than the H100 runs
    the tuned stack's efficiency comes from (the blog's MFU: 0.57 against 0.37 for 7B): at the Hopper
    share the prediction was 0.77x and 0.87x, at A100_TRAINING_SHARE 1.00x and 1.13x."""
    hybrid = Layout("pretrain", "bf16", dp=128, zero=3, shard=8)
    full = Layout("pretrain", "bf16", dp=128, zero=3)
    a_host = Links(gpu_to_gpu=300e9, inter_node=50e9 / 8, host=32e9, latency_s=10e-6)

    def sized(layout: Layout, links: Links) -> tuple[float, float]:
        sequences = sequences_a_gpu * 128
        return _sized(kb, model, sequences, layout, 16, gpu="nvidia-a100-sxm-80gb", links=links, seq_len=4096)

    speed, memory = sized(hybrid, A100_HOSTS)
    assert speed == pytest.approx(published, rel=0.25)
    assert memory < 80  # it ran on 80 GB cards without recomputation
    assert sized(hybrid, a_host)[0] == pytest.approx(speed)
    assert sized(full, a_host)[0] < published / 2


A800_HOST = Links(gpu_to_gpu=200e9, inter_node=25e9, host=32e9, latency_s=10e-6)
"""NVLink 3 cut to 400 GB/s both ways (the A800, the A100's export variant), read as a GPU's one way"""


@pytest.mark.parametrize(("zero", "seconds_an_iteration"), [(2, 10.32), (3, 10.56)])
def test_deepspeed_full_fine_tuning_of_a_14b_model_on_eight_a800s(
    kb: KB, zero: int, seconds_an_iteration: float
) -> None:
    """ms-swift's benchmark of its two back ends (Megatron-SWIFT training docs, "Benchmark"; the DeepSpeed
    run is examples/train/megatron/benchmark/deepspeed.sh): Qwen2.5-14B fully fine-tuned with `swift sft`,
    a Hugging Face Trainer over DeepSpeed, on one host of 8 A800s: one packed sequence of 8,192 tokens a GPU,
    2 micro-steps an optimizer step (131,072 tokens an iteration), gradient checkpointing (swift's default),
    flash attention. 10.32 s an iteration with ZeRO-2 and 10.56 s with ZeRO-3: 1,588 and 1,552 tokens/s a
    GPU, ZeRO-3 at 58 GB a GPU. The default stack's efficiency was read from Hopper runs (data/calibration);
    at that share the prediction was 0.66x, at an A100's (A100_TRAINING_SHARE) 0.83-0.85x. The memory is
    within the training band."""
    workload = {"task": "full_finetune", "model": "qwen2-5-14b", "batch_size": 8, "seq_len": 8192}
    job = resolve(RecommendRequest.model_validate({"workload": {**workload, "training_tokens_b": 1}}), kb)
    layout = Layout("full_finetune", "bf16", dp=8, zero=zero, checkpointing=True)
    memory = per_gpu(job, layout)
    gpu = kb.gpus["nvidia-a100-sxm-80gb"]
    speed = training_speed(job, gpu, layout, A800_HOST, memory=memory, micro_steps=2)
    assert speed is not None
    published = 131_072 / seconds_an_iteration / 8
    assert speed.aggregate_tokens_per_s / 8 == pytest.approx(published, rel=0.35)
    if zero == 3:
        assert 0.95 * 58e9 / GIB <= memory.total / GIB <= 1.25 * 58  # GB or GiB, the table does not say


QWEN1_5_MOE_A2_7B = {
    "model_type": "qwen2_moe",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "vocab_size": 151936,
    "tie_word_embeddings": False,
}
"""Qwen/Qwen1.5-MoE-A2.7B's config.json, the fields the sizing reads"""


def _moe_on_eight_a800s(kb: KB, stack: str) -> float:
    """Tokens/s a GPU of Qwen1.5-MoE-A2.7B fully fine-tuned as ms-swift's benchmark ran it (assumed: the 14B
    dense run's shape: a packed 8,192-token sequence a GPU, 2 micro-steps, checkpointing)."""
    workload = {"task": "full_finetune", "hf_config": QWEN1_5_MOE_A2_7B, "batch_size": 8, "seq_len": 8192}
    body = {"workload": {**workload, "training_tokens_b": 1, "training_stack": stack}}
    job = resolve(RecommendRequest.model_validate(body), kb)
    layout = Layout("full_finetune", "bf16", dp=8, zero=2, checkpointing=True)
    gpu = kb.gpus["nvidia-a100-sxm-80gb"]
    speed = training_speed(job, gpu, layout, A800_HOST, memory=per_gpu(job, layout), micro_steps=2)
    assert speed is not None
    return speed.aggregate_tokens_per_s / 8


def test_a_mixture_of_experts_trains_below_its_active_flops(kb: KB) -> None:
    """ms-swift's benchmark of the same host and shape (the docs' "Benchmark", MoE row): Qwen1.5-MoE-A2.7B
    (60 experts 1,408 wide, 4 routed a token) fully fine-tuned with Megatron-LM in 2.95 s an iteration
    (5,554 tokens/s a GPU) and with DeepSpeed ZeRO-2 under transformers 4, which loops over expert
    modules, in 6.02 s (2,722). A dense model of its width trains near its active FLOPs at the stack's
    share of the peak; an MoE's experts are narrow grouped matmuls, and at the dense share both stacks
    were predicted above Megatron-LM's measured speed. The tuned stack is within the band (0.97x); the
    default stack (transformers 5, grouped expert matmuls, about 6x transformers 4's loop:
    Unsloth with Hugging Face, unsloth.ai/docs/new/faster-moe) lies between the two measurements."""
    assert _moe_on_eight_a800s(kb, "megatron-lm") == pytest.approx(131_072 / 2.95 / 8, rel=0.35)
    assert 131_072 / 6.02 / 8 < _moe_on_eight_a800s(kb, "huggingface") < 131_072 / 2.95 / 8
