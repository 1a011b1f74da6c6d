"""Activation memory for training: Korthikanti et al. when the architecture is known, a cited heuristic
when only the parameter count is.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
(arXiv 2205.05198), Sec. 4 and Table 2, per transformer layer, in bytes, for 16-bit activations and
1-byte dropout masks (s = sequence length, b = micro-batch, h = hidden size, a = heads, t = tensor-parallel
size):

=============================================  =========================================
no recomputation, no parallelism               ``s*b*h*(34 + 5*a*s/h)``
tensor parallel                                ``s*b*h*(10 + 24/t + 5*a*s/(h*t))``
tensor + sequence parallel                     ``s*b*h*(34/t + 5*a*s/(h*t))``
selective recomputation (tensor parallel)      ``s*b*h*(10 + 24/t)``
selective recomputation (tensor + sequence)    ``s*b*h*34/t``
full recomputation                             ``2*s*b*h`` (only the layer input is kept)
=============================================  =========================================

Selective recomputation drops the ``5*a*s/h`` attention-score term, which is also what FlashAttention
achieves, so use ``"selective"`` for FlashAttention training. The constants 34 and 5 assume a GPT-style layer
(4h dense MLP, dropout, multi-head attention). A gated MLP with i ~= 8h/3 stores about the same; grouped K/V
heads and the absence of dropout in modern decoders store roughly 10-15% less, so the formula is kept as a
slightly conservative bound.

Guide G4 claims "Activations per token ~= 2 x n_layers x hidden x 2 bytes" (0.5 MB/token for Llama-7B, "8 GB
at batch 8, seq 2048, checkpointing OFF"); that is twice the *full-recomputation* figure, not the
no-recomputation one, which Korthikanti puts ~30x higher (~245 GB); we follow Korthikanti.
"""

from __future__ import annotations

from typing import Literal, get_args

from engine.sizing._checks import check_choice, check_positive, check_positive_int
from engine.sizing.conventions import ASPECT_RATIO, HEAD_DIM, LOGITS_BYTES_PER_VALUE
from engine.sizing.shape import TransformerShape

__all__ = [
    "RECOMPUTE_MODES",
    "Recompute",
    "activation_bytes",
    "activation_bytes_from_params",
    "activation_bytes_per_layer",
    "activation_bytes_zero_heuristic",
    "estimate_dims_from_params",
    "logits_bytes",
]

Recompute = Literal["none", "selective", "full"]
RECOMPUTE_MODES: tuple[str, ...] = get_args(Recompute)


def activation_bytes_per_layer(
    seq_len: int,
    micro_batch: int,
    hidden_size: int,
    n_heads: int,
    *,
    recompute: Recompute = "none",
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
) -> float:
    """Activations one transformer layer keeps for the backward pass, per GPU (bytes).

    Formula: Korthikanti et al. 2022 (arXiv 2205.05198) Table 2 (see the module docstring);
    e.g. ``s*b*h*(34 + 5*a*s/h)`` without recomputation or parallelism, ``34*s*b*h`` selective,
    ``2*s*b*h`` full. ``sequence_parallel`` needs ``tensor_parallel`` > 1 to matter.
    """
    s = check_positive_int("seq_len", seq_len)
    b = check_positive_int("micro_batch", micro_batch)
    h = check_positive_int("hidden_size", hidden_size)
    a = check_positive_int("n_heads", n_heads)
    t = check_positive_int("tensor_parallel", tensor_parallel)
    check_choice("recompute", recompute, RECOMPUTE_MODES)
    if not isinstance(sequence_parallel, bool):
        raise ValueError(f"sequence_parallel must be a bool, got {sequence_parallel!r}")
    sbh = float(s) * b * h
    if recompute == "full":
        return 2.0 * sbh
    scores = 0.0 if recompute == "selective" else 5.0 * a * s / (h * t)
    linear = 34.0 / t if sequence_parallel else 10.0 + 24.0 / t
    return sbh * (linear + scores)


def activation_bytes(
    shape: TransformerShape,
    seq_len: int,
    micro_batch: int,
    *,
    recompute: Recompute = "none",
    tensor_parallel: int = 1,
    sequence_parallel: bool = False,
    include_recompute_working_set: bool = True,
) -> float:
    """Activation memory of the whole model for one micro-batch, per GPU (bytes).

    Formula: ``n_layers`` x :func:`activation_bytes_per_layer` (Korthikanti et al.
    2022, Table 2, using ``shape.hidden_size`` and ``shape.n_heads``). With recomputation, the layer being
    recomputed during the backward pass briefly holds its activations again; ``include_recompute_working_set``
    adds one layer's ``selective`` (for ``full``) working set. Logits are separate (:func:`logits_bytes`).
    Pipeline parallelism does not reduce this: with the 1F1B schedule the first stage holds ``p``
    micro-batches of ``L/p`` layers, i.e. one micro-batch of all layers (Korthikanti Sec. 4.2.3).
    """
    if not isinstance(include_recompute_working_set, bool):
        raise ValueError(
            f"include_recompute_working_set must be a bool, got {include_recompute_working_set!r}"
        )
    per_layer = activation_bytes_per_layer(
        seq_len,
        micro_batch,
        shape.hidden_size,
        shape.n_heads,
        recompute=recompute,
        tensor_parallel=tensor_parallel,
        sequence_parallel=sequence_parallel,
    )
    total = shape.n_layers * per_layer
    if recompute == "full" and include_recompute_working_set:
        total += activation_bytes_per_layer(
            seq_len,
            micro_batch,
            shape.hidden_size,
            shape.n_heads,
            recompute="selective",
            tensor_parallel=tensor_parallel,
            sequence_parallel=sequence_parallel,
        )
    return total


def logits_bytes(
    seq_len: int, micro_batch: int, vocab_size: int, *, bytes_per_value: float = LOGITS_BYTES_PER_VALUE
) -> float:
    """Memory of the output logits kept for the loss (bytes): ``s * b * V * bytes_per_value``.

    With a 128k vocabulary this rivals a layer's activations: Llama-3 8B, s = 8192, b = 1 -> 4.2 GB in fp32.
    Source: llm-analysis ``get_activation_memory_output_embedding`` (``V*b*s*activation bytes``); fp32 by
    default because Hugging Face causal-LM heads upcast the logits (``logits = logits.float()``).
    """
    s = check_positive_int("seq_len", seq_len)
    b = check_positive_int("micro_batch", micro_batch)
    v = check_positive_int("vocab_size", vocab_size)
    return float(s) * b * v * check_positive("bytes_per_value", bytes_per_value)


def estimate_dims_from_params(
    n_params: float, *, aspect_ratio: float = ASPECT_RATIO, head_dim: float = HEAD_DIM
) -> tuple[float, float, float]:
    """Estimated ``(hidden_size, n_layers, n_heads)`` for a dense transformer known only by its size.

    Formula: with ``P ~= 12 * L * h^2`` (Kaplan et al. 2020, arXiv 2001.08361, Sec. 2.1) and
    ``h = aspect_ratio * L``: ``h = (aspect_ratio * P / 12) ** (1/3)``, ``L = h / aspect_ratio``,
    ``a = h / head_dim``. Aspect ratio 128 and head width 128 as in GPT-3 6.7B/13B/175B (Brown et al. 2020,
    Table 2.1). Llama-2-7B (h 4096, L 32) comes out as h 4160, L 32.5. Values are real numbers, not rounded.
    """
    p = check_positive("n_params", n_params)
    r = check_positive("aspect_ratio", aspect_ratio)
    d = check_positive("head_dim", head_dim)
    hidden = (r * p / 12.0) ** (1.0 / 3.0)
    return hidden, hidden / r, max(hidden / d, 1.0)


def activation_bytes_from_params(
    n_params: float,
    seq_len: int,
    micro_batch: int,
    *,
    recompute: Recompute = "none",
    aspect_ratio: float = ASPECT_RATIO,
    head_dim: float = HEAD_DIM,
) -> float:
    """Heuristic activation memory when only the parameter count is known (bytes).

    Formula: Korthikanti's per-layer memory at the dimensions from :func:`estimate_dims_from_params`:
    ``L * s*b*h*(34 + 5*a*s/h)`` (none), ``L * 34*s*b*h`` (selective), ``L * 2*s*b*h`` (full).
    Sources: Korthikanti et al. 2022 Table 2; Kaplan et al. 2020 Sec. 2.1; Brown et al. 2020 Table 2.1.
    """
    s = check_positive_int("seq_len", seq_len)
    b = check_positive_int("micro_batch", micro_batch)
    check_choice("recompute", recompute, RECOMPUTE_MODES)
    hidden, layers, heads = estimate_dims_from_params(n_params, aspect_ratio=aspect_ratio, head_dim=head_dim)
    sbh = float(s) * b * hidden
    if recompute == "full":
        per_layer = 2.0 * sbh
    elif recompute == "selective":
        per_layer = 34.0 * sbh
    else:
        per_layer = sbh * (34.0 + 5.0 * heads * s / hidden)
    return max(layers, 1.0) * per_layer


def activation_bytes_zero_heuristic(
    hidden_size: int, n_layers: int, seq_len: int, micro_batch: int, *, bytes_per_value: float = 2.0
) -> float:
    """The ZeRO paper's rough activation estimate (bytes): ``12 * h * b * s * L`` values of 16 bits.

    Source: Rajbhandari et al. 2020 (arXiv 1910.02054), Sec. 3.2: "the total activations is about
    12 x hidden dim x batch x seq length x transformer layers"; GPT-2 1.5B at seq 1K, batch 32 needs
    "about 60GB". It counts far less than Korthikanti's ``34 + 5as/h`` (no attention scores); kept for
    comparison with that published figure.
    """
    h = check_positive_int("hidden_size", hidden_size)
    n = check_positive_int("n_layers", n_layers)
    s = check_positive_int("seq_len", seq_len)
    b = check_positive_int("micro_batch", micro_batch)
    return 12.0 * h * b * s * n * check_positive("bytes_per_value", bytes_per_value)
