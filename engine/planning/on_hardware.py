"""Planning on hardware the user names: the best plan on `count` x `gpu` and whether the job fits it
as asked, for the request's target (`constraints.target_hardware`) and for each choice of a comparison
("why not X?"), and the choices ordered by the objective. The answer layer words the results
(engine/answer/target.py, engine/answer/compare.py); it plans nothing itself."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from engine.models.compare import Choice
from engine.models.kb import Gpu
from engine.models.request import HardwareCount, RecommendRequest
from engine.planning.candidates import Context
from engine.planning.plan_checks import Rejection
from engine.planning.planner import Candidate, Planner
from engine.planning.ranking import Ranked, measure, rank
from engine.planning.search import Searcher, as_asked, ranks_as_asked
from engine.planning.target_fit import Fit, fit_of


@dataclass(frozen=True)
class OnHardware:
    """The plans of one GPU model x count: the best by the objective, and why the others have none."""

    best: Candidate | None
    rejections: tuple[Rejection, ...]
    options: int
    """how many ways to get that hardware the KB offers (0: none, e.g. no offer rents that count)"""


@dataclass(frozen=True)
class OnTarget:
    """The hardware a user named, planned: how the job fits it as asked, its best plan (None when no
    plan there passes every constraint) and the rejections that say why."""

    gpu: Gpu
    count: int
    fit: Fit
    best: Candidate | None
    rejections: tuple[Rejection, ...]
    precision: str
    """the precision the job runs in on this GPU as asked (the default one when the request states
    none: then a change is not 'as asked')"""


def plan_on(
    searcher: Searcher, planner: Planner, ctx: Context, gpu: str, count: int, acquisition: str | None = None
) -> OnHardware:
    """Every option of `count` x `gpu` (got the way `acquisition` says, else any way) planned, the
    method or precision changed where the rules allow it when nothing runs the job as asked; the
    best plan by the request's objective."""
    options = [
        o
        for o in searcher.options(ctx, planner.request.constraints.gpu_count)
        if o.gpu.id == gpu and o.count == count and (acquisition is None or o.acquisition == acquisition)
    ]
    every_plan = planner.asked_only(False)
    results = [every_plan.plan(o) for o in options]
    plans = [p for p in results if isinstance(p, Candidate)]
    best = rank(as_asked(plans, planner.job), planner.request.objective, planner.per_user_tps)
    rejections = tuple(r for r in results if isinstance(r, Rejection))
    return OnHardware(best[0].candidate if best else None, rejections, len(options))


def on_target(
    searcher: Searcher,
    planner: Planner,
    ctx: Context,
    request: RecommendRequest,
    ranked: Sequence[Ranked],
    rejections: Sequence[Rejection],
) -> OnTarget | None:
    """The request's target hardware planned (None when it names none). Its best plan is the
    ranking's, else one that changes the method or precision where the rules allow it (someone
    asking "will it run on my card?" wants the way it runs there, even when another GPU runs it as
    asked); `rejections` are the search's, which say why no plan on it passes."""
    target = request.constraints.target_hardware
    if target is None:
        return None
    best = next((r.candidate for r in ranked if _is_target(r.candidate, target)), None)
    if best is None:
        best = plan_on(searcher, planner, ctx, target.gpu, target.count).best
    return _planned_on(planner, searcher.graph.kb.gpus[target.gpu], target.count, best, rejections)


@dataclass(frozen=True)
class Judged:
    """One choice of a comparison planned: its plans and how the job fits it."""

    choice: Choice
    on: OnHardware
    target: OnTarget


def judge(searcher: Searcher, planner: Planner, ctx: Context, choice: Choice) -> Judged:
    """Plan `choice` in the request's context, with its GPU count among the counts offered and, when
    it is owned, the GPUs among those the user owns."""
    on = plan_on(searcher, planner, choice_context(ctx, choice), choice.gpu, choice.count, choice.acquisition)
    gpu = searcher.graph.kb.gpus[choice.gpu]
    return Judged(choice, on, _planned_on(planner, gpu, choice.count, on.best, on.rejections))


def choice_context(ctx: Context, choice: Choice) -> Context:
    owned = dict(ctx.owned)
    if choice.acquisition == "owned":
        owned[choice.gpu] = max(owned.get(choice.gpu, 0), choice.count)
    return dataclasses.replace(
        ctx,
        owned=tuple(sorted(owned.items())),
        extra_counts=ctx.extra_counts | {(choice.gpu, choice.count)},
    )


def ranked_choices(judged: Sequence[Judged], planner: Planner) -> dict[int, Ranked]:
    """The choices that have a plan, by index, best first: those that run the job as asked (or its
    quantized form on owned hardware) before those that change its method or precision, as in a
    recommendation (`search.ranks_as_asked`), then by the request's objective, then in the order
    asked. Each score is the first's measure over its own."""
    objective, floor = planner.request.objective, planner.per_user_tps
    measured = sorted(
        (not ranks_as_asked(j.on.best, planner.job), measure(j.on.best, objective, floor), i, j.on.best)
        for i, j in enumerate(judged)
        if j.on.best
    )
    if not measured:
        return {}
    first = measured[0][1]
    return {
        i: Ranked(round(first / value, 6) if value > 0 else 1.0, candidate, value)
        for _, value, i, candidate in measured
    }


def _planned_on(
    planner: Planner, gpu: Gpu, count: int, best: Candidate | None, rejections: Sequence[Rejection]
) -> OnTarget:
    per_node = best.option.gpus_per_node if best is not None else None
    fit = fit_of(planner, gpu, count, per_node)
    return OnTarget(gpu, count, fit, best, tuple(rejections), planner.precision_on(gpu))


def _is_target(candidate: Candidate, target: HardwareCount) -> bool:
    return candidate.option.gpu.id == target.gpu and candidate.gpu_count == target.count
