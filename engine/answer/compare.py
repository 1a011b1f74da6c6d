"""Hardware choices side by side ("why not X?"), in words: each choice, planned as the hardware a user
names is and ordered by the objective (engine/planning/on_hardware.py), given the figures of a
recommendation and judged in a few words: "fits, 46 tok/s, $0.61/h" or "does not fit: needs 31.0 GB of
24"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.answer.explain import money, workload_words
from engine.answer.parts import recommendation
from engine.answer.target import fit_on
from engine.knowledge.kb import KB
from engine.models.compare import ComparedChoice
from engine.models.response import TargetFit
from engine.planning.on_hardware import Judged
from engine.planning.planner import Candidate
from engine.planning.ranking import Ranked
from engine.planning.workload import Job
from engine.reasoning.policy import Policy
from engine.reasoning.refengine import Outcome


def compared(
    kb: KB,
    judged: Sequence[Judged],
    ranked: Mapping[int, Ranked],
    policy: Policy,
    outcome: Outcome,
    job: Job,
    cited: Mapping[int, tuple[str, ...]],
) -> list[ComparedChoice]:
    """Each choice as the answer shows it, in the order asked; `ranked` (planning's) says which have
    a plan and in what order."""
    order = {i: n + 1 for n, i in enumerate(ranked)}
    answers = []
    for i, j in enumerate(judged):
        found = ranked.get(i)
        first = j.on.rejections[0] if j.on.rejections and found is None else None
        fit = fit_on(job, j.target)
        answers.append(
            ComparedChoice(
                gpu=j.choice.gpu,
                gpu_name=kb.gpus[j.choice.gpu].name,
                count=j.choice.count,
                acquisition=j.choice.acquisition,
                verdict=verdict(kb, j, fit, job),
                feasible=found is not None,
                fit=fit,
                ruled_out=first.reason if first else None,
                rule=first.rule if first else None,
                option=None
                if found is None
                else recommendation(order[i], found, policy, outcome, job, cited, kb.providers),
            )
        )
    return answers


def verdict(kb: KB, judged: Judged, fit: TargetFit, job: Job) -> str:
    """The choice's verdict in a few words, from its plans and how the job fits it (`fit`)."""
    task = job.task
    choice, on, precision = judged.choice, judged.on, judged.target.precision
    if on.options == 0:
        how = {"buy": "buy", "rent": "rent", "owned": "own"}.get(choice.acquisition or "", "get")
        name = kb.gpus[choice.gpu].name
        return f"not available: no way to {how} {choice.count} x {name} in the knowledge base"
    needs = f"needs {fit.per_gpu_gb:.1f} GB of {fit.capacity_gb:g}"
    best = on.best
    if best is not None:
        figures = f"{_speed(best)}, {_price(best)}"
        layout = best.spec.layout
        if not best.as_asked:
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


def _speed(candidate: Candidate) -> str:
    speed = candidate.speed
    if candidate.corpus_hours is not None:
        return f"{candidate.corpus_hours:,.1f} h for the corpus"
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
