"""The hot path's shortcuts give what the general code gives: the unchecked sizing cores equal the
checked public functions to the last bit, the checks' fast paths accept and reject what the slow path
does, and the planner's specialised comparisons agree with `compare`."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.models.rule import Comparisons
from engine.reasoning.conditions import compare
from engine.reasoning.policy import compile_where, residual
from engine.sizing import cost, inference_memory, throughput
from engine.sizing._checks import check_fraction, check_non_negative, check_positive, check_positive_int

FAST = settings(max_examples=60, deadline=None)
positive = st.floats(min_value=1e-6, max_value=1e15, allow_nan=False, allow_infinity=False)
non_negative = st.one_of(st.just(0.0), positive)
count = st.integers(min_value=1, max_value=4096)
fraction = st.floats(min_value=0.01, max_value=1.0)


@FAST
@given(count, positive, positive, positive, positive, fraction, fraction)
def test_decode_step_core(
    b: int, f: float, need: float, peak: float, bw: float, mfu: float, eff: float
) -> None:
    checked = throughput.decode_step_seconds(b, f, need, peak, bw, mfu=mfu, bandwidth_efficiency=eff)
    assert checked == throughput.decode_step_seconds.unchecked(
        b, f, need, peak, bw, mfu=mfu, bandwidth_efficiency=eff
    )


@FAST
@given(count, count, count, count, positive, positive)
def test_tensor_parallel_core(t: int, h: int, layers: int, tp: int, bw: float, value_bytes: float) -> None:
    args = (t, h, layers, tp, bw)
    checked = throughput.tensor_parallel_comm_seconds(*args, bytes_per_value=value_bytes)
    assert checked == throughput.tensor_parallel_comm_seconds.unchecked(*args, bytes_per_value=value_bytes)
    assert throughput.allreduce_seconds(h * 2.0, tp, bw) == throughput.allreduce_seconds.unchecked(
        h * 2.0, tp, bw
    )


@FAST
@given(positive, positive, positive, count, fraction)
def test_kv_slots_core(memory: float, weights: float, kv: float, n: int, util: float) -> None:
    kwargs = {"n_gpus": n, "gpu_memory_utilization": util}
    assert inference_memory.max_concurrent_sequences(
        memory, weights, kv, **kwargs
    ) == inference_memory.max_concurrent_sequences.unchecked(memory, weights, kv, **kwargs)


@FAST
@given(non_negative, st.integers(0, 20000), non_negative, non_negative, positive)
def test_cost_cores(capex: float, watts: int, rent: float, own: float, years: float) -> None:
    assert cost.power_cost_per_hour_usd(watts, usd_per_kwh=0.3) == cost.power_cost_per_hour_usd.unchecked(
        watts, usd_per_kwh=0.3
    )
    assert cost.owned_cost_per_hour_usd(capex, watts, horizon_years=years) == (
        cost.owned_cost_per_hour_usd.unchecked(capex, watts, horizon_years=years)
    )
    assert cost.break_even_hours(capex, rent, own_usd_per_hour=own) == cost.break_even_hours.unchecked(
        capex, rent, own_usd_per_hour=own
    )


@pytest.mark.parametrize(
    "value", [0.0, -0.0, 1.0, 1e-300, 1e308, math.inf, -math.inf, math.nan, -1.0, 0, 1, -1, True, False, "1"]
)
def test_check_fast_paths_match_the_rules(value: object) -> None:
    def outcome(check: object) -> object:
        try:
            return check("x", value)  # type: ignore[operator]
        except ValueError:
            return "error"

    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    assert outcome(check_positive) == (float(value) if number and value > 0 else "error")  # type: ignore[arg-type]
    assert outcome(check_non_negative) == (float(value) if number and value >= 0 else "error")  # type: ignore[arg-type]
    assert outcome(check_fraction) == (float(value) if number and 0 < value <= 1 else "error")  # type: ignore[arg-type]
    is_int = type(value) is int
    assert outcome(check_positive_int) == (value if is_int and value >= 1 else "error")  # type: ignore[operator]


VALUES = [None, True, False, 0, 1, 2, 7, 7.5, 8.0, 8, -3, "8", "bf16", 1e300]


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "lte", "gt", "gte"])
@pytest.mark.parametrize("operand", [1, 8.0, 7.5, 0, True, "bf16"])
def test_specialised_comparisons_agree_with_compare(op: str, operand: object) -> None:
    if op not in ("eq", "ne") and (isinstance(operand, bool | str)):
        pytest.skip("orderings take numbers")
    test = Comparisons(**{op: operand})
    ((_, holds),) = compile_where({"gpu_count": test})
    for value in VALUES:
        assert holds(value) == compare(op, value, operand), (op, operand, value)  # type: ignore[arg-type]


def test_residual_settles_what_is_known() -> None:
    tests = compile_where({"precision": "bf16", "bf16_native": False})
    assert residual(tests, {"precision": "fp16"}) is None
    rest = residual(tests, {"precision": "bf16"})
    assert rest is not None and [name for name, _, _ in rest] == ["bf16_native"]
    assert residual(tests, {"precision": "bf16", "bf16_native": False}) == ()
