"""Words for the response: each recommendation's `why`, the chat-ready `summary`, the trace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from engine.models.response import TraceStep
from engine.models.rule import Citation, Rule
from engine.planning.economics import Costs
from engine.planning.planner import Candidate
from engine.planning.ranking import Outranked, Ranked
from engine.planning.workload import Job
from engine.reasoning.policy import Policy
from engine.reasoning.refengine import Outcome
from engine.sizing import GB
from engine.sizing.power import required_psu_watts

YOUR_COMPUTER_NAME = "Your own computer's CPU"
"""How an answer names the computer a user is assumed to have, for a tiny job"""

READ_FACTS = (
    "size_tier",
    "bound",
    "plan.precision",
    "plan.neutral_precision",
    "plan.qat_precision",
    "plan.memory_headroom_pct",
    "plan.gradient_checkpointing",
    "plan.spare_replicas",
    "plan.your_computer",
    "answer.value_figure",
    "acquisition_lean",
)
"""Derived facts the recommender reads: the rules that derive them shaped every option."""

TASK_WORDS = {
    "inference": "serving",
    "pretrain": "pretraining",
    "full_finetune": "fully fine-tuning",
    "lora": "LoRA fine-tuning",
    "qlora": "QLoRA fine-tuning",
}


def citation_text(citation: Citation) -> str:
    """The source as a reader finds it: its title and section, then the address to open."""
    return f"{citation.source} <{citation.url}>" if citation.url else citation.source


def trace(
    outcome: Outcome, rules: Mapping[str, Rule], cited: Mapping[int, tuple[str, ...]]
) -> list[TraceStep]:
    """The rule firings in order, each with its rule's title and its citations in words (`cited`:
    each step's, `answer.parts.step_citations`). Built without validation: every field comes from
    the rules and the firings, already of the step's types (the recorded answers of
    tests/test_golden.py hold what they serialize to), and an answer has twenty or more steps."""
    return [
        TraceStep.model_construct(
            step=firing.step,
            rule=firing.rule,
            title=rules[firing.rule].title,
            matched=dict(firing.matched),
            derived=dict(firing.derived),
            message=" ".join(firing.messages),
            citations=list(cited[firing.step]),
        )
        for firing in outcome.firings
    ]


def money(usd: float) -> str:
    if usd >= 100:
        return f"${usd:,.0f}"
    return f"${usd:,.2f}"


def held_words(candidate: Candidate) -> str:
    """The memory the plan holds on each device: '16.4 GB per GPU', or on a CPU '1.0 GB of RAM'."""
    where = "of RAM" if candidate.option.gpu.gpu_class == "cpu" else "per GPU"
    return f"{candidate.memory.total / GB:.1f} GB {where}"


def hardware(candidate: Candidate) -> str:
    option = candidate.option
    count = f"{candidate.gpu_count} x " if candidate.gpu_count > 1 else ""
    if option.assumed:
        return "your own computer's CPU, already yours (a recent desktop CPU's speed is assumed)"
    if option.acquisition == "owned":
        how = "already owned"
    elif option.acquisition == "buy":
        unit = option.unit_price.price_usd if option.unit_price else 0.0
        how = f"bought {option.price_kind} at about {money(unit)} per GPU"
    else:
        offer = option.offer
        where = f"{offer.provider} {offer.instance_type}" if offer else "a cloud"
        how = f"rented {option.pricing.replace('_', '-')} ({where})"
        if option.attrs.get("provider_hosts") == "community":
            # Vast.ai, Lium: machines of independent hosts, listed as long as their owners keep them up
            how += " on a community marketplace (independent hosts, no uptime guarantee)"
        if option.pricing == "spot" and option.attrs.get("provider_kind") in ("marketplace", "aggregator"):
            # a marketplace's spot figure is the cheapest listing seen: one host's, not a region's supply
            how += ", a marketplace spot price (one host's listing; check that it is still offered)"
    return f"{count}{option.gpu.name}, {how}"


def host_words(candidate: Candidate) -> str:
    """The system a bought option's GPUs go into and its share of the capex ('' when none)."""
    option = candidate.option
    if option.own_host and option.acquisition == "buy":
        cards = "cards go" if option.count > 1 else "card goes"
        slots = "free PCIe x16 slots" if option.count > 1 else "a free PCIe x16 slot"
        card_w = option.gpu.tdp_w * option.count if option.gpu.tdp_w else 0
        supply = required_psu_watts(option.gpu.tdp_w or 0, option.count)
        watts = (
            f", whose power supply must carry {card_w:,} W more (a {supply:,} W supply in all)"
            if card_w
            else ""
        )
        return f"Platform: the {cards} into a machine you own ({slots}){watts}."
    if option.host is None or option.acquisition != "buy" or option.capex_usd <= 0:
        return ""
    nodes = f"{option.nodes} x " if option.nodes > 1 else ""
    each = " each" if option.nodes > 1 else ""
    share = option.host_capex_usd / option.capex_usd
    return (
        f"Platform: {nodes}{option.host.name}, ~{money(option.host_unit_usd)}{each} without GPUs, "
        f"{share:.0%} of the capex."
    )


def plan_words(candidate: Candidate) -> str:
    layout = candidate.spec.layout
    words = f"{TASK_WORDS.get(layout.method, layout.method)} in {layout.precision}"
    if candidate.spec.parallelism:
        words += " with " + parallelism_words(candidate)
    if layout.checkpointing:
        words += ", activation checkpointing on"
    if candidate.memory.host > 0:  # what ZeRO-Offload needs of each node, said where the plan is
        per_node = candidate.memory.host * candidate.option.gpus_per_node / GB
        words += f", {per_node:,.0f} GB of host RAM per node for the offloaded states"
    return words


def parallelism_words(candidate: Candidate) -> str:
    """'pipeline-parallel (degree 2)', 'zero-3 + hybrid-shard'; 'one GPU' for none."""
    spec = candidate.spec
    if not spec.parallelism:
        return "one GPU"
    words = " + ".join(spec.parallelism)
    return words + (f" (degree {spec.layout.tp})" if spec.layout.tp > 1 else "")


def faster_layout_words(candidate: Candidate) -> str:
    """Under the `fastest` objective, the layout taken over the one preferred first, with both speeds."""
    slower = candidate.passed_over
    if slower is None:
        return ""
    if candidate.spec.layout.method == "inference":
        taken, passed = candidate.speed.tokens_per_s, slower.speed.tokens_per_s
        figures = f"{taken:,.0f} tokens/s per sequence against {passed:,.0f}"
    elif candidate.run_hours is not None and slower.run_hours is not None:
        figures = f"{candidate.run_hours:,.1f} h for the run against {slower.run_hours:,.1f} h"
    else:
        figures = (
            f"{candidate.speed.aggregate_tokens_per_s * candidate.copies:,.0f} training tokens/s against "
            f"{slower.speed.aggregate_tokens_per_s * slower.copies:,.0f}"
        )
    words = f"{parallelism_words(candidate)} rather than {parallelism_words(slower)}"
    return f"{words[:1].upper()}{words[1:]}, the faster layout on these GPUs, as asked: {figures}."


def precision_words(candidate: Candidate, policy: Policy) -> str:
    """Why the plan's precision, when the request did not set it: fp8 is quality-neutral where the GPU
    computes in it (rule serve-in-fp8-where-native); int8 and int4 trade quality for memory."""
    precision = candidate.spec.layout.precision
    if precision == policy.facts.get("plan.neutral_precision"):
        return (
            f"{precision} because this GPU computes in it natively: quality-neutral for serving (lossless "
            "across the Llama 3.1 family, Kurtic et al. 2024), half the memory of 16-bit weights."
        )
    as_asked = not candidate.plan_attrs.get("precision_changed")
    if precision == policy.facts.get("plan.qat_precision") and as_asked:
        return (
            f"{precision} because the model's makers released a quantization-aware-trained {precision} "
            "checkpoint, trained to keep its quality in 4 bits, a quarter of the 16-bit weights' memory: "
            "planned where 16-bit or fp8 weights do not fit."
        )
    if candidate.plan_attrs.get("precision_changed") and precision in ("int8", "int4"):
        why = (
            "offered on the hardware you own, where 16-bit or fp8 weights do not fit, beside what would "
            "serve it as asked"
            if candidate.option.acquisition == "owned"
            else "offered because no option serves it as asked"
        )
        return (
            f"{precision} weights are a quality trade-off (int8 costs about 1-3% on benchmarks, int4 more, "
            f"most on small models, math and code): {why}."
        )
    return ""


def speed_words(candidate: Candidate) -> str:
    speed = candidate.speed
    if candidate.spec.layout.method == "inference":
        total = speed.aggregate_tokens_per_s * candidate.copies
        if speed.reads_only:  # an embedding model's speed is the input it reads
            text = f"reads about {total:,.0f} input tokens/s in all ({speed.tokens_per_s:,.0f} per sequence)"
            if candidate.corpus_hours is not None:
                text += f", {candidate.corpus_hours:,.1f} h to embed the corpus"
            return text
        text = f"about {speed.tokens_per_s:,.0f} tokens/s per sequence ({total:,.0f} in all)"
    else:
        text = f"about {speed.aggregate_tokens_per_s * candidate.copies:,.0f} training tokens/s"
        if speed.training_hours is not None:
            text += f", {speed.training_hours:,.1f} h for the run"
    return text


def cost_words(candidate: Candidate) -> str:
    costs = candidate.costs
    if candidate.option.acquisition == "buy":
        text = f"{money(costs.capex_usd)} up front"
        if costs.break_even_hours is not None:
            text += f", cheaper than renting after {costs.break_even_hours:,.0f} h of use"
    elif candidate.option.acquisition == "rent" and costs.run_hours is not None:
        text = f"{money(costs.hourly_usd)}/h"  # a run: its total follows, a monthly average would mislead
    elif candidate.option.acquisition == "rent":
        text = f"{money(costs.hourly_usd)}/h, {money(costs.monthly_usd)}/month {use_words(costs)}"
    else:
        text = f"power only, {money(costs.hourly_usd)}/h"
    return f"{text}; {total_words(candidate)}"


def use_words(costs: Costs) -> str:
    """'at the stated use', or the utilisation assumed when the request stated none."""
    return "at the stated use" if costs.assumed_use is None else f"at the assumed {costs.assumed_use:.0%} use"


def total_words(candidate: Candidate) -> str:
    """The cost the ranking compares, in words: one run's, or the horizon's at the stated use."""
    costs = candidate.costs
    if costs.run_hours is not None:
        if candidate.option.acquisition == "rent":
            return f"{money(costs.horizon_cost_usd)} for the run ({costs.run_hours:,.1f} h)"
        if candidate.option.acquisition == "owned":
            return f"{money(costs.horizon_cost_usd)} of power for the run ({costs.run_hours:,.1f} h)"
        # Bought: what is paid is the hardware and the run's power. "For the run" means the run's own
        # cost everywhere (`run_cost_usd`: its share of the hardware over the horizon, and its power).
        return (
            f"{money(costs.horizon_cost_usd)} to buy the hardware and power the run "
            f"({costs.run_hours:,.1f} h; the run's share of it {money(costs.run_cost_usd or 0)})"
        )
    return f"{money(costs.horizon_cost_usd)} over the horizon"


def need_words(candidate: Candidate, vram: float) -> str:
    """The memory the plan needs on each GPU against the card's: its nominal size, and what the
    driver reports where the name rounds it. A need above the nominal size that fits the reported
    bytes says so, rather than "180.5 GB of 180 GB"."""
    free = f"{candidate.headroom_pct:.0f}% free"
    reported = candidate.reported_gb
    held = held_words(candidate)
    if reported is not None and round(candidate.memory.total / GB, 1) > vram:
        return (
            f"Needs {held}, more than the nominal {vram:g} GB but within the {reported:.1f} GB the driver "
            f"reports ({free})"
        )
    if reported is not None and abs(reported - vram) >= 0.5:  # the card's name rounds its bytes
        free = f"{reported:.1f} GB as the driver reports it, {free}"
    return f"Needs {held.replace(' GB', f' GB of {vram:g} GB', 1)} ({free})"


def why(candidate: Candidate, policy: Policy, reasons: Sequence[str]) -> str:
    memory = candidate.memory
    vram = float(candidate.attrs["vram_per_gpu_gb"])
    first = f"{hardware(candidate)}: {plan_words(candidate)}."
    parts = [
        first[:1].upper() + first[1:],  # the one name that starts in lower case: "your own computer's"
        f"{need_words(candidate, vram)}; {speed_words(candidate)}; {cost_words(candidate)}.",
    ]
    if layout := faster_layout_words(candidate):
        parts.append(layout)
    if precision := precision_words(candidate, policy):
        parts.append(precision)
    if hosted := host_words(candidate):
        parts.append(hosted)
    if memory.host > 0:  # ZeRO-Offload keeps optimizer states in CPU RAM (Ren et al. 2021)
        option = candidate.option
        per_node = memory.host * option.gpus_per_node / GB
        unchecked = option.acquisition == "owned" and option.host_ram_gib is None
        parts.append(
            f"CPU offload keeps {per_node:,.0f} GB per node in host RAM: the machine needs that much"
            + (" (give existing_hardware's host_ram_gib to have it checked)." if unchecked else ".")
        )
    if candidate.spares:
        serving = candidate.copies - candidate.spares
        carry = "carries" if serving == 1 else "carry"
        parts.append(
            f"{candidate.copies} copies{copy_words(candidate)} on separate nodes: {serving} {carry} the "
            f"serving demand and {candidate.spares} is a spare for the availability target."
        )
    elif candidate.copies > 1:
        parts.append(f"{candidate.copies} copies{copy_words(candidate)} meet the serving demand.")
    if valued := value_words(candidate, policy.facts.get("answer.value_figure")):
        parts.append(valued)
    parts.extend(reasons)
    return " ".join(parts)


def copy_words(candidate: Candidate) -> str:
    """What one copy of a multi-GPU serving option is, and the model's replicas in all when a copy
    holds several ("3 copies" of two B200s serving as replicas are six copies of the model)."""
    count = candidate.option.count
    if count == 1:
        return ""
    replicas = candidate.spec.layout.dp
    each = f" of this {count}-GPU option"
    return each if replicas <= 1 else f"{each} ({replicas * candidate.copies} replicas of the model in all)"


def value_words(candidate: Candidate, kind: object) -> str | None:
    """The value figure the rules name for this kind of work (memory bandwidth per dollar when decode is
    bandwidth-bound, dense compute per dollar when training), per $1,000 of capex or per $/h rented:
    what makes one GPU class better value than another, which the job's cost already reflects."""
    gpu, count, option = candidate.option.gpu, candidate.gpu_count, candidate.option
    if kind == "bandwidth_per_dollar":
        amount, unit = gpu.memory_bandwidth_gbs * count, "GB/s of memory bandwidth"
    elif kind == "compute_per_dollar":
        tflops = gpu.bf16_dense_tflops or gpu.fp16_dense_tflops or gpu.fp32_tflops
        if tflops is None:
            return None
        amount, unit = tflops * count, "dense TFLOPS"
    else:
        return None
    if option.acquisition == "buy" and candidate.costs.capex_usd > 0:
        return f"Value: {amount / candidate.costs.capex_usd * 1000:,.0f} {unit} per $1,000 of capex."
    if option.acquisition == "rent" and candidate.costs.hourly_usd > 0:
        return f"Value: {amount / candidate.costs.hourly_usd:,.0f} {unit} per $/h."
    return None


def relevant_steps(candidate: Candidate, policy: Policy, outcome: Outcome) -> list[int]:
    """Trace steps behind an option: rules deriving what the recommender reads, every filter, the
    suggestions its plan uses, and the preferences that matched it."""
    steps = {f.step for f in policy.filters}
    layout = candidate.spec.layout
    used = {
        ("method", layout.method),
        ("precision", layout.precision),
        ("pricing", candidate.option.pricing),
        *(("parallelism", name) for name in candidate.spec.parallelism),
    }
    steps.update(s.step for s in policy.suggestions if (s.kind, str(s.value)) in used)
    steps.update(policy.steps[rule] for rule in candidate.preferred_by)
    for firing in outcome.firings:
        if any(name in READ_FACTS for name in firing.derived):
            steps.add(firing.step)
    return sorted(steps)


def reasons(candidate: Candidate, policy: Policy, job: Job) -> list[str]:
    """Rule messages that explain how this option differs from the plain request."""
    layout = candidate.spec.layout
    found: list[str] = []
    if layout.method != job.task:
        found += [s.message for s in policy.suggestions if s.kind == "method" and s.value == layout.method]
    if candidate.attrs.get("precision_changed"):
        found += [
            s.message for s in policy.suggestions if s.kind == "precision" and s.value == layout.precision
        ]
    for preference in policy.preferences:
        if preference.rule in candidate.preferred_by and preference.holds_for_plan(
            candidate.plan_attrs, candidate.option.attrs
        ):
            found.append(preference.message)
            # a stack's maturity: the KB's reason for its level, after the rule's words
            found += [candidate.option.maturity_reasons.get(name, "") for name in preference.where]
    found = [message for message in found if message]
    unique: list[str] = []
    for message in found:
        if message not in unique:
            unique.append(message)
    return unique[:4]


def step_batch_words(candidate: Candidate, job: Job) -> str | None:
    """A training plan whose data-parallel ranks step more sequences than the batch the request states:
    each rank holds at least one (`Layout.per_rank`, as the memory was sized), and the learning rate a
    recipe gives is tuned to the sequences a step trains."""
    layout = candidate.spec.layout
    if layout.method == "inference" or not job.batch_stated:
        return None
    each = layout.per_rank(job.batch)
    step = each * layout.dp
    if step <= job.batch:
        return None
    held = "a sequence" if each == 1 else f"{each} sequences"
    return (
        f"Its {layout.dp} data-parallel ranks hold {held} each, so a step trains {step} sequences "
        f"where the request asks for {job.batch}: a learning rate is tuned to the batch a step trains."
    )


def workload_words(job: Job) -> str:
    model = f"a {job.params / 1e9:.4g}B-parameter model"
    if job.corpus_run and job.serving is not None and job.serving.corpus_documents is not None:
        documents = job.serving.corpus_documents
        tokens = documents * job.serving.avg_input_tokens
        return f"embedding {documents:,} documents ({tokens / 1e9:.3g}B tokens) with {model}"
    return f"{TASK_WORDS[job.task]} {model}"


def outranked_words(found: Outranked, other: Ranked, shown: int) -> str:
    """Why an option ranks above one that is cheaper and faster, or as fast as the measure counts
    (planning's `Outranked`): the factors of the objective that put it first, and by how much
    (docs/ranking.md). The other is named by its rank too when it is among the `shown` options."""
    reasons = []
    if found.fewer_gpus:
        reasons.append(
            "it takes fewer GPUs or nodes, and the balanced objective asks each doubling of the GPU count "
            "to save a quarter of the cost and each doubling of the nodes a third"
        )
    if found.fewer_for_speed:
        reasons.append(
            "it takes fewer GPUs, and the fastest objective asks each doubling of the GPU count to save 5% "
            "of the time, more than the speed model can tell apart"
        )
    if found.preferred_by:
        reasons.append(f"the rules' preferences weigh for it ({', '.join(found.preferred_by)})")
    if found.slack:
        reasons.append("the other leaves less slack before the deadline")
    because = "; ".join(reasons) or "on a tie the simpler option comes first"
    cheaper = f"{found.cheaper:.0%} cheaper" if found.cheaper >= 0.005 else "slightly cheaper"
    rank = f"#{found.below + 1}, " if found.below < shown else ""
    faster = (
        "faster"
        if found.speed_credited is None
        else f"as fast as the balanced objective counts (both past {found.speed_credited:,.0f} tokens/s a "
        "sequence, three times the per-user floor)"
    )
    return (
        f"It ranks above {rank}{hardware(other.candidate)}, which is {faster} and {cheaper}, "
        f"because {because}: the other's measure is {found.margin:.0%} higher."
    )
