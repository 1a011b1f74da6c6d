"""The answer on the hardware the user named (`constraints.target_hardware`, or a choice compared), in
words: its best plan, whether the job fits it, by how much, and the ways to make it run (planned by
engine/planning/on_hardware.py)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.answer.explain import held_words, plan_words, speed_words, total_words
from engine.answer.parts import cost_of, gb, substitute_words, task_title, throughput_of
from engine.models.response import TargetFit
from engine.planning.on_hardware import OnTarget
from engine.planning.plan_checks import Rejection
from engine.planning.planner import Candidate
from engine.planning.workload import Job
from engine.sizing import GB


def fit_on(job: Job, target: OnTarget) -> TargetFit:
    """Whether the job fits the named hardware as asked, by how much, the ways to make it run, and
    the best plan on it or why none passes, in words (planning's `OnTarget`)."""
    gpu, fit, on_target = target.gpu, target.fit, target.best
    capacity = gpu.usable_memory_gb or gpu.memory_gb
    reported = round(fit.reported / GB, 1)  # as a recommendation's `memory.reported_gb`
    asked = job.task
    if not fit.spreads:
        return TargetFit(
            gpu=gpu.id,
            gpu_name=gpu.name,
            count=target.count,
            fits=False,
            per_gpu_gb=0.0,
            vram_per_gpu_gb=capacity,
            reported_gb=reported,
            why=f"No allowed way to run {task_title(asked)} on {target.count} GPUs "
            f"(parallelism allowed: {', '.join(fit.strategies) or 'none'}).",
            alternatives=[],
        )
    count = f"{target.count} x " if target.count > 1 else ""
    text = (
        f"{task_title(asked)} in {fit.precision} needs {fit.least / GB:.1f} GB per GPU at best "
        f"on {count}{gpu.name} (each {fit.room}): it {'fits' if fit.fits else 'does not fit'}."
    )
    if not fit.fits and fit.alternatives:
        text += " Ways to make it run: " + "; ".join(fit.alternatives) + "."
    text += _held_back_words(gpu.id, target.count, on_target, fit.fits, target.rejections)
    if on_target is not None:
        changed = substitute_words(on_target, job, fit.precision)
        text += (
            f" Best plan on it: {plan_words(on_target)}{changed}, "
            f"{held_words(on_target)}, {speed_words(on_target)}, "
            f"{total_words(on_target)}."
        )
    return TargetFit(
        gpu=gpu.id,
        gpu_name=gpu.name,
        count=target.count,
        fits=fit.fits,
        per_gpu_gb=gb(fit.least),
        vram_per_gpu_gb=capacity,
        reported_gb=reported,
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


def target_warning(fit: TargetFit | None) -> str | None:
    """The warning that named hardware cannot run the task as asked, with the need its plan found
    (the pre-sizing rule's one-GPU estimate is overruled once the target is planned: for a full
    fine-tune of an 8B model on one H100 it said 186 GB where the plan needs 156.5 GB at best)."""
    if fit is None or fit.fits:
        return None
    count = f"{fit.count} x " if fit.count > 1 else ""
    if fit.per_gpu_gb <= 0:  # no allowed way to spread it over the GPUs named
        return f"The target {count}{fit.gpu_name} cannot run this task as asked: {fit.why}"
    ways = f" Ways to make it run: {'; '.join(fit.alternatives)}." if fit.alternatives else ""
    each = " each" if fit.count > 1 else ""
    return (
        f"The target {count}{fit.gpu_name} ({fit.vram_per_gpu_gb:g} GB{each}) cannot run this task as "
        f"asked: it needs {fit.per_gpu_gb:.1f} GB per GPU at best.{ways}"
    )
