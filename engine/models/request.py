"""`POST /recommend` request body, exactly as docs/api-contract.md defines it.

Unknown keys are rejected, NaN and infinities are rejected, and every number has a sane range, so a
bad value is a 422 naming the field rather than a surprise deep in the sizing math. Checks that need
the knowledge base (an unknown model or GPU id) happen where the KB is at hand.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict

from engine.models.free_json import LIMITS, FreeJson, bounded
from engine.models.hf_config_schema import hf_config_schema

Task = Literal["inference", "pretrain", "full_finetune", "lora", "qlora"]
WeightPrecision = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"]
KvPrecision = Literal["fp16", "bf16", "fp8", "int8"]
Optimizer = Literal["adamw", "adam", "adamw_8bit", "sgd", "sgd_momentum", "adafactor"]
Os = Literal["linux", "windows", "macos"]
TrainingStack = Literal["huggingface", "megatron-lm", "torchtitan"]
ServingEngine = Literal["vllm", "sglang", "hf-static-compile", "hf-eager"]
RequestVendor = Literal["nvidia", "amd", "intel", "apple"]
RequestGpuClass = Literal["consumer", "workstation", "datacenter", "apple-silicon", "cpu"]
Parallelism = Literal[
    "ddp", "zero-1", "zero-2", "zero-3", "fsdp-full-shard", "tensor-parallel", "pipeline-parallel", "offload"
]
HardwareId = Annotated[str, Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$", max_length=96)]
GpuName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/ -]*$", min_length=1, max_length=96)]
"""a KB gpu id, or a name people use for it (engine/knowledge/names.py), read as its id"""
ModelName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/ -]*$", min_length=1, max_length=120)]


def _positive(upper: float, description: str) -> object:
    return Field(gt=0, le=upper, allow_inf_nan=False, description=description)


MAX_TOP_K = 20
"""the most recommendations one answer lists"""
MAX_PARAMS_B = 100_000
"""the largest model a request may size, billions of parameters (100 trillion)"""


def _parameters(description: str) -> object:
    """A parameter count in billions: from 1,000 parameters (smaller is not a model, and the sizing
    math would underflow) to 100 trillion."""
    return Field(ge=MIN_PARAMS_B, le=MAX_PARAMS_B, allow_inf_nan=False, description=description)


MIN_PARAMS_B = 1e-6


def _not_both(a: str, a_schema: JsonDict, b: str, b_schema: JsonDict) -> JsonDict:
    """JSON Schema for "not (`a` matches a_schema and `b` matches b_schema)"."""
    return {"not": {"required": [a, b], "properties": {a: a_schema, b: b_schema}}}


def _integral_floats_as_ints(cls: type[BaseModel], data: Any) -> Any:
    """JSON Schema counts 8.0 as an integer; strict validation would not, so integral floats in
    integer fields become ints first (8.5 stays a float and is rejected, naming the field)."""
    if not isinstance(data, dict):
        return data
    return {
        key: int(value)
        if isinstance(value, float) and value.is_integer() and key in _integer_fields(cls)
        else value
        for key, value in data.items()
    }


def _integer_fields(cls: type[BaseModel]) -> frozenset[str]:
    return frozenset(name for name, field in cls.model_fields.items() if _is_integer(field.annotation))


def _is_integer(annotation: Any) -> bool:
    """int, Annotated[int, ...], or either | None."""
    if annotation is int:
        return True
    if get_origin(annotation) is Annotated:
        return _is_integer(get_args(annotation)[0])
    args = get_args(annotation)
    return type(None) in args and any(_is_integer(arg) for arg in args if arg is not type(None))


class RequestModel(BaseModel):
    """Base of the request models: unknown keys are rejected, values are not coerced (`false` is
    not 0, "8" is not 8: what the JSON Schema says is what is accepted), instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _integral(cls, data: Any) -> Any:
        return _integral_floats_as_ints(cls, data)


# Defaults for a serving request that leaves its traffic's shape open: a chat turn, a question
# with a system prompt in and a few paragraphs out (about 190 words at OpenAI's rule of thumb of
# 3/4 of a word per token). The contract's example (500 in, 200 out) and guide G2's worked serving
# example (200-token answers) lie just below; rounding up errs towards more load, not less.
DEFAULT_INPUT_TOKENS = 512
DEFAULT_OUTPUT_TOKENS = 256


class ArchitectureIn(RequestModel):
    """Layer sizes (config.json names) for activation and KV-cache math when the model is not in
    the catalog. Every field is optional: what is absent is derived or estimated from the others
    and the parameter count, and each filled field is listed in the response's `assumptions`.
    Cross-field rules (a 422 names the field): n_heads must be a multiple of n_kv_heads (so
    n_kv_heads <= n_heads); without head_dim, hidden_size must be a multiple of n_heads; the
    parameters the given sizes imply at the least may not exceed twice the model's parameter count."""

    n_layers: Annotated[int, Field(ge=1, le=1000)] | None = Field(
        None, description="transformer layers (num_hidden_layers); absent: estimated from params_b"
    )
    hidden_size: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(
        None,
        description="model width (hidden_size); absent: n_heads x head_dim when both are given, "
        "else estimated from params_b",
    )
    head_dim: Annotated[int, Field(ge=1, le=10_000)] | None = Field(
        None,
        description="width of one attention head (may differ from hidden_size / n_heads, as in Gemma); "
        "absent: hidden_size / n_heads, which must then be a whole number",
    )
    n_heads: Annotated[int, Field(ge=1, le=10_000)] | None = Field(
        None,
        description="attention heads (num_attention_heads); without head_dim, hidden_size must be a "
        "multiple of it; absent: hidden_size / head_dim (head_dim 128 when absent too), rounded to a "
        "multiple of n_kv_heads",
    )
    n_kv_heads: Annotated[int, Field(ge=1, le=10_000)] | None = Field(
        None,
        description="key/value heads (num_key_value_heads), fewer than n_heads with grouped-query "
        "attention; n_heads must be a multiple of it; absent: n_heads (multi-head attention, which "
        "overstates a grouped-query model's KV cache)",
    )
    intermediate_size: Annotated[int, Field(ge=1, le=10_000_000)] | None = Field(
        None, description="MLP inner width (intermediate_size); absent: solved from params_b"
    )
    vocab_size: Annotated[int, Field(ge=1, le=10_000_000)] | None = Field(
        None,
        description="vocabulary size, tokens; absent: solved from params_b when intermediate_size "
        "is given, else 32,000",
    )

    # Checks between two fields sit on the later one, so a 422 names that field.
    @field_validator("n_heads")
    @classmethod
    def _whole_heads(cls, value: int | None, info: ValidationInfo) -> int | None:
        hidden, head_dim = info.data.get("hidden_size"), info.data.get("head_dim")
        if value is not None and head_dim is None and hidden is not None and hidden % value:
            raise ValueError(
                f"hidden_size ({hidden}) is not a multiple of n_heads ({value}): give head_dim "
                "when heads are not hidden_size / n_heads wide"
            )
        return value

    @field_validator("n_kv_heads")
    @classmethod
    def _grouped_query_attention(cls, value: int | None, info: ValidationInfo) -> int | None:
        heads = info.data.get("n_heads")
        if value is not None and heads is not None and heads % value:
            raise ValueError(f"n_heads ({heads}) must be a multiple of n_kv_heads ({value})")
        return value


class Serving(RequestModel):
    """Traffic an inference service must handle; sizes the serving fleet. Every field is optional:
    `{"min_tokens_per_s_per_user": 30}` alone means one user who must get 30 tokens/s."""

    requests_per_min: Annotated[float, _positive(1e9, "peak requests per minute")] | None = Field(
        None,
        description="peak requests per minute; sizes the fleet; absent: a single stream (one user), "
        "no fleet sizing",
    )
    avg_input_tokens: Annotated[int, Field(ge=0, le=10_000_000)] | None = Field(
        None, description=f"mean prompt tokens per request; absent: {DEFAULT_INPUT_TOKENS}"
    )
    avg_output_tokens: Annotated[int, Field(ge=1, le=10_000_000)] | None = Field(
        None,
        description=f"mean generated tokens per request (with requests_per_min, the token rate the "
        f"fleet must serve); absent: {DEFAULT_OUTPUT_TOKENS}",
    )
    latency_p95_s: Annotated[float, _positive(86_400, "95th-percentile latency target, seconds")] | None = (
        Field(None, description="95th-percentile latency target, seconds")
    )
    min_tokens_per_s_per_user: Annotated[float, _positive(1e6, "decode speed each user needs")] | None = (
        Field(
            None,
            description="decode speed each user (each sequence in flight) needs, tokens per second; "
            "options slower than this are rejected",
        )
    )
    engine: ServingEngine | None = Field(
        None,
        description="the serving software, which sets decode and prefill speed and the share of GPU memory "
        "it takes: vllm, sglang, hf-static-compile (Hugging Face generate, static cache, torch.compile), "
        "hf-eager; absent: vllm",
    )
    sequences_per_request: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        None,
        description="encoders and embedding models: inputs per request, each of avg_input_tokens (a batch "
        "embedding call, a reranker's query-document pairs): each is read as its own sequence, all of a "
        "request's together within the latency target; absent: 1. A text generator's answer does not use "
        "it, and warns so",
    )
    corpus_documents: Annotated[int, Field(ge=1, le=10**13)] | None = Field(
        None,
        description="encoders and embedding models: documents of avg_input_tokens each to embed once; "
        "gives the hours each option takes. Without requests_per_min it is a run: each rental is costed "
        "for those hours, and job_hours, when given, is its deadline",
    )


def _size(upper: int, description: str) -> Any:
    return Field(None, ge=1, le=upper, description=description)


def _whole(value: Any) -> Any:
    """8.0 as 8 (JSON Schema counts it an integer); anything else as it is, for strict validation."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


LayerIndex = Annotated[int, Field(ge=0, le=1000), BeforeValidator(_whole)]
Epsilon = Annotated[float, Field(allow_inf_nan=False)]


class HfConfigKeys(RequestModel):
    """The keys of a Hugging Face `config.json` the sizing reads, under their own names, at one level
    (a config, or the `text_config` inside one); any other key is ignored, given it is JSON at most
    32 levels deep and 10,000 values large (engine/models/free_json.py)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, FreeJson] = Field(init=False)  # each ignored key, bounded

    model_type: Annotated[str, Field(max_length=100)] | None = Field(
        None, description="e.g. llama, qwen3, qwen3_moe, mixtral, gemma3_text, deepseek_v3, gpt_oss"
    )
    num_hidden_layers: int | None = _size(1000, "transformer layers")
    hidden_size: int | None = _size(1_000_000, "model width")
    num_attention_heads: int | None = _size(
        10_000, "attention heads; without head_dim, hidden_size must be a multiple of it"
    )
    num_key_value_heads: int | None = _size(
        10_000, "key/value heads; num_attention_heads must be a multiple of it (absent: num_attention_heads)"
    )
    head_dim: int | None = _size(10_000, "width of one head (absent: hidden_size / heads)")
    intermediate_size: int | None = _size(
        10_000_000,
        "MLP width (Llama 4: of each expert); absent: 4 x hidden_size for a two-matrix MLP, else "
        "8/3 x hidden_size rounded up to a multiple of 256 (Llama's), listed in `assumptions`",
    )
    intermediate_size_mlp: int | None = _size(10_000_000, "Llama 4: dense MLP width")
    moe_intermediate_size: int | None = _size(10_000_000, "MoE: width of each expert")
    vocab_size: int | None = _size(10_000_000, "vocabulary size")
    max_position_embeddings: int | None = _size(
        100_000_000,
        "longest context, tokens; absent with learned positions (BERT, GPT-2, OPT): the size of the "
        "table transformers' config class defaults to, listed in `assumptions`",
    )
    tie_word_embeddings: bool | None = Field(None, description="output head shares the embedding")
    attention_bias: bool | None = Field(None, description="biases on the attention projections")
    num_local_experts: int | None = _size(100_000, "MoE experts (Mixtral, gpt-oss, Llama 4)")
    num_experts: int | None = _size(100_000, "MoE experts (Qwen MoE)")
    n_routed_experts: int | None = _size(100_000, "MoE routed experts (DeepSeek)")
    num_experts_per_tok: int | None = _size(
        100_000, "experts each token is routed to; an MoE needs it, at most its experts"
    )
    n_shared_experts: Annotated[int, Field(ge=0, le=1000)] | None = Field(None, description="shared experts")
    first_k_dense_replace: Annotated[int, Field(ge=0, le=1000)] | None = Field(
        None, description="DeepSeek: leading layers with a dense MLP"
    )
    interleave_moe_layer_step: int | None = _size(1000, "Llama 4: every n-th layer is MoE")
    mlp_only_layers: list[LayerIndex] | None = Field(None, description="Qwen MoE: layers with a dense MLP")
    decoder_sparse_step: int | None = _size(1000, "Qwen MoE: every n-th layer is MoE")
    kv_lora_rank: int | None = _size(
        100_000, "MLA: cached key-value latent; needs qk_rope_head_dim, qk_nope_head_dim, v_head_dim"
    )
    q_lora_rank: int | None = _size(100_000, "MLA: query latent")
    qk_rope_head_dim: int | None = _size(10_000, "MLA: rotary part of a head")
    qk_nope_head_dim: int | None = _size(10_000, "MLA: non-rotary part of a head")
    v_head_dim: int | None = _size(10_000, "MLA: value head")
    sliding_window: int | None = _size(100_000_000, "local attention window, tokens")
    use_sliding_window: bool | None = Field(None, description="Qwen: whether the window is used at all")
    sliding_window_pattern: int | None = _size(1000, "Gemma 3: every n-th layer is global")
    layer_types: list[Annotated[str, Field(max_length=50)]] | None = Field(
        None,
        description="per layer: sliding_attention | full_attention | linear_attention (newer configs; a "
        "linear-attention layer keeps a fixed-size state instead of a KV cache)",
    )
    full_attention_interval: int | None = _size(
        1000, "Qwen3-Next, Qwen3.5: every n-th layer is full attention, the others Gated DeltaNet (linear)"
    )
    linear_num_key_heads: int | None = _size(10_000, "Gated DeltaNet: key heads of a linear-attention layer")
    linear_num_value_heads: int | None = _size(10_000, "Gated DeltaNet: value heads (each keeps a state)")
    linear_key_head_dim: int | None = _size(10_000, "Gated DeltaNet: width of a key head")
    linear_value_head_dim: int | None = _size(10_000, "Gated DeltaNet: width of a value head")
    linear_conv_kernel_dim: int | None = _size(100, "Gated DeltaNet: the short convolution's length")
    attn_output_gate: bool | None = Field(
        None, description="Qwen3.5: gated attention, a query projection twice as wide (absent: Qwen3-Next's)"
    )
    mamba_ssm_dtype: Annotated[str, Field(max_length=30)] | None = Field(
        None, description="the recurrent state's dtype (float32: 4 bytes; absent: 16-bit)"
    )
    rms_norm_eps: Epsilon | None = Field(None, description="present: RMSNorm")
    layer_norm_eps: Epsilon | None = Field(None, description="present: LayerNorm")
    layer_norm_epsilon: Epsilon | None = Field(None, description="present: LayerNorm")
    hidden_act: Annotated[str, Field(max_length=50)] | None = Field(
        None, description="the MLP's activation (read for nothing: the MLP's kind follows model_type)"
    )
    torch_dtype: Annotated[str, Field(max_length=30)] | None = Field(
        None, description="the checkpoint's dtype: bfloat16, float16, float32"
    )
    quantization_config: Annotated[dict[str, Any], AfterValidator(bounded)] | None = Field(
        None, description=f"quant_method fp8 or mxfp4 gives the checkpoint's precision; {LIMITS}"
    )


class HfConfig(HfConfigKeys):
    """A Hugging Face `config.json`, pasted (nothing is downloaded): the keys above, or for a
    vision-language model its language model's under `text_config`. What the sizing needs is in the
    JSON Schema (engine/models/hf_config_schema.py); what relates two values, in the descriptions."""

    model_config = ConfigDict(json_schema_extra=hf_config_schema())

    text_config: HfConfigKeys | None = Field(
        None,
        description="vision-language models: the language model's config, read when the config itself "
        "gives no num_hidden_layers",
    )


class Workload(RequestModel):
    """The job to size: what it does, the model, and how it runs."""

    # What the validator below checks, stated in the JSON Schema too, so a schema-driven client
    # (or tester) knows it: `model` or `params_b`; `serving` only with task inference.
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["model"], "properties": {"model": {"type": "string"}}},
                {"required": ["params_b"], "properties": {"params_b": {"type": "number"}}},
                {"required": ["hf_config"], "properties": {"hf_config": {"type": "object"}}},
            ],
            "not": {
                "required": ["serving"],
                "properties": {"serving": {"type": "object"}, "task": {"not": {"const": "inference"}}},
            },
            # a pasted config is the architecture: not with a KB model or a hand-written one
            "allOf": [
                {
                    "not": {
                        "required": ["model", "hf_config"],
                        "properties": {"model": {"type": "string"}, "hf_config": {"type": "object"}},
                    }
                },
                {
                    "not": {
                        "required": ["architecture", "hf_config"],
                        "properties": {"architecture": {"type": "object"}, "hf_config": {"type": "object"}},
                    }
                },
            ],
        }
    )

    task: Task = Field(description="inference | pretrain | full_finetune | lora | qlora")
    model: ModelName | None = Field(
        None,
        description="KB model id, or a name people use for it: a Hugging Face repo id "
        "(`meta-llama/Llama-3.1-8B-Instruct`), an alias (`llama3.1:8b`); case and separators aside. "
        "Fills params and architecture; an unknown name is a 422 naming the closest known ones",
    )
    params_b: Annotated[float, _parameters("total parameters, billions")] | None = Field(
        None, description="total parameters, billions; required unless `model` is given"
    )
    active_params_b: Annotated[float, _parameters("MoE: parameters used per token, billions")] | None = Field(
        None, description="MoE: parameters used per token, billions"
    )
    architecture: ArchitectureIn | None = Field(
        None,
        description="layer sizes for activation and KV-cache math when the model is not in the KB; "
        "any subset: the rest is derived or estimated and listed in `assumptions`",
    )
    hf_config: HfConfig | None = Field(
        None,
        description="the model's Hugging Face config.json, pasted: gives its architecture and, without "
        "params_b, its parameter count; not with `model` or `architecture`",
    )
    precision: WeightPrecision | None = Field(
        None, description="for training tasks fp16/bf16 mean mixed precision; absent: the engine chooses"
    )
    kv_cache_precision: KvPrecision | None = Field(
        None, description="KV-cache format (inference); absent: 16-bit, or fp32 with fp32 weights"
    )
    optimizer: Optimizer = Field(
        "adamw",
        description="training only: the optimizer whose states are sized; state bytes per parameter "
        "beside the fp32 master copy: adamw/adam 8, adamw_8bit 2, sgd_momentum 4 (one momentum buffer), "
        "sgd 0, adafactor up to 4",
    )
    batch_size: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        1, description="sequences in flight per step (inference: concurrent sequences)"
    )
    seq_len: Annotated[int, Field(ge=1, le=10_000_000)] = Field(
        2048, description="tokens per sequence (prompt + generated)"
    )
    gradient_checkpointing: bool | None = Field(
        None, description="training: recompute activations to save memory; absent: the engine decides"
    )
    lora_rank: Annotated[int, Field(ge=1, le=4096)] = Field(
        16, description="LoRA adapter rank (lora/qlora only)"
    )
    fused_loss: bool = Field(
        False,
        description="training: the loss is a fused linear cross-entropy (e.g. Liger Kernel) that never "
        "holds the whole batch's logits; absent: the standard loss, whose fp32 logits and their "
        "gradient are sized",
    )
    training_stack: TrainingStack = Field(
        "huggingface",
        description="training: the software the job runs on, which sets the share of peak FLOPS it reaches: "
        "huggingface (a Hugging Face Trainer-class eager PyTorch stack), megatron-lm or torchtitan",
    )
    training_tokens_b: Annotated[float, _positive(1e6, "tokens to train on, billions")] | None = Field(
        None, description="tokens to train on, billions; gives training hours, GPU-hours and run cost"
    )
    job_hours: Annotated[float, _positive(1e6, "the job's wall-clock hours")] | None = Field(
        None,
        description="wall-clock hours the job may take (slower options are rejected); without "
        "training_tokens_b, the hours each rental is costed for",
    )
    serving: Serving | None = Field(None, description="inference only: the traffic to serve")

    @model_validator(mode="after")
    def _sized(self) -> Workload:
        if self.model is None and self.params_b is None and self.hf_config is None:
            raise ValueError("give `model` (a KB model id), `params_b` or `hf_config`")
        return self

    # Checks between two fields sit on the later one, so a 422 names that field.
    @field_validator("active_params_b")
    @classmethod
    def _active_within_total(cls, value: float | None, info: ValidationInfo) -> float | None:
        total = info.data.get("params_b")
        if value is not None and total is not None and value > total:
            raise ValueError(f"active_params_b cannot exceed params_b ({total:g})")
        return value

    @field_validator("hf_config")
    @classmethod
    def _one_architecture(cls, value: HfConfig | None, info: ValidationInfo) -> HfConfig | None:
        if value is not None and info.data.get("model") is not None:
            raise ValueError("give `model` or `hf_config`, not both")
        if value is not None and info.data.get("architecture") is not None:
            raise ValueError("give `architecture` or `hf_config`, not both")
        return value

    @field_validator("serving")
    @classmethod
    def _serving_is_inference(cls, value: Serving | None, info: ValidationInfo) -> Serving | None:
        if value is not None and info.data.get("task", "inference") != "inference":
            raise ValueError("`serving` applies to task inference only")
        return value


class HardwareCount(RequestModel):
    """A number of GPUs of one kind."""

    gpu: GpuName = Field(
        description="KB gpu id, or a name people use for it: an alias (`RTX 4090`, `4090`), case and "
        "separators aside (GET /gpus lists the ids and their aliases)"
    )
    count: Annotated[int, Field(ge=1, le=100_000)] = Field(1, description="how many of these GPUs")


class OwnedHardware(HardwareCount):
    """GPUs the user already has, and optionally the RAM of the machines they are in."""

    host_ram_gib: Annotated[float, Field(gt=0, le=65_536, allow_inf_nan=False)] | None = Field(
        None,
        description="the RAM of each machine these GPUs are in, GiB as the OS reports it; plans that "
        "offload to host memory and need more are ruled out (absent: the answer states what they need)",
    )


class ExistingHost(RequestModel):
    """A desktop or server the user already owns, that bought PCIe cards can go into."""

    free_pcie_slots: Annotated[int, Field(ge=1, le=8)] = Field(
        1, description="free PCIe x16 slots, spaced for the cards' coolers"
    )
    psu_watts: Annotated[int, Field(ge=200, le=5000)] | None = Field(
        None,
        description="the power supply's rating, watts: cards the machine cannot power (with the rest "
        "of it, at most 85% of the rating) are not proposed for it",
    )


class Constraints(RequestModel):
    """What the hardware must respect, and the circumstances it will run in."""

    # The validator's exclusions, stated in the JSON Schema too (gpu_count <= max_gpus cannot be).
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                _not_both("utilization_pct", {"type": "number"}, "hours_per_week", {"type": "number"}),
                _not_both("on_prem_only", {"const": True}, "acquisition", {"const": "rent"}),
                _not_both("free_pcie_slots", {"type": "integer"}, "existing_host", {"type": "object"}),
            ]
        }
    )

    budget_usd: Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)] | None = Field(
        None,
        description="US dollars, what the job costs you: the whole system's capex (and a training run's "
        "electricity) when buying; the run's rental, or a month of serving, when renting",
    )
    max_price_age_days: Annotated[int, Field(ge=1, le=36_500)] = Field(
        90,
        description="prices seen longer ago than this many days get a warning in the answer (prices "
        "move: cloud rates within weeks, GPU street prices within months)",
    )
    on_prem_only: bool = Field(False, description="data may not leave owned hardware: no cloud")
    os: Os | None = Field(None, description="the user's operating system")
    acquisition: Literal["buy", "rent", "any"] = Field("any", description="buy, rent, or either")
    utilization_pct: Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)] | None = Field(
        None, description="expected busy share of the horizon, percent"
    )
    hours_per_week: Annotated[float, Field(gt=0, le=168, allow_inf_nan=False)] | None = Field(
        None, description="expected busy hours per week; alternative to utilization_pct"
    )
    horizon_months: Annotated[float, Field(ge=0.1, le=240, allow_inf_nan=False)] = Field(
        36, description="depreciation and comparison horizon, months (at least 0.1: about 3 days)"
    )
    interruptible: bool = Field(False, description="the job checkpoints and tolerates spot preemption")
    providers: list[HardwareId] | None = Field(
        None, min_length=1, max_length=100, description="allow-list of KB provider ids"
    )
    vendors: list[RequestVendor] | None = Field(None, min_length=1, description="allow-list of GPU vendors")
    gpu_classes: list[RequestGpuClass] | None = Field(
        None,
        min_length=1,
        description="allow-list of GPU classes: consumer (GeForce, Radeon RX), workstation (RTX PRO, Radeon "
        'PRO), datacenter, apple-silicon, cpu; e.g. ["consumer"] for consumer cards only',
    )
    max_gpus: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        None, description="cap on GPUs in one recommendation"
    )
    gpu_count: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        None, description="exactly this many GPUs (a fixed cluster or allocation)"
    )
    parallelism: list[Parallelism] | None = Field(
        None, min_length=1, description="multi-GPU strategies already chosen, e.g. zero-3 or tensor-parallel"
    )
    availability_target_pct: Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)] | None = Field(
        None, description="serving availability target, percent, e.g. 99.9 (99 or more: no spot capacity)"
    )
    existing_hardware: list[OwnedHardware] = Field(
        default_factory=list, max_length=100, description="GPUs already owned (no capex)"
    )
    target_hardware: HardwareCount | None = Field(
        None, description='hardware to check ("will it run on this?"); answered in target_fit'
    )
    free_pcie_slots: Annotated[int, Field(ge=1, le=8)] | None = Field(
        None,
        description="free PCIe x16 slots in a desktop or server you already own, with the power and "
        "cooling for the cards: bought PCIe cards, up to this many, are priced without a host",
    )
    existing_host: ExistingHost | None = Field(
        None,
        description="a machine you own for bought PCIe cards, with its free slots and power supply: "
        "bought cards that fit it are priced without a host (`free_pcie_slots` with its power stated)",
    )
    allow_quantization: bool = Field(
        True, description="false: keep the stated precision for weights and KV cache"
    )
    electricity_usd_per_kwh: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] = Field(
        0.12, description="electricity price, US dollars per kWh (power cost of owned hardware)"
    )
    deployment: Literal["workstation", "dense_rack"] | None = Field(
        None, description="where owned hardware will run: a workstation or a dense server rack"
    )

    # Checks between two fields sit on the later one, so a 422 names that field.
    @field_validator("acquisition")
    @classmethod
    def _private_is_not_rented(cls, value: str, info: ValidationInfo) -> str:
        if value == "rent" and info.data.get("on_prem_only"):
            raise ValueError("on_prem_only rules out acquisition: rent")
        return value

    @field_validator("hours_per_week")
    @classmethod
    def _one_measure_of_use(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and info.data.get("utilization_pct") is not None:
            raise ValueError("give utilization_pct or hours_per_week, not both")
        return value

    @field_validator("existing_host")
    @classmethod
    def _one_count_of_slots(cls, value: ExistingHost | None, info: ValidationInfo) -> ExistingHost | None:
        if value is not None and info.data.get("free_pcie_slots") is not None:
            raise ValueError(
                "give free_pcie_slots or existing_host (which has its own free_pcie_slots), not both"
            )
        return value

    @property
    def host_slots(self) -> int:
        """Free PCIe x16 slots in a machine the user owns (0 when none is stated)."""
        if self.existing_host is not None:
            return self.existing_host.free_pcie_slots
        return self.free_pcie_slots or 0

    @field_validator("gpu_count")
    @classmethod
    def _count_within_cap(cls, value: int | None, info: ValidationInfo) -> int | None:
        cap = info.data.get("max_gpus")
        if value is not None and cap is not None and value > cap:
            raise ValueError(f"gpu_count cannot exceed max_gpus ({cap})")
        return value


class RecommendRequest(RequestModel):
    """Body of `POST /recommend`: the workload, the constraints, and what to optimize for."""

    workload: Workload = Field(description="the job to run")
    constraints: Constraints = Field(
        default_factory=Constraints,
        description="budget, OS, acquisition, allow-lists, owned and target hardware",
    )
    objective: Literal["cheapest", "fastest", "balanced"] = Field(
        "balanced", description="ranking objective: cheapest, fastest, or balanced (value for money)"
    )
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] = Field(5, description="most recommendations to return")
