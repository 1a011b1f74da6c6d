"""A partial architecture in the request, completed (engine/planning/architecture.py, the estimates in
engine/sizing/shape.py), and what the response says about each size it filled in."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from engine.models.request import ArchitectureIn, RecommendRequest
from engine.planning.architecture import Contradiction, complete, least_params
from engine.sizing.inference_memory import kv_cache_bytes_per_token
from engine.sizing.shape import (
    dense_param_count,
    layers_for_width,
    solve_intermediate_size,
    solve_vocab_size,
    width_for_layers,
)
from tests.golden_support import advisor

# Llama-3-8B's config.json (meta-llama/Meta-Llama-3-8B): 8.03 B parameters.
LLAMA_3_8B: dict[str, int] = {
    "n_layers": 32,
    "hidden_size": 4096,
    "n_heads": 32,
    "n_kv_heads": 8,
    "head_dim": 128,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}
PARAMS = 8.03e9


def without(*names: str) -> dict[str, int]:
    return {k: v for k, v in LLAMA_3_8B.items() if k not in names}


def dims(data: dict[str, Any]) -> ArchitectureIn:
    return ArchitectureIn.model_validate(data)


def recommend(architecture: dict[str, int], **workload: Any) -> Any:
    body = {"task": "inference", "params_b": 8.03, "seq_len": 8192, "batch_size": 4, **workload}
    return advisor().recommend(
        RecommendRequest.model_validate({"workload": {**body, "architecture": architecture}})
    )


# --- the formulas ------------------------------------------------------------------------------


def test_the_parameter_count_reproduces_llama_3_8b() -> None:
    """32 x (2*4096*4096 + 2*4096*1024 + 3*4096*14336) + 2*128256*4096 = 8,029,995,008: Meta's 8.03 B
    (norms, 266k parameters, are left out)."""
    count = dense_param_count(
        n_layers=32, hidden_size=4096, q_dim=4096, kv_dim=1024, intermediate_size=14336, vocab_size=128256
    )
    assert count == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 2 * 128256 * 4096
    assert count == pytest.approx(8.03e9, rel=1e-3)


def test_solving_for_one_size_gives_it_back() -> None:
    sizes = {"n_layers": 32, "hidden_size": 4096, "q_dim": 4096, "kv_dim": 1024}
    assert solve_intermediate_size(8_029_995_008, **sizes, vocab_size=128256) == 14336
    # (8.03e9 - 32 x 159,383,552) / (2 x 4096) = 128,256.5, rounded: the published count is rounded
    assert solve_vocab_size(8.03e9, **sizes, intermediate_size=14336) == 128257


def test_sizes_that_leave_nothing_to_solve_for_give_none() -> None:
    sizes = {"n_layers": 32, "hidden_size": 4096, "q_dim": 4096, "kv_dim": 1024}
    assert solve_intermediate_size(1e9, **sizes, vocab_size=128256) is None
    assert solve_vocab_size(1e9, **sizes, intermediate_size=14336) is None


def test_depth_and_width_from_kaplans_twelve_l_h_squared() -> None:
    """P = 12 L h^2 (Kaplan et al. 2020): Llama-2-7B, 6.74e9 at h 4096: 6.74e9 / (12 x 4096^2) = 33.5 -> 33
    layers (it has 32); at L 32: sqrt(6.74e9 / 384) = 4190 -> 4224, the nearest multiple of 128."""
    assert layers_for_width(6.74e9, 4096) == 33
    assert width_for_layers(6.74e9, 32) == 4224
    assert width_for_layers(6.74e9, 32, multiple=32) == 4192


# --- completing a request's architecture --------------------------------------------------------


def test_a_full_architecture_is_used_as_given() -> None:
    completed = complete(dims(LLAMA_3_8B), PARAMS, PARAMS)
    assert completed.filled == ()
    assert (completed.shape.n_kv_heads, completed.shape.vocab_size) == (8, 128256)


def test_llama_3_8b_without_vocab_keeps_its_kv_cache() -> None:
    """KV bytes = 2 L n_kv head_dim bytes tokens: no vocabulary in it, so the estimate changes nothing
    there (2 x 32 x 8 x 128 x 2 B x 8192 tokens x 4 sequences = 4.29 GB)."""
    completed = complete(dims(without("vocab_size")), PARAMS, PARAMS)
    (filled,) = completed.filled
    assert (filled.field, filled.value, filled.kv_cache) == ("vocab_size", 128257, False)
    full = recommend(LLAMA_3_8B)
    partial = recommend(without("vocab_size"))
    assert full.requirements.memory.kv_cache_gb == partial.requirements.memory.kv_cache_gb
    assert partial.requirements.memory.kv_cache_gb == pytest.approx(
        2 * 32 * 8 * 128 * 2 * 8192 * 4 / 1e9, abs=1e-3
    )
    assert partial.assumptions["architecture.vocab_size"] == filled.note
    assert partial.assumptions["architecture.vocab_size"].startswith("128257 (solved")
    assert "architecture.vocab_size" not in full.assumptions
    assert partial.warnings == full.warnings  # nothing that moves a figure was assumed


def test_without_vocab_and_mlp_width_the_vocab_is_assumed_and_the_mlp_solved() -> None:
    """V = 32,000; i = (8.03e9 - 32 x (2*4096*4096 + 2*4096*1024) - 2*32000*4096) / (3 x 32 x 4096)
    = 16,341.5 -> 16,341 (Llama 3's is 14,336: its vocabulary is four times larger)."""
    completed = complete(dims(without("vocab_size", "intermediate_size")), PARAMS, PARAMS)
    assert {f.field: f.value for f in completed.filled} == {"vocab_size": 32000, "intermediate_size": 16341}


def test_head_dim_is_hidden_over_heads_and_kv_heads_default_to_heads() -> None:
    completed = complete(dims(without("head_dim", "n_kv_heads")), PARAMS, PARAMS)
    assert (completed.shape.head_dim, completed.shape.n_kv_heads) == (4096 // 32, 32)
    kinds = {f.field: f.kv_cache for f in completed.filled}
    assert kinds == {"head_dim": False, "n_kv_heads": True}  # 4096 / 32 is exact; MHA is assumed


def test_assuming_multi_head_attention_is_a_warning_and_quadruples_llama_3s_kv_cache() -> None:
    full = recommend(LLAMA_3_8B)
    mha = recommend(without("n_kv_heads"))
    assert mha.requirements.memory.kv_cache_gb == pytest.approx(4 * full.requirements.memory.kv_cache_gb)
    assert mha.assumptions["architecture.n_kv_heads"].startswith("32 (n_heads")
    (warning,) = [w for w in mha.warnings if "n_kv_heads" in w]
    assert "overstated" in warning


def test_width_from_heads_times_head_dim_and_depth_from_the_count() -> None:
    """h = 32 x 128 = 4096 exactly; L = 8.03e9 / (12 x 4096^2) = 39.9 -> 40."""
    completed = complete(dims({"n_heads": 32, "head_dim": 128, "n_kv_heads": 8}), PARAMS, PARAMS)
    assert (completed.shape.hidden_size, completed.shape.n_layers) == (4096, 40)
    by_field = {f.field: f for f in completed.filled}
    assert not by_field["hidden_size"].kv_cache and by_field["n_layers"].kv_cache


def test_estimated_heads_are_a_multiple_of_the_kv_heads() -> None:
    """4096 / 128 = 32 heads, rounded to a multiple of 6: 6 x round(32 / 6) = 30; head_dim
    round(4096 / 30) = 137."""
    shape = complete(dims({"n_layers": 32, "hidden_size": 4096, "n_kv_heads": 6}), PARAMS, PARAMS).shape
    assert (shape.n_heads, shape.n_kv_heads, shape.head_dim) == (30, 6, 137)


def test_only_a_size_estimates_like_a_request_without_architecture() -> None:
    """h = (128 x 8.03e9 / 12)^(1/3) = 4409 -> 4352 (34 x 128), L = 4409 / 128 = 34.4 -> 34."""
    shape = complete(dims({}), PARAMS, PARAMS).shape
    assert (shape.hidden_size, shape.n_layers, shape.n_heads, shape.n_kv_heads) == (4352, 34, 34, 34)


def test_an_moe_solves_its_mlp_from_the_active_parameters() -> None:
    """Mixtral 8x7B: 46.7 B in all, 12.9 B per token; its dense stand-in gets the two experts' MLP:
    (12.9e9 - 32 x (2*4096*4096 + 2*4096*1024) - 2*32000*4096) / (3 x 32 x 4096) = 28,726 (2 x 14,336)."""
    mixtral = {"n_layers": 32, "hidden_size": 4096, "n_heads": 32, "n_kv_heads": 8, "vocab_size": 32000}
    completed = complete(dims(mixtral), 46.7e9, 12.9e9)
    assert completed.shape.intermediate_size == 28726


# --- contradictions stay 422s -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"n_heads": 32, "n_kv_heads": 12}, "n_kv_heads"),  # 32 heads do not split into 12 groups
        ({"n_heads": 8, "n_kv_heads": 16}, "n_kv_heads"),  # more key/value heads than heads
        ({"hidden_size": 4100, "n_heads": 32}, "n_heads"),  # 4100 / 32 = 128.1: give head_dim
        ({"n_layers": 0}, "n_layers"),
        ({"vocab_size": 7.5}, "vocab_size"),
        ({"colour": 1}, "colour"),
    ],
)
def test_contradictions_name_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as error:
        dims(data)
    assert (field,) in [e["loc"] for e in error.value.errors()]


def test_a_head_dim_other_than_hidden_over_heads_is_fine() -> None:
    """Gemma-7B: 16 heads of 256 in a 3072-wide model (16 x 256 = 4096 != 3072)."""
    gemma = {"n_layers": 28, "hidden_size": 3072, "n_heads": 16, "n_kv_heads": 16, "head_dim": 256}
    assert complete(dims(gemma), 8.54e9, 8.54e9).shape.q_dim == 4096


def test_an_architecture_far_larger_than_the_model_is_a_contradiction() -> None:
    """Llama-3-8B's sizes need at least 32 x (2*4096*4096 + 2*4096*1024 + 2*4096*14336) + 128256*4096
    = 5.63 B parameters (dense MLP, tied embeddings): fine for 8.03 B, or even 3 B; not for 2.5 B."""
    least = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 4096 * 14336) + 128256 * 4096
    assert least_params(dims(LLAMA_3_8B)) == least
    complete(dims(LLAMA_3_8B), 3e9, 3e9)
    with pytest.raises(Contradiction, match=r"at least 5\.626 B"):
        complete(dims(LLAMA_3_8B), 2.5e9, 2.5e9)


def test_the_contradiction_is_a_422_on_the_architecture() -> None:
    from engine.planning.workload import InvalidRequest

    with pytest.raises(InvalidRequest) as error:
        recommend(LLAMA_3_8B, params_b=2.5)
    assert error.value.loc == ("workload", "architecture")


def test_kv_cache_formula_matches_the_shape() -> None:
    """The figure the tests above compare, from the sizing function itself."""
    shape = complete(dims(without("vocab_size")), PARAMS, PARAMS).shape
    assert kv_cache_bytes_per_token(shape) * 8192 * 4 == 2 * 32 * 8 * 128 * 2 * 8192 * 4


SIZES = {
    "n_layers": st.integers(1, 1000),
    "hidden_size": st.integers(1, 1_000_000),
    "head_dim": st.integers(1, 10_000),
    "n_heads": st.integers(1, 10_000),
    "n_kv_heads": st.integers(1, 10_000),
    "intermediate_size": st.integers(1, 10_000_000),
    "vocab_size": st.integers(1, 10_000_000),
}


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries({}, optional=SIZES),
    st.floats(1e-6, 100_000),
    st.floats(0.01, 1.0),
)
def test_every_accepted_architecture_completes_keeping_what_was_given(
    data: dict[str, int], params_b: float, active_share: float
) -> None:
    """Whatever part of an architecture the request model accepts, it completes into a valid shape
    with the given sizes kept, or is refused as a contradiction; never another error."""
    try:
        architecture = dims(data)
    except ValidationError:
        return
    try:
        completed = complete(architecture, params_b * 1e9, max(params_b * active_share, 1e-6) * 1e9)
    except Contradiction:
        assert least_params(architecture) > 2 * params_b * 1e9
        return
    shape = completed.shape
    for name, value in data.items():
        assert getattr(shape, name) == value
    assert {f.field for f in completed.filled} == set(SIZES) - set(data)
