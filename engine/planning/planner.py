"""For each hardware option, the plan that runs the job on it: method, precision and layout, sized.

Plans are tried in a fixed order of preference (docs/rule-facts.md): the requested method, then the
methods the rules suggest (lighter ones only: full fine-tune, LoRA, QLoRA); within a method the
requested (or rule-chosen) precision, then suggested ones; within those, one GPU or replicas, DDP,
ZeRO-3 sharding, tensor parallel, pipeline parallel, offload, each without then with activation
checkpointing. The first plan that fits in memory (less the headroom) and passes every filter is the
option's plan. Memory depends only on the layout, so it is computed once per layout and request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from math import ceil
from types import MappingProxyType

from engine.models.kb import Gpu
from engine.models.request import RecommendRequest
from engine.models.rule import Scalar
from engine.planning import deadline
from engine.planning.candidates import Option
from engine.planning.economics import Costs
from engine.planning.fleet_plans import fleet_plan
from engine.planning.memory import Breakdown, Layout, reported_bytes
from engine.planning.operating_point import Demand
from engine.planning.performance import (
    Speed,
    inference_speed,
    training_speed,
    training_work,
)
from engine.planning.plan_checks import ChecksMemo, PlanChecks, Rejection
from engine.planning.plan_fit import PlanFit, SizedSpec, SizingCache, SizingMemo
from engine.planning.plan_price import PlanPricing
from engine.planning.plan_space import (
    NATIVE_ATTRIBUTE,
    PlanSpace,
    Spec,
    own_precisions,
    plan_space_for,
    plan_specs,
)
from engine.planning.requirements import required_prefill_tokens_per_second
from engine.planning.workload import MAX_IN_FLIGHT, Job
from engine.reasoning.policy import (
    Filter,
    Policy,
    passes_residual,
)
from engine.sizing import GB

SECONDS_PER_HOUR = 3600.0


@dataclass(slots=True, eq=False)
class Candidate:
    """A sized plan on an option. Never changed once made (not frozen only because a search makes
    hundreds, and a frozen dataclass's constructor is three times slower)."""

    option: Option
    spec: Spec
    memory: Breakdown
    headroom_pct: float
    speed: Speed
    copies: int
    costs: Costs
    plan_attrs: Mapping[str, Scalar]
    """the plan's attributes (PLAN_ATTRIBUTES); the option's are on the option"""
    preference: float
    preferred_by: tuple[str, ...]
    spares: int = 0
    """copies beyond those the serving demand needs (an availability target's spare)"""
    deadline_share: float | None = None
    """a training run's hours over its deadline's (None without either): how little slack it leaves"""
    reported_gb: float | None = None
    """the memory the driver reports on each GPU, GB: what the fit and `headroom_pct` are measured
    against (an H100 80GB reports 81,559 MiB, 85.5 GB)"""
    passed_over: Candidate | None = None
    """the `fastest` objective: the plan the layouts' preference order comes to first, where a faster
    layout of the same method and precision was taken instead"""

    @property
    def gpu_count(self) -> int:
        return self.option.count * self.copies

    @property
    def attrs(self) -> Mapping[str, Scalar]:
        """Every attribute a rule can filter on: the option's and the plan's."""
        return {**self.option.attrs, **self.plan_attrs}

    @property
    def corpus_hours(self) -> float | None:
        """An encoder's hours to embed the request's corpus on this plan, all its copies reading."""
        hours = self.speed.corpus_hours
        return None if hours is None else hours / self.copies

    @property
    def run_hours(self) -> float | None:
        """One run's hours on this plan (a training run, a corpus to embed: `run_hours_of`); None for
        a service or a run sized by `job_hours`."""
        hours = self.plan_attrs["run_hours"]
        return float(hours) if hours else None

    @property
    def wall_clock_s(self) -> float:
        """T, what the `fastest` objective ranks by: a run's hours in seconds (training, or a corpus to
        embed); for serving, the seconds one sequence waits per token."""
        hours = self.run_hours
        if hours is not None:
            return hours * SECONDS_PER_HOUR
        if self.spec.layout.method != "inference":
            # a run sized by `job_hours`: every option takes those hours; the faster one does more
            return 1.0 / max(self.speed.aggregate_tokens_per_s * self.copies, 1e-12)
        return 1.0 / max(self.speed.tokens_per_s, 1e-12)

    @property
    def as_asked(self) -> bool:
        """The plan keeps the requested method and precision."""
        return not self.plan_attrs["method_changed"] and not self.plan_attrs["precision_changed"]


class Planner:
    def __init__(
        self,
        job: Job,
        policy: Policy,
        request: RecommendRequest,
        *,
        rent_rates: Mapping[str, float] = MappingProxyType({}),
        buy_prices: Mapping[str, float] = MappingProxyType({}),
        as_asked_only: bool = False,
        sizing: SizingMemo | None = None,
        checked: ChecksMemo | None = None,
        sizing_cache: SizingCache | None = None,
    ) -> None:
        """A planner for one request; `rent_rates` (cheapest on-demand $/GPU-hour per GPU id) and
        `buy_prices` (latest new price per GPU id) are the KB's, for the break-even figures;
        `sizing_cache` keeps each workload's sizing for the requests that ask about it again."""
        self.job = job
        self.policy = policy
        self.request = request
        facts = policy.facts
        self.headroom = _number(facts.get("plan.memory_headroom_pct")) / 100
        """the share of each GPU's memory kept free (rule keep-memory-headroom), at least MIN_HEADROOM"""
        base = job.requested_precision or facts.get("plan.precision") or "bf16"
        self.base_precision = str(base)
        self.neutral_precision = _chosen_precision(facts, "plan.neutral_precision", job)
        """a precision planned first, as the request's own, on the GPUs that run it natively (rule
        serve-in-fp8-where-native: fp8 serving is quality-neutral); elsewhere `base_precision`"""
        self.qat_precision = _chosen_precision(facts, "plan.qat_precision", job)
        """the precision of the model's quantization-aware-trained release, planned as the request's own
        after the floating-point ones (rule serve-qat-releases-where-16-bit-does-not-fit)"""
        # an encoder's or embedding model's requests are read batch by batch, each copy taking its own, so
        # copies do not idle while traffic lasts: its fleet grows by copies, not tensor-parallel splits
        in_flight = MAX_IN_FLIGHT if job.reads_only else job.batch
        base, neutral, qat = self.base_precision, self.neutral_precision, self.qat_precision
        self.space = plan_space_for(job.task, policy, base, neutral, job.checkpointing, in_flight, qat)
        self.required_tps, self.per_user_tps = (
            _fact_or_none(facts, "sizing.required_tokens_per_s"),
            _fact_or_none(facts, "sizing.per_user_tokens_per_s"),
        )
        self.required_prefill_tps = required_prefill_tokens_per_second(job)
        self.spares = int(_number(facts.get("plan.spare_replicas"))) if job.task == "inference" else 0
        """replicas beyond those the traffic needs (rule availability-needs-a-spare-replica)"""
        self.demand = (
            Demand(self.required_tps, self.required_prefill_tps or 0.0, self.per_user_tps)
            if job.batch_from_serving and self.required_tps is not None
            else None
        )
        """a serving fleet's rate, planned at each plan's operating point (operating_point.py)"""
        self._as_asked_only = as_asked_only
        memo = sizing or _memo_in(sizing_cache, job, request, self.space, self.headroom, self.own_precisions)
        self._assemble(memo, checked or ChecksMemo(), rent_rates, buy_prices)

    @property
    def own_precisions(self) -> tuple[str | None, ...]:
        """The precisions that count as the request's own (`plan_space.own_precisions`)."""
        return own_precisions(
            self.job.requested_precision, self.base_precision, self.neutral_precision, self.qat_precision
        )

    def _assemble(
        self,
        sizing: SizingMemo,
        checked: ChecksMemo,
        rent_rates: Mapping[str, float],
        buy_prices: Mapping[str, float],
    ) -> None:
        """The planner's parts, over the memos it shares with its siblings."""
        job = self.job
        self._sizing = sizing
        self.checks = PlanChecks(
            job,
            self.policy,
            self.request,
            self.own_precisions,
            early=self.required_tps is None and not self.spares,
            spec_attr_memo=sizing.spec_attrs,
            memo=checked,
        )
        """the rules' filters and preferences as plans meet them"""
        self.fit = PlanFit(
            job,
            self.space,
            self.headroom,
            sizing,
            as_asked_only=self._as_asked_only,
            changes_request=self.checks.changes_request,
            neutral_precision=self.neutral_precision,
        )
        """which specs fit which GPU, at how many bytes"""
        self.pricing = PlanPricing(job, self.request, rent_rates=rent_rates, buy_prices=buy_prices)
        """what each plan costs"""

    def without(self, rule: str, *, as_asked_only: bool = False) -> Planner:
        """This planner with one rule's filters lifted, planning as asked only or not. Sizing does
        not depend on filters, so the sizing memo is shared (what makes the infeasibility search
        cheap)."""
        return self._sibling(self.policy.without(rule), as_asked_only)

    def asked_only(self, only: bool) -> Planner:
        """This planner planning only specs that keep the requested method and precision (`only`),
        or every spec the rules allow; it shares both memos, the policy being the same."""
        return self if only == self._as_asked_only else self._sibling(self.policy, only)

    @property
    def sizing(self) -> SizingMemo:
        """The memo this planner and its siblings size into."""
        return self._sizing

    @property
    def as_asked_only(self) -> bool:
        """Plan only specs that keep the requested method and precision on the GPUs (the
        recommender's first pass: substitutes, and CPU offload unless the request lists it, are
        offered only when nothing runs the job as asked; rule offload-is-a-slow-last-resort)."""
        return self._as_asked_only

    def _sibling(self, policy: Policy, as_asked_only: bool) -> Planner:
        sibling = Planner(
            self.job,
            policy,
            self.request,
            rent_rates=self.pricing.rent_rates,
            buy_prices=self.pricing.buy_prices,
            as_asked_only=as_asked_only,
            sizing=self._sizing,
            checked=self.checks.memo if policy is self.policy else None,
        )
        return sibling

    # --- plan space ----------------------------------------------------------------------------

    def specs(self, count: int, per_node: int) -> tuple[Spec, ...]:
        """Every spec for this many GPUs (`per_node` to a node), in preference order."""
        return plan_specs(self.space, count, per_node)

    def precision_on(self, gpu: Gpu) -> str:
        """The precision the request runs in on this GPU as asked: the quality-neutral one where the
        GPU computes in it natively, else the requested or rule-chosen one."""
        neutral = self.neutral_precision
        return neutral if neutral is not None and neutral in gpu.native_precisions else self.base_precision

    # --- one option ----------------------------------------------------------------------------

    def plan(self, option: Option) -> Candidate | Rejection | None:
        """The option's plan, why it has none, or None when nothing can run on it for reasons that
        are not worth reporting (no layout for its GPU count, no FLOPS figure in the KB)."""
        screened = self.checks.screen(option)
        if screened is not None:
            return screened
        return self.plan_screened(option)

    def plan_screened(self, option: Option) -> Candidate | Rejection | None:
        """`plan` for an option that has passed `screen`."""
        deadline.check()  # the unit of a search's work: a request past its time limit stops here
        usable = self.fit.usable_on(option.gpu)
        first: Rejection | None = None
        rules: set[str] = set()
        fitted = False
        host_short: float | None = None
        # A third of the options fit no spec: once one option of this GPU count has shown the least
        # need (below), the others are judged by it without walking their specs.
        native = self.neutral_precision is None or bool(
            option.attrs.get(NATIVE_ATTRIBUTE.get(self.neutral_precision, ""), False)
        )  # no spec in the quality-neutral precision is planned on a GPU that does not run it
        owned = option.acquisition == "owned"
        known = self._sizing.least_memory.get(
            (option.count, option.gpus_per_node, self._as_asked_only, native, owned)
        )
        if known is not None and known > usable:
            return self._none_fits(option, known)
        # Specs in preference order: most options take an early one. Serving under the `fastest`
        # objective takes the fastest layout of the first method and precision that plans: on two B200s
        # a pipeline decodes a mixture of experts faster than tensor parallelism, whose expert matrices
        # split in two (MOE_TP_GROWTH), and preference order alone would plan the slower. Training keeps
        # its order, least sharding first: timing every layout of every option made the bench mix's
        # answers a fifth dearer (bench/instructions.py).
        fastest = self.request.objective == "fastest" and self.job.task == "inference"
        best: Candidate | None = None
        first_plan: Candidate | None = None
        for entry in self.fit.planned(option.count, option.gpus_per_node, native, owned):
            if best is not None and not _same_form(best.spec, entry.spec):
                break
            memory = entry.memory or self.fit.sized(entry).memory  # inline check: the hot path
            assert memory is not None
            if entry.total > usable:
                continue
            host = memory.host * option.gpus_per_node
            if host > 0 and host > self.fit.host_usable(option):
                host_short = host  # CPU offload needs more RAM than the machine has
                continue
            fitted = True
            outcome = plan_entry(self, option, entry, memory)
            if isinstance(outcome, Candidate):
                if not fastest:
                    return outcome
                first_plan = first_plan or outcome
                best = outcome if best is None or outcome.wall_clock_s < best.wall_clock_s else best
            elif outcome is not None and best is None:
                rules.add(outcome.rule)
                first = first or outcome
        if best is not None:
            return best if best is first_plan else replace(best, passed_over=first_plan)
        if fitted:
            return None if first is None else Rejection(option, first.rule, first.reason, frozenset(rules))
        if host_short is not None:
            return Rejection(option, self.checks.fits_rule, self.fit.host_too_small(option, host_short))
        return self._none_fits(option, self.fit.least(option.count, option.gpus_per_node, native, owned))

    def _none_fits(self, option: Option, least: float) -> Rejection | None:
        if least == float("inf"):
            return None  # no layout for this many GPUs (no multi-GPU strategy applies)
        return Rejection(option, self.checks.fits_rule, self.fit.too_small(option, least))


def plan_entry(
    planner: Planner, option: Option, entry: SizedSpec, memory: Breakdown
) -> Candidate | Rejection | None:
    """The plan of the entry's spec on the option, which fits its memory (`memory` per GPU): its speed,
    copies, the rules' filters and preferences, and its cost."""
    spec, job = entry.spec, planner.job
    served = _speed_and_copies(planner, option, entry, memory)
    if served is None:
        return None
    speed, memory, copies = served
    if copies > 1 and option.acquisition == "owned":  # more of the cards would be bought, not owned
        return Rejection(option, DEMAND_RULE, owned_short(option, speed, copies, planner.spares))
    hours = run_hours_of(job, speed, copies)
    run_hours = hours if hours is not None else job.job_hours
    checks = planner.checks.memo.spec_checks.get(id(spec)) or planner.checks.checks(spec)
    option_attrs, gpus, c = option.attrs, option.count * copies, planner.request.constraints
    # One dict literal, in the order `count_attrs` and the rest used to be added.
    plan: dict[str, Scalar] = {
        **checks.attrs,
        "precision_native": True if checks.native is None else bool(option_attrs[checks.native]),
        "fits": True,  # only specs that fit are tried
        "within_max_gpus": c.max_gpus is None or gpus <= c.max_gpus,
        "matches_gpu_count": c.gpu_count is None or gpus == c.gpu_count,
        "gpu_count": gpus,
        "finishes_in_time": job.deadline_hours is None or hours is None or hours <= job.deadline_hours,
        "run_hours": hours or 0.0,
        "fast_enough_per_user": planner.per_user_tps is None or speed.tokens_per_s >= planner.per_user_tps,
    }
    priced: Costs | None = None
    # Costs are computed when a filter needs `within_budget`, or once every filter has passed:
    # most rejected plans never need them. Filters still run in the policy's order.
    for rule_filter, rest, needs_budget in checks.filters:
        if needs_budget and priced is None:
            priced = planner.pricing.priced(option, copies, run_hours, speed, plan)
        if (rest is not None and passes_residual(rest, plan, option_attrs)) != rule_filter.keep_matching:
            return Rejection(option, rule_filter.rule, _with_figures(rule_filter, speed, hours))
    if priced is None:
        priced = planner.pricing.priced(option, copies, run_hours, speed, plan)
    matched = [p for p, rest in checks.preferences if not rest or passes_residual(rest, plan, option_attrs)]
    reported, held = reported_bytes(option.gpu), on_device(memory, option.gpu)
    return Candidate(
        option=option,
        spec=spec,
        memory=held,
        headroom_pct=(1 - held.total / reported) * 100,
        speed=speed,
        copies=copies,
        costs=priced,
        plan_attrs=plan,
        preference=sum(p.weight for p in matched),
        preferred_by=tuple(p.rule for p in matched),
        spares=planner.spares,
        reported_gb=reported / GB,
        deadline_share=None if hours is None or not job.deadline_hours else hours / job.deadline_hours,
    )


def _speed_and_copies(
    planner: Planner, option: Option, entry: SizedSpec, memory: Breakdown
) -> tuple[Speed, Breakdown, int] | None:
    """The entry's speed on the option's GPUs, its memory per GPU and the copies the demand needs; a
    serving fleet's at its operating point (`fleet_plans`). None without a speed (no FLOPS figure)."""
    links = option.links
    # A key of plain values: hashing the Layout and Links dataclasses per plan costs more.
    key = (option.gpu.id, links.gpu_to_gpu, links.inter_node, links.host, links.latency_s, option.nodes)
    speeds = entry.speeds
    if key in speeds:
        speed = speeds[key]
    else:
        speed = speeds[key] = speed_of(planner.job, planner.fit, option, entry.spec.layout)
    if speed is None:
        return None
    if planner.demand is None:
        return speed, memory, copies_needed(planner, speed)
    # a serving fleet: at the batch its copies hold while they carry the rate
    fleet = fleet_plan(planner.job, planner.fit, planner.demand, option, entry, key, speed)
    if fleet is None:
        return None
    return fleet.speed, fleet.memory, fleet.copies + planner.spares


DEMAND_RULE = "serving-demand-sizes-the-fleet"
"""the rule whose demand a serving fleet's copies carry"""


def owned_short(option: Option, speed: Speed, copies: int, spares: int) -> str:
    """Why the cards a user owns do not serve the rate: it needs more copies of them than there are."""
    needed = (copies - spares) * option.count
    spare = f", and {spares * option.count} more as the availability target's spare" if spares else ""
    return (
        f"the rate needs {needed} x {option.gpu.name} at about {speed.tokens_per_s:,.0f} tokens/s per "
        f"sequence{spare}, more than the {option.count} you own"
    )


def _same_form(a: Spec, b: Spec) -> bool:
    """the same method and precision (layouts apart)"""
    return a.layout.method == b.layout.method and a.layout.precision == b.layout.precision


def copies_needed(planner: Planner, speed: Speed) -> int:
    """Copies of an option the serving demand needs, and the availability target's spares: a copy's
    time goes to decoding and to reading prompts (prefill), each at its own rate."""
    copies = 1
    if planner.required_tps is not None:
        busy = planner.required_tps / speed.aggregate_tokens_per_s
        prefill = planner.required_prefill_tps
        if prefill and speed.prefill_tokens_per_s and not planner.job.reads_only:
            busy += prefill / speed.prefill_tokens_per_s
        copies = max(1, ceil(busy))
    return copies + planner.spares


def _memo_in(
    cache: SizingCache | None,
    job: Job,
    request: RecommendRequest,
    space: PlanSpace,
    headroom: float,
    own: tuple[str | None, ...],
) -> SizingMemo:
    """The request's sizing memo: the workload's in `cache` (`SizingCache.memo_for`), else its own."""
    if cache is None:
        return SizingMemo()
    c = request.constraints
    parallelism = None if c.parallelism is None else tuple(c.parallelism)
    return cache.memo_for(job, space, headroom, own, parallelism)


def on_device(memory: Breakdown, gpu: Gpu) -> Breakdown:
    """The layout's bytes as this device holds them: a CPU keeps no CUDA context or graph pool (the
    fit, sized per layout, counted them: it errs on the safe side)."""
    return replace(memory, overhead=0.0) if gpu.gpu_class == "cpu" else memory


def speed_of(job: Job, fit: PlanFit, option: Option, layout: Layout) -> Speed | None:
    """Tokens/s of a layout on an option's GPUs; the same for every offer and price of them
    (`plan_entry` keeps them per spec entry). Its decode and training work is sized once per
    layout (`fit.memo`)."""
    memo = fit.memo
    if layout.method == "inference":
        work = fit.decode_work(layout)
        memory, budget = fit.memory(layout), fit.usable_on(option.gpu)
        return inference_speed(job, option.gpu, layout, option.links, work, memory=memory, budget=budget)
    key = (layout.method, layout.checkpointing)
    step = memo.training_work.get(key)
    if step is None:
        step = memo.training_work[key] = training_work(job, layout)
    return training_speed(
        job, option.gpu, layout, option.links, nodes=option.nodes, work=step, memory=fit.memory(layout)
    )


def run_hours_of(job: Job, speed: Speed, copies: int) -> float | None:
    """The hours one run of the job takes on a plan: a training run's, or a corpus run's over its
    `copies` (`Job.corpus_run`); None for a service."""
    if speed.training_hours is not None:
        return speed.training_hours
    if job.corpus_run and speed.corpus_hours is not None:
        return speed.corpus_hours / copies
    return None


def _with_figures(rule_filter: Filter, speed: Speed, hours: float | None) -> str:
    """A filter's message, with the option's own figure where the filter reads a speed need (`hours`:
    the plan's run, `run_hours_of`)."""
    message = rule_filter.message.rstrip(".")
    if "finishes_in_time" in rule_filter.where and hours is not None:
        return f"{message}; this option takes {hours:,.0f} h."
    if "fast_enough_per_user" in rule_filter.where:
        return f"{message}; this option gives {speed.tokens_per_s:,.1f} tokens/s per sequence."
    return rule_filter.message


def _chosen_precision(facts: Mapping[str, Scalar], name: str, job: Job) -> str | None:
    """A precision a rule chose for the request (fact `name`): none where the request states its own."""
    chosen = facts.get(name) if job.requested_precision is None else None
    return None if chosen is None else str(chosen)


def _fact_or_none(facts: Mapping[str, Scalar], name: str) -> float | None:
    """A numeric fact, or None when it is absent."""
    value = facts.get(name)
    return None if value is None else _number(value)


def _number(value: Scalar | None) -> float:
    """A numeric fact or attribute; 0 when absent or not a number."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return 0.0
