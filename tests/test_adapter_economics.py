"""engine/planning/economics.py: what an option costs (capex, running cost, horizon total, break-even) and
what a budget is compared with. Prices are round figures chosen so the arithmetic can be read."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.knowledge.kb import KB
from engine.planning.candidates import Option
from engine.planning.economics import DEFAULT_UTILIZATION, costs, owned_watts, spend, usage

# rel=1e-12 throughout: the figures differ from the written arithmetic by float rounding only.
EXACT = 1e-12
HORIZON = 36 * 730.0  # the request's default 36-month horizon, 730 h a month


@pytest.fixture(scope="module")
def rented(kb: KB) -> Option:
    return Option(
        gpu=kb.gpus["nvidia-h100-sxm"],
        count=8,
        nodes=1,
        acquisition="rent",
        pricing="on_demand",
        price_kind="on_demand",
        hourly_rent_usd=24.0,
    )


def test_busy_hours_come_from_the_utilization_else_the_run_else_the_default() -> None:
    assert usage(0.25, 100.0, HORIZON, 0.12).busy_hours == HORIZON * 0.25
    run = usage(None, 100.0, HORIZON, 0.12)
    assert (run.busy_hours, run.utilization) == (100.0, 100.0 / HORIZON)
    assert usage(None, 1e9, HORIZON, 0.12).busy_hours == HORIZON  # a run longer than the horizon is cut
    assert usage(None, None, HORIZON, 0.12).busy_hours == HORIZON * DEFAULT_UTILIZATION == HORIZON * 0.7


def test_owned_power_is_each_gpus_tdp_and_each_nodes_host(bought: Option, rented: Option) -> None:
    assert owned_watts(bought) == 8 * 700 + 3000  # kb: H100 SXM tdp_w 700, HGX H100 host power_w 3000
    assert owned_watts(replace(bought, nodes=2, count=16)) == 16 * 700 + 2 * 3000
    assert owned_watts(rented) == 8 * 700  # no host on a rental


def test_a_rented_run_pays_hourly_times_hours(rented: Option) -> None:
    use = usage(None, 5.0, HORIZON, 0.12)
    priced = costs(rented, 1, use, 1000.0, rent_per_gpu_hour=None, buy_per_gpu=None)
    assert priced.capex_usd == 0.0
    assert priced.hourly_usd == 24.0
    assert priced.run_cost_usd == 24.0 * 5 == priced.horizon_cost_usd == priced.rent_cost_over_horizon_usd
    assert priced.run_hours == 5.0 and priced.gpu_hours == 40.0  # 8 GPUs x 5 h
    assert priced.run_power_usd is None  # the power is in the rent
    assert priced.cost_per_1m_tokens_usd == pytest.approx(120.0 / (1000 * 3600 * 5) * 1e6, rel=EXACT)
    assert spend(priced, "rent") == 120.0  # spend is the run's rent when rented


def test_rented_serving_spends_a_month_at_the_stated_use(rented: Option) -> None:
    use = usage(0.5, None, HORIZON, 0.12)
    priced = costs(rented, 2, use, 500.0, rent_per_gpu_hour=None, buy_per_gpu=None)
    # two copies at $24/h; 730 h a month x 50% busy
    assert priced.hourly_usd == 48.0
    assert priced.monthly_usd == pytest.approx(48.0 * 730 * 0.5, rel=EXACT)
    assert priced.horizon_cost_usd == pytest.approx(48.0 * HORIZON * 0.5, rel=EXACT)
    assert priced.run_cost_usd is None and priced.run_hours is None
    assert spend(priced, "rent") == priced.monthly_usd


def test_a_bought_option_pays_capex_then_power_while_busy(bought: Option) -> None:
    use = usage(0.5, None, HORIZON, 0.12)
    priced = costs(bought, 1, use, 1000.0, rent_per_gpu_hour=None, buy_per_gpu=None)
    capex = 8 * 25_000 + 50_000
    power = (8 * 700 + 3000) / 1000 * 0.12  # 8.6 kW at $0.12/kWh = $1.032/h
    assert priced.capex_usd == capex
    assert priced.hourly_usd == pytest.approx(power, rel=EXACT)
    assert priced.horizon_cost_usd == pytest.approx(capex + power * HORIZON * 0.5, rel=EXACT)
    assert priced.break_even_hours is None  # no rent to compare with
    assert spend(priced, "buy") == capex  # spend is the capex when bought (no run: no run power)


def test_break_even_hours_is_capex_over_the_rent_saved(bought: Option) -> None:
    free_power = usage(0.5, None, HORIZON, 0.0)
    priced = costs(bought, 1, free_power, 1000.0, rent_per_gpu_hour=3.0, buy_per_gpu=None)
    # guide G1: break-even hours = capex / hourly rent; $250,000 / (8 x $3/h) = 10,416.7 h
    assert priced.break_even_hours == pytest.approx(250_000 / 24.0, rel=EXACT)
    assert priced.rent_cost_over_horizon_usd == pytest.approx(24.0 * HORIZON * 0.5, rel=EXACT)
    # with power, owning saves the rent less the power: $250,000 / ($24 - $1.032) per hour
    powered = costs(
        bought, 1, usage(0.5, None, HORIZON, 0.12), 1000.0, rent_per_gpu_hour=3.0, buy_per_gpu=None
    )
    assert powered.break_even_hours == pytest.approx(250_000 / (24.0 - 1.032), rel=EXACT)
    # rent no dearer than the power bill: buying never pays back
    cheap = costs(bought, 1, usage(0.5, None, HORIZON, 0.12), 1000.0, rent_per_gpu_hour=0.1, buy_per_gpu=None)
    assert cheap.break_even_hours is None


def test_a_rented_options_break_even_is_against_buying_its_gpus(rented: Option) -> None:
    priced = costs(
        rented, 1, usage(0.5, None, HORIZON, 0.12), 1000.0, rent_per_gpu_hour=None, buy_per_gpu=30_000
    )
    # buying 8 GPUs at $30,000 against $24/h of rent less the 8 x 700 W it would draw at $0.12/kWh
    assert priced.break_even_hours == pytest.approx(8 * 30_000 / (24.0 - 5.6 * 0.12), rel=EXACT)


def test_a_bought_run_costs_its_amortized_share_and_spends_capex_plus_its_power(bought: Option) -> None:
    use = usage(None, 100.0, HORIZON, 0.12)
    priced = costs(bought, 1, use, 1000.0, rent_per_gpu_hour=None, buy_per_gpu=None)
    capex, power = 250_000.0, 8.6 * 0.12
    # straight-line over the 3-year horizon (guide G2's owned cost per hour) plus power, for 100 h
    assert priced.run_cost_usd == pytest.approx((capex / (3 * 8760) + power) * 100, rel=EXACT)
    assert priced.run_power_usd == pytest.approx(power * 100, rel=EXACT)
    assert spend(priced, "buy") == pytest.approx(capex + power * 100, rel=EXACT)


def test_an_owned_options_capex_is_zero_and_it_spends_nothing(bought: Option) -> None:
    owned = replace(bought, acquisition="owned", unit_price=None, host=None, host_unit_usd=0.0)
    priced = costs(
        owned, 1, usage(None, 10.0, HORIZON, 0.12), 1000.0, rent_per_gpu_hour=3.0, buy_per_gpu=None
    )
    assert owned.capex_usd == priced.capex_usd == 0.0
    assert priced.hourly_usd == pytest.approx(5.6 * 0.12, rel=EXACT)  # power only: 8 x 700 W
    assert priced.run_cost_usd == pytest.approx(5.6 * 0.12 * 10, rel=EXACT)
    assert priced.break_even_hours is None
    assert spend(priced, "owned") == 0.0


def test_copies_multiply_the_capex_and_the_power(bought: Option) -> None:
    use = usage(0.5, None, HORIZON, 0.12)
    one = costs(bought, 1, use, 1000.0, rent_per_gpu_hour=None, buy_per_gpu=None)
    three = costs(bought, 3, use, 1000.0, rent_per_gpu_hour=None, buy_per_gpu=None)
    assert three.capex_usd == 3 * one.capex_usd
    assert three.hourly_usd == pytest.approx(3 * one.hourly_usd, rel=EXACT)
    # three copies serve three times the tokens for three times the cost: the same price per token
    assert three.cost_per_1m_tokens_usd == pytest.approx(one.cost_per_1m_tokens_usd, rel=EXACT)
