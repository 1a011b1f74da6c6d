"""The shape of a transformer: the plain, frozen description every architecture-aware sizing function takes.

:class:`TransformerShape` mirrors the published ``config.json`` hyper-parameters (the same fields as the
knowledge base's ``Architecture``) plus the few details that change a parameter count but that a config
does not spell out: which projections carry biases, how many norms a layer has, post-LN embedding norms,
BERT's token types and pooler, MoE routing, and which layers use a sliding attention window.

:func:`shape_from_architecture` builds one from a plain mapping of KB architecture fields (e.g. a
``yaml.safe_load``-ed ``kb/models/*.yaml`` ``architecture`` block or ``Architecture.model_dump()``), filling
the optional details (output-projection bias, norms per layer, windowed layers) from the KB fields.
The estimates at the end (:func:`dense_param_count` and the functions that solve it for one unknown)
complete a shape that is known only in part, from the parameter count. No pydantic, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import sqrt
from typing import Any, Literal, cast, get_args

from engine.sizing._checks import (
    check_choice,
    check_non_negative,
    check_non_negative_int,
    check_positive,
    check_positive_int,
)
from engine.sizing.recurrent_state import (
    DEFAULT_CONV_KERNEL,
    gated_delta_net_params,
    gated_delta_net_state_bytes,
)

__all__ = [
    "DEFAULT_VOCAB_SIZE",
    "GATED_MLP_RATIO",
    "MlpKind",
    "NormKind",
    "TransformerShape",
    "dense_param_count",
    "layers_for_width",
    "least_param_count",
    "shape_from_architecture",
    "solve_intermediate_size",
    "solve_vocab_size",
    "width_for_layers",
]

MlpKind = Literal["gated", "dense"]
"""``gated``: SwiGLU/GeGLU, three matrices (gate, up, down); ``dense``: two matrices (up, down)."""

NormKind = Literal["rmsnorm", "layernorm"]
"""``rmsnorm``: a scale vector (h parameters); ``layernorm``: scale and bias (2h parameters)."""

_MLP_KINDS: tuple[str, ...] = get_args(MlpKind)
_NORM_KINDS: tuple[str, ...] = get_args(NormKind)


@dataclass(frozen=True, slots=True)
class TransformerShape:
    """A transformer's hyper-parameters, enough to count parameters and size activations and the KV cache.

    Fields follow Hugging Face ``config.json`` names. ``head_dim`` is explicit because some models (Gemma-2)
    do not use ``hidden_size / n_heads``. ``intermediate_size`` is per expert for MoE models.
    Invalid values raise ``ValueError`` naming the field.
    """

    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    mlp: MlpKind = "gated"
    norm: NormKind = "rmsnorm"
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    """Biases on the q, k and v projections (GPT-2, BERT, Qwen2/2.5)."""
    o_bias: bool = False
    """Bias on the attention output projection (GPT-2, BERT; not Qwen2.5)."""
    mlp_bias: bool = False
    norms_per_layer: int = 2
    """Norm modules per layer: 2 for pre-LN (Llama), 4 for Gemma-2 (pre/post attention and MLP)."""
    final_logit_softcapping: float | None = None
    """``cap x tanh(logits / cap)`` on the output logits (Gemma 2: 30.0); None: the logits are used as
    computed."""
    final_norm: bool = True
    """A norm after the last layer (pre-LN decoders); post-LN BERT has none."""
    embedding_norm: bool = False
    """A norm right after the embeddings (BERT)."""
    learned_position_embeddings: int = 0
    """Rows of a learned absolute position table (GPT-2: 1024, BERT: 512); 0 for RoPE/ALiBi."""
    type_vocab_size: int = 0
    """BERT token-type (segment) embeddings."""
    pooler: bool = False
    """BERT's tanh pooler: one hidden x hidden dense layer with bias."""
    n_experts: int = 1
    """Experts per MoE layer (1 = dense MLP)."""
    experts_per_token: int = 1
    """Experts routed per token (top-k)."""
    sliding_window: int | None = None
    """Attention window in tokens, for the layers that use one."""
    sliding_window_layers: int | None = None
    """How many layers use the window (Gemma-2: half); ``None`` means all layers when a window is set."""
    qk_norm: bool = False
    """An RMSNorm over ``head_dim`` on queries and on keys in every layer (Qwen3, Gemma 3)."""
    moe_intermediate_size: int | None = None
    """Width of each expert when it differs from the dense MLP (DeepSeek-V3 2048, Qwen3-MoE); then
    ``intermediate_size`` is the MLP width of the dense layers. ``None``: experts use
    ``intermediate_size``."""
    n_shared_experts: int = 0
    """Experts every token goes through in each MoE layer, beside the routed ones (DeepSeek-V3: 1)."""
    moe_layers: int | None = None
    """Layers whose MLP is the mixture of experts (DeepSeek-V3: 58 of 61); ``None``: all layers (MoE)."""
    kv_lora_rank: int | None = None
    """Multi-head latent attention (DeepSeek-V2/V3): width of the compressed key-value latent cached."""
    q_lora_rank: int | None = None
    """MLA: width of the query latent; ``None``: queries are projected directly (DeepSeek-V2-Lite)."""
    qk_rope_head_dim: int | None = None
    """MLA: the rotary part of each query/key head, cached once per token beside the latent."""
    v_head_dim: int | None = None
    """MLA: width of each value head; ``head_dim`` is the query/key head (no-rope part + rope part)."""
    extra_params: int = 0
    """Parameters outside the transformer described here (a vision encoder and its projector), held in memory
    with the weights but not run per generated token."""
    state_layers: int = 0
    """Layers that keep a fixed-size recurrent state in place of attention over the context: linear
    attention (Qwen3-Next and Qwen3.5's Gated DeltaNet, three layers in four) or Mamba. They cache no
    keys and values and do no quadratic attention; their parameters are `state_params_per_layer`."""
    state_bytes_per_layer: int = 0
    """Bytes of one such layer's state per sequence, as a serving engine keeps it (Gated DeltaNet: the
    value heads' key x value matrices, plus the short convolution's last inputs)."""
    state_params_per_layer: int = 0
    """Parameters of one such layer's token mixer in place of attention's (Gated DeltaNet: its projections,
    convolution, gates and norm); 0 counts them as an attention layer's (a config without the widths)."""
    attention_output_gate: bool = False
    """Gated attention (Qwen3-Next, Qwen3.5; config `attn_output_gate`): the query projection also yields
    a sigmoid gate for each query channel, so it is ``h x 2q`` wide."""

    def __post_init__(self) -> None:
        for name in ("n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim", "intermediate_size"):
            check_positive_int(name, getattr(self, name))
        check_positive_int("vocab_size", self.vocab_size)
        check_choice("mlp", self.mlp, _MLP_KINDS)
        check_choice("norm", self.norm, _NORM_KINDS)
        for name in ("norms_per_layer", "learned_position_embeddings", "type_vocab_size"):
            check_non_negative_int(name, getattr(self, name))
        check_positive_int("n_experts", self.n_experts)
        check_positive_int("experts_per_token", self.experts_per_token)
        for name in ("tie_word_embeddings", "qkv_bias", "o_bias", "mlp_bias", "final_norm", "embedding_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if not isinstance(self.pooler, bool):
            raise ValueError(f"pooler must be a bool, got {self.pooler!r}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads})")
        if self.experts_per_token > self.n_experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) cannot exceed n_experts ({self.n_experts})"
            )
        self._check_moe_and_mla()
        check_non_negative_int("state_layers", self.state_layers)
        check_non_negative_int("state_bytes_per_layer", self.state_bytes_per_layer)
        check_non_negative_int("state_params_per_layer", self.state_params_per_layer)
        if not isinstance(self.attention_output_gate, bool):
            raise ValueError(f"attention_output_gate must be a bool, got {self.attention_output_gate!r}")
        if self.state_layers > self.n_layers:
            raise ValueError(f"state_layers ({self.state_layers}) cannot exceed n_layers ({self.n_layers})")
        if self.sliding_window is not None:
            check_positive_int("sliding_window", self.sliding_window)
        if self.sliding_window_layers is not None:
            check_non_negative_int("sliding_window_layers", self.sliding_window_layers)
            if self.sliding_window is None:
                raise ValueError("sliding_window_layers needs sliding_window")
            if self.sliding_window_layers > self.n_layers:
                raise ValueError(
                    f"sliding_window_layers ({self.sliding_window_layers}) cannot exceed "
                    f"n_layers ({self.n_layers})"
                )

    def _check_moe_and_mla(self) -> None:
        if not isinstance(self.qk_norm, bool):
            raise ValueError(f"qk_norm must be a bool, got {self.qk_norm!r}")
        check_non_negative_int("n_shared_experts", self.n_shared_experts)
        check_non_negative_int("extra_params", self.extra_params)
        for name in (
            "moe_intermediate_size",
            "moe_layers",
            "kv_lora_rank",
            "q_lora_rank",
            "qk_rope_head_dim",
            "v_head_dim",
        ):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        if self.moe_layers is not None and self.moe_layers > self.n_layers:
            raise ValueError(f"moe_layers ({self.moe_layers}) cannot exceed n_layers ({self.n_layers})")
        mla = (self.kv_lora_rank, self.qk_rope_head_dim, self.v_head_dim)
        if any(v is not None for v in mla) and any(v is None for v in mla):
            raise ValueError(
                "kv_lora_rank, qk_rope_head_dim and v_head_dim go together (multi-head latent attention)"
            )
        if self.q_lora_rank is not None and self.kv_lora_rank is None:
            raise ValueError("q_lora_rank needs kv_lora_rank (multi-head latent attention)")
        if self.qk_rope_head_dim is not None and self.qk_rope_head_dim >= self.head_dim:
            raise ValueError(
                f"qk_rope_head_dim ({self.qk_rope_head_dim}) must be below head_dim ({self.head_dim}), "
                "the no-rope and rope parts together"
            )

    @property
    def q_dim(self) -> int:
        """Width of the query projection output: ``n_heads * head_dim``."""
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of each of the key and value projections: ``n_kv_heads * head_dim`` (GQA-aware)."""
        return self.n_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention: keys and values are cached as one compressed latent per token."""
        return self.kv_lora_rank is not None

    @property
    def expert_size(self) -> int:
        """Width of one expert's MLP (the dense MLP's width when the model has no separate expert width)."""
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def n_moe_layers(self) -> int:
        """Layers with the mixture-of-experts MLP (0 for a dense model)."""
        if not self.is_moe:
            return 0
        return self.n_layers if self.moe_layers is None else self.moe_layers

    @property
    def n_dense_layers(self) -> int:
        """Layers with a plain MLP of ``intermediate_size``."""
        return self.n_layers - self.n_moe_layers

    @property
    def kv_elements_per_token_layer(self) -> int:
        """Elements cached per token and layer: ``2 * n_kv_heads * head_dim`` (a key and a value per KV
        head), or for MLA the latent plus the shared rope key, ``kv_lora_rank + qk_rope_head_dim``
        (DeepSeek-V2, arXiv 2405.04434, Sec. 2.1.2-2.1.3: 576 for V3, against 2 x 128 x 192 = 49,152)."""
        if self.kv_lora_rank is not None and self.qk_rope_head_dim is not None:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_dim

    @property
    def windowed_layers(self) -> int:
        """Layers whose KV cache is capped by the sliding window (of the attention layers)."""
        if self.sliding_window is None:
            return 0
        layers = self.attention_layers
        return layers if self.sliding_window_layers is None else min(layers, self.sliding_window_layers)

    @property
    def attention_layers(self) -> int:
        """Layers that attend over the context and cache its keys and values (all but `state_layers`)."""
        return self.n_layers - self.state_layers


def _required(arch: Mapping[str, object], key: str) -> object:
    if key not in arch or arch[key] is None:
        raise ValueError(f"architecture is missing {key!r}")
    return arch[key]


def _int_field(arch: Mapping[str, object], key: str) -> int:
    return check_positive_int(key, _required(arch, key))


def _optional_int(arch: Mapping[str, object], key: str) -> int | None:
    value = arch.get(key)
    return None if value is None else check_positive_int(key, value)


def _optional_positive_float(arch: Mapping[str, object], key: str) -> float | None:
    value = arch.get(key)
    return None if value is None else check_positive(key, value)


def shape_from_architecture(arch: Mapping[str, object], *, kind: str = "decoder") -> TransformerShape:
    """Build a :class:`TransformerShape` from KB ``Architecture`` fields given as a plain mapping.

    ``kind`` ``"encoder"`` marks a post-LN encoder (BERT): a norm after the embeddings and none after the
    last layer. Biases follow the KB flags (``attention_bias`` on q, k and v; ``attention_output_bias`` on
    o, defaulting to ``attention_bias``; ``mlp_bias`` on both MLP projections), ``norms_per_layer`` and
    ``sliding_window_layers`` default to 2 and all layers, a learned position table has
    ``max_position_embeddings`` rows, and MoE fields are copied. Missing or invalid fields raise
    ``ValueError`` naming the field.
    """
    check_choice("kind", kind, ("decoder", "encoder", "encoder-decoder"))
    n_layers = _int_field(arch, "n_layers")
    attention_bias = bool(arch.get("attention_bias", False))
    learned = _required(arch, "position_embedding") == "learned"
    output_bias = arch.get("attention_output_bias")
    o_bias = attention_bias if output_bias is None else bool(output_bias)
    norms = check_non_negative_int("norms_per_layer", arch.get("norms_per_layer", 2))
    encoder = kind == "encoder"
    return TransformerShape(
        n_layers=n_layers,
        hidden_size=_int_field(arch, "hidden_size"),
        n_heads=_int_field(arch, "n_heads"),
        n_kv_heads=_int_field(arch, "n_kv_heads"),
        head_dim=_int_field(arch, "head_dim"),
        intermediate_size=_int_field(arch, "intermediate_size"),
        vocab_size=_int_field(arch, "vocab_size"),
        mlp=cast(MlpKind, check_choice("mlp", _required(arch, "mlp"), _MLP_KINDS)),
        norm=cast(NormKind, check_choice("norm", _required(arch, "norm"), _NORM_KINDS)),
        tie_word_embeddings=bool(_required(arch, "tie_word_embeddings")),
        qkv_bias=attention_bias,
        o_bias=bool(o_bias),
        mlp_bias=bool(arch.get("mlp_bias", False)),
        norms_per_layer=norms,
        final_norm=not encoder,
        embedding_norm=encoder,
        learned_position_embeddings=(
            check_positive_int("max_position_embeddings", _required(arch, "max_position_embeddings"))
            if learned
            else 0
        ),
        type_vocab_size=check_non_negative_int("type_vocab_size", arch.get("type_vocab_size", 0)),
        pooler=bool(arch.get("pooler", False)),
        qk_norm=bool(arch.get("qk_norm", False)),
        attention_output_gate=bool(arch.get("attention_output_gate", False)),
        final_logit_softcapping=_optional_positive_float(arch, "final_logit_softcapping"),
        extra_params=check_non_negative_int("extra_params_count", arch.get("extra_params_count") or 0),
        **_experts_and_attention_variants(arch),
    )


def _experts_and_attention_variants(arch: Mapping[str, object]) -> dict[str, Any]:
    """The optional fields of a shape: MoE experts, sliding-window layers and MLA's low-rank
    projections (absent: a dense model with full attention)."""
    n_experts_raw = arch.get("n_experts")
    experts_raw = arch.get("experts_per_token")
    window_raw = arch.get("sliding_window")
    layers_raw = arch.get("sliding_window_layers")
    return {
        "n_experts": 1 if n_experts_raw is None else check_positive_int("n_experts", n_experts_raw),
        "experts_per_token": 1
        if experts_raw is None
        else check_positive_int("experts_per_token", experts_raw),
        "sliding_window": None if window_raw is None else check_positive_int("sliding_window", window_raw),
        "sliding_window_layers": None
        if layers_raw is None
        else check_non_negative_int("sliding_window_layers", layers_raw),
        "moe_intermediate_size": _optional_int(arch, "moe_intermediate_size"),
        "n_shared_experts": check_non_negative_int("n_shared_experts", arch.get("n_shared_experts") or 0),
        "moe_layers": _optional_int(arch, "moe_layers"),
        "kv_lora_rank": _optional_int(arch, "kv_lora_rank"),
        "q_lora_rank": _optional_int(arch, "q_lora_rank"),
        "qk_rope_head_dim": _optional_int(arch, "qk_rope_head_dim"),
        "v_head_dim": _optional_int(arch, "v_head_dim"),
        **_linear_attention(arch),
    }


def _linear_attention(arch: Mapping[str, object]) -> dict[str, int]:
    """A hybrid's Gated DeltaNet layers (the KB's `linear_attention`: layers, head counts and widths,
    kernel, state dtype) as the shape's state layers and their state's bytes a sequence; a bare
    `state_layers` (a pasted config that does not give the widths) leaves the state unsized."""
    linear = arch.get("linear_attention")
    if not isinstance(linear, Mapping):
        layers = arch.get("state_layers")
        return {} if layers is None else {"state_layers": check_non_negative_int("state_layers", layers)}
    state = gated_delta_net_state_bytes(
        linear["key_heads"],
        linear["value_heads"],
        linear["key_head_dim"],
        linear["value_head_dim"],
        conv_kernel=linear.get("conv_kernel", DEFAULT_CONV_KERNEL),
        state_bytes=4 if linear.get("state_dtype") == "fp32" else 2,
    )
    params = gated_delta_net_params(
        _int_field(arch, "hidden_size"),
        linear["key_heads"],
        linear["value_heads"],
        linear["key_head_dim"],
        linear["value_head_dim"],
        conv_kernel=linear.get("conv_kernel", DEFAULT_CONV_KERNEL),
    )
    layers = check_positive_int("linear_attention.layers", linear["layers"])
    return {"state_layers": layers, "state_bytes_per_layer": state, "state_params_per_layer": params}


DEFAULT_VOCAB_SIZE = 32_000
"""Vocabulary assumed when neither it nor the MLP width is known: Llama 2's 32,000 tokens (Touvron et al.
2023, arXiv 2307.09288, Sec. 2.1). Newer models use more (Mistral 32,768, Llama 3 128,256), so the
logits' memory may be understated; the MLP solved for from the parameter count takes up the rest."""

GATED_MLP_RATIO = 8.0 / 3.0
"""intermediate_size / hidden_size of a gated MLP with the parameters of a 4h dense one: SwiGLU's
``2/3 * 4d`` (Shazeer 2020, arXiv 2002.05202, Sec. 2; Llama, Touvron et al. 2023, arXiv 2302.13971,
Sec. 2). Used when the parameter count leaves no room to solve for the MLP width."""

_MLP_MATRICES = {"gated": 3, "dense": 2}


def dense_param_count(
    *,
    n_layers: float,
    hidden_size: float,
    q_dim: float,
    kv_dim: float,
    intermediate_size: float,
    vocab_size: float,
    mlp: MlpKind = "gated",
    embedding_matrices: int = 2,
) -> float:
    """Parameters of a dense decoder from its sizes, biases and norms left out (count).

    Formula: ``P ~= L * (2*h*q + 2*h*kv + m*h*i) + e*V*h``: per layer the q and o projections
    (``h x q`` each, ``q = n_heads * head_dim``), k and v (``h x kv`` each, ``kv = n_kv_heads * head_dim``)
    and ``m`` MLP matrices of ``h x i`` (3 gated, 2 dense); ``e`` embedding matrices of ``V x h`` (2: input
    and untied output head; 1 when tied). With ``q = kv = h`` and ``i = 4h`` it is Kaplan et al. 2020
    (arXiv 2001.08361, Sec. 2.1, Table 1) ``12*L*h^2`` plus the embeddings, as in Narayanan et al. 2021
    (arXiv 2104.04473, Sec. 5.1) and Transformer Math 101 (EleutherAI). Norms and biases are under 0.1%
    of a 7B model. Llama-3-8B (L 32, h 4096, q 4096, kv 1024, i 14336, V 128256) gives 8.03e9.
    """
    m = _MLP_MATRICES[check_choice("mlp", mlp, tuple(_MLP_MATRICES))]
    layer = 2.0 * hidden_size * q_dim + 2.0 * hidden_size * kv_dim + m * hidden_size * intermediate_size
    return n_layers * layer + embedding_matrices * vocab_size * hidden_size


def solve_intermediate_size(
    n_params: float,
    *,
    n_layers: int,
    hidden_size: int,
    q_dim: int,
    kv_dim: int,
    vocab_size: int,
    mlp: MlpKind = "gated",
) -> int | None:
    """The MLP width that makes :func:`dense_param_count` equal ``n_params`` (count), rounded; ``None``
    when the other sizes already account for ``n_params`` or more (nothing is left for the MLP).

    Formula: ``i = (P - L*(2*h*q + 2*h*kv) - 2*V*h) / (m*L*h)``, untied embeddings. Llama-3-8B's sizes
    without ``i`` give 14,336 back from its 8.03e9 parameters.
    """
    p = check_positive("n_params", n_params)
    rest = p - dense_param_count(
        n_layers=check_positive_int("n_layers", n_layers),
        hidden_size=check_positive_int("hidden_size", hidden_size),
        q_dim=check_positive_int("q_dim", q_dim),
        kv_dim=check_positive_int("kv_dim", kv_dim),
        intermediate_size=0,
        vocab_size=check_positive_int("vocab_size", vocab_size),
        mlp=mlp,
    )
    width = round(rest / (_MLP_MATRICES[mlp] * n_layers * hidden_size))
    return width if width >= 1 else None


def solve_vocab_size(
    n_params: float,
    *,
    n_layers: int,
    hidden_size: int,
    q_dim: int,
    kv_dim: int,
    intermediate_size: int,
    mlp: MlpKind = "gated",
) -> int | None:
    """The vocabulary that makes :func:`dense_param_count` equal ``n_params`` (tokens), rounded; ``None``
    when the layers already account for ``n_params`` or more.

    Formula: ``V = (P - L*(2*h*q + 2*h*kv + m*h*i)) / (2*h)``, untied embeddings (a tied model's
    vocabulary comes out twice as large). Llama-3-8B's sizes without ``V`` give 128,257 from 8.03e9
    (it has 128,256).
    """
    p = check_positive("n_params", n_params)
    layers = dense_param_count(
        n_layers=check_positive_int("n_layers", n_layers),
        hidden_size=check_positive_int("hidden_size", hidden_size),
        q_dim=check_positive_int("q_dim", q_dim),
        kv_dim=check_positive_int("kv_dim", kv_dim),
        intermediate_size=check_positive_int("intermediate_size", intermediate_size),
        vocab_size=0,
        mlp=mlp,
    )
    vocab = round((p - layers) / (2 * hidden_size))
    return vocab if vocab >= 1 else None


def layers_for_width(n_params: float, hidden_size: int) -> int:
    """Layers of a transformer of this width and size (count, at least 1).

    Formula: ``L = P / (12 * h^2)``, from ``P ~= 12 * L * h^2`` (Kaplan et al. 2020, Sec. 2.1), rounded.
    Llama-2-7B (6.74e9, h 4096) gives 33 (it has 32: its embeddings are the other 4%).
    """
    h = check_positive_int("hidden_size", hidden_size)
    return max(1, round(check_positive("n_params", n_params) / (12.0 * h * h)))


def width_for_layers(n_params: float, n_layers: int, *, multiple: int = 128) -> int:
    """Width of a transformer of this depth and size, a whole multiple of ``multiple`` (at least one).

    Formula: ``h = sqrt(P / (12 * L))``, from ``P ~= 12 * L * h^2`` (Kaplan et al. 2020, Sec. 2.1), rounded
    to ``multiple`` (128: the head width of GPT-3 and Llama). Llama-2-7B (6.74e9, L 32) gives 4224 (it has
    4096: its embeddings are the other 4%).
    """
    p = check_positive("n_params", n_params)
    width = sqrt(p / (12.0 * check_positive_int("n_layers", n_layers)))
    step = check_positive_int("multiple", multiple)
    return step * max(1, round(width / step))


def least_param_count(
    *,
    n_layers: int,
    hidden_size: int,
    q_dim: int,
    kv_dim: int,
    intermediate_size: int,
    vocab_size: int,
) -> float:
    """The fewest parameters a decoder with these sizes can have (count): :func:`dense_param_count` with
    a dense MLP and tied embeddings (``e = 1``), the smaller choice of each. Sizes not known are passed
    at their least (1 for a layer, 0 for the MLP and vocabulary), so the bound holds whatever they are.
    """
    for name, value in (("intermediate_size", intermediate_size), ("vocab_size", vocab_size)):
        check_non_negative(name, value)
    return dense_param_count(
        n_layers=check_positive_int("n_layers", n_layers),
        hidden_size=check_positive_int("hidden_size", hidden_size),
        q_dim=check_positive_int("q_dim", q_dim),
        kv_dim=check_positive_int("kv_dim", kv_dim),
        intermediate_size=intermediate_size,
        vocab_size=vocab_size,
        mlp="dense",
        embedding_matrices=1,
    )
