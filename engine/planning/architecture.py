"""A request's architecture, completed: each size it leaves out derived from the others where a model's
config would derive it, else estimated from the parameter count (engine/sizing/shape.py), with a note
saying how for the response's `assumptions`.

Derived exactly: hidden_size = n_heads x head_dim, head_dim = hidden_size / n_heads. Assumed: multi-head
attention (n_kv_heads = n_heads), which over- rather than under-states a grouped-query model's KV cache.
Estimated from the parameter count: depth and width (P ~= 12 L h^2), then the MLP width or the vocabulary
by solving P ~= L (2hq + 2h kv + 3hi) + 2Vh for the one left (with a 32,000-token vocabulary when both
are). The request's shape is dense, so it stands for the parameters a token uses: the active count.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.models.request import ArchitectureIn
from engine.sizing import TransformerShape, estimate_dims_from_params
from engine.sizing.shape import (
    DEFAULT_VOCAB_SIZE,
    GATED_MLP_RATIO,
    layers_for_width,
    least_param_count,
    solve_intermediate_size,
    solve_vocab_size,
    width_for_layers,
)

HEAD_WIDTH = 128
"""Head width assumed when neither n_heads nor head_dim is given (GPT-3, Llama 2 and 3: 128)."""
MAX_PARAMS_RATIO = 2.0
"""How far the parameters the given sizes imply at the least may exceed the model's count before the
request contradicts itself (a 422): rounded sizes ("7B" for Gemma's 8.5B) stay well within it."""
SOLVED = "solved from the parameter count: P = L(2hq + 2h kv + 3hi) + 2Vh"


class Contradiction(ValueError):
    """The architecture cannot belong to a model of the stated size."""


@dataclass(frozen=True)
class Filled:
    """A size the request left out, the value used, and how it was found."""

    field: str
    value: int
    how: str
    kv_cache: bool
    """it changes the KV cache (2 L n_kv_heads head_dim bytes per token) and was not derived exactly"""

    @property
    def note(self) -> str:
        return f"{self.value} ({self.how})"


@dataclass(frozen=True)
class Completed:
    shape: TransformerShape
    filled: tuple[Filled, ...]


def complete(dims: ArchitectureIn, params: float, active: float) -> Completed:
    """The request's architecture with every absent size filled (Contradiction when the given sizes
    need more than twice `params` parameters). `active` is the parameters a token uses."""
    least = least_params(dims)
    if least > MAX_PARAMS_RATIO * params:
        raise Contradiction(
            f"these sizes need at least {least / 1e9:.4g} B parameters, more than twice the model's "
            f"{params / 1e9:.4g} B: check n_layers, hidden_size and the head sizes against params_b"
        )
    filled: list[Filled] = []
    hidden, layers = _width_and_depth(dims, active, filled)
    heads, head_dim, kv_heads = _heads(dims, hidden, filled)
    inner, vocab = _mlp_and_vocab(dims, active, layers, hidden, heads * head_dim, kv_heads * head_dim, filled)
    shape = TransformerShape(
        n_layers=layers,
        hidden_size=hidden,
        n_heads=heads,
        n_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=inner,
        vocab_size=vocab,
        mlp="gated",
        norm="rmsnorm",
    )
    return Completed(shape, tuple(filled))


def least_params(dims: ArchitectureIn) -> float:
    """The fewest parameters the given sizes allow, each absent one at its least (the fact behind the
    contradiction check, also used by the API's test generator)."""
    hidden = dims.hidden_size or (dims.n_heads * dims.head_dim if dims.n_heads and dims.head_dim else 1)
    if dims.head_dim is not None:
        head_dim = dims.head_dim
    elif dims.n_heads is not None and dims.hidden_size is not None:
        head_dim = dims.hidden_size // dims.n_heads
    else:
        head_dim = 1
    return least_param_count(
        n_layers=dims.n_layers or 1,
        hidden_size=hidden,
        q_dim=(dims.n_heads or 1) * head_dim,
        kv_dim=(dims.n_kv_heads or 1) * head_dim,
        intermediate_size=dims.intermediate_size or 0,
        vocab_size=dims.vocab_size or 0,
    )


def _width_and_depth(dims: ArchitectureIn, active: float, filled: list[Filled]) -> tuple[int, int]:
    hidden, layers = dims.hidden_size, dims.n_layers
    if hidden is None and dims.n_heads is not None and dims.head_dim is not None:
        hidden = dims.n_heads * dims.head_dim
        filled.append(Filled("hidden_size", hidden, "n_heads x head_dim", kv_cache=False))
    if hidden is None:
        step = dims.n_heads or dims.head_dim or HEAD_WIDTH
        if layers is None:
            # As for a model known only by its size: h = (128 P / 12)^(1/3), L = h / 128.
            estimate, depth, _ = estimate_dims_from_params(active)
            hidden = step * max(1, round(estimate / step))
            layers = max(1, round(depth))
            how = "estimated from the parameter count: P = 12 L h^2 with h / L = 128 (Kaplan et al. 2020)"
            filled.append(Filled("n_layers", layers, how, kv_cache=True))
        else:
            hidden = width_for_layers(active, layers, multiple=step)
        how = f"estimated from the parameter count: P = 12 L h^2 (Kaplan et al. 2020), a multiple of {step}"
        filled.append(Filled("hidden_size", hidden, how, kv_cache=dims.head_dim is None))
    if layers is None:
        layers = layers_for_width(active, hidden)
        how = "estimated from the parameter count: L = P / (12 h^2) (Kaplan et al. 2020)"
        filled.append(Filled("n_layers", layers, how, kv_cache=True))
    return hidden, layers


def _heads(dims: ArchitectureIn, hidden: int, filled: list[Filled]) -> tuple[int, int, int]:
    heads, head_dim, kv_heads = dims.n_heads, dims.head_dim, dims.n_kv_heads
    if heads is None:
        group = kv_heads or 1
        heads = group * max(1, round(hidden / ((head_dim or HEAD_WIDTH) * group)))
        how = f"hidden_size / {'head_dim' if head_dim else f'{HEAD_WIDTH}, the usual head width'}"
        if kv_heads is not None:
            how += ", a multiple of n_kv_heads"
        filled.append(Filled("n_heads", heads, how, kv_cache=kv_heads is None))
    if head_dim is None:
        head_dim = max(1, round(hidden / heads))
        exact = hidden % heads == 0 and dims.n_heads is not None
        filled.append(Filled("head_dim", head_dim, "hidden_size / n_heads", kv_cache=not exact))
    if kv_heads is None:
        kv_heads = heads
        how = "n_heads: multi-head attention assumed; grouped-query models have fewer"
        filled.append(Filled("n_kv_heads", kv_heads, how, kv_cache=True))
    return heads, head_dim, kv_heads


def _mlp_and_vocab(
    dims: ArchitectureIn, active: float, layers: int, hidden: int, q: int, kv: int, filled: list[Filled]
) -> tuple[int, int]:
    inner, vocab = dims.intermediate_size, dims.vocab_size
    if vocab is None and inner is not None:
        vocab = solve_vocab_size(
            active, n_layers=layers, hidden_size=hidden, q_dim=q, kv_dim=kv, intermediate_size=inner
        )
        how = SOLVED
        if vocab is None:
            vocab, how = DEFAULT_VOCAB_SIZE, "Llama 2's vocabulary: the layers take the whole parameter count"
        filled.append(Filled("vocab_size", vocab, how, kv_cache=False))
    if vocab is None:
        vocab = DEFAULT_VOCAB_SIZE
        filled.append(Filled("vocab_size", vocab, "Llama 2's vocabulary, assumed", kv_cache=False))
    if inner is None:
        inner = solve_intermediate_size(
            active, n_layers=layers, hidden_size=hidden, q_dim=q, kv_dim=kv, vocab_size=vocab
        )
        how = SOLVED
        if inner is None:
            inner = max(1, round(GATED_MLP_RATIO * hidden))
            how = "8/3 hidden_size (SwiGLU): the other sizes take the whole parameter count"
        filled.append(Filled("intermediate_size", inner, how, kv_cache=False))
    return inner, vocab
