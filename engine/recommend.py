"""The one entry point: `recommend(request) -> response`, per docs/api-contract.md.

request -> facts -> forward chaining over the rules -> policy (filters, preferences, suggestions)
-> hardware options from the graph -> a sized plan per option -> ranking -> response with the trace.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from engine.answer.explain import (
    TASK_WORDS,
    citation_text,
    hardware,
    plan_words,
    reasons,
    relevant_steps,
    speed_words,
    total_words,
    trace,
    why,
    workload_words,
)
from engine.answer.explain import money as money_text
from engine.answer.ranking import Ranked, measure, rank
from engine.knowledge.cache import CheckedKB
from engine.knowledge.graph import KBGraph
from engine.knowledge.kb import KB
from engine.models.request import HardwareCount, RecommendRequest
from engine.models.response import (
    Cost,
    GpuMemory,
    Recommendation,
    RecommendResponse,
    Rejected,
    Relaxation,
    TargetFit,
    Throughput,
)
from engine.models.rule import Rule, Scalar
from engine.planning.candidates import Context, context_for, latest_prices
from engine.planning.economics import spend
from engine.planning.planner import MEMORY_RULE, Candidate, Planner, Rejection
from engine.planning.requirements import hardware_facts, requirements, sizing_facts, workload_assumptions
from engine.planning.search import (
    Search,
    Searcher,
    as_asked,
    best_when_lifted,
    relaxed_objective,
)
from engine.planning.workload import Job, resolve
from engine.reasoning.engines import RuleEngine, make_engine
from engine.reasoning.facts import request_facts
from engine.reasoning.policy import Policy, policy_from
from engine.reasoning.refengine import Outcome
from engine.sizing import CONVENTIONS, GB
from engine.sizing.training_memory import model_state_bytes_per_param

MAX_REJECTED = 15
REJECTED_PER_RULE = 3
BUDGET_RULE = "budget-is-a-hard-filter"
DEADLINE_RULE = "training-finishes-by-the-deadline"
INPUT_OF_SIZING_FACT = {
    "sizing.deadline_hours": "workload.job_hours",
    "sizing.per_user_tokens_per_s": "workload.serving.min_tokens_per_s_per_user",
}
"""the request field behind a sizing fact a rule reads, for naming what to relax"""


class Advisor:
    """A loaded KB and rule set, ready to answer requests. Thread-safe: the KB and rules never change,
    and the option caches only gain entries computed from them (a race computes one twice)."""

    def __init__(
        self,
        kb: KB,
        rules: Sequence[Rule],
        rules_root: Path | None = None,
        engine: RuleEngine | None = None,
        *,
        checked: CheckedKB | None = None,
    ):
        """An advisor over `kb` and `rules`; `checked` says what identifies them when they were read
        and checked (engine/reasoning/checked.py), which is how the service builds one."""
        self.kb = kb
        self.rules = tuple(rules)
        self.rules_root = rules_root
        self.rules_by_id = {rule.id: rule for rule in self.rules}
        self.categories = dict(checked.categories) if checked else {}
        self.graph = KBGraph(kb)
        self.engine = engine or make_engine(self.rules)
        self.checked = checked
        self.key = checked.key if checked else None
        """the cache key of what this advisor was built from (None when built from objects)"""
        self.version = checked.version if checked else kb.version
        self.prices_as_of = max((o.as_of for o in kb.offers.values()), default=None)
        self.rent_rates = _cheapest_rates(self.graph)
        self.searcher = Searcher(self.graph, measure)
        self.buy_prices = {
            gpu.id: price.price_usd
            for gpu in kb.gpus.values()
            if (price := latest_prices(gpu.prices).get("new")) is not None
        }

    def warm(self) -> None:
        """Build the option lists of the commonest contexts (each OS, spot allowed or not, nothing
        owned or named) now, so the first request of each does not pay for them (tens of ms)."""
        for os_name in ("linux", "windows", "macos"):
            for spot in (False, True):
                ctx = Context(
                    os=os_name, vendors=None, providers=None, spot=spot, owned=(), extra_counts=frozenset()
                )
                self.searcher.grouped_options(ctx, None)

    @classmethod
    def of(cls, checked: CheckedKB, rules_root: Path | None) -> Advisor:
        return cls(checked.kb, checked.rules, rules_root, checked=checked)

    def close(self) -> None:
        """Free what the rule engine holds outside Python (durable's ruleset) once this advisor is
        replaced. Requests still running on it are answered by an equivalent engine."""
        self.engine.close()

    def open_sessions(self) -> int:
        """Rule-engine sessions open now (durable keeps one per request in flight; the reference none)."""
        live = getattr(self.engine, "live_sessions", None)
        return int(live()) if callable(live) else 0

    # --- the pipeline --------------------------------------------------------------------------

    def recommend(self, request: RecommendRequest) -> RecommendResponse:
        job = resolve(request, self.kb)
        facts = self.facts(request, job)
        outcome = self.engine.run(facts)
        policy = policy_from(outcome, self.rules)
        planner = self.planner(job, policy, request)
        ctx = context_for(request, spot="spot" in policy.suggested("pricing"))
        # First the plans that keep the requested method and precision; the substitutes are sized
        # only when none of those passes (they would be dropped by `as_asked` anyway).
        planner.as_asked_only = True
        search = self.searcher.search(planner, ctx, request.constraints.gpu_count)
        if not search.candidates:
            planner.as_asked_only = False
            search = self.searcher.search(planner, ctx, request.constraints.gpu_count)
        candidates = as_asked(search.candidates)
        ranked = rank(candidates, request.objective, planner.per_user_tps)
        top = ranked[: request.top_k]
        on_target = self.on_target(planner, ctx, request, ranked)
        precision = planner.base_precision
        relaxation = None if top else self.relaxation(planner, ctx, request, search)
        recommendations = [self.recommendation(i + 1, r, policy, outcome, job) for i, r in enumerate(top)]
        return RecommendResponse(
            request_id=uuid.uuid4().hex,
            kb_version=self.version,
            prices_as_of=self.prices_as_of.isoformat() if self.prices_as_of else "unknown",
            feasible=bool(top),
            summary=self.summary(job, top, relaxation, search, on_target, precision),
            requirements=requirements(
                job,
                policy.facts,
                precision,
                _planned_checkpointing(top, job),
            ),
            recommendations=recommendations,
            rejected=self.rejected(search.rejections),
            target_fit=self.target_fit(planner, request, on_target, search.rejections),
            trace=trace(outcome, self.rules),
            warnings=self.warnings(job, policy),
            assumptions=self.assumptions(job, policy),
            relaxation=relaxation,
        )

    def facts(self, request: RecommendRequest, job: Job) -> dict[str, Scalar]:
        facts = request_facts(request)
        facts["workload.params_b"] = round(job.params / 1e9, 4)
        if job.is_moe:
            facts["workload.active_params_b"] = round(job.active_params / 1e9, 4)
        sizing = sizing_facts(job, self.kb)
        facts.update(sizing)
        facts.update(hardware_facts(request, self.kb, float(sizing["sizing.task_gb"])))
        return facts

    def planner(self, job: Job, policy: Policy, request: RecommendRequest) -> Planner:
        return Planner(job, policy, request, rent_rates=self.rent_rates, buy_prices=self.buy_prices)

    # --- parts of the response -----------------------------------------------------------------

    def recommendation(
        self, rank_no: int, ranked: Ranked, policy: Policy, outcome: Outcome, job: Job
    ) -> Recommendation:
        c = ranked.candidate
        option, layout, memory = c.option, c.spec.layout, c.memory
        steps = relevant_steps(c, policy, outcome)
        step_rules = {firing.step: firing.rule for firing in outcome.firings}
        by_id = {rule.id: rule for rule in self.rules}
        citations: list[str] = []
        for step in steps:
            for citation in by_id[step_rules[step]].citations:
                text = citation_text(citation)
                if text not in citations:
                    citations.append(text)
        return Recommendation(
            rank=rank_no,
            score=round(ranked.score, 4),
            gpu=option.gpu.id,
            gpu_name=option.gpu.name,
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
                per_gpu_gb=_gb(memory.total),
                headroom_pct=round(c.headroom_pct, 1),
                fits=True,
                weights_per_gpu_gb=_gb(memory.weights),
                gradients_per_gpu_gb=_gb(memory.gradients),
                optimizer_per_gpu_gb=_gb(memory.optimizer),
                activations_per_gpu_gb=_gb(memory.activations),
                kv_cache_per_gpu_gb=_gb(memory.kv_cache),
                overhead_per_gpu_gb=_gb(memory.overhead),
            ),
            throughput=throughput_of(c),
            cost=cost_of(c),
            why=why(c, policy, reasons(c, policy, job)),
            trace_steps=steps,
            citations=citations,
        )

    def rejected(self, rejections: Sequence[Rejection]) -> list[Rejected]:
        """A few notable rejections per rule: distinct GPUs, the highest-bandwidth first (the hardware
        people ask about), so the reader sees what each rule ruled out."""
        by_rule: dict[str, list[Rejection]] = {}
        for rejection in rejections:
            by_rule.setdefault(rejection.rule, []).append(rejection)
        picked: list[Rejected] = []
        for rule in sorted(by_rule):
            # per GPU, its first rejection with the fewest GPUs (then acquisition); then the GPUs
            # with the most bandwidth (one pass and a sort of GPUs, not of every rejection)
            per_gpu: dict[str, Rejection] = {}
            for rejection in by_rule[rule]:
                held = per_gpu.get(rejection.option.gpu.id)
                if held is None or (rejection.option.count, rejection.option.acquisition) < (
                    held.option.count,
                    held.option.acquisition,
                ):
                    per_gpu[rejection.option.gpu.id] = rejection
            chosen = sorted(
                per_gpu.values(), key=lambda r: (-r.option.gpu.memory_bandwidth_gbs, r.option.gpu.id)
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
        return picked[:MAX_REJECTED]

    def on_target(
        self, planner: Planner, ctx: Context, request: RecommendRequest, ranked: Sequence[Ranked]
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
        count = request.constraints.gpu_count
        options = [
            o for o in self.searcher.options(ctx, count) if o.gpu.id == target.gpu and o.count == target.count
        ]
        asked_only = planner.as_asked_only
        planner.as_asked_only = False
        try:
            plans = [p for p in (planner.plan(o) for o in options) if isinstance(p, Candidate)]
        finally:
            planner.as_asked_only = asked_only
        best = rank(as_asked(plans), request.objective, planner.per_user_tps)
        return best[0].candidate if best else None

    def target_fit(
        self,
        planner: Planner,
        request: RecommendRequest,
        on_target: Candidate | None = None,
        rejections: Sequence[Rejection] = (),
    ) -> TargetFit | None:
        target = request.constraints.target_hardware
        if target is None:
            return None
        gpu = self.kb.gpus[target.gpu]
        capacity = gpu.usable_memory_gb or gpu.memory_gb
        usable = planner.usable(capacity)
        per_node = min(target.count, max(gpu.link_domain_gpus, 1))
        asked = planner.job.task
        precision = "nf4" if asked == "qlora" else planner.base_precision
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
            alternatives.extend(self._scale_out(planner, gpu.id, target.count, capacity, asked, precision))
        count = f"{target.count} x " if target.count > 1 else ""
        verdict = "fits" if fits else "does not fit"
        text = (
            f"{task_title(asked)} in {precision} needs {least / GB:.1f} GB per GPU at best "
            f"on {count}{gpu.name} "
            f"({capacity:g} GB, {planner.kept_free(capacity) / GB:.1f} GB kept free): it {verdict}."
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
            text += (
                f" Best plan on it: {plan_words(on_target)}{_substitute_words(on_target, asked, precision)}, "
                f"{on_target.memory.total / GB:.1f} GB per GPU, {speed_words(on_target)}, "
                f"{total_words(on_target)}."
            )
        return TargetFit(
            gpu=gpu.id,
            count=target.count,
            fits=fits,
            per_gpu_gb=_gb(least),
            vram_per_gpu_gb=capacity,
            why=text,
            alternatives=alternatives,
            throughput=throughput_of(on_target) if on_target else None,
            cost=cost_of(on_target) if on_target else None,
            plan=plan_words(on_target) if on_target else None,
        )

    def _scale_out(
        self, planner: Planner, gpu_id: str, count: int, capacity: float, asked: str, precision: str
    ) -> list[str]:
        gpu = self.kb.gpus[gpu_id]
        for more in (2, 4, 8, 16, 32, 64):
            if more <= count:
                continue
            per_node = min(more, max(gpu.link_domain_gpus, 1))
            for spec in planner.fitting(more, per_node, capacity):
                layout = spec.layout
                if layout.method == asked and layout.precision == precision and not layout.offload:
                    return [f"{'+'.join(spec.parallelism) or spec.strategy} over {more} GPUs"]
        return []

    def relaxation(
        self, planner: Planner, ctx: Context, request: RecommendRequest, search: Search
    ) -> Relaxation | None:
        """The hard constraint whose lifting gives the option the objective ranks first (`cheapest` and
        `fastest`: the cheapest), when nothing passes them all."""
        rules = sorted(
            {r.rule for r in search.rejections if r.rule != MEMORY_RULE and r.rule != planner.fits_rule}
        )
        best: tuple[float, str, Candidate] | None = None
        # A way out that runs the job as asked (method, precision, states on the GPUs) first, as
        # the search does; substitutes only when lifting no single rule allows that.
        for asked_only in (True, False):
            for rule in rules:
                # Only options this rule rejected can change when it is lifted: the others were
                # rejected by rules that still hold (a rejection records every rule that rejected it).
                touched = [r.option for r in search.rejections if r.rejected_by(rule)]
                if rule == DEADLINE_RULE:
                    continue  # more time is no way out when a cheaper rule is: tried last, by speed
                relaxed = planner.without(rule)
                relaxed.as_asked_only = asked_only
                objective = request.objective
                found = best_when_lifted(relaxed, touched, objective, best[0] if best else None, measure)
                if found is not None:
                    value = measure(found, relaxed_objective(objective), planner.per_user_tps)
                    if best is None or value < best[0]:
                        best = (value, rule, found)
            if best is not None:
                break
        if best is None and DEADLINE_RULE in rules:
            return self._more_time(planner, search, rules)
        if best is None:
            return None
        _, rule, cheapest = best
        constraint = _constraint_of(self.rules, rule)
        needs = money_text(spend(cheapest.costs, cheapest.option.acquisition))
        way = "best" if request.objective == "balanced" else "cheapest"
        message = (
            f"The {way} way out is relaxing {constraint} (rule {rule}): {hardware(cheapest)}, "
            f"{plan_words(cheapest)}, spending {needs}."
        )
        return Relaxation(constraint=constraint, rule=rule, message=message)

    def _more_time(self, planner: Planner, search: Search, rules: Sequence[str]) -> Relaxation | None:
        """When only a later deadline (and perhaps more money) helps: the fastest option once the
        deadline and the budget are lifted, which says how long the run takes at best."""
        relaxed = planner.without(DEADLINE_RULE)
        lifted = [DEADLINE_RULE]
        if BUDGET_RULE in rules:
            relaxed, lifted = relaxed.without(BUDGET_RULE), [DEADLINE_RULE, BUDGET_RULE]
        touched = [r.option for r in search.rejections if any(r.rejected_by(rule) for rule in lifted)]
        found = [c for o in touched if isinstance(c := relaxed.plan(o), Candidate)]
        timed = [c for c in found if c.speed.training_hours is not None]
        if not timed:
            return None
        fastest = min(timed, key=lambda c: (c.speed.training_hours or 0.0, c.costs.horizon_cost_usd))
        hours = fastest.speed.training_hours or 0.0
        constraint = _constraint_of(self.rules, DEADLINE_RULE)
        what = "more time and a bigger budget help" if len(lifted) > 1 else "more time helps"
        message = (
            f"Only {what}: the fastest option, {hardware(fastest)}, {plan_words(fastest)}, "
            f"takes {hours:,.0f} h ({hours / 24:,.0f} days) and spends "
            f"{money_text(spend(fastest.costs, fastest.option.acquisition))}."
        )
        return Relaxation(constraint=constraint, rule=DEADLINE_RULE, message=message)

    def summary(
        self,
        job: Job,
        top: Sequence[Ranked],
        relaxation: Relaxation | None,
        search: Search,
        on_target: Candidate | None = None,
        precision: str = "bf16",
    ) -> str:
        subject = workload_words(job)
        if on_target is not None and (not top or top[0].candidate is not on_target):
            # The question was whether it runs on the target: answer that first.
            changed = _substitute_words(on_target, job.task, precision)
            count = f"{on_target.gpu_count} x " if on_target.gpu_count > 1 else ""
            lead = (
                f"For {subject} on {count}{on_target.option.gpu.name}: {plan_words(on_target)}{changed}, "
                f"{on_target.memory.total / GB:.1f} GB per GPU, {speed_words(on_target)}."
            )
            if not top:
                return lead
            best = top[0].candidate
            overall = "Run as asked, the best option" if changed else "The best option overall"
            return (
                f"{lead} {overall} is {hardware(best)}: {plan_words(best)}, "
                f"{best.memory.total / GB:.1f} GB per GPU, {total_words(best)}."
            )
        if not top:
            reason = _main_reason(search.rejections, relaxation)
            text = f"No option meets every constraint for {subject}: {reason}"
            return f"{text} {relaxation.message}" if relaxation else text
        best = top[0].candidate
        text = (
            f"For {subject}, the best option is {hardware(best)}: {plan_words(best)}, "
            f"{best.memory.total / GB:.1f} GB per GPU, {total_words(best)}."
        )
        if len(top) > 1:
            runner = top[1].candidate
            text += f" Next: {hardware(runner)} ({plan_words(runner)})."
        return text

    def warnings(self, job: Job, policy: Policy) -> list[str]:
        found: list[str] = []
        for notice in policy.notices:
            if notice.message not in found:
                found.append(notice.message)
        if job.architecture_source == "estimated":
            found.append(
                "The layer sizes were estimated from the parameter count (multi-head attention assumed): "
                "give `model` or `architecture` for exact activation and KV-cache figures."
            )
        found.extend(architecture_warnings(job))
        return found

    def assumptions(self, job: Job, policy: Policy) -> dict[str, float | str]:
        found: dict[str, float | str] = {c.name: c.value for c in CONVENTIONS}
        found["training_bytes_per_param"] = model_state_bytes_per_param(job.optimizer)
        headroom = policy.facts.get("plan.memory_headroom_pct", 0)
        found["memory_headroom_pct"] = float(headroom) if isinstance(headroom, int | float) else 0.0
        found["architecture"] = job.architecture_source
        found.update(workload_assumptions(job))
        for filled in job.filled:
            found[f"architecture.{filled.field}"] = filled.note
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
            from engine.planning.economics import DEFAULT_UTILIZATION

            found["default_utilization_pct"] = DEFAULT_UTILIZATION * 100
        return found


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
    )


def cost_of(c: Candidate) -> Cost:
    costs = c.costs
    return Cost(
        capex_usd=round(costs.capex_usd, 2),
        hourly_usd=round(costs.hourly_usd, 4),
        monthly_usd=round(costs.monthly_usd, 2),
        cost_per_1m_tokens_usd=_round(costs.cost_per_1m_tokens_usd, 4),
        gpu_hours=_round(costs.gpu_hours, 2),
        run_cost_usd=_round(costs.run_cost_usd, 2),
        break_even_hours=_round(costs.break_even_hours, 0),
        horizon_cost_usd=round(costs.horizon_cost_usd, 2),
        rent_cost_over_horizon_usd=_round(costs.rent_cost_over_horizon_usd, 2),
    )


def _planned_checkpointing(top: Sequence[Ranked], job: Job) -> bool | None:
    """Whether the first recommendation, when it runs the requested method, checkpoints activations."""
    if not top or top[0].candidate.spec.layout.method != job.task:
        return None
    return top[0].candidate.spec.layout.checkpointing


def task_title(method: str) -> str:
    return method.replace("_", " ").capitalize()


def _is_target(candidate: Candidate, target: HardwareCount) -> bool:
    return candidate.option.gpu.id == target.gpu and candidate.gpu_count == target.count


def _substitute_words(candidate: Candidate, task: str, precision: str) -> str:
    """Words for a plan that changes the requested method or precision ("" for one that keeps them)."""
    attrs = candidate.plan_attrs
    if attrs.get("method_changed"):
        method = str(attrs["method"])
        return f" (not as asked: {TASK_WORDS.get(method, method)} instead of {TASK_WORDS.get(task, task)})"
    if attrs.get("precision_changed"):
        return f" (not as asked: {attrs['precision']} instead of {precision})"
    return ""


def _alternative(spec: object, asked: str, precision: str, count: int) -> str | None:
    from engine.planning.planner import Spec

    assert isinstance(spec, Spec)
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


def _constraint_of(rules: Sequence[Rule], rule_id: str) -> str:
    """The request field a rule's filter turns on: a constraint it reads, else the input behind a
    sizing fact it reads, else the rule's id."""
    read = _facts_read(rules, rule_id)
    found = next((name for name in read if name.startswith("constraints.")), None)
    found = found or next((INPUT_OF_SIZING_FACT[name] for name in read if name in INPUT_OF_SIZING_FACT), None)
    return found or rule_id


def _facts_read(rules: Sequence[Rule], rule_id: str) -> list[str]:
    from engine.models.rule import facts_in

    rule = next(r for r in rules if r.id == rule_id)
    return [name for name, _ in facts_in(rule.when)]


def _main_reason(rejections: Sequence[Rejection], relaxation: Relaxation | None) -> str:
    """The constraint that fails: the one whose relaxation helps, else the commonest reason."""
    if not rejections:
        return "the knowledge base has no hardware to consider."
    if relaxation is not None:
        reasons = [next(r.reason for r in rejections if r.rule == relaxation.rule)]
        # a budget that ruled options out is the constraint a reader checks first: say it too
        reasons += sorted(
            {r.reason for r in rejections if r.rule == BUDGET_RULE and r.rule != relaxation.rule}
        )
        return " ".join(reason if reason.endswith(".") else reason + "." for reason in reasons[:2])
    counts: dict[str, int] = {}
    for rejection in rejections:
        counts[rejection.reason] = counts.get(rejection.reason, 0) + 1
    reason = max(sorted(counts), key=lambda r: counts[r])
    return reason if reason.endswith(".") else reason + "."


def _cheapest_rates(graph: KBGraph) -> dict[str, float]:
    rates: dict[str, float] = {}
    for offer in graph.kb.offers.values():
        if offer.on_demand_usd_per_hour is None:
            continue
        rate = offer.on_demand_usd_per_hour / offer.gpu_count
        if offer.gpu not in rates or rate < rates[offer.gpu]:
            rates[offer.gpu] = rate
    return rates


def _gb(value: float) -> float:
    return round(value / GB, 3)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _text(value: Scalar | None) -> str | None:
    return value if isinstance(value, str) else None


def load_advisor(kb_root: Path, rules_root: Path, data_root: Path | None, today: date) -> Advisor:
    """An advisor over the KB and rules at these roots when every lint check passes, else `KBInvalid`
    listing the problems of both (the service starts, and reloads, only on a clean KB)."""
    from engine.reasoning.checked import read_checked

    return Advisor.of(read_checked(kb_root, rules_root, data_root, today), rules_root)


_default: Advisor | None = None
_lock = threading.Lock()


def default_advisor() -> Advisor:
    """The advisor over the configured kb/ and rules/, loaded and checked once."""
    global _default
    with _lock:
        if _default is None:
            from engine.knowledge.paths import data_dir, kb_dir, rules_dir

            _default = load_advisor(kb_dir(), rules_dir(), data_dir(), date.today())
        return _default


def recommend(request: RecommendRequest) -> RecommendResponse:
    """Ranked, traced recommendations for one request, over the configured KB and rules."""
    return default_advisor().recommend(request)
