"""The answer's opening sentence: the best option and the next, the answer on the hardware the user
named, or why nothing meets every constraint and the way out."""

from __future__ import annotations

from collections.abc import Sequence

from engine.answer.explain import hardware, held_words, plan_words, speed_words, total_words, workload_words
from engine.answer.parts import substitute_words
from engine.models.response import Relaxation
from engine.planning.candidates import Option
from engine.planning.plan_checks import Rejection
from engine.planning.planner import Candidate
from engine.planning.ranking import Ranked
from engine.planning.workload import Job


def summary(
    job: Job,
    top: Sequence[Ranked],
    relaxation: Relaxation | None,
    rejections: Sequence[Rejection],
    on_target: Candidate | None = None,
    precision: str = "bf16",
    budget_rule: str | None = None,
    way_out: Candidate | None = None,
    owned: Sequence[tuple[int, Ranked]] = (),
    owned_instead: Sequence[Candidate] = (),
    target_verdict: str | None = None,
    target_kept: str | None = None,
) -> str:
    """The answer's opening sentence; `precision` is what the job runs in as asked on the target
    hardware, when one was named (its plan in another precision says so); `budget_rule` is the rule
    holding the budget role, whose reason an infeasible answer also gives; `way_out` the option the
    relaxation names, whose own rejection is the one quoted; `owned` the best plan on each kind of
    hardware the user owns, with its place in the ranking (`Found.owned`), and `owned_instead` what
    the owned hardware with no such plan runs instead (`Found.owned_instead`); `target_verdict` why
    the hardware the user named has no plan (`TargetFit.why`), the answer to the question asked;
    `target_kept` the change that runs the job there as asked when its plan there substitutes another
    method or precision (`Fit.kept`: a fused loss, one sequence a micro-step), said before it."""
    subject = workload_words(job)
    if on_target is not None and (not top or top[0].candidate is not on_target):
        # The question was whether it runs on the target: answer that first.
        changed = substitute_words(on_target, job, precision)
        count = f"{on_target.gpu_count} x " if on_target.gpu_count > 1 else ""
        kept = (
            f"as asked it fits with {target_kept}; as the request stands, " if changed and target_kept else ""
        )
        lead = (
            f"For {subject} on {count}{on_target.option.gpu.name}: {kept}{plan_words(on_target)}{changed}, "
            f"{held_words(on_target)}, {speed_words(on_target)}."
        )
        if not top:
            return lead
        best = top[0].candidate
        overall = "Without that change, the best option" if changed else "The best option overall"
        return (
            f"{lead} {overall} is {hardware(best)}: {plan_words(best)}, "
            f"{held_words(best)}, {total_words(best)}."
        )
    if not top:
        reason = main_reason(rejections, relaxation, budget_rule, way_out)
        text = f"No option meets every constraint for {subject}: {reason}"
        return f"{text} {relaxation.message}" if relaxation else text
    best = top[0].candidate
    lead = f"For {subject}, the best option"
    if target_verdict:  # the question asked was about the hardware named: answered first
        lead = f"{target_verdict} The best option overall"
    text = f"{lead} is {hardware(best)}: {plan_words(best)}, {held_words(best)}, {total_words(best)}."
    if len(top) > 1:
        runner = top[1].candidate
        text += f" Next: {hardware(runner)} ({plan_words(runner)})."
    return text + owned_words(top, rejections, owned, owned_instead, job, precision)


def owned_words(
    top: Sequence[Ranked],
    rejections: Sequence[Rejection],
    owned: Sequence[tuple[int, Ranked]] = (),
    instead: Sequence[Candidate] = (),
    job: Job | None = None,
    precision: str = "bf16",
) -> str:
    """Why the hardware the user owns is not among the options: the first thing its owner asks. Where
    it has a plan that ranks lower, that plan and its place; where a rule ruled it out, per GPU model,
    the rejection of the most of its cards (all the user owns, where that was planned), and what it
    runs instead, where something does (`instead`)."""
    if any(r.candidate.option.acquisition == "owned" for r in top):
        return ""
    words = [_ranked_lower(place, found.candidate) for place, found in owned[:2]]
    planned = {found.candidate.option.gpu.id for _, found in owned}
    most: dict[str, Rejection] = {}
    for rejection in rejections:
        option = rejection.option
        if option.acquisition != "owned" or option.gpu.id in planned:  # most are skipped at once
            continue
        held = most.get(option.gpu.id)
        if held is None or option.count > held.option.count:
            most[option.gpu.id] = rejection
    for rejection in list(most.values())[: 2 - len(words)]:
        option = rejection.option
        reason = rejection.reason if rejection.reason.endswith(".") else rejection.reason + "."
        joint = ". " if reason[:1].isupper() else ": "  # a reason that is a sentence stays one
        words.append(f" The {_cards(option)} you own is ruled out{joint}{reason}")
        other = next((c for c in instead if c.option.gpu.id == option.gpu.id), None)
        if other is not None and job is not None:
            changed = substitute_words(other, job, precision)
            words.append(
                f" It runs {plan_words(other)}{changed} instead: {speed_words(other)}, {total_words(other)}."
            )
    return "".join(words)


def _ranked_lower(place: int, candidate: Candidate) -> str:
    return (
        f" The {_cards(candidate.option)} you own runs it ({plan_words(candidate)}) but ranks #{place}: "
        f"{speed_words(candidate)}, {total_words(candidate)}."
    )


def _cards(option: Option) -> str:
    """`4 x NVIDIA GeForce RTX 3090`, or the GPU's name alone for one."""
    return f"{option.count} x {option.gpu.name}" if option.count > 1 else option.gpu.name


def one_sequence_words(batch_size: int, fused_loss: bool) -> str:
    """The change behind an answer planned at one sequence a micro-step with a fused loss, where the
    request as asked had no plan: activations and logits grow with the sequences a GPU steps at once."""
    changes, asked, settings = [], [], []
    if batch_size > 1:
        changes.append(f"at one sequence a micro-step (accumulating {batch_size} for each optimizer step)")
        asked.append(f"{batch_size} sequences a step")
        settings.append("workload.batch_size to 1")
    if not fused_loss:
        changes.append("with a fused cross-entropy loss (Liger Kernel's) that never holds the whole logits")
        asked.append("the standard loss")
        settings.append("workload.fused_loss to true")
    return (
        f"Planned {', '.join(changes)}: at {' and '.join(asked)}, no option within the constraints runs it "
        f"as asked. Set {' and '.join(settings)} to ask for this plan."
    )


def desktop_assumption(gpu_name: str, psu_watts: int, budget_usd: float | None) -> str:
    """The assumption behind an answer priced as cards alone when the request described no machine."""
    budget = f"the ${budget_usd:,.0f} budget" if budget_usd is not None else "the budget"
    return (
        f"This assumes a desktop you already own with a free PCIe x16 slot and at least a {psu_watts:,} W "
        f"power supply for the {gpu_name}: {budget} does not cover a machine to hold it "
        "(set constraints.existing_host to state yours)."
    )


def main_reason(
    rejections: Sequence[Rejection],
    relaxation: Relaxation | None,
    budget_rule: str | None = None,
    way_out: Candidate | None = None,
) -> str:
    """The constraint that fails: the one whose relaxation helps, else the commonest reason. Of the
    rejections by the relaxed rule, the way out's own is quoted: a reason with a figure ("this option
    takes 215,956 h") read beside the way out's ("takes 2,180 h") must be about the same option."""
    if not rejections:
        return "the knowledge base has no hardware to consider."
    if relaxation is not None:
        relaxed = [r for r in rejections if r.rule == relaxation.rule]
        # the GPU compared first: a whole option's comparison is dearer, and most differ in it
        own = [
            r
            for r in relaxed
            if way_out is not None and r.option.gpu.id == way_out.option.gpu.id and r.option == way_out.option
        ]
        reasons = [r.reason for r in own or relaxed][:1]
        # a budget that ruled options out is the constraint a reader checks first: say it too
        reasons += sorted(
            {r.reason for r in rejections if r.rule == budget_rule and r.rule != relaxation.rule}
        )
        return " ".join(reason if reason.endswith(".") else reason + "." for reason in reasons[:2])
    counts: dict[str, int] = {}
    for rejection in rejections:
        counts[rejection.reason] = counts.get(rejection.reason, 0) + 1
    reason = max(sorted(counts), key=lambda r: counts[r])
    return reason if reason.endswith(".") else reason + "."
