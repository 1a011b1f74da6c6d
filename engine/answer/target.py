"""The answer on the hardware the user named (`constraints.target_hardware`): its best plan, and
whether the job fits it, by how much, and the ways to make it run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.answer.explain import plan_words, speed_words, total_words
from engine.answer.parts import cost_of, gb, substitute_words, task_title, throughput_of
from engine.answer.ranking import Ranked, rank
from engine.knowledge.kb import KB
from engine.models.request import HardwareCount, RecommendRequest
from engine.models.response import TargetFit
from engine.planning.candidates import Context
from engine.planning.plan_checks import Rejection
from engine.planning.planner import Candidate, Planner
from engine.planning.search import Searcher, as_asked
from engine.planning.target_fit import fit_of
from engine.sizing import GB


@dataclass(frozen=True)
class OnHardware:
    """The plans of one GPU model x count: the best by the objective, and why the others have none."""

    best: Candidate | None
    rejections: tuple[Rejection, ...]
    options: int
    """how many ways to get that hardware the KB offers (0: none, e.g. no offer rents that count)"""


def on_target(
    searcher: Searcher, planner: Planner, ctx: Context, request: RecommendRequest, ranked: Sequence[Ranked]
) -> Candidate | None:
    """The best plan on the request's target hardware: the ranking's, else one that changes the
    method or precision where the rules allow it (someone asking "will it run on my card?" wants
    the way it runs there, even when another GPU runs it as asked)."""
    target = request.constraints.target_hardware
    if target is None:
        return None
    found = next((r.candidate for r in ranked if _is_target(r.candidate, target)), None)
    if found is not None:
        return found
    return plan_on(searcher, planner, ctx, target.gpu, target.count).best


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
    best = rank(as_asked(plans), planner.request.objective, planner.per_user_tps)
    rejections = tuple(r for r in results if isinstance(r, Rejection))
    return OnHardware(best[0].candidate if best else None, rejections, len(options))


def fit_on(
    kb: KB,
    planner: Planner,
    target: HardwareCount,
    on_target: Candidate | None = None,
    rejections: Sequence[Rejection] = (),
) -> TargetFit:
    """Whether the job fits `target` as asked, by how much, the ways to make it run (planning's
    `fit_of`), and the best plan on it (`on_target`) or why none passes (`rejections` of its
    options), in words."""
    gpu = kb.gpus[target.gpu]
    capacity = gpu.usable_memory_gb or gpu.memory_gb
    fit = fit_of(planner, gpu, target.count)
    asked = planner.job.task
    if not fit.spreads:
        return TargetFit(
            gpu=gpu.id,
            count=target.count,
            fits=False,
            per_gpu_gb=0.0,
            vram_per_gpu_gb=capacity,
            why=f"No allowed way to run {task_title(asked)} on {target.count} GPUs "
            f"(parallelism allowed: {', '.join(sorted(planner.space.strategies)) or 'none'}).",
            alternatives=[],
        )
    count = f"{target.count} x " if target.count > 1 else ""
    text = (
        f"{task_title(asked)} in {fit.precision} needs {fit.least / GB:.1f} GB per GPU at best "
        f"on {count}{gpu.name} (each {planner.fit.room(gpu)}): it {'fits' if fit.fits else 'does not fit'}."
    )
    if not fit.fits and fit.alternatives:
        text += " Ways to make it run: " + "; ".join(fit.alternatives) + "."
    text += _held_back_words(gpu.id, target.count, on_target, fit.fits, rejections)
    if on_target is not None:
        changed = substitute_words(on_target, planner.job, fit.precision)
        text += (
            f" Best plan on it: {plan_words(on_target)}{changed}, "
            f"{on_target.memory.total / GB:.1f} GB per GPU, {speed_words(on_target)}, "
            f"{total_words(on_target)}."
        )
    return TargetFit(
        gpu=gpu.id,
        count=target.count,
        fits=fit.fits,
        per_gpu_gb=gb(fit.least),
        vram_per_gpu_gb=capacity,
        why=text,
        alternatives=list(fit.alternatives),
        throughput=throughput_of(on_target) if on_target else None,
        cost=cost_of(on_target) if on_target else None,
        plan=plan_words(on_target) if on_target else None,
    )


def _held_back_words(
    gpu_id: str, count: int, on_target: Candidate | None, fits: bool, rejections: Sequence[Rejection]
) -> str:
    """When the job fits but no plan there passes every constraint: the first reason."""
    held_back = next((r for r in rejections if r.option.gpu.id == gpu_id and r.option.count == count), None)
    if on_target is not None or not fits or held_back is None:
        return ""
    reason = held_back.reason
    return f" But no plan on it passes every constraint: {reason}" + ("" if reason.endswith(".") else ".")


def _is_target(candidate: Candidate, target: HardwareCount) -> bool:
    return candidate.option.gpu.id == target.gpu and candidate.gpu_count == target.count
