"""The way out of an infeasible request, in words: the request field to relax and what it buys
(the choice is engine/planning/way_out.py's)."""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil

from engine.answer.explain import hardware, plan_words
from engine.answer.explain import money as money_text
from engine.models.response import Relaxation
from engine.models.rule import Rule, facts_in
from engine.planning.planner import Candidate
from engine.planning.way_out import WayOut

INPUT_OF_SIZING_FACT = {
    "sizing.deadline_hours": "workload.job_hours",
    "sizing.per_user_tokens_per_s": "workload.serving.min_tokens_per_s_per_user",
}
"""the request field behind a sizing fact a rule reads, for naming what to relax"""


def relaxation_of(way_out: WayOut, rules: Sequence[Rule], objective: str) -> Relaxation:
    found = way_out.candidate
    constraint = constraint_of(rules, way_out.rule)
    spent = money_text(way_out.spent)
    if way_out.more_time:
        hours = found.run_hours or 0.0
        what = "more time and a bigger budget help" if len(way_out.lifted) > 1 else "more time helps"
        message = (
            f"Among the offers, only {what}: the fastest option, {hardware(found)}, {plan_words(found)}, "
            f"takes {duration_words(hours)} and spends {spent}.{larger_cluster_words(found)}"
        )
    else:
        way = "best" if objective == "balanced" else "cheapest"
        message = (
            f"The {way} way out is relaxing {constraint} (rule {way_out.rule}): {hardware(found)}, "
            f"{plan_words(found)}, spending {spent}."
        )
    return Relaxation(constraint=constraint, rule=way_out.rule, message=message)


LARGEST_CLUSTER_GPUS = 1_000_000
"""more GPUs than any one training cluster holds (the largest announced in 2025 hold 100-200 thousand)"""


def larger_cluster_words(fastest: Candidate) -> str:
    """For a training run past its deadline on the largest offer: the GPUs it would take to finish in
    time at the same speed a GPU, a cluster beyond the offers (rented offers reach 8 nodes). A lower
    bound: a larger cluster adds communication, which data parallelism hides behind the compute only
    while each GPU keeps enough tokens a step."""
    share = fastest.deadline_share
    if share is None or share <= 1 or fastest.spec.layout.method == "inference":
        return ""
    if not fastest.gpu_count * share <= LARGEST_CLUSTER_GPUS:  # also a share past float's range
        return (
            f" At its speed a GPU, finishing in time would take more than {LARGEST_CLUSTER_GPUS:,} "
            f"{fastest.option.gpu.name} GPUs: no cluster finishes it in time."
        )
    needed = ceil(fastest.gpu_count * share)
    return (
        f" At its speed a GPU, finishing in time takes at least {needed:,} {fastest.option.gpu.name} GPUs,"
        f" a cluster larger than the {fastest.gpu_count} an offer here holds (a reserved cluster, priced"
        " by quote)."
    )


def constraint_of(rules: Sequence[Rule], rule_id: str) -> str:
    """The request field a rule's filter turns on: a constraint it reads, else the input behind a
    sizing fact it reads, else the rule's id."""
    rule = next(r for r in rules if r.id == rule_id)
    read = [name for name, _ in facts_in(rule.when)]
    found = next((name for name in read if name.startswith("constraints.")), None)
    found = found or next((INPUT_OF_SIZING_FACT[name] for name in read if name in INPUT_OF_SIZING_FACT), None)
    return found or rule_id


def duration_words(hours: float) -> str:
    """A run's length as a reader weighs it: tenths of an hour for a short run, whole hours and days
    for a long one."""
    if hours < 10:
        return f"{hours:,.1f} h"
    if hours < 48:
        return f"{hours:,.0f} h"
    return f"{hours:,.0f} h ({hours / 24:,.0f} days)"
