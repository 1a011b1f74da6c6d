"""Everything planning concludes for a request before a word of the answer is written: the search's
plans and rejections, the ranking's first `top_k`, the named target planned, the precision and needs
the answer states, and the way out when nothing passes; for a comparison, each choice planned and
the choices ranked. The Advisor (engine/recommend.py) finds these, then the answer layer describes
them: once describing starts, nothing goes back to planning (bench/call_path.py counts it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from engine.models.compare import Choice
from engine.models.request import MAX_TOP_K, RecommendRequest
from engine.models.response import Requirements
from engine.planning.candidates import Context
from engine.planning.on_hardware import Judged, OnTarget, judge, on_target, plan_on, ranked_choices
from engine.planning.planner import Candidate, Planner
from engine.planning.ranking import Outranked, Ranked, measure, outranked, rank
from engine.planning.requirements import requirements, workload_assumptions
from engine.planning.search import Search, Searcher, as_asked
from engine.planning.way_out import WayOut, find_way_out
from engine.planning.workload import Job


@dataclass(frozen=True)
class Needs:
    """What the answer states the whole job needs, sized as planned, and what the request left open
    that the engine filled in."""

    precision: str
    requirements: Requirements
    workload_assumptions: dict[str, float | str]


@dataclass(frozen=True)
class Found:
    """A recommendation's findings."""

    search: Search
    top: list[Ranked]
    outranked: dict[int, tuple[Outranked, Ranked]]
    """by index in `top`: a faster, cheaper option ranked after it (among the first MAX_TOP_K, what a
    report plots), and why this one ranks first"""
    target: OnTarget | None
    way_out: WayOut | None
    needs: Needs
    owned: tuple[tuple[int, Ranked], ...] = ()
    """the best plan on each kind of hardware the user owns, with its place in the ranking (1 first)"""
    owned_instead: tuple[Candidate, ...] = ()
    """for each kind of owned hardware with no plan in the ranking, its best plan that changes the
    method or precision where the rules allow it: what its owner can run on it instead"""

    def shown(self, count: int) -> Found:
        """The findings with only the first `count` options shown (what the rest plots is planned
        already: a report states the answer as asked and plots more)."""
        if count >= len(self.top):
            return self
        outranked = {i: found for i, found in self.outranked.items() if i < count}
        return dataclasses.replace(self, top=self.top[:count], outranked=outranked)


@dataclass(frozen=True)
class FoundChoices:
    """A comparison's findings: each choice planned, in the order asked, and those with a plan ranked."""

    judged: list[Judged]
    ranked: dict[int, Ranked]
    needs: Needs


def find(
    searcher: Searcher,
    every_plan: Planner,
    ctx: Context,
    request: RecommendRequest,
    *,
    seek_way_out: bool = True,
) -> Found:
    """Plan `request`: first the plans that keep the requested method and precision; the substitutes
    are sized only when none of those passes (they would be dropped by `as_asked` anyway). What
    follows reads the planner whose plans the answer shows. Without `seek_way_out`, a request with
    no plan is not searched for the constraint to give up (a trial whose failure is not shown)."""
    planner = every_plan.asked_only(True)
    search = searcher.search(planner, ctx, request.constraints.gpu_count)
    if not search.candidates:
        planner = every_plan
        search = searcher.search(planner, ctx, request.constraints.gpu_count)
    ranked = rank(as_asked(search.candidates, planner.job), request.objective, planner.per_user_tps)
    top = ranked[: request.top_k]
    plotted = ranked[:MAX_TOP_K]
    beaten = {
        o.above: (o, plotted[o.below])
        for o in outranked(plotted, request.objective, len(top), planner.per_user_tps)
    }
    target = on_target(searcher, planner, ctx, request, ranked, search.rejections)
    way_out = None if top or not seek_way_out else find_way_out(planner, search, request.objective, measure)
    needs = needs_of(planner, planned_precision(top, planner), planned_checkpointing(top, planner.job))
    owned = owned_places(ranked)
    instead = owned_instead(searcher, planner, ctx, request, owned)
    return Found(search, top, beaten, target, way_out, needs, owned, instead)


def owned_instead(
    searcher: Searcher,
    planner: Planner,
    ctx: Context,
    request: RecommendRequest,
    owned: Sequence[tuple[int, Ranked]],
) -> tuple[Candidate, ...]:
    """For each kind of hardware the user owns that has no plan in the ranking, all its cards planned
    as a named target is (`on_hardware.plan_on`): the best plan that changes the method or precision
    where the rules allow it. A full fine-tune an owned 24 GB card cannot hold runs there as LoRA:
    its owner asks that next."""
    planned = {found.candidate.option.gpu.id for _, found in owned}
    instead = []
    for item in request.constraints.existing_hardware:
        if item.gpu not in planned:
            best = plan_on(searcher, planner, ctx, item.gpu, item.count, "owned").best
            if best is not None:
                instead.append(best)
    return tuple(instead)


def owned_places(ranked: Sequence[Ranked]) -> tuple[tuple[int, Ranked], ...]:
    """The best-ranked plan on each kind of owned hardware, with its place (1 first)."""
    seen: set[str] = set()
    places = []
    for place, found in enumerate(ranked, 1):
        option = found.candidate.option
        if option.acquisition == "owned" and option.gpu.id not in seen:
            seen.add(option.gpu.id)
            places.append((place, found))
    return tuple(places)


def find_choices(
    searcher: Searcher, planner: Planner, ctx: Context, choices: Sequence[Choice]
) -> FoundChoices:
    """Plan each choice of a comparison as target hardware is, and rank those with a plan."""
    judged = [judge(searcher, planner, ctx, choice) for choice in choices]
    ranked = ranked_choices(judged, planner)
    checkpointing = planned_checkpointing(list(ranked.values()), planner.job)
    return FoundChoices(judged, ranked, needs_of(planner, planner.base_precision, checkpointing))


def needs_of(planner: Planner, precision: str, checkpointing: bool | None = None) -> Needs:
    job = planner.job
    return Needs(
        precision,
        requirements(job, planner.policy.facts, precision, checkpointing),
        workload_assumptions(job),
    )


def planned_precision(top: Sequence[Ranked], planner: Planner) -> str:
    """The precision the answer sizes the job in: the first recommendation's when it runs the job as
    asked (fp8 on a GPU that computes in it, where the request left precision open), else the
    requested or rule-chosen one, so `requirements` agrees with the best plan."""
    if top and not top[0].candidate.plan_attrs.get("precision_changed"):
        return top[0].candidate.spec.layout.precision
    return planner.base_precision


def planned_checkpointing(top: Sequence[Ranked], job: Job) -> bool | None:
    """Whether the first recommendation, when it runs the requested method, checkpoints activations."""
    if not top or top[0].candidate.spec.layout.method != job.task:
        return None
    return top[0].candidate.spec.layout.checkpointing
