"""Parameter counts from a :class:`~engine.sizing.shape.TransformerShape`.

Every count is an exact module-by-module sum (weights + biases + norm scales), not the ``12 L h^2``
approximation, so it matches published ``numel()`` totals: each model in ``kb/models/`` reproduces its
published count within 2% (``tests/test_sizing_params.py``), most of them exactly.

Conventions, per layer (h = hidden_size, i = intermediate_size, q = n_heads * head_dim,
k = n_kv_heads * head_dim):

* attention: ``h*q`` (Q) + ``2*h*k`` (K, V; grouped-query attention shares K/V across head groups)
  + ``q*h`` (O), plus biases ``q + 2k`` when ``qkv_bias`` and ``h`` when ``o_bias``;
* MLP per expert: gated (SwiGLU/GeGLU) ``3*h*i`` (+ ``2i + h`` biases), dense ``2*h*i`` (+ ``i + h``);
* gated attention (Qwen3-Next, Qwen3.5): ``h*q`` more for the output gate its ``q_proj`` also yields;
* a hybrid's linear-attention layers (Gated DeltaNet): their own token mixer in place of attention
  (:func:`engine.sizing.recurrent_state.gated_delta_net_params`, :func:`state_mixer_correction`);
* MoE router: ``h * n_experts`` (no bias), as in Mixtral's ``gate`` linear layer;
* norms: ``h`` per RMSNorm, ``2h`` per LayerNorm, ``norms_per_layer`` of them;
* embeddings: ``V*h`` token table (+ ``V*h`` LM head unless tied) + learned positions + token types.

Sources: Kaplan et al. 2020, "Scaling Laws for Neural Language Models", Sec. 2.1 (arXiv 2001.08361) for
the per-matrix accounting; Ainslie et al. 2023 (GQA, arXiv 2305.13245) for shared K/V heads; Jiang et al.
2024 (Mixtral, arXiv 2401.04088) for total vs active parameters of a top-2-of-8 MoE.
"""

from __future__ import annotations

from engine.sizing.shape import TransformerShape

__all__ = [
    "active_params",
    "attention_params_per_layer",
    "decode_params_read_per_token",
    "dense_layer_params",
    "dense_mlp_params",
    "embedding_params",
    "expert_params_per_layer",
    "input_embedding_params",
    "layer_params",
    "linear_weight_params",
    "lm_head_params",
    "mla_attention_params_per_layer",
    "mlp_params_per_expert",
    "non_embedding_params",
    "norm_params_per_layer",
    "router_params_per_layer",
    "state_mixer_correction",
    "total_params",
]


def _norm_size(shape: TransformerShape) -> int:
    return shape.hidden_size if shape.norm == "rmsnorm" else 2 * shape.hidden_size


def attention_params_per_layer(shape: TransformerShape) -> int:
    """Attention parameters in one layer (count).

    Formula: ``h*q + 2*h*k + q*h`` + ``(q + 2k)`` if ``qkv_bias`` + ``h`` if ``o_bias``, with
    ``q = n_heads*head_dim`` and ``k = n_kv_heads*head_dim`` (GQA: K and V have ``n_kv_heads`` heads),
    plus ``h*q`` for gated attention's output gate (Qwen3-Next's ``q_proj`` is ``h x 2q``).
    Multi-head latent attention is counted by :func:`mla_attention_params_per_layer`.
    Source: Ainslie et al. 2023, GQA (arXiv 2305.13245), Sec. 2.
    """
    if shape.is_mla:
        return mla_attention_params_per_layer(shape)
    h, q, k = shape.hidden_size, shape.q_dim, shape.kv_dim
    biases = (q + 2 * k if shape.qkv_bias else 0) + (h if shape.o_bias else 0)
    return _attention_matrices(shape) + biases


def _attention_matrices(shape: TransformerShape) -> int:
    """Q, K, V and O's weight matrices, and gated attention's output gate: ``h*q + 2*h*k + q*h (+ h*q)``."""
    h, q, k = shape.hidden_size, shape.q_dim, shape.kv_dim
    return h * q + 2 * h * k + q * h + (h * q if shape.attention_output_gate else 0)


def mla_attention_params_per_layer(shape: TransformerShape) -> int:
    """Multi-head latent attention parameters in one layer (count), as DeepSeek-V2/V3 build it.

    Formula, with ``n`` heads, query/key head ``d = head_dim`` (no-rope + rope part ``r``), value head ``v``,
    latent ranks ``c_kv`` and ``c_q``: queries ``h*c_q + c_q + c_q*n*d`` (down-projection, its RMSNorm,
    up-projection; ``h*n*d`` when there is no query latent), keys and values ``h*(c_kv + r) + c_kv +
    c_kv*n*(d - r + v)`` (joint down-projection with the shared rope key, its RMSNorm, up-projection to
    no-rope keys and values), output ``n*v*h``. DeepSeek-V3 (h 7168, n 128, d 192, r 64, v 128, c_kv 512,
    c_q 1536): 187,107,328. Source: DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434), Sec. 2.1.2-2.1.3.
    """
    if shape.kv_lora_rank is None or shape.qk_rope_head_dim is None or shape.v_head_dim is None:
        raise ValueError("multi-head latent attention needs kv_lora_rank, qk_rope_head_dim and v_head_dim")
    h, n, d = shape.hidden_size, shape.n_heads, shape.head_dim
    rope, v, c_kv = shape.qk_rope_head_dim, shape.v_head_dim, shape.kv_lora_rank
    c_q = shape.q_lora_rank
    queries = h * n * d if c_q is None else h * c_q + c_q + c_q * n * d
    keys_values = h * (c_kv + rope) + c_kv + c_kv * n * (d - rope + v)
    return queries + keys_values + n * v * h


def _mlp_params(shape: TransformerShape, width: int) -> int:
    h = shape.hidden_size
    if shape.mlp == "gated":
        return 3 * h * width + (2 * width + h if shape.mlp_bias else 0)
    return 2 * h * width + (width + h if shape.mlp_bias else 0)


def mlp_params_per_expert(shape: TransformerShape) -> int:
    """MLP parameters of one expert (the whole MLP for a dense model) (count).

    Formula: gated ``3*h*i`` (+ ``2*i + h`` with ``mlp_bias``); dense ``2*h*i`` (+ ``i + h``), with ``i`` the
    expert's width (``moe_intermediate_size`` where the model has one, else ``intermediate_size``).
    Source: Shazeer 2020, "GLU Variants Improve Transformer" (arXiv 2002.05202) for the three-matrix gated
    MLP; Vaswani et al. 2017 for the two-matrix MLP.
    """
    return _mlp_params(shape, shape.expert_size)


def dense_mlp_params(shape: TransformerShape) -> int:
    """MLP parameters of one dense (non-MoE) layer (count): as :func:`mlp_params_per_expert` with
    ``intermediate_size`` (DeepSeek-V3's first three layers: ``3 x 7168 x 18432``)."""
    return _mlp_params(shape, shape.intermediate_size)


def router_params_per_layer(shape: TransformerShape) -> int:
    """MoE router parameters in one MoE layer (count): ``h * n_experts``, else 0.

    Source: Jiang et al. 2024, Mixtral of Experts (arXiv 2401.04088), Sec. 2.1 (gating ``x W_g``).
    """
    return shape.hidden_size * shape.n_experts if shape.is_moe else 0


def expert_params_per_layer(shape: TransformerShape, *, active: bool = False) -> int:
    """MLP parameters of one MoE layer (count): ``n_experts`` routed experts, or ``experts_per_token`` if
    ``active``, plus the shared experts every token uses; for a dense model the one MLP."""
    experts = shape.experts_per_token if active else shape.n_experts
    return (experts + shape.n_shared_experts) * mlp_params_per_expert(shape)


def norm_params_per_layer(shape: TransformerShape) -> int:
    """Norm parameters in one layer (count): ``norms_per_layer * (h for RMSNorm, 2h for LayerNorm)``, plus
    ``2 * head_dim`` for the query and key norms of ``qk_norm`` models (Qwen3, Gemma 3)."""
    return shape.norms_per_layer * _norm_size(shape) + (2 * shape.head_dim if shape.qk_norm else 0)


def layer_params(shape: TransformerShape, *, active: bool = False) -> int:
    """Parameters of one transformer layer (count), the MoE kind for a mixture-of-experts model; with
    ``active``, only the experts a token uses.

    Formula: attention + experts x MLP + router + norms (see the functions above).
    """
    return (
        attention_params_per_layer(shape)
        + expert_params_per_layer(shape, active=active)
        + router_params_per_layer(shape)
        + norm_params_per_layer(shape)
    )


def dense_layer_params(shape: TransformerShape) -> int:
    """Parameters of one layer with a plain MLP of ``intermediate_size`` (count)."""
    return attention_params_per_layer(shape) + dense_mlp_params(shape) + norm_params_per_layer(shape)


def state_mixer_correction(shape: TransformerShape) -> int:
    """What a hybrid's recurrent layers hold beyond the attention each per-layer count assumes (count,
    negative when less): ``state_layers x (state_params_per_layer - attention - QK norms)``. A Gated
    DeltaNet layer has no QK norms and its own projections (engine/sizing/recurrent_state.py); 0 when
    the state layers' widths are unknown and they are counted as attention."""
    if not shape.state_layers or not shape.state_params_per_layer:
        return 0
    attention = attention_params_per_layer(shape) + (2 * shape.head_dim if shape.qk_norm else 0)
    return shape.state_layers * (shape.state_params_per_layer - attention)


def _stack_params(shape: TransformerShape, *, active: bool) -> int:
    mixers = state_mixer_correction(shape)
    if not shape.is_moe:
        return shape.n_layers * dense_layer_params(shape) + mixers
    moe = shape.n_moe_layers * layer_params(shape, active=active)
    return moe + shape.n_dense_layers * dense_layer_params(shape) + mixers


def input_embedding_params(shape: TransformerShape) -> int:
    """Input-side embedding parameters (count).

    Formula: ``V*h`` token table + ``max_positions*h`` learned positions + ``type_vocab*h`` token types
    + the embedding norm (BERT).
    """
    h = shape.hidden_size
    table = shape.vocab_size * h
    positions = shape.learned_position_embeddings * h
    types = shape.type_vocab_size * h
    norm = _norm_size(shape) if shape.embedding_norm else 0
    return table + positions + types + norm


def lm_head_params(shape: TransformerShape) -> int:
    """Separate LM-head parameters (count): ``V*h`` when untied, 0 when tied to the token table."""
    return 0 if shape.tie_word_embeddings else shape.vocab_size * shape.hidden_size


def embedding_params(shape: TransformerShape) -> int:
    """All embedding-table parameters (count): input embeddings + an untied LM head."""
    return input_embedding_params(shape) + lm_head_params(shape)


def _head_and_tail(shape: TransformerShape) -> int:
    h = shape.hidden_size
    final = _norm_size(shape) if shape.final_norm else 0
    pooler = h * h + h if shape.pooler else 0
    return final + pooler


def total_params(shape: TransformerShape) -> int:
    """Total parameters (count), every expert included.

    Formula: embeddings + MoE layers x :func:`layer_params` + dense layers x :func:`dense_layer_params`
    + final norm + pooler + ``extra_params`` (a vision tower). Reproduces e.g. Llama-3.1-8B 8,030,261,248 and
    Mixtral-8x7B 46,702,792,704 exactly.
    """
    stack = _stack_params(shape, active=False)
    return embedding_params(shape) + stack + _head_and_tail(shape) + shape.extra_params


def active_params(shape: TransformerShape) -> int:
    """Parameters used per token (count): as :func:`total_params` but only ``experts_per_token`` experts.

    Equal to :func:`total_params` for a dense text model (``extra_params``, a vision tower, runs once per
    image, not per token, and is left out). Embedding tables are counted in full, as the MoE
    papers do (Mixtral 8x7B: 12.9B active of 46.7B). Source: Jiang et al. 2024 (arXiv 2401.04088).
    """
    return embedding_params(shape) + _stack_params(shape, active=True) + _head_and_tail(shape)


def non_embedding_params(shape: TransformerShape) -> int:
    """Parameters outside the embedding tables and LM head (count), every expert and ``extra_params``
    included.

    The quantity Kaplan et al. 2020 call N (Sec. 2.1) and model cards quote as "non-embedding".
    """
    return total_params(shape) - embedding_params(shape)


def decode_params_read_per_token(shape: TransformerShape) -> int:
    """Parameters streamed from memory to decode one token at batch 1 (count).

    Formula: :func:`active_params` - input embedding tables + ``V*h`` if the head is tied. Decoding reads
    every active layer weight and the full LM-head matrix (``V*h``, also when it is the tied token table) but
    only one row of the input embedding tables. For an MoE model only the routed experts are read (batch 1).
    """
    tied_head = shape.vocab_size * shape.hidden_size if shape.tie_word_embeddings else 0
    return active_params(shape) - input_embedding_params(shape) + tied_head


def linear_weight_params(shape: TransformerShape) -> int:
    """Weights of the linear projections inside the transformer layers, every expert included (count).

    Formula: ``n_layers * (h*q + 2*h*k + q*h)`` (MLA: its projections) + dense layers x ``(3 or 2)*h*i``
    + MoE layers x (routed + shared experts) x ``(3 or 2)*h*i_expert``. These are the matrices a
    weight-only quantizer converts (GPTQ, AWQ, bitsandbytes ``Linear4bit``); embeddings, the LM head (kept
    16-bit by bitsandbytes, artidoro/qlora ``qlora.py`` and GPTQ/AWQ checkpoints), norms, biases, the
    small MoE router and a vision tower stay in 16-bit.
    """
    h = shape.hidden_size
    if shape.is_mla:
        latent_norms = (shape.q_lora_rank or 0) + (shape.kv_lora_rank or 0)
        attention = mla_attention_params_per_layer(shape) - latent_norms
    else:
        attention = _attention_matrices(shape)
    matrices = 3 if shape.mlp == "gated" else 2
    dense = shape.n_dense_layers * matrices * h * shape.intermediate_size
    experts_per_layer = shape.n_experts + shape.n_shared_experts
    experts = shape.n_moe_layers * experts_per_layer * matrices * h * shape.expert_size
    return shape.n_layers * attention + dense + experts + state_mixer_correction(shape)
