"""Hardware choices side by side ("why not X?"): each choice planned as the hardware a user names is
(`target.plan_on`, `target.fit_on`), given the figures of a recommendation, ordered by the objective,
and judged in a few words: "fits, 46 tok/s, $0.61/h" or "does not fit: needs 31.0 GB of 24"."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from engine.answer.explain import money, workload_words
from engine.answer.parts import recommendation
from engine.answer.ranking import Ranked, measure
from engine.answer.target import OnHardware, fit_on, plan_on
from engine.knowledge.kb import KB
from engine.models.compare import Choice, ComparedChoice
from engine.models.kb import Gpu
from engine.models.response import TargetFit
from engine.planning.candidates import Context
from engine.planning.planner import Candidate, Planner
from engine.planning.search import Searcher
from engine.planning.workload import Job
from engine.reasoning.policy import Policy
from engine.reasoning.refengine import Outcome


@dataclass(frozen=True)
class Judged:
    """One choice planned: its plans and whether the job fits it."""

    choice: Choice
    on: OnHardware
    fit: TargetFit


def judge(kb: KB, searcher: Searcher, planner: Planner, ctx: Context, choice: Choice) -> Judged:
    """Plan `choice` in the request's context, with its GPU count among the counts offered and, when
    it is owned, the GPUs among those the user owns."""
    on = plan_on(searcher, planner, choice_context(ctx, choice), choice.gpu, choice.count, choice.acquisition)
    return Judged(choice, on, fit_on(kb, planner, choice, on.best, on.rejections))


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
    """The choices that have a plan, by index, best first: those that run the job as asked before those
    that change its method or precision (as in a recommendation), then by the request's objective, then
    in the order asked. Each score is the first's measure over its own."""
    objective, floor = planner.request.objective, planner.per_user_tps
    measured = sorted(
        (_changed(j.on.best, planner.job.task), measure(j.on.best, objective, floor), i, j.on.best)
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


def compared(
    kb: KB,
    judged: Sequence[Judged],
    ranked: Mapping[int, Ranked],
    policy: Policy,
    outcome: Outcome,
    job: Job,
    cited: Mapping[int, tuple[str, ...]],
    precision_on: Callable[[Gpu], str],
) -> list[ComparedChoice]:
    """Each choice as the answer shows it; `precision_on` (the planner's) gives the precision a GPU
    runs the job in as asked, or by default when the request states none."""
    order = {i: n + 1 for n, i in enumerate(ranked)}
    answers = []
    for i, j in enumerate(judged):
        found = ranked.get(i)
        first = j.on.rejections[0] if j.on.rejections and found is None else None
        answers.append(
            ComparedChoice(
                gpu=j.choice.gpu,
                gpu_name=kb.gpus[j.choice.gpu].name,
                count=j.choice.count,
                acquisition=j.choice.acquisition,
                verdict=verdict(kb, j, job, precision_on(kb.gpus[j.choice.gpu])),
                feasible=found is not None,
                fit=j.fit,
                ruled_out=first.reason if first else None,
                rule=first.rule if first else None,
                option=None
                if found is None
                else recommendation(order[i], found, policy, outcome, job, cited, kb.providers),
            )
        )
    return answers


def verdict(kb: KB, judged: Judged, job: Job, precision: str) -> str:
    """The choice's verdict in a few words; `precision` is the one the job runs in on this GPU as
    asked (the default one when the request states none: then a change is not 'as asked')."""
    task = job.task
    choice, on, fit = judged.choice, judged.on, judged.fit
    if on.options == 0:
        how = {"buy": "buy", "rent": "rent", "owned": "own"}.get(choice.acquisition or "", "get")
        name = kb.gpus[choice.gpu].name
        return f"not available: no way to {how} {choice.count} x {name} in the knowledge base"
    needs = f"needs {fit.per_gpu_gb:.1f} GB of {fit.vram_per_gpu_gb:g}"
    best = on.best
    if best is not None:
        figures = f"{_speed(best)}, {_price(best)}"
        layout = best.spec.layout
        if _changed(best, task):
            method_changed = layout.method != task
            changed = layout.method if method_changed else layout.precision
            if fit.fits:
                return f"fits, but runs within the constraints only as {changed}: {figures}"
            if not method_changed and job.requested_precision is None:
                # no precision was asked: the default one did not fit, a quality trade-off does
                traded = f"{changed} (a quality trade-off)"
                return f"does not fit in {precision}: {needs}; runs as {traded}: {figures}"
            return f"does not fit as asked: {needs}; runs as {changed}: {figures}"
        return f"fits, {figures}"
    if fit.per_gpu_gb == 0 and not fit.fits:
        return f"does not fit: no allowed way to spread the job over {choice.count} GPUs"
    if not fit.fits:
        return f"does not fit: {needs}"
    if on.rejections:
        return f"fits, but ruled out: {on.rejections[0].reason.rstrip('.')}"
    return "fits, but no plan on it runs the job"


def summary(job: Job, answers: Sequence[ComparedChoice], best: int | None) -> str:
    """Which choice is best and what the others lack, to post as-is."""
    subject = workload_words(job)
    if best is None:
        each = "; ".join(f"{label(a)}: {a.verdict}" for a in answers)
        return f"For {subject}, none of the {len(answers)} choices runs within the constraints: {each}."
    winner = answers[best]
    text = f"For {subject}, {label(winner)} is the best of the {len(answers)} choices: {winner.verdict}."
    rest = "; ".join(f"{label(a)}: {a.verdict}" for i, a in enumerate(answers) if i != best)
    return f"{text} {rest[0].upper()}{rest[1:]}."


def label(answer: ComparedChoice) -> str:
    how = f" ({answer.acquisition})" if answer.acquisition else ""
    return f"{answer.count} x {answer.gpu_name}{how}"


def _changed(candidate: Candidate, task: str) -> bool:
    """The plan changes the requested method or precision."""
    return candidate.spec.layout.method != task or bool(candidate.plan_attrs.get("precision_changed"))


def _speed(candidate: Candidate) -> str:
    speed = candidate.speed
    if candidate.spec.layout.method == "inference":
        return f"{speed.tokens_per_s:,.0f} tok/s"
    if speed.training_hours is not None:
        return f"{speed.training_hours:,.1f} h for the run"
    return f"{speed.aggregate_tokens_per_s * candidate.copies:,.0f} training tok/s"


def _price(candidate: Candidate) -> str:
    """What the choice costs in the unit it is paid in: per hour rented, up front bought."""
    costs, acquisition = candidate.costs, candidate.option.acquisition
    if acquisition == "rent":
        return f"{money(costs.hourly_usd)}/h"
    if acquisition == "buy":
        return f"{money(costs.capex_usd)} to buy"
    return f"owned, {money(costs.hourly_usd)}/h in power"
