"""The parts of an answer built from ranked candidates: each recommendation with its memory, speed,
cost, why and citations; the notable rejections; the warnings and assumptions the figures rest on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date

from engine.answer.commitment import commitment_warning
from engine.answer.explain import (
    TASK_WORDS,
    YOUR_COMPUTER_NAME,
    citation_text,
    reasons,
    relevant_steps,
    step_batch_words,
    why,
)
from engine.answer.launch import launch
from engine.models.kb import Provider
from engine.models.response import Cost, GpuMemory, Launch, Recommendation, Rejected, Throughput
from engine.models.rule import Rule
from engine.planning.economics import DEFAULT_UTILIZATION
from engine.planning.memory import FUSED_LOSS_PLATFORMS, HF_GRADIENT_BYTES
from engine.planning.plan_checks import Rejection
from engine.planning.planner import Candidate
from engine.planning.ranking import Ranked
from engine.planning.workload import Job
from engine.reasoning.policy import Policy
from engine.reasoning.refengine import Outcome
from engine.sizing import CONVENTIONS, GB
from engine.sizing.training_memory import model_state_bytes_per_param

MAX_REJECTED = 15
REJECTED_PER_RULE = 3


def step_citations(
    outcome: Outcome, rule_citations: Mapping[str, tuple[str, ...]]
) -> dict[int, tuple[str, ...]]:
    """Each trace step's citations, as `recommendation` lists them (`rule_citations`: rule id → its
    citations in words, `citation_texts`)."""
    return {firing.step: rule_citations[firing.rule] for firing in outcome.firings}


def citation_texts(rules: Iterable[Rule]) -> dict[str, tuple[str, ...]]:
    """Rule id → its citations as a reader finds them (built once per rule set)."""
    return {rule.id: tuple(citation_text(c) for c in rule.citations) for rule in rules}


def recommendation(
    rank_no: int,
    ranked: Ranked,
    policy: Policy,
    outcome: Outcome,
    job: Job,
    cited: Mapping[int, tuple[str, ...]],
    providers: Mapping[str, Provider],
    ranked_first: str = "",
) -> Recommendation:
    """One ranked candidate as the answer shows it; `cited` is `step_citations` of the request;
    `providers` (the KB's) name the clouds in a rented option's launch specs; `ranked_first` says why
    it ranks above a faster, cheaper option, when one follows it."""
    c = ranked.candidate
    option, layout, memory = c.option, c.spec.layout, c.memory
    steps = relevant_steps(c, policy, outcome)
    citations = list(dict.fromkeys(text for step in steps for text in cited[step]))
    return Recommendation(
        rank=rank_no,
        score=round(ranked.score, 4),
        gpu=option.gpu.id,
        gpu_name=YOUR_COMPUTER_NAME if option.assumed else option.gpu.name,
        gpu_count=c.gpu_count,
        nodes=option.nodes * c.copies,
        vram_per_gpu_gb=float(c.attrs["vram_per_gpu_gb"]),
        interconnect=option.interconnect,
        platform=option.platform,
        os_path=option.os_path,
        acquisition=option.acquisition,
        provider=option.offer.provider if option.offer else None,
        instance_type=option.offer.instance_type if option.offer else None,
        pricing=option.pricing,
        price_kind=option.price_kind,
        precision=layout.precision,
        method=layout.method,
        parallelism=list(c.spec.parallelism),
        tp_degree=layout.tp if layout.split == "tensor" else 1,
        offload=layout.offload,
        memory=GpuMemory(
            per_gpu_gb=gb(memory.total),
            headroom_pct=round(c.headroom_pct, 1),
            fits=True,
            weights_per_gpu_gb=gb(memory.weights),
            gradients_per_gpu_gb=gb(memory.gradients),
            optimizer_per_gpu_gb=gb(memory.optimizer),
            activations_per_gpu_gb=gb(memory.activations),
            kv_cache_per_gpu_gb=gb(memory.kv_cache),
            logits_per_gpu_gb=gb(memory.logits),
            overhead_per_gpu_gb=gb(memory.overhead),
            reported_gb=None if c.reported_gb is None else round(c.reported_gb, 1),
        ),
        throughput=throughput_of(c),
        cost=cost_of(c),
        why=why(c, policy, [*reasons(c, policy, job), *_extra_reasons(c, job, ranked_first)]),
        trace_steps=steps,
        citations=citations,
        price_as_of=_iso(option.price_as_of),
        launch=launch_of(c, job, providers),
    )


def _extra_reasons(c: Candidate, job: Job, ranked_first: str) -> list[str]:
    """What the why says after the rules' reasons: the batch a step trains, why it ranks first."""
    return [text for text in (step_batch_words(c, job), ranked_first) if text]


def launch_of(c: Candidate, job: Job, providers: Mapping[str, Provider]) -> Launch | None:
    """A rented candidate's launch specs (`answer/launch`); None when bought or owned."""
    option = c.option
    if option.acquisition != "rent" or option.offer is None:
        return None
    nodes = option.nodes * c.copies
    return launch(
        gpu=option.gpu,
        provider=providers.get(option.offer.provider),
        instance_type=option.offer.instance_type,
        gpu_count=c.gpu_count,
        nodes=nodes,
        spot=option.pricing == "spot",
        method=c.spec.layout.method,
        precision=c.spec.layout.precision,
        model=job.model,
    )


def rejected(rejections: Sequence[Rejection], candidates: Sequence[Candidate] = ()) -> list[Rejected]:
    """A few notable rejections per rule: distinct GPUs, the highest-bandwidth first (the hardware
    people ask about), so the reader sees what each rule ruled out. A rejection of more GPUs of a kind
    that already runs the job as asked on fewer, got the same way, is left out: it rules nothing out
    (and the search need not size it, engine/planning/search.py)."""
    fewest: dict[tuple[str, str, str], int] = {}
    for c in candidates:
        if not c.plan_attrs["method_changed"] and not c.plan_attrs["precision_changed"]:
            key = (c.option.gpu.id, c.option.acquisition, c.option.pricing)
            fewest[key] = min(fewest.get(key, c.option.count), c.option.count)
    # per rule and GPU, its first rejection of hardware the user owns, else with the fewest GPUs
    # (then acquisition): one pass over the search's hundreds of rejections
    best: dict[tuple[str, str], tuple[tuple[bool, int, str], Rejection]] = {}
    for rejection in rejections:
        option = rejection.option
        gpu_id, acquisition, count = option.gpu.id, option.acquisition, option.count
        if fewest and count > fewest.get((gpu_id, acquisition, option.pricing), count):
            continue
        rule_gpu = (rejection.rule, gpu_id)
        held = best.get(rule_gpu)
        order = (acquisition != "owned", count, acquisition)
        if held is None or order < held[0]:
            best[rule_gpu] = (order, rejection)
    per_rule: dict[str, list[Rejection]] = {}
    for (rule, _), (_, rejection) in best.items():
        per_rule.setdefault(rule, []).append(rejection)
    picked: list[Rejected] = []
    for rule in sorted(per_rule):
        # owned hardware first (what the user asked about by owning it), then the GPUs with the most
        # bandwidth (a sort of GPUs, not of every rejection)
        chosen = sorted(
            per_rule[rule],
            key=lambda r: (
                r.option.acquisition != "owned",
                -r.option.gpu.memory_bandwidth_gbs,
                r.option.gpu.id,
            ),
        )[:REJECTED_PER_RULE]
        for rejection in chosen:
            option = rejection.option
            picked.append(
                Rejected(
                    gpu=option.gpu.id,
                    gpu_count=option.count,
                    acquisition=option.acquisition,
                    provider=option.offer.provider if option.offer else None,
                    reason=rejection.reason,
                    rule=rejection.rule,
                )
            )
        if len(picked) >= MAX_REJECTED:
            break
    return picked[:MAX_REJECTED]


def warnings(
    job: Job,
    policy: Policy,
    top: Sequence[Ranked] = (),
    *,
    overruled: frozenset[str] = frozenset(),
    first: str | None = None,
) -> list[str]:
    """`first` (the planned verdict on named hardware), the rules' notices less those of the
    `overruled` rules (whose pre-sizing estimate the plan replaced), then the sizing's own cautions,
    those of the first option (`top`) among them."""
    found: list[str] = [first] if first else []
    for notice in policy.notices:
        if notice.message not in found and notice.rule not in overruled:
            found.append(notice.message)
    if job.architecture_source == "estimated":
        found.append(
            "The layer sizes were estimated from the parameter count (multi-head attention assumed): "
            "give `model` or `architecture` for exact activation and KV-cache figures."
        )
    found.extend(architecture_warnings(job))
    found.extend(job.config_cautions)
    found.extend(reader_field_warnings(job))
    found.extend(logits_warnings(top, job))
    return found


LOGITS_NOTE_SHARE = 0.2
"""The share of the first option's per-GPU memory the loss's logits take before the answer says that a
fused loss removes them: Qwen3-1.7B fully fine-tuned at 8 x 2,048 tokens held 120 GB on an H200, 25 GB
of it the logits of a 151,936-token vocabulary (data/calibration/h200-2026-11-26.json)."""
LOGITS_NOTE_FREE_PCT = 30.0
"""...and only when that option leaves less than this share of each card free, so that memory set its
GPUs: a QLoRA at 12.2 of a 4090's 25.8 GB runs on two of them for speed, and would on one as it is;
or, where the logits outweigh the model's weights on each GPU (the largest part a fused loss can
remove), when it leaves less than LOGITS_OUTWEIGH_FREE_PCT free: Qwen3.5-27B LoRA at 2 x 8,192 tokens a
GPU holds 57 GB of logits over a 248,320-token vocabulary beside 54 GB of weights, 32% of a B200 free,
and without them fits an 80 GB card."""
LOGITS_OUTWEIGH_FREE_PCT = 50.0
"""A tiny model's logits outweigh its weights on any card: a 1M-parameter model pretrained on a CPU
holds 0.9 GB of logits in its 1.0 GB, with 98% of the machine's 64 GB free, and memory set nothing."""


def logits_warnings(top: Sequence[Ranked], job: Job) -> list[str]:
    """A training job whose first option spends a large share of each GPU on the loss's logits and fits
    tightly: a fused linear cross-entropy (Liger Kernel, Hsu et al. 2024, arXiv
    2410.10989) computes the loss chunk by chunk and never holds them, which can fit the run on fewer or
    smaller GPUs."""
    if not top or not job.training or job.fused_loss:
        return []
    first = top[0].candidate
    memory = first.memory
    if memory.logits < LOGITS_NOTE_SHARE * memory.total:
        return []
    outweigh = memory.logits >= memory.weights and first.headroom_pct < LOGITS_OUTWEIGH_FREE_PCT
    if first.headroom_pct >= LOGITS_NOTE_FREE_PCT and not outweigh:
        return []
    if not FUSED_LOSS_PLATFORMS.isdisjoint(first.option.gpu.platforms):
        remedy = "a fused cross-entropy loss (workload.fused_loss, as in Liger Kernel) never holds them" + (
            ", and may fit the run on fewer or smaller GPUs, or without activation checkpointing (no forward "
            "pass computed twice)."
            if first.spec.layout.checkpointing
            else ", and may fit the run on fewer or smaller GPUs."
        )
    elif job.batch > 1:  # a Mac's GPUs run no fused kernel; fewer sequences at once hold fewer logits
        remedy = (
            f"{first.option.gpu.name} runs no fused cross-entropy kernel (they are Triton's), but one "
            f"sequence a micro-step (workload.batch_size 1, accumulating {job.batch}) holds 1/{job.batch} "
            "of them."
        )
    else:
        return []
    return [
        f"The loss's logits take {memory.logits / GB:.1f} GB of the {memory.total / GB:.1f} GB on each "
        f"GPU of #1 (every token of the micro-batch's {job.seq_len:,}-token sequences over a "
        f"{job.shape.vocab_size:,}-token vocabulary, with the fp32 copy the loss makes and its gradient): "
        + remedy
    ]


def reader_field_warnings(job: Job) -> list[str]:
    """The serving fields that describe an encoder's traffic, given for a text generator: valid by the
    schema (the model's kind is the KB's), so the answer stands, sized without them, and says so."""
    serving = job.serving
    if serving is None or job.reads_only:
        return []
    given = [
        name
        for name, value in (
            ("sequences_per_request", serving.sequences_per_request > 1),
            ("corpus_documents", serving.corpus_documents is not None),
        )
        if value
    ]
    if not given:
        return []
    fields = " and ".join(f"serving.{name}" for name in given)
    verb, unused = ("describe", "were") if len(given) > 1 else ("describes", "was")
    return [
        f"{fields} {verb} an encoder's or embedding model's traffic and {unused} not used: this model "
        "generates text, sized by requests_per_min, avg_input_tokens and avg_output_tokens."
    ]


REPLACED_CONVENTIONS = frozenset({"mfu", "decode_bandwidth_efficiency", "inference_overhead_fraction"})
OPTIMIZER_STATE_CONVENTIONS = {
    "adam_state_bytes": ("adamw", "adam"),
    "adam_8bit_state_bytes": ("adamw_8bit",),
    "sgd_momentum_state_bytes": ("sgd_momentum",),
    "adafactor_state_bytes": ("adafactor",),
}
"""each optimizer's state convention, and the optimizers that use it"""
TRAINING_CONVENTIONS = frozenset(
    {
        "weight_bytes",  # a served plan's weights are in its own precision, stated with it
        "gradient_bytes",
        "master_weight_bytes",
        "training_flops_per_param_token",
        "full_recompute_flops_per_param_token",
        "logits_bytes_per_value",
        "qlora_lora_rank",
        *OPTIMIZER_STATE_CONVENTIONS,
    }
)
"""conventions only a training run's sizing reads"""
SERVING_CONVENTIONS = frozenset({"gpu_memory_utilization", "kv_block_size", "serving_headroom"})
"""conventions only serving's sizing reads"""


def conventions_used(job: Job) -> list[str]:
    """The sizing conventions the job's figures rest on: a served model's answer does not list the
    optimizer's bytes, nor a training run's the serving engine's block size; of the optimizers' state
    conventions only the job's own, and the QLoRA rank only for QLoRA."""
    serving = job.task == "inference"
    skipped = TRAINING_CONVENTIONS if serving else SERVING_CONVENTIONS
    used = []
    for convention in CONVENTIONS:
        name = convention.name
        if name in REPLACED_CONVENTIONS or name in skipped:
            continue
        if name in OPTIMIZER_STATE_CONVENTIONS and job.optimizer not in OPTIMIZER_STATE_CONVENTIONS[name]:
            continue
        if name == "qlora_lora_rank" and job.task != "qlora":
            continue
        used.append(name)
    return used


def assumptions(
    job: Job, policy: Policy, filled_in: Mapping[str, float | str], top: Sequence[Ranked] = ()
) -> dict[str, float | str]:
    """The assumptions behind the figures, with `filled_in` (planning's `workload_assumptions`: the
    needs the request left open) and what the options shown (`top`) run on. The sizing's defaults are
    listed less those the plans replace: the share of peak FLOPS and of bandwidth come from the training
    stack and the serving engine, and serving memory from the engine's budget rather than 1.2 x the
    weights."""
    values = {c.name: c.value for c in CONVENTIONS}
    found: dict[str, float | str] = {name: values[name] for name in conventions_used(job)}
    if job.task != "inference":
        found["gradient_bytes"] = HF_GRADIENT_BYTES
        found["training_bytes_per_param"] = model_state_bytes_per_param(
            job.optimizer, gradient_bytes=HF_GRADIENT_BYTES
        )
    headroom = policy.facts.get("plan.memory_headroom_pct", 0)
    found["memory_headroom_pct"] = float(headroom) if isinstance(headroom, int | float) else 0.0
    found["architecture"] = job.architecture_source
    found.update(filled_in)
    for filled in job.filled:
        found[f"architecture.{filled.field}"] = filled.note
    if job.config_used:
        found["hf_config.used"] = ", ".join(job.config_used) + " (other keys are ignored)"
    for i, note in enumerate(job.config_notes, 1):
        found[f"hf_config.assumed_{i}"] = note
    serving = job.serving
    if serving is not None and serving.requests_per_min is None:
        found["serving.requests_per_min"] = "absent: a single stream (one user), no fleet sizing"
    elif serving is not None and "avg_output_tokens" in serving.defaulted:
        found["serving.avg_output_tokens"] = float(serving.avg_output_tokens)  # sizes the demand
    if job.always_on:
        found["utilization_source"] = (
            "a service with stated traffic or an availability target runs, and a rental is billed, "
            "every hour (100%); give constraints.utilization_pct to change it"
        )
    if job.utilization is None:
        found["default_utilization_pct"] = DEFAULT_UTILIZATION * 100
    found.update(apple_silicon_engine(job, top))
    return found


APPLE_SILICON_PLATFORMS = frozenset({"mps", "mlx"})
APPLE_SILICON_ENGINE = (
    "llama.cpp (Metal) or MLX: vLLM and SGLang have no Metal back end, so a Mac serves with these. "
    "Decode is figured with the same bandwidth model, held to llama.cpp on an M2 Ultra: Llama-2-7B at "
    "40.5 tokens/s in f16 and 61.4 in 8 bits (ggml-org/llama.cpp PR 2891)"
)
"""tests/test_published_serving.py holds the model to both figures"""


def apple_silicon_engine(job: Job, top: Sequence[Ranked]) -> dict[str, str]:
    """What a served model's Apple silicon options run on: the `serving_engine` assumption names a CUDA
    engine, which does not run on a Mac's GPU (vLLM's GPU install page lists CUDA, ROCm and XPU)."""
    if job.task != "inference" or job.reads_only:
        return {}
    if not any(r.candidate.option.platform in APPLE_SILICON_PLATFORMS for r in top):
        return {}
    return {"serving_engine_apple_silicon": APPLE_SILICON_ENGINE}


def architecture_warnings(job: Job) -> list[str]:
    """What a partial architecture's filled sizes do to the figures: the KV cache (2 L n_kv_heads
    head_dim bytes per token) moves with each of them that was assumed or estimated."""
    found: list[str] = []
    by_field = {f.field: f for f in job.filled}
    kv_heads = by_field.get("n_kv_heads")
    if kv_heads is not None:
        found.append(
            f"`architecture` gives no n_kv_heads: multi-head attention is assumed (n_kv_heads = n_heads "
            f"= {kv_heads.value}). Grouped-query models (Llama 3, Mistral, Qwen 2) have fewer key/value "
            "heads, so for them the KV cache here is overstated n_heads / n_kv_heads times (4x for "
            "Llama 3 8B): give n_kv_heads for an exact figure."
        )
    estimated = [f.field for f in job.filled if f.kv_cache and f.field != "n_kv_heads"]
    if estimated:
        found.append(
            f"`architecture` gives no {' or '.join(estimated)}: estimated from the parameter count "
            "(see `assumptions`). The KV cache (2 x n_layers x n_kv_heads x head_dim values per token) "
            "moves with them: give them for an exact figure."
        )
    return found


def throughput_of(c: Candidate) -> Throughput:
    return Throughput(
        tokens_per_s=round(c.speed.tokens_per_s, 2),
        aggregate_tokens_per_s=round(c.speed.aggregate_tokens_per_s * c.copies, 2),
        max_concurrent_sequences=(
            None if c.speed.max_concurrent_sequences is None else c.speed.max_concurrent_sequences * c.copies
        ),
        training_hours=None if c.speed.training_hours is None else round(c.speed.training_hours, 2),
        prefill_tokens_per_s=None
        if c.speed.prefill_tokens_per_s is None
        else round(c.speed.prefill_tokens_per_s * c.copies, 1),
        time_to_first_token_s=None
        if c.speed.time_to_first_token_s is None
        else round(c.speed.time_to_first_token_s, 4),
        corpus_hours=rounded(c.corpus_hours, 3),
    )


def cost_of(c: Candidate) -> Cost:
    costs = c.costs
    bought = c.option.acquisition == "buy"
    low, high = (c.copies * v for v in c.option.capex_range_usd)
    return Cost(
        capex_usd=round(costs.capex_usd, 2),
        hourly_usd=round(costs.hourly_usd, 4),
        monthly_usd=round(costs.monthly_usd, 2),
        cost_per_1m_tokens_usd=rounded(costs.cost_per_1m_tokens_usd, 4),
        gpu_hours=rounded(costs.gpu_hours, 2),
        run_cost_usd=rounded(costs.run_cost_usd, 2),
        break_even_hours=rounded(costs.break_even_hours, 0),
        horizon_cost_usd=round(costs.horizon_cost_usd, 2),
        rent_cost_over_horizon_usd=rounded(costs.rent_cost_over_horizon_usd, 2),
        capex_low_usd=round(low, 2) if bought else None,
        capex_high_usd=round(high, 2) if bought else None,
    )


def price_dates(top: Sequence[Ranked]) -> list[tuple[int, date]]:
    """(rank, date) of the prices each recommendation is costed with (owned ones have none)."""
    return [(i, d) for i, r in enumerate(top, 1) if (d := r.candidate.option.price_as_of) is not None]


def price_age_warning(top: Sequence[Ranked], today: date, max_age_days: int) -> str | None:
    """A warning naming the recommendations costed with prices seen more than `max_age_days` ago,
    grouped by the day the prices were seen, oldest first."""
    by_day: dict[date, list[str]] = {}
    for rank, seen in price_dates(top):
        if (today - seen).days > max_age_days:
            by_day.setdefault(seen, []).append(f"#{rank}")
    if not by_day:
        return None
    listed = "; ".join(f"{_and(ranks)} as of {day.isoformat()}" for day, ranks in sorted(by_day.items()))
    return (
        f"Prices more than {max_age_days} days old (constraints.max_price_age_days): {listed}. "
        "Check today's prices before you buy or rent."
    )


def price_warnings(
    top: Sequence[Ranked],
    today: date,
    max_age_days: int,
    providers: Mapping[str, Provider],
    horizon_hours: float,
) -> list[str]:
    """What the prices of the options shown call for: their age (`price_age_warning`), and for a large
    rental on demand, the provider's committed terms (`commitment_warning`)."""
    found = (price_age_warning(top, today, max_age_days), commitment_warning(top, providers, horizon_hours))
    return [warning for warning in found if warning]


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _iso(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


TASK_TITLES = {"lora": "LoRA", "qlora": "QLoRA", "full_finetune": "A full fine-tune", "inference": "Serving"}


def task_title(method: str) -> str:
    """The task as a sentence starts it: "LoRA", "A full fine-tune", "Pretrain"."""
    return TASK_TITLES.get(method, method.replace("_", " ").capitalize())


def substitute_words(candidate: Candidate, job: Job, precision: str) -> str:
    """Words for a plan that changes the requested method or precision ("" for one that keeps them).
    "Not as asked" only for what the request asked: a precision it left open was the rules' default,
    and a plan in another one is a quality trade-off, not a refusal of the request."""
    attrs = candidate.plan_attrs
    task = job.task
    if attrs.get("method_changed"):
        method = str(attrs["method"])
        return f" (not as asked: {TASK_WORDS.get(method, method)} instead of {TASK_WORDS.get(task, task)})"
    if attrs.get("precision_changed"):
        if job.requested_precision is None:
            return f" ({attrs['precision']} rather than the default {precision}: a quality trade-off)"
        return f" (not as asked: {attrs['precision']} instead of {precision})"
    return ""


def gb(value: float) -> float:
    return round(value / GB, 3)


def rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
