"""What an option costs: capex, running cost, the horizon total, the break-even against renting.

Busy hours are the hours the hardware works over the horizon: `horizon x utilization` when the request
gives a utilization, else one run's hours when the job's length is known, else the horizon at the
default utilization. Renting pays only for busy hours; owning pays the capex once and power while busy:
the GPUs' TDP plus, per node, the host's own draw (`power_w` in kb/hosts/: CPUs, RAM, NICs, fans).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.planning.candidates import Option
from engine.sizing.cost import (
    break_even_hours,
    owned_cost_per_hour_usd,
    power_cost_per_hour_usd,
)
from engine.sizing.units import HOURS_PER_MONTH, HOURS_PER_YEAR

DEFAULT_UTILIZATION = 0.7
"""Busy share assumed when the request gives neither a utilization nor the job's length (guide G2,
'COST PER 1M TOKENS - 7B FP16 INFERENCE (70% utilization, 3-yr life)')."""


@dataclass(frozen=True)
class Usage:
    busy_hours: float
    utilization: float
    run_hours: float | None
    """one run's wall-clock hours, when known"""
    horizon_hours: float
    usd_per_kwh: float
    assumed: bool = False
    """the utilisation is DEFAULT_UTILIZATION, assumed: the request stated neither a use nor a run"""


def usage(
    utilization: float | None, run_hours: float | None, horizon_hours: float, usd_per_kwh: float
) -> Usage:
    if utilization is not None:
        busy = horizon_hours * utilization
    elif run_hours is not None:
        busy = min(run_hours, horizon_hours)
    else:
        busy = horizon_hours * DEFAULT_UTILIZATION
    assumed = utilization is None and run_hours is None
    return Usage(busy, busy / horizon_hours, run_hours, horizon_hours, usd_per_kwh, assumed)


@dataclass(slots=True, eq=False)
class Costs:
    """An option's costs (a value: never changed once made; not frozen as searches make hundreds)."""

    capex_usd: float
    hourly_usd: float
    monthly_usd: float
    cost_per_1m_tokens_usd: float | None
    gpu_hours: float | None
    run_cost_usd: float | None
    break_even_hours: float | None
    horizon_cost_usd: float
    rent_cost_over_horizon_usd: float | None
    run_power_usd: float | None = None
    """electricity for one run on bought or owned hardware, when the run's hours are known"""
    run_hours: float | None = None
    """one run's hours when `horizon_cost_usd` covers exactly that run (no utilisation was stated)"""
    busy_hours: float = 0.0
    """the hours `horizon_cost_usd` pays for"""
    assumed_use: float | None = None
    """the utilisation the costs assume when the request stated none (else None: the stated use)"""


def _break_even(capex: float | None, rent_per_hour: float | None, own_per_hour: float) -> float | None:
    """Hours of use after which buying for `capex` beats renting at `rent_per_hour` (None when either
    is unknown)."""
    if capex is None or rent_per_hour is None:
        return None
    return break_even_hours.unchecked(capex, rent_per_hour, own_usd_per_hour=own_per_hour)


def _run_cost(
    acquisition: str, capex: float, watts: float, hourly: float, run_hours: float, use: Usage
) -> float:
    """One run's cost: a bought option's share of its capex over the horizon plus power, else the
    hourly cost (rent, or an owned option's power) for the run's hours."""
    if acquisition == "buy":
        per_hour = owned_cost_per_hour_usd.unchecked(
            capex, watts, horizon_years=use.horizon_hours / HOURS_PER_YEAR, usd_per_kwh=use.usd_per_kwh
        )
        return per_hour * run_hours
    return hourly * run_hours


def costs(
    option: Option,
    copies: int,
    use: Usage,
    aggregate_tokens_per_s: float,
    *,
    rent_per_gpu_hour: float | None,
    buy_per_gpu: float | None,
) -> Costs:
    """Costs of `copies` copies of the option (a serving fleet) at the stated use.

    `rent_per_gpu_hour` is the cheapest on-demand rate for this GPU (for the buy-vs-rent comparison),
    `buy_per_gpu` its purchase price (for a rented option's break-even); either may be unknown.

    The sizing formulas are called unchecked: a planner prices hundreds of plans per request, and
    every input here is a validated KB or request value (non-negative and finite) or made of them.
    """
    # Fields read into locals once: this runs for most plans of every request.
    acquisition = option.acquisition
    busy, run_hours, usd_per_kwh = use.busy_hours, use.run_hours, use.usd_per_kwh
    gpus = option.count * copies
    capex = option.capex_usd * copies
    watts = owned_watts(option) * copies
    power = power_cost_per_hour_usd.unchecked(watts, usd_per_kwh=usd_per_kwh)
    hourly = option.hourly_rent_usd * copies if acquisition == "rent" else power
    horizon = capex + hourly * busy
    rent_equivalent = None if rent_per_gpu_hour is None else rent_per_gpu_hour * gpus * busy
    if acquisition == "rent":
        rent_equivalent = horizon
        buy_capex = None if buy_per_gpu is None else buy_per_gpu * gpus
        break_even = _break_even(buy_capex, hourly, power)
    elif acquisition == "buy":
        break_even = _break_even(
            capex, None if rent_per_gpu_hour is None else rent_per_gpu_hour * gpus, power
        )
    else:
        break_even = None
    run_cost = run_power = None
    if run_hours is not None:
        run_power = None if acquisition == "rent" else power * run_hours
        run_cost = _run_cost(acquisition, capex, watts, hourly, run_hours, use)
    tokens = aggregate_tokens_per_s * copies * 3600 * busy
    return Costs(
        capex_usd=capex,
        hourly_usd=hourly,
        monthly_usd=hourly * HOURS_PER_MONTH * use.utilization,
        cost_per_1m_tokens_usd=horizon / tokens * 1e6 if tokens > 0 and horizon > 0 else None,
        gpu_hours=None if run_hours is None else run_hours * gpus,
        run_cost_usd=run_cost,
        break_even_hours=break_even,
        horizon_cost_usd=horizon,
        rent_cost_over_horizon_usd=rent_equivalent,
        run_power_usd=run_power,
        run_hours=run_hours if run_hours is not None and busy == run_hours else None,
        busy_hours=busy,
        assumed_use=use.utilization if use.assumed else None,
    )


def owned_watts(option: Option) -> float:
    """What one copy of an owned or bought option draws while busy: each GPU's TDP and each node's
    host without its GPUs. A rented option's power is in its rent."""
    hosts = option.host.power_w * option.nodes if option.host is not None else 0
    return (option.gpu.tdp_w or 0) * option.count + hosts


def spend(option_costs: Costs, acquisition: str) -> float:
    """What a budget is compared with, what the user pays to get the job done: when buying, the capex
    (and a training run's electricity); when renting, the run's rental (a training run, or the hours
    the request gives) or else a month of serving at the stated use; nothing for hardware owned."""
    if acquisition == "buy":
        return option_costs.capex_usd + (option_costs.run_power_usd or 0.0)
    if acquisition == "rent":
        return (
            option_costs.run_cost_usd if option_costs.run_cost_usd is not None else option_costs.monthly_usd
        )
    return 0.0
