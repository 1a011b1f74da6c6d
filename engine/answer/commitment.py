"""Committed capacity: a large rental on demand for a year or more, named beside what a commitment
would change.

Clouds rent capacity below the on-demand rate for a term of one or three years (AWS Savings Plans,
Google Cloud committed use discounts, Azure reservations: the provider's `commitment` in the KB), paid
for every hour of the term whether used or not. The answer costs rentals on demand, at the use the
request states or assumes; at fleet scale a buyer asks for a committed quote before signing, and a
reviewer asks what it would save. A commitment's cost is ``rate x (1 - d) x every hour`` against
``rate x busy hours`` on demand, so it saves only where the discount ``d`` exceeds the idle share of
the term, ``1 - busy hours / term``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.models.kb import Provider
from engine.planning.ranking import Ranked
from engine.sizing.units import HOURS_PER_MONTH

MIN_GPUS = 8
"""a node's worth of GPUs: below it a commitment is a smaller decision than the answer's"""
MIN_MONTHS = 12
"""the shortest term the providers publish"""


def commitment_warning(
    top: Sequence[Ranked], providers: Mapping[str, Provider], horizon_hours: float
) -> str | None:
    """For a first option rented on demand, of at least MIN_GPUS GPUs, costed over at least a year of
    use (not one run), from a provider that publishes committed terms: the terms within the horizon,
    and where they pay (None otherwise)."""
    if not top:
        return None
    candidate = top[0].candidate
    option, costs = candidate.option, candidate.costs
    offer = option.offer
    if option.acquisition != "rent" or option.price_kind != "on_demand" or offer is None:
        return None
    provider = providers.get(offer.provider)
    months = horizon_hours / HOURS_PER_MONTH
    if (
        provider is None
        or candidate.gpu_count < MIN_GPUS
        or months < MIN_MONTHS
        or costs.run_hours is not None
    ):
        return None
    terms = provider.commitment
    if terms is None:
        return None
    use = min(1.0, costs.busy_hours / horizon_hours)
    # a term longer than the horizon would pay for months the plan does not need
    fitting = [m for m in terms.terms_months if m <= months + 0.5]
    if not fitting:
        return None
    lengths = " or ".join(str(m) for m in fitting)
    point = costs.horizon_cost_usd / use / 100  # one point of discount on every hour of the term
    where = (
        f"this plan uses every hour of it, so each point of discount saves ${point:,.0f}"
        if use >= 0.995
        else f"at the {use:.0%} use costed here it saves only above {1 - use:.0%} off, "
        f"each point beyond saving ${point:,.0f}"
    )
    return (
        f"#1 rents {candidate.gpu_count} GPUs on demand for {months:,.0f} months "
        f"(${costs.horizon_cost_usd:,.0f} at the prices shown). {provider.name} sells {lengths}-month "
        f"commitments, {terms.name}, at up to {terms.max_discount_pct:g}% off on-demand: ask for a quote "
        f"for this GPU before signing. A commitment is paid for every hour of its term, used or not; {where}."
    )
