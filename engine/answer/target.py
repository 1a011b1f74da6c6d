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
from engine.planning.planner import Candidate, Planner, Rejection, Spec
from engine.planning.search import Searcher, as_asked
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
    """Whether the job fits `target` as asked, by how much, the ways to make it run, and the best plan
    on it (`on_target`) or why none passes (`rejections` of its options)."""
    gpu = kb.gpus[target.gpu]
    capacity = gpu.usable_memory_gb or gpu.memory_gb
    usable = planner.usable_on(gpu)
    per_node = min(target.count, max(gpu.link_domain_gpus, 1))
    asked = planner.job.task
    precision = "nf4" if asked == "qlora" else planner.precision_on(gpu)
    totals = {spec: planner.memory(spec.layout).total for spec in planner.specs(target.count, per_node)}
    if not totals:  # the parallelism allowed cannot spread this task over that many GPUs
        return TargetFit(
            gpu=gpu.id,
            count=target.count,
            fits=False,
            per_gpu_gb=0.0,
            vram_per_gpu_gb=capacity,
            why=f"No allowed way to run {task_title(planner.job.task)} on {target.count} GPUs "
            f"(parallelism allowed: {', '.join(sorted(planner.strategies)) or 'none'}).",
            alternatives=[],
        )
    # As asked: the method and precision requested, in GPU memory (offload is a way out, listed below).
    as_asked = [
        t
        for s, t in totals.items()
        if s.layout.method == asked and s.layout.precision == precision and not s.layout.offload
    ]
    least = min(as_asked) if as_asked else min(totals.values())
    fits = least <= usable
    alternatives: list[str] = []
    for spec, total in totals.items():
        if total > usable:
            continue
        label = _alternative(spec, asked, precision, target.count)
        if label and label not in alternatives:
            alternatives.append(label)
    if not fits:
        alternatives.extend(_scale_out(kb, planner, gpu.id, target.count, asked, precision))
    count = f"{target.count} x " if target.count > 1 else ""
    verdict = "fits" if fits else "does not fit"
    text = (
        f"{task_title(asked)} in {precision} needs {least / GB:.1f} GB per GPU at best "
        f"on {count}{gpu.name} "
        f"(each {planner.room(gpu)}): it {verdict}."
    )
    if not fits and alternatives:
        text += " Ways to make it run: " + "; ".join(alternatives) + "."
    held_back = next(
        (r for r in rejections if r.option.gpu.id == gpu.id and r.option.count == target.count),
        None,
    )
    if on_target is None and fits and held_back is not None:
        text += f" But no plan on it passes every constraint: {held_back.reason}"
        text += "" if text.endswith(".") else "."
    if on_target is not None:
        changed = substitute_words(on_target, planner.job, precision)
        text += (
            f" Best plan on it: {plan_words(on_target)}{changed}, "
            f"{on_target.memory.total / GB:.1f} GB per GPU, {speed_words(on_target)}, "
            f"{total_words(on_target)}."
        )
    return TargetFit(
        gpu=gpu.id,
        count=target.count,
        fits=fits,
        per_gpu_gb=gb(least),
        vram_per_gpu_gb=capacity,
        why=text,
        alternatives=alternatives,
        throughput=throughput_of(on_target) if on_target else None,
        cost=cost_of(on_target) if on_target else None,
        plan=plan_words(on_target) if on_target else None,
    )


def _scale_out(kb: KB, planner: Planner, gpu_id: str, count: int, asked: str, precision: str) -> list[str]:
    gpu = kb.gpus[gpu_id]
    for more in (2, 4, 8, 16, 32, 64):
        if more <= count:
            continue
        per_node = min(more, max(gpu.link_domain_gpus, 1))
        for spec in planner.fitting(more, per_node, gpu):
            layout = spec.layout
            if layout.method == asked and layout.precision == precision and not layout.offload:
                return [f"{'+'.join(spec.parallelism) or spec.strategy} over {more} GPUs"]
    return []


def _is_target(candidate: Candidate, target: HardwareCount) -> bool:
    return candidate.option.gpu.id == target.gpu and candidate.gpu_count == target.count


def _alternative(spec: Spec, asked: str, precision: str, count: int) -> str | None:
    layout = spec.layout
    if layout.method != asked:
        return layout.method
    if layout.precision != precision:
        # Lower precision is a way out for inference (quantization); in training it saves nothing here.
        return f"{layout.precision} weights" if asked == "inference" else None
    if layout.offload:
        return "offload optimizer states to CPU memory (slow)"
    if spec.parallelism:
        return f"{'+'.join(spec.parallelism)} over {count} GPUs"
    if layout.checkpointing:
        return "activation checkpointing"
    return None
