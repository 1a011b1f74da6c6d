"""The shape of a transformer: the plain, frozen description every architecture-aware sizing function takes.

:class:`TransformerShape` mirrors the published ``config.json`` hyper-parameters (the same fields as the
knowledge base's ``Architecture``) plus the few details that change a parameter count but that a config
does not spell out: which projections carry biases, how many norms a layer has, post-LN embedding norms,
BERT's token types and pooler, MoE routing, and which layers use a sliding attention window.

:func:`shape_from_architecture` builds one from a plain mapping of KB architecture fields (e.g. a
``yaml.safe_load``-ed ``kb/models/*.yaml`` ``architecture`` block or ``Architecture.model_dump()``), filling
the optional details (output-projection bias, norms per layer, windowed layers) from the KB fields.
No pydantic, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast, get_args

from engine.sizing._checks import (
    check_choice,
    check_non_negative_int,
    check_positive_int,
)

__all__ = [
    "MlpKind",
    "NormKind",
    "TransformerShape",
    "shape_from_architecture",
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
    def windowed_layers(self) -> int:
        """Layers whose KV cache is capped by the sliding window."""
        if self.sliding_window is None:
            return 0
        return self.n_layers if self.sliding_window_layers is None else self.sliding_window_layers


def _required(arch: Mapping[str, object], key: str) -> object:
    if key not in arch or arch[key] is None:
        raise ValueError(f"architecture is missing {key!r}")
    return arch[key]


def _int_field(arch: Mapping[str, object], key: str) -> int:
    return check_positive_int(key, _required(arch, key))


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
    n_experts_raw = arch.get("n_experts")
    experts_raw = arch.get("experts_per_token")
    n_experts = 1 if n_experts_raw is None else check_positive_int("n_experts", n_experts_raw)
    experts_per_token = 1 if experts_raw is None else check_positive_int("experts_per_token", experts_raw)
    window_raw = arch.get("sliding_window")
    window = None if window_raw is None else check_positive_int("sliding_window", window_raw)
    layers_raw = arch.get("sliding_window_layers")
    window_layers = (
        None if layers_raw is None else check_non_negative_int("sliding_window_layers", layers_raw)
    )
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
        n_experts=n_experts,
        experts_per_token=experts_per_token,
        sliding_window=window,
        sliding_window_layers=window_layers,
    )
