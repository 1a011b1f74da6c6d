"""Property tests (hypothesis) for engine.sizing.

* memory grows with parameters, batch and sequence length;
* ZeRO-3 / FSDP per-GPU memory falls as GPUs are added;
* no function returns a negative, NaN or infinite value for valid input;
* invalid input (negative, zero where meaningless, NaN, inf, bool, str, unknown enum) raises ValueError
  naming the argument.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.sizing as sz

FAST = settings(max_examples=40, deadline=None)

params_st = st.integers(min_value=1_000, max_value=2_000_000_000_000)
gpus_st = st.integers(min_value=1, max_value=4096)
small_int = st.integers(min_value=1, max_value=8192)
shardings = st.sampled_from(["none", "ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp_shard_grad_op"])
optimizers = st.sampled_from(["adamw", "adam", "adamw_8bit", "sgd_momentum", "sgd", "adafactor"])
recomputes = st.sampled_from(["none", "selective", "full"])
precisions = st.sampled_from(["fp32", "fp16", "bf16", "fp8", "int8", "int4", "nf4"])


@st.composite
def shapes(draw: st.DrawFn) -> sz.TransformerShape:
    kv = draw(st.integers(1, 16))
    groups = draw(st.integers(1, 8))
    experts = draw(st.integers(1, 8))
    window = draw(st.one_of(st.none(), st.integers(1, 8192)))
    return sz.TransformerShape(
        n_layers=draw(st.integers(1, 128)),
        hidden_size=draw(st.integers(8, 16384)),
        n_heads=kv * groups,
        n_kv_heads=kv,
        head_dim=draw(st.integers(8, 256)),
        intermediate_size=draw(st.integers(8, 65536)),
        vocab_size=draw(st.integers(2, 262144)),
        mlp=draw(st.sampled_from(["gated", "dense"])),
        norm=draw(st.sampled_from(["rmsnorm", "layernorm"])),
        tie_word_embeddings=draw(st.booleans()),
        qkv_bias=draw(st.booleans()),
        o_bias=draw(st.booleans()),
        mlp_bias=draw(st.booleans()),
        n_experts=experts,
        experts_per_token=draw(st.integers(1, experts)),
        sliding_window=window,
    )


def _ok(value: float) -> bool:
    return math.isfinite(value) and value >= 0


# --- Monotonicity -----------------------------------------------------------------------------------------


@FAST
@given(p1=params_st, p2=params_st, n=gpus_st, sharding=shardings, optimizer=optimizers)
def test_model_states_grow_with_params(p1: int, p2: int, n: int, sharding: Any, optimizer: Any) -> None:
    lo, hi = sorted((p1, p2))
    a = sz.model_state_memory(lo, n_gpus=n, sharding=sharding, optimizer=optimizer)
    b = sz.model_state_memory(hi, n_gpus=n, sharding=sharding, optimizer=optimizer)
    assert a.gpu_bytes <= b.gpu_bytes


@FAST
@given(p1=params_st, p2=params_st, precision=precisions)
def test_weights_grow_with_params(p1: int, p2: int, precision: Any) -> None:
    lo, hi = sorted((p1, p2))
    assert sz.weights_bytes(lo, precision) <= sz.weights_bytes(hi, precision)
    assert sz.inference_memory_bytes(sz.weights_bytes(lo, precision)) <= sz.inference_memory_bytes(
        sz.weights_bytes(hi, precision)
    )


@FAST
@given(shape=shapes(), s1=small_int, s2=small_int, b1=small_int, b2=small_int, recompute=recomputes)
def test_activations_grow_with_batch_and_sequence(
    shape: sz.TransformerShape, s1: int, s2: int, b1: int, b2: int, recompute: Any
) -> None:
    s_lo, s_hi = sorted((s1, s2))
    b_lo, b_hi = sorted((b1, b2))
    base = sz.activation_bytes(shape, s_lo, b_lo, recompute=recompute)
    assert base <= sz.activation_bytes(shape, s_hi, b_lo, recompute=recompute)
    assert base <= sz.activation_bytes(shape, s_lo, b_hi, recompute=recompute)
    assert sz.activation_bytes_from_params(1e9, s_lo, b_lo, recompute=recompute) <= (
        sz.activation_bytes_from_params(1e9, s_hi, b_hi, recompute=recompute)
    )


@FAST
@given(shape=shapes(), t1=st.integers(0, 131072), t2=st.integers(0, 131072), b1=small_int, b2=small_int)
def test_kv_cache_grows_with_tokens_and_batch(
    shape: sz.TransformerShape, t1: int, t2: int, b1: int, b2: int
) -> None:
    t_lo, t_hi = sorted((t1, t2))
    b_lo, b_hi = sorted((b1, b2))
    base = sz.model_kv_cache_bytes(shape, t_lo, b_lo)
    assert base <= sz.model_kv_cache_bytes(shape, t_hi, b_lo)
    assert base <= sz.model_kv_cache_bytes(shape, t_lo, b_hi)


@FAST
@given(p=params_st, n1=gpus_st, n2=gpus_st, sharding=st.sampled_from(["zero3", "fsdp"]))
def test_zero3_per_gpu_memory_falls_with_more_gpus(p: int, n1: int, n2: int, sharding: Any) -> None:
    lo, hi = sorted((n1, n2))
    few = sz.model_state_memory(p, n_gpus=lo, sharding=sharding).gpu_bytes
    many = sz.model_state_memory(p, n_gpus=hi, sharding=sharding).gpu_bytes
    assert many <= few
    if hi > lo:
        assert many < few


@FAST
@given(shape=shapes())
def test_param_counts_consistent(shape: sz.TransformerShape) -> None:
    total, active = sz.total_params(shape), sz.active_params(shape)
    assert 0 < active <= total
    assert 0 < sz.linear_weight_params(shape) < total
    assert 0 < sz.decode_params_read_per_token(shape) <= active + shape.vocab_size * shape.hidden_size
    assert sz.non_embedding_params(shape) + sz.embedding_params(shape) == total


# --- Finite, non-negative outputs -------------------------------------------------------------------------


@FAST
@given(
    shape=shapes(),
    seq=small_int,
    batch=small_int,
    n=gpus_st,
    sharding=shardings,
    optimizer=optimizers,
    recompute=recomputes,
    precision=precisions,
    rank=st.integers(1, 256),
)
def test_outputs_finite_and_non_negative(
    shape: sz.TransformerShape,
    seq: int,
    batch: int,
    n: int,
    sharding: Any,
    optimizer: Any,
    recompute: Any,
    precision: Any,
    rank: int,
) -> None:
    p = sz.total_params(shape)
    states = sz.model_state_memory(p, n_gpus=n, sharding=sharding, optimizer=optimizer)
    values = [
        states.gpu_bytes,
        states.host_bytes,
        sz.activation_bytes(shape, seq, batch, recompute=recompute),
        sz.logits_bytes(seq, batch, shape.vocab_size),
        sz.model_weights_bytes(shape, precision),
        sz.model_kv_cache_bytes(shape, seq, batch),
        sz.kv_cache_bytes_per_token(shape),
        sz.qlora_memory(shape, rank).gpu_bytes,
        sz.lora_memory(shape, rank).gpu_bytes,
        sz.moe_decode_params_read(shape, batch),
        sz.decode_tokens_per_second(sz.model_weights_bytes(shape, precision), 2e12),
        sz.decode_step_seconds(batch, 2 * p, sz.model_weights_bytes(shape), 1e15, 3e12),
        sz.training_flops(p, 1e12, recompute=recompute),
        sz.gpu_hours(sz.training_flops(p, 1e9), 1e15),
        sz.tensor_parallel_comm_seconds(seq, shape.hidden_size, shape.n_layers, n, 300e9),
    ]
    assert all(_ok(v) for v in values), values
    assert sz.max_concurrent_sequences(80e9, sz.model_weights_bytes(shape, precision), 1e6) >= 0


@FAST
@given(
    capex=st.floats(0, 1e7),
    rent=st.floats(0, 1e3),
    power=st.floats(0, 1e5),
    tps=st.floats(1e-3, 1e7),
    util=st.floats(1e-6, 1.0),
    rpm=st.floats(1e-3, 1e7),
    out=st.floats(1, 1e5),
)
def test_cost_outputs_finite(
    capex: float, rent: float, power: float, tps: float, util: float, rpm: float, out: float
) -> None:
    values = [
        sz.cost_per_million_tokens_owned_usd(capex, tps, power, utilization=util),
        sz.cost_per_million_tokens_rented_usd(rent, tps, utilization=util),
        sz.owned_cost_per_hour_usd(capex, power),
        sz.required_tokens_per_second(rpm, out),
    ]
    assert all(_ok(v) for v in values), values
    hours = sz.break_even_hours(capex, rent, own_usd_per_hour=sz.power_cost_per_hour_usd(power))
    assert hours is None or _ok(hours)
    assert sz.fleet_gpus(rpm, out, tps) >= 1
    assert sz.max_batch_for_latency(max(tps, 1e-3), 1e10, 1e9, 1e6, 1e15, 3e12) >= 0


# --- Invalid input ----------------------------------------------------------------------------------------

SHAPE = sz.TransformerShape(
    n_layers=4, hidden_size=256, n_heads=8, n_kv_heads=2, head_dim=32, intermediate_size=512, vocab_size=1000
)
POSITIVE_BAD: list[Any] = [0, -1, -1.5, float("nan"), float("inf"), float("-inf"), True, "3", None]
NON_NEGATIVE_BAD: list[Any] = [-1, -0.5, float("nan"), float("inf"), True, "3", None]

# (function, valid keyword arguments, argument to corrupt, bad values)
CASES: list[tuple[Callable[..., Any], dict[str, Any], str, list[Any]]] = [
    (sz.model_state_memory, {"n_params": 10**9}, "n_params", POSITIVE_BAD),
    (sz.model_state_memory, {"n_params": 10**9, "n_gpus": 8}, "n_gpus", POSITIVE_BAD),
    (sz.model_state_memory, {"n_params": 10**9}, "gradient_bytes", NON_NEGATIVE_BAD),
    (sz.model_state_bytes_per_param, {}, "weight_bytes", NON_NEGATIVE_BAD),
    (sz.optimizer_state_bytes_per_param, {"optimizer": "adamw"}, "optimizer", ["lion", "", 3, None]),
    (
        sz.activation_bytes_per_layer,
        {"seq_len": 8, "micro_batch": 1, "hidden_size": 8, "n_heads": 2},
        "seq_len",
        POSITIVE_BAD,
    ),
    (sz.activation_bytes, {"shape": SHAPE, "seq_len": 8, "micro_batch": 1}, "recompute", ["partial", 1]),
    (
        sz.activation_bytes_from_params,
        {"n_params": 1e9, "seq_len": 8, "micro_batch": 1},
        "n_params",
        POSITIVE_BAD,
    ),
    (sz.weights_bytes, {"n_params": 7e9}, "n_params", POSITIVE_BAD),
    (sz.weights_bytes, {"n_params": 7e9}, "precision", ["int3", "FP16", None]),
    (
        sz.kv_cache_bytes,
        {"n_layers": 2, "n_kv_heads": 2, "head_dim": 8, "context_tokens": 10},
        "head_dim",
        POSITIVE_BAD,
    ),
    (
        sz.kv_cache_bytes,
        {"n_layers": 2, "n_kv_heads": 2, "head_dim": 8, "context_tokens": 10},
        "context_tokens",
        [-1, 1.5, float("nan"), True, "3"],
    ),
    (
        sz.max_concurrent_sequences,
        {"gpu_memory_bytes": 80e9, "weights": 16e9, "kv_bytes_per_sequence": 1e9},
        "kv_bytes_per_sequence",
        POSITIVE_BAD,
    ),
    (
        sz.runtime_reserve_bytes,
        {"gpu_memory_bytes": 80e9},
        "gpu_memory_utilization",
        [0, -0.1, 1.01, float("nan"), True],
    ),
    (
        sz.decode_tokens_per_second,
        {"bytes_per_token": 14e9, "memory_bandwidth_bytes_per_s": 2e12},
        "memory_bandwidth_bytes_per_s",
        POSITIVE_BAD,
    ),
    (sz.compute_seconds, {"flops": 1e12, "peak_flops_per_s": 1e15}, "flops", NON_NEGATIVE_BAD),
    (
        sz.allreduce_seconds,
        {"message_bytes": 1e6, "n_gpus": 2, "link_bandwidth_bytes_per_s": 3e11},
        "latency_s",
        NON_NEGATIVE_BAD,
    ),
    (sz.training_flops, {"n_params": 7e9, "n_tokens": 1e12}, "n_tokens", POSITIVE_BAD),
    (
        sz.training_seconds,
        {"total_flops": 1e21, "n_gpus": 8, "peak_flops_per_gpu": 1e15},
        "mfu",
        [0, 1.5, float("nan"), True],
    ),
    (sz.run_cost_usd, {"gpu_hours_used": 10, "usd_per_gpu_hour": 2.0}, "usd_per_gpu_hour", NON_NEGATIVE_BAD),
    (
        sz.cost_per_million_tokens_owned_usd,
        {"capex_usd": 1600, "tokens_per_second": 70, "power_watts": 450, "utilization": 0.7},
        "capex_usd",
        NON_NEGATIVE_BAD,
    ),
    (sz.break_even_utilization, {"capex_usd": 1600, "rent_usd_per_hour": 0.4}, "horizon_years", POSITIVE_BAD),
    (
        sz.required_tokens_per_second,
        {"requests_per_minute": 1000, "output_tokens_per_request": 200},
        "headroom",
        NON_NEGATIVE_BAD,
    ),
    (sz.replicas_needed, {"required_tps": 4000, "replica_tps": 400}, "replica_tps", POSITIVE_BAD),
    (sz.lora_params, {"shape": SHAPE, "rank": 8}, "rank", POSITIVE_BAD),
    (sz.bytes_to_gb, {"n_bytes": 1e9}, "n_bytes", NON_NEGATIVE_BAD),
]


@pytest.mark.parametrize(
    ("func", "kwargs", "arg", "bad"),
    [(f, k, a, b) for f, k, a, bads in CASES for b in bads],
    ids=lambda x: repr(x)[:40] if not callable(x) else x.__name__,
)
def test_invalid_input_raises_value_error_naming_argument(
    func: Callable[..., Any], kwargs: dict[str, Any], arg: str, bad: Any
) -> None:
    with pytest.raises(ValueError, match=arg):
        func(**{**kwargs, arg: bad})


@FAST
@given(bad=st.one_of(st.floats(max_value=0.0), st.just(float("nan")), st.just(float("inf"))))
def test_negative_zero_nan_inf_bandwidth_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="memory_bandwidth_bytes_per_s"):
        sz.decode_tokens_per_second(14e9, bad)


def test_conventions_are_documented() -> None:
    names = [c.name for c in sz.CONVENTIONS]
    assert len(names) == len(set(names))
    assert all(c.source for c in sz.CONVENTIONS)
    by_name = {c.name: c.value for c in sz.CONVENTIONS}
    assert by_name["gradient_bytes"] == 2.0
    assert by_name["gpu_memory_utilization"] == 0.9
    assert by_name["decode_bandwidth_efficiency"] == 0.7
