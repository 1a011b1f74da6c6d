"""Whether a job fits the hardware a user named, as asked: the least memory per GPU any plan of the
requested method and precision needs there, and the ways that make it run when it does not. The
answer layer words it (engine/answer/target.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from engine.models.kb import Gpu
from engine.planning.memory import per_gpu, reported_bytes, runs_fused_loss
from engine.planning.plan_space import Spec
from engine.planning.planner import Planner
from engine.planning.workload import Job
from engine.sizing import GB

SCALE_OUT_COUNTS = (2, 4, 8, 16, 32, 64)
"""GPU counts tried, beyond the target's, for a plan as asked when it does not fit"""


@dataclass(frozen=True)
class Fit:
    precision: str
    """the precision the job runs in as asked there (nf4 for QLoRA)"""
    spreads: bool
    """some allowed layout spreads the task over that many GPUs"""
    least: float
    """bytes per GPU at best, as asked when any plan is (else by any plan); 0 when none spreads"""
    usable: float
    """bytes per GPU a plan may use there"""
    fits: bool
    alternatives: tuple[str, ...]
    """the ways that fit: a fused loss, another method or precision, offload, parallelism, checkpointing,
    more GPUs"""
    room: str
    """what one GPU offers a plan, in words (`PlanFit.room`)"""
    strategies: tuple[str, ...]
    """the parallelism the request allows, for saying why nothing spreads the job"""
    reported: float
    """bytes the driver reports on one GPU, which `usable` is a share of (`reported_bytes`)"""
    kept: tuple[str, ...] = ()
    """the ways among `alternatives` that fit and leave the plan as asked: a fused loss, one sequence
    a micro-step"""


def fit_of(planner: Planner, gpu: Gpu, count: int, per_node: int | None = None) -> Fit:
    """How the job fits `count` x `gpu` as asked, with the ways to make it run; `per_node`: the GPUs one
    machine of the best plan there holds (default: those one NVLink domain joins). Four PCIe RTX 4090s
    in one machine split a 70B model four ways by tensor parallelism, 19.0 GB each; counted one to a
    node, only a pipeline was weighed and the fit said 20.3 GB "at best" beside that plan."""
    usable = planner.fit.usable_on(gpu)
    per_node = per_node or min(count, max(gpu.link_domain_gpus, 1))
    asked = planner.job.task
    precision = "nf4" if asked == "qlora" else planner.precision_on(gpu)
    totals = {spec: planner.fit.need(spec.layout).total for spec in planner.specs(count, per_node)}
    room, strategies = planner.fit.room(gpu), tuple(sorted(planner.space.strategies))
    if not totals:  # the parallelism allowed cannot spread this task over that many GPUs
        return Fit(precision, False, 0.0, usable, False, (), room, strategies, reported_bytes(gpu))
    # As asked: the method and precision requested, in GPU memory (offload is a way out, listed below).
    as_asked = [t for s, t in totals.items() if _as_asked(s, asked, precision)]
    least = min(as_asked) if as_asked else min(totals.values())
    fits = least <= usable
    alternatives: list[str] = []
    kept: tuple[str, ...] = ()
    for spec, total in totals.items():
        label = None if total > usable else _alternative(spec, asked, precision, count)
        if label and label not in alternatives:
            alternatives.append(label)
    if not fits:
        fusible = runs_fused_loss(gpu.platforms)
        fused = _fused_loss(planner, totals, asked, precision, usable) if fusible else None
        smaller = None if fused else _one_sequence(planner, totals, asked, precision, usable, fusible)
        kept = tuple(way for way in (fused, smaller) if way)
        alternatives[:0] = kept  # the changes that leave the plan as it is: first
        alternatives.extend(_scale_out(planner, gpu, count, asked, precision))
    return Fit(
        precision, True, least, usable, fits, tuple(alternatives), room, strategies, reported_bytes(gpu), kept
    )


def _fused_loss(
    planner: Planner, specs: Iterable[Spec], asked: str, precision: str, usable: float
) -> str | None:
    """A fused linear cross-entropy, in words with the memory it leaves, where a training job holds its
    logits (no `workload.fused_loss`) and the least plan as asked fits without them. The logits and the
    loss's tensors take 14 bytes a logit (engine/sizing/kept_activations.py): Llama 3.1 8B's LoRA at
    2 x 2,048 tokens holds 7.4 GB of them, the difference between a 24 GB card and none. Liger Kernel
    computes the loss chunk by chunk (Hsu et al. 2024, arXiv 2410.10989)."""
    job = planner.job
    if job.task == "inference" or job.fused_loss:
        return None
    least = _least_as_asked(replace(job, fused_loss=True), specs, asked, precision)
    if least > usable:
        return None
    return (
        f"a fused cross-entropy loss (workload.fused_loss, as in Liger Kernel), {least / GB:.1f} GB per GPU"
    )


def _one_sequence(
    planner: Planner, specs: Iterable[Spec], asked: str, precision: str, usable: float, fusible: bool
) -> str | None:
    """A training step of one sequence a GPU, accumulating the gradients of the request's batch
    over micro-steps (the same tokens an optimizer step), in words with the memory it needs, where
    the least plan as asked fits that way, with a fused loss if it needs one too. The activations and
    logits a GPU holds grow with the sequences it steps at once (engine/sizing/kept_activations.py):
    LoRA of Llama 3.1 8B at 4 x 8,192 tokens needs 93.1 GB, one sequence at a time with a fused loss
    22.1 GB, within an RTX 4090. `fusible`: the GPU runs a fused loss (`runs_fused_loss`)."""
    job = planner.job
    if job.task == "inference" or job.batch <= 1:
        return None
    specs = list(specs)
    for fused in (False, True) if fusible and not job.fused_loss else (False,):
        single = replace(job, batch=1, fused_loss=job.fused_loss or fused)
        least = _least_as_asked(single, specs, asked, precision)
        if least <= usable:
            loss = " and a fused cross-entropy loss (workload.fused_loss)" if fused else ""
            return (
                f"one sequence a micro-step{loss}, accumulating {job.batch} for each optimizer step "
                f"(batch_size 1), {least / GB:.1f} GB per GPU"
            )
    return None


def _least_as_asked(job: Job, specs: Iterable[Spec], asked: str, precision: str) -> float:
    """The least memory per GPU of `job` over the specs that run it as asked (inf when none does)."""
    return min(
        (per_gpu(job, spec.layout).total for spec in specs if _as_asked(spec, asked, precision)),
        default=float("inf"),
    )


def _as_asked(spec: Spec, asked: str, precision: str) -> bool:
    layout = spec.layout
    return layout.method == asked and layout.precision == precision and not layout.offload


def _scale_out(planner: Planner, gpu: Gpu, count: int, asked: str, precision: str) -> list[str]:
    """The fewest GPUs beyond `count` that run the job as asked, in words (empty when none do)."""
    for more in SCALE_OUT_COUNTS:
        if more <= count:
            continue
        per_node = min(more, max(gpu.link_domain_gpus, 1))
        for spec in planner.fit.fitting(more, per_node, gpu):
            if _as_asked(spec, asked, precision):
                return [f"{'+'.join(spec.parallelism) or spec.strategy} over {more} GPUs"]
    return []


def _alternative(spec: Spec, asked: str, precision: str, count: int) -> str | None:
    layout = spec.layout
    if layout.method != asked:
        return layout.method
    if layout.precision != precision:
        # Lower precision is a way out for inference (quantization); in training it saves nothing here.
        return f"{layout.precision} weights" if asked == "inference" else None
    if layout.offload:
        states = "the frozen base" if asked in ("lora", "qlora") else "optimizer states"
        return f"offload {states} to CPU memory (slow)"
    if spec.parallelism:
        return f"{'+'.join(spec.parallelism)} over {count} GPUs"
    if layout.checkpointing:
        return "activation checkpointing"
    return None
