"""Training memory: model states, sharding, offload, activations, LoRA and QLoRA.

Each test names the published figure it reproduces and its tolerance.
"""

from __future__ import annotations

import pytest

from engine.sizing import (
    GB,
    GIB,
    LORA_ALL_LINEAR,
    TransformerShape,
    activation_bytes,
    activation_bytes_from_params,
    activation_bytes_per_layer,
    activation_bytes_zero_heuristic,
    estimate_dims_from_params,
    logits_bytes,
    lora_memory,
    lora_params,
    merged_expert_bytes,
    model_state_bytes_per_param,
    model_state_memory,
    optimizer_state_bytes_per_param,
    qlora_memory,
)

LLAMA_65B = TransformerShape(
    n_layers=80, hidden_size=8192, n_heads=64, n_kv_heads=64, head_dim=128, intermediate_size=22016,
    vocab_size=32000,
)  # fmt: skip
LLAMA_2_7B = TransformerShape(
    n_layers=32, hidden_size=4096, n_heads=32, n_kv_heads=32, head_dim=128, intermediate_size=11008,
    vocab_size=32000,
)  # fmt: skip


# --- Published bytes per parameter -------------------------------------------------------------------


def test_zero_paper_model_states_7_5b_on_64_gpus() -> None:
    """ZeRO paper (Rajbhandari et al. 2020, arXiv 1910.02054), Figure 1: 7.5B parameters, N_d = 64, K = 12:
    120 GB (baseline), 31.4 GB (P_os), 16.6 GB (P_os+g), 1.9 GB (P_os+g+p). Tolerance: the paper's rounding
    to 0.1 GB (abs 0.05 GB)."""
    expected = {"ddp": 120.0, "zero1": 31.4, "zero2": 16.6, "zero3": 1.9}
    for sharding, gb in expected.items():
        memory = model_state_memory(7_500_000_000, n_gpus=64, sharding=sharding)  # type: ignore[arg-type]
        assert memory.gpu_bytes / GB == pytest.approx(gb, abs=0.05), sharding


def test_fsdp_matches_zero_stages() -> None:
    """PyTorch FSDP FULL_SHARD shards like ZeRO-3, SHARD_GRAD_OP like ZeRO-2 (FSDP docs). Exact."""
    for fsdp, zero in (("fsdp", "zero3"), ("fsdp_shard_grad_op", "zero2")):
        a = model_state_memory(10**9, n_gpus=8, sharding=fsdp)  # type: ignore[arg-type]
        b = model_state_memory(10**9, n_gpus=8, sharding=zero)  # type: ignore[arg-type]
        assert a == b


def test_hf_anatomy_bytes_per_param() -> None:
    """Hugging Face 'model memory anatomy': mixed-precision AdamW = 6 (fp16 + fp32 weights) + 8 (Adam) + 4
    (fp32 gradients) = 18 bytes/param; 8-bit AdamW optimizer states 2 bytes; SGD with momentum 4; fp32
    training 4 (weights) + 8 + 4 = 16. Exact."""
    assert model_state_bytes_per_param("adamw", gradient_bytes=4) == 18
    assert model_state_bytes_per_param("adamw_8bit", gradient_bytes=4) == 12
    assert model_state_bytes_per_param("sgd_momentum", gradient_bytes=4) == 14
    assert model_state_bytes_per_param("adamw", weight_bytes=4, gradient_bytes=4) == 16
    assert optimizer_state_bytes_per_param("adamw_8bit") == 2
    assert optimizer_state_bytes_per_param("sgd_momentum") == 4


def test_transformer_math_101_bytes_per_param() -> None:
    """Transformer Math 101 (EleutherAI): 2 bytes model (bf16) + 12 bytes AdamW optimizer (fp32 copy + m + v)
    + 2 bytes gradients = 16; 8-bit optimizer 6 -> 10; SGD with momentum 8 -> 12. Exact."""
    assert model_state_bytes_per_param() == 16
    assert model_state_bytes_per_param("adamw_8bit") == 10
    assert model_state_bytes_per_param("sgd_momentum") == 12
    assert model_state_bytes_per_param("sgd", master_weights=False) == 4


def test_seed_7b_mixed_precision_adam_at_least_112_gb() -> None:
    """Seeds 000/001: 7B with Adam in mixed precision needs >= 16 x 7e9 = 112 GB; guide G0: an 80 GB A100
    trains 'up to about 5B parameters'. Exact (112.0 GB; 80/16 = 5.0B)."""
    assert model_state_memory(7_000_000_000).gpu_bytes / GB == pytest.approx(112.0)
    assert 80 * GB / model_state_bytes_per_param() / 1e9 == pytest.approx(5.0)


def test_seed_002_eighteen_bytes_per_param() -> None:
    """Guide G2: '18 bytes per parameter for mixed precision with AdamW'; its 7B breakdown (13 + 26 + 78 GB,
    total with activations 143 GB) is printed in GiB: 18 x 7e9 / 2**30 = 117.3 GiB of model states.
    Tolerance 0.1 GiB."""
    states = model_state_memory(7_000_000_000, gradient_bytes=4)
    assert states.gpu_bytes / GIB == pytest.approx(13.04 + 26.08 + 78.23, abs=0.1)


def test_seed_004_8x_l40s_70b_fsdp() -> None:
    """Guide G4: 70B on 8x L40S with FSDP, counting bf16 params (17.5) + bf16 grads (17.5) + Adam m,v (70)
    = 105 GB/GPU, i.e. no fp32 master copy. Our default adds the master weights: 140 GB/GPU. Exact."""
    seed = model_state_memory(70_000_000_000, n_gpus=8, sharding="fsdp", master_weights=False)
    assert seed.gpu_bytes / GB == pytest.approx(105.0)
    assert model_state_memory(70_000_000_000, n_gpus=8, sharding="fsdp").gpu_bytes / GB == pytest.approx(
        140.0
    )


def test_qlora_paper_16bit_finetune_of_65b_exceeds_780_gb() -> None:
    """QLoRA abstract (Dettmers et al. 2023): 16-bit finetuning of LLaMA-65B needs '>780GB'; with bf16
    weights and gradients and fp32 Adam states (12 bytes/param) 65.3B -> 783 GB. Tolerance: > 780 GB and
    within 1% of 783.4 GB."""
    gb = model_state_memory(65_285_660_672, master_weights=False).gpu_bytes / GB
    assert gb > 780
    assert gb == pytest.approx(783.4, rel=0.01)


# --- DeepSpeed estimator formulas -----------------------------------------------------------------------


def test_deepspeed_zero3_estimator_formula() -> None:
    """DeepSpeed stage3.py ``estimate_zero3_model_states_mem_needs`` (no offload): ``4 x largest_layer +
    18 x P / N``, 18 = 16-bit params 2 + fp32 gradients 4 + fp32 master 4 + Adam 8. With gradient_bytes=4
    our sharded states are the same 18 P / N; only the working set differs (ours counts the gathered layer's
    params and gradients at 2 + 4 bytes, DeepSpeed 4). Exact."""
    p, n, largest = 7_000_000_000, 8, 525_336_576
    ours = model_state_memory(
        p, n_gpus=n, sharding="zero3", gradient_bytes=4, largest_layer_params=largest
    ).gpu_bytes
    deepspeed = 4 * largest + 18 * p / n
    assert ours - 6 * largest == pytest.approx(deepspeed - 4 * largest)


def test_offload_moves_states_to_host() -> None:
    """ZeRO-Offload / DeepSpeed estimate_zero2 (offload): GPU keeps the 16-bit params (2P), the rest goes to
    CPU; ZeRO-3 with offload_param keeps only the working set. Exact."""
    p = 1_000_000_000
    z2 = model_state_memory(p, n_gpus=4, sharding="zero2", offload_optimizer=True)
    assert z2.gpu_bytes == 2 * p
    assert z2.host_bytes == pytest.approx((12 + 2) * p / 4)
    z3 = model_state_memory(
        p, n_gpus=4, sharding="zero3", offload_optimizer=True, offload_params=True, largest_layer_params=1000
    )
    assert z3.gpu_bytes == 4 * 1000
    assert z3.host_bytes == pytest.approx(16 * p / 4)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sharding": "ddp", "offload_optimizer": True},
        {"sharding": "zero2", "offload_optimizer": True, "offload_params": True},
        {"sharding": "zero3", "offload_params": True},
        {"sharding": "zero4"},
        {"optimizer": "lion"},
        {"n_gpus": 0},
        {"largest_layer_params": 10**12},
    ],
)
def test_model_state_memory_rejects_invalid(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        model_state_memory(10**9, **kwargs)  # type: ignore[arg-type]


# --- Activations ----------------------------------------------------------------------------------------


def test_korthikanti_table_2() -> None:
    """Korthikanti et al. 2022 (arXiv 2205.05198) Table 2, per layer. Exact."""
    s, b, h, a, t = 2048, 4, 4096, 32, 8
    sbh = s * b * h
    assert activation_bytes_per_layer(s, b, h, a) == sbh * (34 + 5 * a * s / h)
    assert activation_bytes_per_layer(s, b, h, a, tensor_parallel=t) == sbh * (
        10 + 24 / t + 5 * a * s / (h * t)
    )
    assert activation_bytes_per_layer(s, b, h, a, tensor_parallel=t, sequence_parallel=True) == pytest.approx(
        sbh * (34 / t + 5 * a * s / (h * t))
    )
    assert activation_bytes_per_layer(s, b, h, a, recompute="selective") == 34 * sbh
    assert activation_bytes_per_layer(
        s, b, h, a, recompute="selective", tensor_parallel=t, sequence_parallel=True
    ) == pytest.approx(34 * sbh / t)
    assert activation_bytes_per_layer(s, b, h, a, recompute="full") == 2 * sbh


def test_korthikanti_gpt3_selective_saves_about_70_percent() -> None:
    """Korthikanti et al. Sec. 4.2: for GPT-3 (a = 96, s = 2048, h = 12288) the attention-score term
    5as/h = 80 exceeds the other 34, so selective recomputation removes 80/114 = 70% of activation memory,
    with or without tensor + sequence parallelism. Tolerance: 0.69-0.71."""
    args = (2048, 1, 12288, 96)
    for kwargs in ({}, {"tensor_parallel": 8, "sequence_parallel": True}):
        full = activation_bytes_per_layer(*args, **kwargs)  # type: ignore[arg-type]
        sel = activation_bytes_per_layer(*args, recompute="selective", **kwargs)  # type: ignore[arg-type]
        assert 0.69 < 1 - sel / full < 0.71


def test_zero_paper_gpt2_activation_heuristic() -> None:
    """ZeRO paper Sec. 3.2: GPT-2 1.5B (h 1600, 48 layers), seq 1K, batch 32 'requires about 60GB' of
    activations (12 x h x b x s x L 16-bit values). Tolerance 2%."""
    assert activation_bytes_zero_heuristic(1600, 48, 1024, 32) / GB == pytest.approx(60.0, rel=0.02)


def test_seed_004_activation_rule_is_full_recompute_scale() -> None:
    """Guide G4: 'Activations per token ~= 2 x n_layers x hidden x 2 bytes ... seq 2048, batch 8 -> 8 GB,
    gradient checkpointing OFF'. That is 2x Korthikanti's full-recompute figure (2sbhL = 4.3 GB), while
    no recomputation (34 + 5as/h per layer) is ~57x more (245 GB). Tolerance 1%."""
    seed = 2 * 32 * 4096 * 2 * 2048 * 8
    assert seed / GIB == pytest.approx(8.0)
    full = activation_bytes(LLAMA_2_7B, 2048, 8, recompute="full", include_recompute_working_set=False)
    assert seed / full == pytest.approx(2.0, rel=0.01)
    none = activation_bytes(LLAMA_2_7B, 2048, 8)
    assert none / GB == pytest.approx(244.8, rel=0.01)


def test_activation_heuristic_from_params_close_to_architecture() -> None:
    """Parameter-only heuristic (P = 12 L h^2, h = 128 L) against the real Llama-2-7B shape: within 25%."""
    hidden, layers, heads = estimate_dims_from_params(6.74e9)
    assert hidden == pytest.approx(4096, rel=0.05)
    assert layers == pytest.approx(32, rel=0.05)
    assert heads == pytest.approx(32, rel=0.05)
    for mode in ("none", "selective", "full"):
        guess = activation_bytes_from_params(6.74e9, 2048, 1, recompute=mode)
        real = activation_bytes(LLAMA_2_7B, 2048, 1, recompute=mode, include_recompute_working_set=False)
        assert guess == pytest.approx(real, rel=0.25), mode


def test_logits_llama_3_8k() -> None:
    """Llama-3 8B (vocab 128,256), 8192 tokens, fp32 logits: 4.2 GB. Exact arithmetic."""
    assert logits_bytes(8192, 1, 128256) == 8192 * 128256 * 4


# --- LoRA and QLoRA -------------------------------------------------------------------------------------


def test_lora_param_count_llama_7b_qv() -> None:
    """LoRA (Hu et al. 2021) on W_q and W_v of LLaMA-7B at r = 8: 2 x 32 x 8 x (4096 + 4096) = 4,194,304,
    PEFT's print_trainable_parameters figure for this configuration. Exact."""
    assert lora_params(LLAMA_2_7B, 8) == 4_194_304


def test_qlora_65b_fits_one_48gb_gpu() -> None:
    """QLoRA (Dettmers et al. 2023, abstract and README): LLaMA-65B fine-tunes on a single 48 GB GPU (a 48 GiB
    RTX A6000 / A40 = 51.5 GB). Setup from artidoro/qlora qlora.py defaults: NF4 + double quant, r = 64 on
    all linear layers, bf16 adapters, paged AdamW 32-bit, gradient checkpointing, batch 1, 1024 + 256
    tokens. Tolerance: total below 48 GiB; model states within 2% of 44.1 GB."""
    states = qlora_memory(LLAMA_65B)
    assert lora_params(LLAMA_65B, 64, targets=LORA_ALL_LINEAR) == pytest.approx(799.5e6, rel=0.001)
    assert states.gpu_bytes / GB == pytest.approx(44.05, rel=0.02)
    acts = activation_bytes(LLAMA_65B, 1280, 1, recompute="full") + logits_bytes(1280, 1, 32000)
    assert states.gpu_bytes + acts < 48 * GIB
    # The 16-bit base alone would not fit: 130 GB.
    assert lora_memory(LLAMA_65B, 64, targets=LORA_ALL_LINEAR).gpu_bytes > 130 * GB


def test_qlora_without_double_quant_is_larger() -> None:
    """QLoRA Sec. 3: double quantization saves 0.373 bits/param (0.5 -> 0.127): ~3 GB for a 65B model."""
    saved = qlora_memory(LLAMA_65B, double_quant=False).gpu_bytes - qlora_memory(LLAMA_65B).gpu_bytes
    assert saved / GB == pytest.approx(3.0, rel=0.05)


def test_lora_targets_validation() -> None:
    with pytest.raises(ValueError, match="targets"):
        lora_params(LLAMA_2_7B, 8, targets=("q", "lm_head"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="targets"):
        lora_params(LLAMA_2_7B, 8, targets=())
    with pytest.raises(ValueError, match="rank"):
        lora_params(LLAMA_2_7B, 0)


QWEN3_30B_A3B = TransformerShape(
    n_layers=48, hidden_size=2048, n_heads=32, n_kv_heads=4, head_dim=128, intermediate_size=6144,
    vocab_size=151936, n_experts=128, experts_per_token=8, moe_intermediate_size=768, qk_norm=True,
)  # fmt: skip
"""Qwen/Qwen3-30B-A3B's config.json"""


def test_lora_on_experts_keeps_a_merged_copy_of_each_layers_expert_weights() -> None:
    """peft adapts transformers 5's 3-D expert weights through `target_parameters` (tuners/lora/layer.py,
    ParamWrapper): each forward multiplies by W + B A, a full bf16 copy of the layer's 128 experts (3 x
    2,048 x 768 each: 1.21 GB), kept for the backward, which adds the gradient with respect to it. Without
    checkpointing all 48 layers keep theirs; with it, the layer being recomputed. A dense model keeps none."""
    layer = 128 * 3 * 2048 * 768 * 2
    assert layer / GB == pytest.approx(1.208, abs=0.001)
    assert merged_expert_bytes(QWEN3_30B_A3B, checkpointing=False) == layer * (48 + 1)
    assert merged_expert_bytes(QWEN3_30B_A3B, checkpointing=True) == layer * 2
    assert merged_expert_bytes(LLAMA_2_7B, checkpointing=False) == 0.0


def test_qlora_leaves_the_experts_of_transformers_5_in_16_bits_where_asked() -> None:
    """bitsandbytes quantizes nn.Linear modules; transformers 5 keeps an MoE layer's experts as 3-D
    parameters, which it skips and leaves in full precision (bitsandbytes issue 1849): Qwen3-30B-A3B's 48 x
    128 experts of 3 x 2,048 x 768 are 28.99B of its 30.53B parameters, so its QLoRA base is 59.7 GB, not
    the 16.7 GB of a base quantized throughout."""
    experts = 48 * 128 * 3 * 2048 * 768
    assert experts == 28_991_029_248
    quantized = qlora_memory(QWEN3_30B_A3B).base_weights_bytes
    stock = qlora_memory(QWEN3_30B_A3B, quantized_experts=False).base_weights_bytes
    assert quantized / GB == pytest.approx(16.69, abs=0.01)
    assert stock - quantized == pytest.approx(experts * (2.0 - 4.127 / 8), rel=1e-3)
    assert stock / GB == pytest.approx(59.72, abs=0.01)
