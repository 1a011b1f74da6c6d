"""The figures the report's charts plot, read from the answer alone (`RecommendResponse`): each
option's cost and time with the Pareto front, the best bought and rented option with the month buying
starts to pay, and the parts of each option's memory. Pure functions, no plotting library: the report
uses them for its captions, engine/answer/charts.py for its charts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.models.response import Recommendation, RecommendResponse

MEMORY_PARTS = (
    ("weights", "weights_per_gpu_gb"),
    ("gradients", "gradients_per_gpu_gb"),
    ("optimizer", "optimizer_per_gpu_gb"),
    ("activations", "activations_per_gpu_gb"),
    ("KV cache", "kv_cache_per_gpu_gb"),
    ("overhead", "overhead_per_gpu_gb"),
)


@dataclass(frozen=True)
class Point:
    label: str
    time: float
    cost: float
    acquisition: str
    rank: int = 0


def option_label(rec: Recommendation) -> str:
    where = rec.provider or rec.acquisition
    return f"#{rec.rank} {rec.gpu_count} x {rec.gpu} ({where})"


def cost_time_points(answer: RecommendResponse, months: float) -> tuple[list[Point], str, str]:
    """Each option's (time, cost), and the axis titles: training runs by hours and the cost the ranking
    weighs (`horizon_cost_usd`: the run, a purchase paying its whole price, or the stated use over the
    horizon; docs/ranking.md's C), as is a corpus to embed, costed as a run; serving by milliseconds
    per token and cost per month."""
    training = answer.requirements.method != "inference"
    recs = answer.recommendations
    corpus = not training and bool(recs) and all(r.throughput.corpus_hours is not None for r in recs)
    corpus = corpus and all(r.cost.gpu_hours is not None for r in recs)  # each costed as a run
    points: list[Point] = []
    for rec in recs:
        if training or corpus:
            hours = rec.throughput.training_hours if training else rec.throughput.corpus_hours
            cost = rec.cost.horizon_cost_usd
            if hours is None:
                continue
            points.append(Point(option_label(rec), hours, cost, rec.acquisition, rec.rank))
        elif rec.throughput.tokens_per_s > 0:
            cost = rec.cost.horizon_cost_usd / max(1.0, months)
            points.append(
                Point(
                    option_label(rec), 1000.0 / rec.throughput.tokens_per_s, cost, rec.acquisition, rec.rank
                )
            )
    if training or corpus:
        run = "training run" if training else "corpus embedded"
        return points, f"{run}, hours", "cost as ranked, USD (a purchase pays its whole price)"
    return points, "time per generated token, ms", "cost per month, USD (capex spread over the horizon)"


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """The options no other is both at most as slow and cheaper than, fastest first."""
    front: list[Point] = []
    for point in sorted(points, key=lambda p: (p.time, p.cost)):
        if not front or point.cost < front[-1].cost:
            front.append(point)
    return front


def break_even(
    answer: RecommendResponse, months: float
) -> tuple[Recommendation, Recommendation, float | None] | None:
    """The best bought and the best rented option, and the month from which buying costs less (None
    when it never does within the horizon)."""
    bought = next((r for r in answer.recommendations if r.acquisition == "buy"), None)
    rented = next((r for r in answer.recommendations if r.acquisition == "rent"), None)
    if bought is None or rented is None:
        return None
    saving = rented.cost.monthly_usd - bought.cost.monthly_usd
    month = bought.cost.capex_usd / saving if saving > 0 else None
    if month is not None and month > months:
        month = None
    return bought, rented, month
