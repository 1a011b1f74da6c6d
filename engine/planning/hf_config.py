"""A Hugging Face `config.json` as the knowledge base's architecture fields (engine/models/kb.py
`Architecture`), so a model the KB does not know is sized exactly from its own config.

Only the keys the sizing reads are used (`FromHfConfig.used` lists them); where a config leaves a
detail to the modelling code (a gated MLP, RMSNorm, a Llama 4 shared expert, Gemma's four norms per
layer) it is taken from `model_type`, and every such choice is stated in `FromHfConfig.notes`.
Names follow the configs of transformers' model classes (`LlamaConfig`, `Qwen3MoeConfig`,
`DeepseekV3Config`, `Gemma3TextConfig`, `Llama4TextConfig`, `GptOssConfig`, `BertConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.models.request import MAX_PARAMS_B, HfConfig, HfConfigKeys
from engine.sizing import TransformerShape, active_params, shape_from_architecture, total_params
from engine.sizing.vision_encoder import qwen_vl_vision_params

ENCODERS = frozenset({"bert", "roberta", "xlm-roberta", "distilbert", "electra", "mpnet", "camembert"})
"""post-LN encoders with learned positions (BERT's layout)"""
DENSE_MLP = ENCODERS | {"gpt2", "opt", "gpt_neox", "gptj", "phi", "bloom", "falcon", "starcoder2"}
"""two-matrix MLPs; every other model type is taken as gated (SwiGLU/GeGLU), as decoders since Llama are"""
LAYER_NORM = DENSE_MLP
"""LayerNorm when the config gives no *_norm_eps key"""
LEARNED_POSITIONS = {**dict.fromkeys(ENCODERS, 512), "gpt2": 1024, "opt": 2048}
"""model types with a learned position table, and the rows it has when a config leaves
max_position_embeddings out: the default of the model's transformers config class (BertConfig,
RobertaConfig, XLMRobertaConfig, DistilBertConfig, ElectraConfig, MPNetConfig, CamembertConfig:
512; GPT2Config.n_positions: 1024; OPTConfig: 2048), which is what transformers loads such a file with"""
QWEN_HYBRIDS = frozenset({"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"})
"""Gated DeltaNet hybrids whose attention layers are gated (transformers' `Qwen3NextAttention`: `q_proj`
is twice the query width); Qwen3.5's configs say so in `attn_output_gate`, Qwen3-Next's do not"""
QK_NORM = frozenset({"qwen3", "qwen3_moe", "gemma3", "gemma3_text", "olmo2", *QWEN_HYBRIDS})
"""an RMSNorm over each head's queries and keys (`q_norm`, `k_norm` in the modelling code)"""
FOUR_NORMS = frozenset({"gemma2", "gemma3", "gemma3_text"})
"""pre and post norms around attention and the MLP"""
FP16_OVERFLOWS = frozenset({"gemma3", "gemma3_text", "gemma3n", "gpt_oss"})
"""model types whose activations exceed fp16's range (unsloth_zoo FORCE_FLOAT32; transformers issue 36822),
as the KB's `fp16_overflows` says of its Gemma 3 and gpt-oss entries"""
SHARED_EXPERT = frozenset({"llama4", "llama4_text"})
"""one always-on expert per MoE layer that the config does not count (Llama4TextMoe.shared_expert)"""
TIED_BY_DEFAULT = ENCODERS | {"gpt2", "opt", "gemma", "gemma2", "gemma3", "gemma3_text"}
"""model types whose config class ties the output head to the embeddings unless told otherwise
(transformers' PretrainedConfig default; LlamaConfig, MistralConfig, Qwen2Config and most decoders
default to untied)"""
QKV_BIAS_ONLY = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})
"""biases on q, k and v but not on the output projection"""
PRECISIONS = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
QUANTIZED = {"fp8": "fp8", "mxfp4": "fp4"}


@dataclass(frozen=True)
class FromHfConfig:
    architecture: dict[str, object]
    """KB `Architecture` fields, for `sizing.shape_from_architecture`"""
    kind: str
    """decoder | encoder"""
    used: tuple[str, ...]
    """the config keys read, as written (`text_config.` before a nested one)"""
    notes: tuple[str, ...] = field(default=())
    """what the config did not say and was taken from its model_type"""
    native_precision: str | None = None
    context_length: int | None = None
    fp16_overflows: bool = False
    """the model type is one whose activations exceed fp16's range (`FP16_OVERFLOWS`)"""
    cautions: tuple[str, ...] = ()
    """what the config describes that the sizing cannot size (`_unsized_mixers`), for the warnings"""


class _Reader:
    """Reads a config's keys (the language model's, under `text_config`, for a vision-language one)
    and records the ones read."""

    def __init__(self, config: HfConfig) -> None:
        nested = config.num_hidden_layers is None and config.text_config is not None
        self.c = config.text_config if nested and config.text_config is not None else config
        self.prefix = "text_config." if nested else ""
        self.used: list[str] = []

    def take(self, name: str) -> object:
        value = getattr(self.c, name)
        if value is not None:
            self.used.append(self.prefix + name)
        return value

    def need(self, name: str) -> int:
        value = self.take(name)
        if not isinstance(value, int):
            raise ValueError(f"hf_config lacks {self.prefix}{name}, which the sizing needs")
        return value


@dataclass(frozen=True)
class SizedConfig:
    read: FromHfConfig
    shape: TransformerShape
    params: int
    active_params: int


def sized_config(config: HfConfig) -> SizedConfig:
    """The config's architecture as a shape with its parameter counts; ValueError naming the key
    that is missing or contradicts another, or when the model is larger than a request may size."""
    read = from_hf_config(config)
    shape = shape_from_architecture(read.architecture, kind=read.kind)
    params = total_params(shape)
    if params / 1e9 > MAX_PARAMS_B:
        raise ValueError(
            f"hf_config describes {params / 1e12:,.0f}T parameters, more than {MAX_PARAMS_B / 1e3:g}T"
        )
    return SizedConfig(read, shape, params, active_params(shape))


def from_hf_config(config: HfConfig) -> FromHfConfig:
    """The architecture a config describes; ValueError naming the missing or contradictory key."""
    r = _Reader(config)
    c, take, need, used, prefix = r.c, r.take, r.need, r.used, r.prefix
    notes: list[str] = []

    kind_name = str(c.model_type or config.model_type or "")
    if kind_name:
        used.append((prefix if c.model_type else "") + "model_type")
    layers, hidden, heads = need("num_hidden_layers"), need("hidden_size"), need("num_attention_heads")
    vocab = need("vocab_size")
    kv_heads = take("num_key_value_heads")
    if kv_heads is None:
        kv_heads = heads
        notes.append("num_key_value_heads absent: multi-head attention (as many KV heads as heads)")
    arch: dict[str, object] = {"n_layers": layers, "hidden_size": hidden, "n_heads": heads}
    _attention(r, arch, heads, int(str(kv_heads)), hidden)
    _mlp(r, arch, layers, kind_name, notes)
    encoder = kind_name in ENCODERS
    eps_rms, eps_ln = take("rms_norm_eps"), take("layer_norm_eps") or take("layer_norm_epsilon")
    arch["norm"] = (
        "rmsnorm"
        if eps_rms is not None
        else "layernorm"
        if eps_ln is not None or kind_name in LAYER_NORM
        else "rmsnorm"
    )
    arch["vocab_size"] = vocab
    positions = _positions(r, arch, kind_name, notes)
    _tied_embeddings(r, config, arch, kind_name, notes)
    _layer_extras(r, arch, kind_name, encoder)
    _window(r, arch, layers, kind_name)
    _recurrent(r, arch, layers, notes)
    vision = _vision(config, arch, used, notes)
    return FromHfConfig(
        architecture=arch,
        kind="encoder" if encoder else "decoder",
        used=tuple(dict.fromkeys(used)),
        notes=tuple(notes),
        native_precision=_precision(config, c),
        context_length=positions if isinstance(positions, int) else None,
        fp16_overflows=kind_name in FP16_OVERFLOWS,
        cautions=_unsized_mixers(r) + vision,
    )


def _positions(r: _Reader, arch: dict[str, object], kind_name: str, notes: list[str]) -> object:
    """The position table's size and kind (learned for BERT-class encoders, else rotary); returns
    what the config states, for the model's context length."""
    positions = r.take("max_position_embeddings")
    if kind_name in LEARNED_POSITIONS and not isinstance(positions, int):
        positions = LEARNED_POSITIONS[kind_name]
        notes.append(
            f"max_position_embeddings absent: {positions}, the size of {kind_name}'s learned position "
            "table in its transformers config class"
        )
    arch["max_position_embeddings"] = positions if isinstance(positions, int) else 2048
    arch["position_embedding"] = "learned" if kind_name in LEARNED_POSITIONS else "rope"
    return positions


def _tied_embeddings(
    r: _Reader, config: HfConfig, arch: dict[str, object], kind_name: str, notes: list[str]
) -> None:
    """Whether the output head shares the embedding matrix: stated, else the model type's default."""
    tied = r.take("tie_word_embeddings")
    if tied is None and r.c is not config:
        tied = config.tie_word_embeddings
    if tied is None:
        tied = kind_name in TIED_BY_DEFAULT
        notes.append(
            f"tie_word_embeddings absent: taken as {str(tied).lower()}, the {kind_name or 'usual'} default"
        )
    arch["tie_word_embeddings"] = bool(tied)


def _layer_extras(r: _Reader, arch: dict[str, object], kind_name: str, encoder: bool) -> None:
    """Biases, an encoder's token types and pooler, QK norms, a fourth norm per layer and soft-capped
    logits."""
    bias = r.take("attention_bias")
    if kind_name in QKV_BIAS_ONLY:
        arch["attention_bias"], arch["attention_output_bias"] = True, False
    elif encoder:
        arch["attention_bias"], arch["mlp_bias"] = True, True
    elif bias:
        arch["attention_bias"] = True
    if encoder:
        extra = r.c.model_extra or {}
        types = extra.get("type_vocab_size")
        arch["type_vocab_size"] = types if isinstance(types, int) and 0 <= types <= 1000 else 0
        arch["pooler"] = kind_name in ("bert", "roberta", "xlm-roberta", "camembert", "electra")
    if kind_name in QK_NORM:
        arch["qk_norm"] = True
    gate = r.take("attn_output_gate")
    if gate is True or (gate is None and kind_name in QWEN_HYBRIDS):
        arch["attention_output_gate"] = True
    if kind_name in FOUR_NORMS:
        arch["norms_per_layer"] = 4
    cap = (r.c.model_extra or {}).get("final_logit_softcapping")  # Gemma 2: 30.0; its memory in training
    if isinstance(cap, int | float) and not isinstance(cap, bool) and 0 < cap < 1e6:
        arch["final_logit_softcapping"] = float(cap)
        r.used.append(r.prefix + "final_logit_softcapping")


def _attention(r: _Reader, arch: dict[str, object], heads: int, kv_heads: int, hidden: int) -> None:
    c, take = r.c, r.take
    if take("kv_lora_rank") is not None:
        rope, nope, value = take("qk_rope_head_dim"), take("qk_nope_head_dim"), take("v_head_dim")
        if not (isinstance(rope, int) and isinstance(nope, int) and isinstance(value, int)):
            raise ValueError(
                "hf_config: kv_lora_rank needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim"
            )
        arch.update(
            n_kv_heads=heads,
            head_dim=nope + rope,
            kv_lora_rank=c.kv_lora_rank,
            qk_rope_head_dim=rope,
            qk_nope_head_dim=nope,
            v_head_dim=value,
        )
        if take("q_lora_rank") is not None:
            arch["q_lora_rank"] = c.q_lora_rank
        return
    head_dim = take("head_dim")
    if head_dim is None:
        if hidden % heads:
            raise ValueError(
                f"hf_config: hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads}); "
                "give head_dim"
            )
        head_dim = hidden // heads
    if heads % kv_heads:
        raise ValueError(
            f"hf_config: num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads})"
        )
    arch.update(n_kv_heads=kv_heads, head_dim=head_dim)


def _mlp(r: _Reader, arch: dict[str, object], layers: int, kind: str, notes: list[str]) -> None:
    take = r.take
    arch["mlp"] = "dense" if kind in DENSE_MLP else "gated"
    experts = take("num_local_experts") or take("num_experts") or take("n_routed_experts")
    inner, dense_inner, expert_inner = take("intermediate_size"), take("intermediate_size_mlp"), None
    if isinstance(experts, int) and experts > 1:
        per_token = take("num_experts_per_tok")
        if not isinstance(per_token, int):
            raise ValueError("hf_config: a mixture of experts needs num_experts_per_tok")
        if per_token > experts:
            raise ValueError(f"hf_config: num_experts_per_tok ({per_token}) exceeds the experts ({experts})")
        arch.update(n_experts=experts, experts_per_token=per_token)
        expert_inner = take("moe_intermediate_size")
        if dense_inner is not None:  # Llama 4: intermediate_size is the expert's, _mlp the dense layers'
            expert_inner, inner = inner, dense_inner
        if expert_inner is not None:
            arch["moe_intermediate_size"] = expert_inner
        moe_layers = _moe_layers(r, layers)
        if moe_layers != layers:
            arch["moe_layers"] = moe_layers
        shared = take("n_shared_experts")
        if shared is None and kind in SHARED_EXPERT:
            shared = 1
            notes.append("Llama 4: one shared expert per MoE layer, as its modelling code builds it")
        if shared:
            arch["n_shared_experts"] = shared
        if inner is None:
            inner = expert_inner
    elif arch["mlp"] == "gated" and kind and kind not in DENSE_MLP and not _known(kind):
        notes.append(f"model_type {kind!r}: a gated (SwiGLU) MLP is assumed")
    hidden = arch["hidden_size"]
    if not isinstance(inner, int) and isinstance(hidden, int):
        dense = arch["mlp"] == "dense"
        inner = default_intermediate_size(hidden, dense=dense)
        how = "4 x hidden_size" if dense else "8/3 x hidden_size rounded up to a multiple of 256 (Llama's)"
        notes.append(f"intermediate_size absent: {inner}, {how}")
    arch["intermediate_size"] = inner


GATED_MLP_MULTIPLE = 256
"""Llama's gated MLP width is 8/3 of the model's, rounded up to a multiple of this (Meta's reference
model.py, FeedForward, `multiple_of=256`): 11,008 for Llama 2 7B's 4,096, also LlamaConfig's default"""


def default_intermediate_size(hidden: int, *, dense: bool) -> int:
    """The MLP width a config leaves out: 4 h for a two-matrix MLP (Vaswani et al. 2017, Sec. 3.3,
    d_ff = 4 d_model; GPT2Config.n_inner None means 4 n_embd), else SwiGLU's 2/3 of that (Shazeer
    2020, arXiv 2002.05202, Sec. 2), rounded up as Llama rounds it."""
    if dense:
        return 4 * hidden
    return -(-int(2 * 4 * hidden / 3) // GATED_MLP_MULTIPLE) * GATED_MLP_MULTIPLE


def _moe_layers(r: _Reader, layers: int) -> int:
    c, take = r.c, r.take
    first_dense = take("first_k_dense_replace")
    if isinstance(first_dense, int):
        return max(1, layers - first_dense)
    step = take("interleave_moe_layer_step")
    if isinstance(step, int):
        return max(1, sum(1 for i in range(layers) if (i + 1) % step == 0))
    dense = set(c.mlp_only_layers or ())
    if dense:
        take("mlp_only_layers")
    sparse = take("decoder_sparse_step")
    every = sparse if isinstance(sparse, int) else 1
    return max(1, sum(1 for i in range(layers) if i not in dense and (i + 1) % every == 0))


def _window(r: _Reader, arch: dict[str, object], layers: int, kind: str) -> None:
    take = r.take
    window = take("sliding_window")
    if not isinstance(window, int):
        return
    types = take("layer_types")
    if isinstance(types, list) and types:
        local = sum(1 for t in types[:layers] if t == "sliding_attention")
    elif kind.startswith("gemma3"):
        pattern = take("sliding_window_pattern")
        every = pattern if isinstance(pattern, int) else 6  # Gemma 3: five local layers per global one
        local = layers - layers // every
    elif kind == "gemma2":
        local = (layers + 1) // 2  # every other layer, from the first
    elif take("use_sliding_window") is False:
        return
    else:
        local = layers
    if local:
        arch["sliding_window"] = window
        if local != layers:
            arch["sliding_window_layers"] = local


STATE_LAYER_TYPES = frozenset({"linear_attention"})
"""`layer_types` entries whose layers keep a recurrent state rather than a KV cache"""


def _recurrent(r: _Reader, arch: dict[str, object], layers: int, notes: list[str]) -> None:
    """The layers that keep a fixed-size state in place of a KV cache (Qwen3-Next and Qwen3.5's Gated
    DeltaNet: `layer_types` linear_attention, or all but every `full_attention_interval`-th layer) with
    the head counts and widths that size the state (`linear_attention`, the KB's form:
    engine/sizing/recurrent_state.py), its dtype `mamba_ssm_dtype`."""
    take = r.take
    types = take("layer_types")
    interval = take("full_attention_interval")
    if isinstance(types, list) and types:
        state_layers = sum(1 for t in types[:layers] if t in STATE_LAYER_TYPES)
    elif isinstance(interval, int):
        state_layers = layers - layers // interval
    else:
        return
    if not state_layers:
        return
    names = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim")
    dims = [take(name) for name in names]
    if not all(isinstance(v, int) for v in dims):
        arch["state_layers"] = state_layers
        notes.append(
            f"{state_layers} linear-attention layers keep no KV cache; without {', '.join(names)} their "
            "state is not sized"
        )
        return
    key_heads, value_heads, key_dim, value_dim = (int(str(v)) for v in dims)
    kernel = take("linear_conv_kernel_dim")
    arch["linear_attention"] = {
        "layers": state_layers,
        "key_heads": key_heads,
        "value_heads": value_heads,
        "key_head_dim": key_dim,
        "value_head_dim": value_dim,
        **({"conv_kernel": kernel} if isinstance(kernel, int) else {}),  # absent: the shape's default
        "state_dtype": "fp32" if take("mamba_ssm_dtype") == "float32" else "bf16",
    }


UNSIZED_MIXER_KEYS = ("hybrid_override_pattern", "layers_block_type", "attn_layer_period", "attn_type_list")
"""keys of configs whose layers are not all attention nor Gated DeltaNet: Nemotron-H's pattern of Mamba,
MLP and attention blocks, Jamba's and Granite 4's Mamba layers, MiniMax's lightning attention"""
UNSIZED_LAYER_TYPES = ("mamba", "conv", "lightning")
"""`layer_types` entries of such layers (LFM2's short convolutions, Granite 4's Mamba)"""


def _unsized_mixers(r: _Reader) -> tuple[str, ...]:
    """A caution when the config interleaves layers the sizing counts as attention but are recurrent or
    convolutional: their KV cache and long prompts' attention FLOPs are then overstated."""
    extra = r.c.model_extra or {}
    found = [key for key in UNSIZED_MIXER_KEYS if extra.get(key) is not None]
    types = r.c.layer_types or []
    found += sorted({t for t in types if any(kind in t for kind in UNSIZED_LAYER_TYPES)})
    if not found:
        return ()
    return (
        f"hf_config describes layers other than attention ({', '.join(found)}), which the sizing counts as "
        "attention layers: the KV cache and the attention FLOPs of long prompts here are an upper bound, "
        "and the state a Mamba or convolution layer keeps is not sized.",
    )


QWEN_VL_VISION = frozenset({"qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe"})
"""model_types whose `vision_config` is Qwen3-VL's vision tower (engine/sizing/vision_encoder.py)"""
VISION_SIZES = ("depth", "hidden_size", "intermediate_size", "out_hidden_size")
VISION_OPTIONS = (
    "in_channels",
    "patch_size",
    "temporal_patch_size",
    "spatial_merge_size",
    "num_position_embeddings",
)


def _vision(config: HfConfig, arch: dict[str, object], used: list[str], notes: list[str]) -> tuple[str, ...]:
    """A vision-language config's image encoder: Qwen3-VL's and Qwen3.5's counted from `vision_config`
    (`extra_params_count`, held in memory beside the language model); any other, a caution that the
    memory figures leave it out."""
    vision = (config.model_extra or {}).get("vision_config")
    if not isinstance(vision, dict):
        return ()
    sizes = {key: vision.get(key) for key in VISION_SIZES}
    if str(config.model_type or "") not in QWEN_VL_VISION or not all(_is_int(v) for v in sizes.values()):
        return (
            "hf_config has a vision_config whose image encoder the sizing does not count (it counts "
            "Qwen3-VL's and Qwen3.5's): its weights, held beside the language model's, are not in the memory "
            "figures.",
        )
    options = {key: vision[key] for key in VISION_OPTIONS if _is_int(vision.get(key))}
    deepstack = vision.get("deepstack_visual_indexes")
    try:
        count = qwen_vl_vision_params(
            **sizes,  # type: ignore[arg-type]  # each checked an int above
            **options,
            deepstack_mergers=len(deepstack) if isinstance(deepstack, list) else 0,
        )
    except ValueError as exc:
        raise ValueError(f"hf_config: vision_config: {exc}") from None
    arch["extra_params_count"] = count
    used.append("vision_config")
    notes.append(
        f"vision_config: the image encoder's {count / 1e9:.2f}B parameters are held beside the language "
        "model's weights and run once per image, not per token"
    )
    return ()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _precision(config: HfConfig, c: HfConfigKeys) -> str | None:
    quant = config.quantization_config or c.quantization_config or {}
    method = quant.get("quant_method")
    if isinstance(method, str) and method in QUANTIZED:
        return QUANTIZED[method]
    dtype = config.torch_dtype or c.torch_dtype
    return PRECISIONS.get(dtype) if dtype else None


def _known(kind: str) -> bool:
    return kind.startswith(
        ("llama", "mistral", "mixtral", "qwen", "gemma", "phi3", "deepseek", "gpt_oss", "olmo")
    )
