"""Training compute, time and cost; cost per token for owned and rented hardware; buy-vs-rent break-even.

* Training FLOPs ``C ~= 6 P D`` (2 forward + 4 backward per parameter per token; Transformer Math 101,
  "Compute Requirements"; Kaplan et al. 2020), ``8 P D`` with full activation recomputation (the forward
  runs twice; Narayanan et al. 2021, arXiv 2104.04473, Sec. 5.1). Selective recomputation re-runs only the
  attention core and stays at ~6 P D (+2.7% for GPT-3 175B, Korthikanti et al. 2022, Sec. 5).
* Time ``T = C / (n_gpus x peak dense FLOPS x MFU)``; GPU-hours ``C / (peak x MFU) / 3600``.
* Owned hardware costs ``capex / horizon`` per wall-clock hour plus power at TDP x electricity price
  (guide G2's ``cost_per_1m_tokens``: 3-year life, $0.12/kWh, power billed around the clock); cost per
  1M tokens divides by the tokens actually served (throughput x utilization).
* Renting costs the hourly price for the hours used; buying wins above
  ``capex / (rent - power cost per hour)`` hours of use (guide G1's break-even column ignores power:
  $1,600 / $0.40 = 4,000 h).
"""

from __future__ import annotations

import math
from typing import Literal, get_args

from engine.sizing._checks import (
    check_choice,
    check_fraction,
    check_non_negative,
    check_positive,
    check_positive_int,
    checked,
)
from engine.sizing.conventions import (
    ELECTRICITY_USD_PER_KWH,
    FULL_RECOMPUTE_FLOPS_PER_PARAM_TOKEN,
    HARDWARE_HORIZON_YEARS,
    MFU,
    TRAINING_FLOPS_PER_PARAM_TOKEN,
)
from engine.sizing.units import HOURS_PER_YEAR, SECONDS_PER_HOUR

__all__ = [
    "RECOMPUTE_FLOPS_MODES",
    "break_even_hours",
    "break_even_utilization",
    "cost_per_million_tokens_owned_usd",
    "cost_per_million_tokens_rented_usd",
    "gpu_hours",
    "owned_cost_per_hour_usd",
    "power_cost_per_hour_usd",
    "run_cost_usd",
    "training_flops",
    "training_seconds",
]

RecomputeFlops = Literal["none", "selective", "full"]
RECOMPUTE_FLOPS_MODES: tuple[str, ...] = get_args(RecomputeFlops)


def training_flops(n_params: float, n_tokens: float, *, recompute: RecomputeFlops = "none") -> float:
    """Total training compute (FLOP).

    Formula: ``6 x P x D`` (``recompute`` ``none`` or ``selective``), ``8 x P x D`` (``full``);
    ``P`` parameters (active parameters for MoE), ``D`` training tokens. Sources: Transformer Math 101
    (``C ~= 6PD``); Narayanan et al. 2021, Sec. 5.1 (4 forward-equivalents with recomputation).
    Divide by MFU counted on ``6PD`` (model FLOPs), or pass ``full`` with hardware FLOPs utilization.
    """
    p = check_positive("n_params", n_params)
    d = check_positive("n_tokens", n_tokens)
    check_choice("recompute", recompute, RECOMPUTE_FLOPS_MODES)
    factor = FULL_RECOMPUTE_FLOPS_PER_PARAM_TOKEN if recompute == "full" else TRAINING_FLOPS_PER_PARAM_TOKEN
    return factor * p * d


def training_seconds(
    total_flops: float, n_gpus: int, peak_flops_per_gpu: float, *, mfu: float = MFU
) -> float:
    """Wall-clock training time (s).

    Formula: ``total_flops / (n_gpus x peak_flops_per_gpu x mfu)`` (Transformer Math 101: ``C = tau T``,
    ``tau`` = GPUs x actual FLOPS per GPU). Peak is the dense tensor FLOPS of the training precision.
    """
    c = check_positive("total_flops", total_flops)
    n = check_positive_int("n_gpus", n_gpus)
    peak = check_positive("peak_flops_per_gpu", peak_flops_per_gpu)
    return c / (n * peak * check_fraction("mfu", mfu))


def gpu_hours(total_flops: float, peak_flops_per_gpu: float, *, mfu: float = MFU) -> float:
    """GPU-hours of a run (GPU-h): ``total_flops / (peak_flops_per_gpu x mfu) / 3600``, independent of how
    many GPUs share it (Transformer Math 101, units of C)."""
    return training_seconds(total_flops, 1, peak_flops_per_gpu, mfu=mfu) / SECONDS_PER_HOUR


def run_cost_usd(gpu_hours_used: float, usd_per_gpu_hour: float) -> float:
    """Cost of a run at an hourly price (USD): ``gpu_hours x usd_per_gpu_hour``.

    Guide G2: 18,396 A100-hours on demand at $5.12 = $94,187.
    """
    return check_non_negative("gpu_hours_used", gpu_hours_used) * check_non_negative(
        "usd_per_gpu_hour", usd_per_gpu_hour
    )


@checked(power_watts=check_non_negative, usd_per_kwh=check_non_negative)
def power_cost_per_hour_usd(power_watts: float, *, usd_per_kwh: float = ELECTRICITY_USD_PER_KWH) -> float:
    """Electricity cost of running at ``power_watts`` for one hour (USD/h): ``W / 1000 x usd_per_kwh``."""
    return power_watts / 1000.0 * usd_per_kwh


@checked(
    capex_usd=check_non_negative,
    horizon_years=check_positive,
    power_watts=check_non_negative,
    usd_per_kwh=check_non_negative,
)
def owned_cost_per_hour_usd(
    capex_usd: float,
    power_watts: float,
    *,
    horizon_years: float = HARDWARE_HORIZON_YEARS,
    usd_per_kwh: float = ELECTRICITY_USD_PER_KWH,
) -> float:
    """Cost of owning hardware per wall-clock hour (USD/h).

    Formula: ``capex / (horizon_years x 8760) + power_watts / 1000 x usd_per_kwh``: straight-line
    amortization plus power at TDP all the time (guide G2 ``cost_per_1m_tokens``: 3 years, $0.12/kWh).
    Excludes hosting, cooling overhead, networking and labour, as guide G2 does.
    """
    power = power_cost_per_hour_usd.unchecked(power_watts, usd_per_kwh=usd_per_kwh)
    return capex_usd / (horizon_years * HOURS_PER_YEAR) + power


def cost_per_million_tokens_owned_usd(
    capex_usd: float,
    tokens_per_second: float,
    power_watts: float,
    *,
    utilization: float,
    horizon_years: float = HARDWARE_HORIZON_YEARS,
    usd_per_kwh: float = ELECTRICITY_USD_PER_KWH,
) -> float:
    """Cost per 1M tokens served on owned hardware (USD per 1e6 tokens).

    Formula: ``owned_cost_per_hour / (tokens_per_second x utilization x 3600) x 1e6``: the hardware costs the
    same whether busy or idle, so low utilization raises the price per token. Reproduces guide G2's
    ``cost_per_1m_tokens`` (RTX 4090: $1,600, 70 tok/s, 450 W, 70%: $0.651).
    """
    tps = check_positive("tokens_per_second", tokens_per_second)
    u = check_fraction("utilization", utilization)
    hourly = owned_cost_per_hour_usd(
        capex_usd, power_watts, horizon_years=horizon_years, usd_per_kwh=usd_per_kwh
    )
    return hourly / (tps * u * SECONDS_PER_HOUR) * 1e6


def cost_per_million_tokens_rented_usd(
    usd_per_hour: float, tokens_per_second: float, *, utilization: float = 1.0
) -> float:
    """Cost per 1M tokens on a rented instance (USD per 1e6 tokens).

    Formula: ``usd_per_hour / (tokens_per_second x utilization x 3600) x 1e6``; ``utilization`` is the busy
    share of the rented hours (1.0 when the instance runs only while it has work).
    """
    price = check_non_negative("usd_per_hour", usd_per_hour)
    tps = check_positive("tokens_per_second", tokens_per_second)
    u = check_fraction("utilization", utilization)
    return price / (tps * u * SECONDS_PER_HOUR) * 1e6


@checked(
    capex_usd=check_non_negative, rent_usd_per_hour=check_non_negative, own_usd_per_hour=check_non_negative
)
def break_even_hours(
    capex_usd: float, rent_usd_per_hour: float, *, own_usd_per_hour: float = 0.0
) -> float | None:
    """Hours of use after which buying costs less than renting (h); ``None`` if it never does.

    Formula: ``capex / (rent_usd_per_hour - own_usd_per_hour)``, ``own_usd_per_hour`` being the running cost
    of owned hardware per hour of use (power: :func:`power_cost_per_hour_usd`). Guide G1: RTX 4090
    $1,600 / $0.40 = 4,000 h; A100 80GB $15,000 / $4 = 3,750 h; 8x A100 $150,000 / $32 = 4,688 h.
    """
    if rent_usd_per_hour <= own_usd_per_hour:
        return None
    hours = capex_usd / (rent_usd_per_hour - own_usd_per_hour)
    # A margin so thin that the quotient overflows means buying never pays back.
    return hours if math.isfinite(hours) else None


def break_even_utilization(
    capex_usd: float,
    rent_usd_per_hour: float,
    *,
    own_usd_per_hour: float = 0.0,
    horizon_years: float = HARDWARE_HORIZON_YEARS,
) -> float | None:
    """Share of the horizon's hours above which buying beats renting (fraction); ``None`` if never.

    Formula: ``break_even_hours / (horizon_years x 8760)``. A value above 1 means buying cannot win within
    the horizon even at 100% use. Guide G2's A100 example ($12,000, $5.12/h, 3 years): 0.089, far below its
    70% scenario; its "30-40%" rule of thumb adds ops overhead the formula leaves out.
    """
    hours = break_even_hours(capex_usd, rent_usd_per_hour, own_usd_per_hour=own_usd_per_hour)
    years = check_positive("horizon_years", horizon_years)
    if hours is None:
        return None
    return hours / (years * HOURS_PER_YEAR)
