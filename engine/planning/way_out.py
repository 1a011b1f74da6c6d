"""The way out of an infeasible request: the one hard constraint whose lifting gives the option the
objective ranks first, else, when only time helps, the fastest run once the deadline (and the budget)
are lifted. It chooses; engine/answer/relaxation.py words the choice."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.planning.economics import spend
from engine.planning.plan_checks import MEMORY_RULE
from engine.planning.planner import Candidate, Planner
from engine.planning.search import Measure, Search, best_when_lifted, relaxed_objective


@dataclass(frozen=True)
class WayOut:
    rule: str
    """the rule whose filter is lifted (the deadline rule when only more time helps)"""
    candidate: Candidate
    """the option the objective ranks first once it is lifted (for more time: the fastest)"""
    lifted: tuple[str, ...]
    """every rule lifted: one, or the deadline and the budget together"""
    more_time: bool = False
    """the deadline is among the rules lifted: the way out is more time"""

    @property
    def spent(self) -> float:
        """What the way out costs as a budget counts it (`economics.spend`)."""
        return spend(self.candidate.costs, self.candidate.option.acquisition)


def find_way_out(planner: Planner, search: Search, objective: str, measure: Measure) -> WayOut | None:
    """The hard constraint whose lifting gives the option the objective ranks first (`cheapest` and
    `fastest`: the cheapest), when nothing passes them all."""
    rules = sorted(
        {r.rule for r in search.rejections if r.rule != MEMORY_RULE and r.rule != planner.checks.fits_rule}
    )
    deadline, budget = planner.policy.role("deadline"), planner.policy.role("budget")
    best: tuple[float, str, Candidate] | None = None
    # A way out that runs the job as asked (method, precision, states on the GPUs) first, as
    # the search does; substitutes only when lifting no single rule allows that.
    for asked_only in (True, False):
        for rule in rules:
            # Only options this rule rejected can change when it is lifted: the others were
            # rejected by rules that still hold (a rejection records every rule that rejected it).
            touched = [r.option for r in search.rejections if r.rejected_by(rule)]
            if rule == deadline:
                continue  # more time is no way out when a cheaper rule is: tried last, by speed
            relaxed = planner.without(rule, as_asked_only=asked_only)
            found = best_when_lifted(relaxed, touched, objective, best[0] if best else None, measure)
            if found is not None:
                value = measure(found, relaxed_objective(objective), planner.per_user_tps)
                if best is None or value < best[0]:
                    best = (value, rule, found)
        if best is not None:
            break
    if best is None and (deadline in rules or budget in rules):
        # The budget screens options before they are sized, so a deadline they would miss may not
        # show among the rejections: lifting the budget alone finds nothing, and the two together
        # say what the job takes at best (a 405B pretraining on a $1,000 budget).
        return _more_time(planner, search, rules, deadline, budget)
    if best is None:
        return None
    _, rule, cheapest = best
    return WayOut(rule, cheapest, (rule,))


def _more_time(
    planner: Planner, search: Search, rules: Sequence[str], deadline: str | None, budget: str | None
) -> WayOut | None:
    """When only a later deadline (and perhaps more money) helps: the fastest option once the
    deadline and the budget are lifted (the rules holding those roles), which says how long the run
    takes at best."""
    lifted = tuple(
        rule for rule in (deadline, budget) if rule is not None and (rule == deadline or rule in rules)
    )
    if not lifted:
        return None
    relaxed = planner
    for rule in lifted:
        relaxed = relaxed.without(rule)
    touched = [r.option for r in search.rejections if any(r.rejected_by(rule) for rule in lifted)]
    found = [c for o in touched if isinstance(c := relaxed.plan(o), Candidate)]
    timed = [c for c in found if c.run_hours is not None]
    if not timed:
        return None
    fastest = min(timed, key=lambda c: (c.run_hours or 0.0, c.costs.horizon_cost_usd))
    # named by a rule that rejected something: the budget, when it screened options out before any
    # could miss the deadline
    named = deadline if deadline in rules else budget
    return WayOut(named or lifted[0], fastest, lifted, more_time=deadline in lifted)
