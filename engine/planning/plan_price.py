"""What a plan costs: the option's costs at the request's use (cost of use worked out once per run
length), with whether it is within the budget written among the plan's attributes."""

from __future__ import annotations

from collections.abc import Mapping

from engine.models.request import RecommendRequest
from engine.models.rule import Scalar
from engine.planning.candidates import Option
from engine.planning.economics import Costs, Usage, costs, spend, usage
from engine.planning.performance import Speed
from engine.planning.workload import Job


class PlanPricing:
    def __init__(
        self,
        job: Job,
        request: RecommendRequest,
        *,
        rent_rates: Mapping[str, float],
        buy_prices: Mapping[str, float],
    ) -> None:
        """`rent_rates` (cheapest on-demand $/GPU-hour per GPU id) and `buy_prices` (latest new price
        per GPU id) are the KB's, for the break-even figures."""
        self.job = job
        self.request = request
        self.usage_memo: dict[float | None, Usage] = {}
        """the cost of use per run length (the offers of one GPU run a spec alike)"""
        self.rent_rates = rent_rates
        self.buy_prices = buy_prices

    def usage(self, run_hours: float | None) -> Usage:
        found = self.usage_memo.get(run_hours)
        if found is None:
            c = self.request.constraints
            found = usage(self.job.utilization, run_hours, self.job.horizon_hours, c.electricity_usd_per_kwh)
            self.usage_memo[run_hours] = found
        return found

    def priced(
        self, option: Option, copies: int, run_hours: float | None, speed: Speed, attrs: dict[str, Scalar]
    ) -> Costs:
        """The option's costs, with `within_budget` written into `attrs`."""
        priced = costs(
            option,
            copies,
            self.usage(run_hours),
            speed.aggregate_tokens_per_s,
            rent_per_gpu_hour=self.rent_rates.get(option.gpu.id),
            buy_per_gpu=self.buy_prices.get(option.gpu.id),
        )
        budget = self.request.constraints.budget_usd
        attrs["within_budget"] = budget is None or spend(priced, option.acquisition) <= budget
        return priced
