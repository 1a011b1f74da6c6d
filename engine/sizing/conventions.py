"""Every default the sizing functions assume, with its value, unit and source.

Where sources disagree the choice is an explicit keyword argument whose default is one of these constants;
:data:`CONVENTIONS` lists them so the recommender can report them under ``assumptions``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ADAFACTOR_STATE_BYTES",
    "ADAM_8BIT_STATE_BYTES",
    "ADAM_STATE_BYTES",
    "ALLREDUCE_LATENCY_S",
    "ASPECT_RATIO",
    "CONVENTIONS",
    "DECODE_BANDWIDTH_EFFICIENCY",
    "DEFAULT_GRADIENT_BYTES",
    "DEFAULT_WEIGHT_BYTES",
    "ELECTRICITY_USD_PER_KWH",
    "FULL_RECOMPUTE_FLOPS_PER_PARAM_TOKEN",
    "HARDWARE_HORIZON_YEARS",
    "HEAD_DIM",
    "INFERENCE_OVERHEAD_FRACTION",
    "LOGITS_BYTES_PER_VALUE",
    "MASTER_WEIGHT_BYTES",
    "MFU",
    "QLORA_ADAPTER_MASTER_WEIGHTS",
    "QLORA_LORA_RANK",
    "SERVING_HEADROOM",
    "SGD_MOMENTUM_STATE_BYTES",
    "TRAINING_FLOPS_PER_PARAM_TOKEN",
    "VLLM_BLOCK_SIZE",
    "VLLM_GPU_MEMORY_UTILIZATION",
    "Convention",
]

TRANSFORMER_MATH = "EleutherAI, Transformer Math 101 (https://blog.eleuther.ai/transformer-math/)"
HF_ANATOMY = (
    "Hugging Face, Model training anatomy / GPU memory usage "
    "(https://huggingface.co/docs/transformers/model_memory_anatomy)"
)
ZERO_PAPER = "Rajbhandari et al. 2020, ZeRO (arXiv 1910.02054), Sec. 3.1 and Fig. 1"
SEED_002 = "guide G2, 'Selecting GPUs for Training vs Inference'"


@dataclass(frozen=True, slots=True)
class Convention:
    """One assumed value: what it is, its unit, and where it comes from (and who disagrees)."""

    name: str
    value: float
    unit: str
    source: str
    note: str = ""


DEFAULT_WEIGHT_BYTES: float = 2.0
"""Working copy of the weights in mixed precision: bf16/fp16, 2 bytes per parameter."""

DEFAULT_GRADIENT_BYTES: float = 2.0
"""Gradients in the working precision (fp16/bf16). ZeRO paper and Transformer Math 101: 2 bytes;
Hugging Face's anatomy page, DeepSpeed's estimator and llm-analysis keep fp32 gradients: 4 bytes."""

MASTER_WEIGHT_BYTES: float = 4.0
"""fp32 master copy of the weights kept by the optimizer under mixed precision."""

ADAM_STATE_BYTES: float = 8.0
"""Adam/AdamW first and second moments in fp32: 4 + 4 bytes per parameter."""

ADAM_8BIT_STATE_BYTES: float = 2.0
"""8-bit Adam (bitsandbytes, Dettmers et al. 2021, arXiv 2110.02861): 1 + 1 byte per parameter."""

SGD_MOMENTUM_STATE_BYTES: float = 4.0
"""SGD with momentum: one fp32 buffer."""

ADAFACTOR_STATE_BYTES: float = 4.0
"""Adafactor: Hugging Face's anatomy page files it with the 4-byte optimizers ('uses some additional memory
beside 4 bytes'); the factored second moment alone (Shazeer & Stern 2018, arXiv 1804.04235, beta1 = 0) is
sublinear in the parameter count, so pass a smaller value for that setting."""

INFERENCE_OVERHEAD_FRACTION: float = 0.2
"""Forward-pass overhead over the weights at inference: Total ~= 1.2 x model memory (Transformer Math 101)."""

VLLM_GPU_MEMORY_UTILIZATION: float = 0.9
"""Fraction of GPU memory vLLM lets itself use (weights + activations + KV cache); the rest is the runtime
reserve for the CUDA context, allocator fragmentation and other processes."""

VLLM_BLOCK_SIZE: int = 16
"""PagedAttention KV block size in tokens (vLLM ``EngineArgs.block_size`` default)."""

DECODE_BANDWIDTH_EFFICIENCY: float = 0.7
"""Fraction of peak memory bandwidth achieved by batch-1 decoding (guide G2: '70% efficiency')."""

MFU: float = 0.4
"""Model FLOPs utilization: Transformer Math 101 reports 150-180 TFLOP/s per A100 for GPT-NeoX and says
~120 TFLOP/s is always achievable: 120/312 = 0.38 to 180/312 = 0.58 of the dense BF16 peak."""

TRAINING_FLOPS_PER_PARAM_TOKEN: float = 6.0
"""Training compute C ~= 6 P D: 2 P D forward + 4 P D backward (Transformer Math 101; Kaplan et al. 2020)."""

FULL_RECOMPUTE_FLOPS_PER_PARAM_TOKEN: float = 8.0
"""With full activation recomputation the forward runs twice: C ~= 8 P D (Narayanan et al. 2021,
arXiv 2104.04473, Sec. 5.1; Korthikanti et al. 2022, arXiv 2205.05198, Sec. 5)."""

ALLREDUCE_LATENCY_S: float = 8e-6
"""Fixed cost of one all-reduce: llm-analysis ``intra_node_min_message_latency`` (8 us in its GPU configs)."""

HARDWARE_HORIZON_YEARS: float = 3.0
"""Years over which owned hardware is amortized (guide G2: ``hardware_lifetime_years=3.0``;
guide G1: '3 years')."""

ELECTRICITY_USD_PER_KWH: float = 0.12
"""Electricity price (guide G2 ``power_cost_per_kwh=0.12``)."""

SERVING_HEADROOM: float = 0.2
"""Burst headroom over the mean token rate when sizing a serving fleet
(guide G2, Q4: 'With 20% burst headroom')."""

ASPECT_RATIO: float = 128.0
"""hidden_size / n_layers for the parameter-only activation heuristic: GPT-3 6.7B, 13B and 175B
(Brown et al. 2020, arXiv 2005.14165, Table 2.1) and Llama-2 7B/13B have ~128."""

HEAD_DIM: float = 128.0
"""Attention head width assumed by the parameter-only heuristic (GPT-3 175B, Llama 2/3: 128)."""

LOGITS_BYTES_PER_VALUE: float = 4.0
"""Logits kept for the loss in fp32 (Hugging Face causal-LM heads upcast with ``logits.float()``);
llm-analysis counts them at the activation precision (2 bytes)."""

QLORA_LORA_RANK: int = 64
"""LoRA rank of the QLoRA reference script (artidoro/qlora ``qlora.py``: ``lora_r`` default 64)."""

QLORA_ADAPTER_MASTER_WEIGHTS: bool = False
"""QLoRA casts the LoRA modules to bf16 and steps them with paged 32-bit AdamW; no separate fp32 master
copy (artidoro/qlora ``qlora.py``: ``module.to(torch.bfloat16)``, ``optim='paged_adamw_32bit'``)."""


CONVENTIONS: tuple[Convention, ...] = (
    Convention(
        "weight_bytes", DEFAULT_WEIGHT_BYTES, "bytes/param", TRANSFORMER_MATH, "bf16/fp16 working weights"
    ),
    Convention(
        "gradient_bytes",
        DEFAULT_GRADIENT_BYTES,
        "bytes/param",
        f"{ZERO_PAPER}; {TRANSFORMER_MATH}",
        "HF anatomy, DeepSpeed's estimator and llm-analysis use 4 (fp32 gradients): 18 B/param for AdamW",
    ),
    Convention("master_weight_bytes", MASTER_WEIGHT_BYTES, "bytes/param", ZERO_PAPER, "fp32 master weights"),
    Convention(
        "adam_state_bytes", ADAM_STATE_BYTES, "bytes/param", f"{ZERO_PAPER}; {HF_ANATOMY}", "fp32 m + v"
    ),
    Convention(
        "adam_8bit_state_bytes",
        ADAM_8BIT_STATE_BYTES,
        "bytes/param",
        f"{HF_ANATOMY}; Dettmers et al. 2021 (arXiv 2110.02861)",
        "8-bit Adam totals 10 B/param with 16-bit gradients (Transformer Math 101: 2 + 6 + 2), "
        "12 with fp32 gradients (HF anatomy: 6 + 2 + 4)",
    ),
    Convention("sgd_momentum_state_bytes", SGD_MOMENTUM_STATE_BYTES, "bytes/param", HF_ANATOMY),
    Convention("adafactor_state_bytes", ADAFACTOR_STATE_BYTES, "bytes/param", HF_ANATOMY, "upper bound"),
    Convention(
        "inference_overhead_fraction", INFERENCE_OVERHEAD_FRACTION, "fraction of weights", TRANSFORMER_MATH
    ),
    Convention(
        "gpu_memory_utilization",
        VLLM_GPU_MEMORY_UTILIZATION,
        "fraction of GPU memory",
        "vLLM engine arguments (https://docs.vllm.ai/en/latest/models/engine_args.html), "
        "vllm/engine/arg_utils.py EngineArgs.gpu_memory_utilization",
        "the remaining 10% is the runtime reserve (CUDA context, allocator, other processes)",
    ),
    Convention(
        "kv_block_size",
        VLLM_BLOCK_SIZE,
        "tokens",
        "vllm/engine/arg_utils.py EngineArgs.block_size",
        "PagedAttention",
    ),
    Convention(
        "decode_bandwidth_efficiency", DECODE_BANDWIDTH_EFFICIENCY, "fraction of peak bandwidth", SEED_002
    ),
    Convention(
        "mfu", MFU, "fraction of dense peak FLOPS", TRANSFORMER_MATH, "120-180 TFLOP/s of 312 on A100"
    ),
    Convention("training_flops_per_param_token", TRAINING_FLOPS_PER_PARAM_TOKEN, "FLOP", TRANSFORMER_MATH),
    Convention(
        "full_recompute_flops_per_param_token",
        FULL_RECOMPUTE_FLOPS_PER_PARAM_TOKEN,
        "FLOP",
        "Narayanan et al. 2021 (arXiv 2104.04473) Sec. 5.1",
    ),
    Convention(
        "allreduce_latency_s", ALLREDUCE_LATENCY_S, "s", "llm-analysis gpu_configs (cli99/llm-analysis)"
    ),
    Convention("hardware_horizon_years", HARDWARE_HORIZON_YEARS, "years", SEED_002),
    Convention("electricity_usd_per_kwh", ELECTRICITY_USD_PER_KWH, "USD/kWh", SEED_002),
    Convention("serving_headroom", SERVING_HEADROOM, "fraction", SEED_002),
    Convention(
        "aspect_ratio", ASPECT_RATIO, "hidden/layers", "Brown et al. 2020 (arXiv 2005.14165) Table 2.1"
    ),
    Convention("head_dim", HEAD_DIM, "width", "Brown et al. 2020 (arXiv 2005.14165) Table 2.1"),
    Convention(
        "logits_bytes_per_value",
        LOGITS_BYTES_PER_VALUE,
        "bytes",
        "Hugging Face transformers causal-LM heads (logits.float())",
    ),
    Convention("qlora_lora_rank", QLORA_LORA_RANK, "rank", "artidoro/qlora qlora.py (lora_r=64)"),
)
"""All sizing defaults, for the recommender's ``assumptions``."""
