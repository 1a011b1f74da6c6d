"""A serving fleet's plans at their operating points (engine/planning/operating_point.py): for a spec
on a GPU, the batch a replica holds while the copies carry the request's rate, its memory and speed
there, sized once per spec and GPU model (`SizedSpec.points`)."""

from __future__ import annotations

from dataclasses import replace

from engine.planning.candidates import Option
from engine.planning.memory import Layout, per_gpu
from engine.planning.operating_point import Demand, FleetPlan, operating_point
from engine.planning.performance import Speed, decode_work_at, inference_speed
from engine.planning.plan_fit import PlanFit, SizedSpec, SpeedKey
from engine.planning.workload import Job


def fleet_plan(
    job: Job, fit: PlanFit, demand: Demand, option: Option, entry: SizedSpec, key: SpeedKey, most: Speed
) -> FleetPlan | None:
    """The entry's plan on the option's GPUs at its operating point, kept per GPU model and links
    (`key`); `most` is its speed at the most sequences the rate puts in flight (at the per-user floor).
    None where a replica decodes nothing, or its memory at the point exceeds the GPU's (not expected:
    the fit is checked on a line through the layout's memory at one sequence and at the most, which
    lies above it)."""
    points = entry.points
    if key in points:
        return points[key]
    found = points[key] = _at_operating_point(job, fit, demand, option, entry.spec.layout, most)
    return found


def _at_operating_point(
    job: Job, fit: PlanFit, demand: Demand, option: Option, layout: Layout, most: Speed
) -> FleetPlan | None:
    gpu, usable = option.gpu, fit.usable_on(option.gpu)
    top = layout.per_rank(job.batch)
    work = fit.decode_work(layout)
    speeds: dict[int, Speed] = {top: most}
    # The most a replica's memory holds, on the line through its memory at one sequence and at `top`:
    # above the memory's own curve (the KV cache and the workspace grow in step with the sequences; an
    # expert-gathering engine's copies outgrow its workspace, a convex turn), so never too many.
    least, full = fit.need(layout).total, fit.memory(layout).total
    if full > usable and top > 1:
        top = min(top, 1 + int((usable - least) / ((full - least) / (top - 1))))

    def speed_at(sequences: int) -> Speed:
        found = speeds.get(sequences)
        if found is None:
            at = decode_work_at(job, layout, work, sequences)
            found = speeds[sequences] = inference_speed(job, gpu, layout, option.links, at) or most
        return found

    point = operating_point(demand, layout.dp, top, speed_at)
    if point is None:
        return None
    held = replace(job, batch=point.per_replica * layout.dp)
    memory = per_gpu(held, layout)
    if memory.total > usable:
        return None
    at = decode_work_at(job, layout, work, point.per_replica)
    speed = inference_speed(held, gpu, layout, option.links, at, memory=memory, budget=usable)
    return None if speed is None else FleetPlan(speed, memory, point.copies)
