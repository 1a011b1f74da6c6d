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
from dataclasses import dataclass, field
from functools import cached_property
from math import ceil
from types import MappingProxyType

from engine.models.kb import Gpu
from engine.models.request import RecommendRequest
from engine.models.rule import Scalar
from engine.planning import deadline
from engine.planning.candidates import Option
from engine.planning.economics import Costs, Usage, costs, spend, usage
from engine.planning.memory import Breakdown, Layout, per_gpu, reported_bytes, serving_budget
from engine.planning.performance import (
    DecodeWork,
    Speed,
    TrainingWork,
    decode_work,
    inference_speed,
    training_speed,
    training_work,
)
from engine.planning.plan_checks import ChecksMemo, PlanChecks, Rejection
from engine.planning.plan_space import NATIVE_ATTRIBUTE, Spec, plan_space_for, plan_specs
from engine.planning.requirements import required_prefill_tokens_per_second
from engine.planning.workload import Job
from engine.reasoning.policy import (
    Filter,
    Policy,
    passes_residual,
)
from engine.sizing import GB
from engine.sizing.serving_engines import profile

GIB = 2**30
MIN_HEADROOM = 1 * GB
"""the least memory kept free on a GPU, whatever its size (rule keep-memory-headroom)"""


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

    @property
    def gpu_count(self) -> int:
        return self.option.count * self.copies

    @property
    def attrs(self) -> Mapping[str, Scalar]:
        """Every attribute a rule can filter on: the option's and the plan's."""
        return {**self.option.attrs, **self.plan_attrs}


@dataclass(slots=True)
class _SizedSpec:
    """A spec and, once needed, its memory per GPU (filled in place: the planner's own cache)."""

    spec: Spec
    memory: Breakdown | None = None
    total: float = 0.0
    speeds: dict[tuple[str, float, float, float, int], Speed | None] = field(default_factory=dict)
    """the spec's speed by GPU model, links (gpu-to-gpu, inter-node, host) and nodes; filled by
    `Planner._try`, shared with relaxed planners as the entries are (speed ignores filters)"""


@dataclass(slots=True)
class SizingMemo:
    """What a planner works out once per request and reuses, independent of the rules' filters: the
    specs for each GPU count, their memory and work, the usable memory of each GPU, the cost of use.
    Bound: one request's plan space (a few hundred specs, one entry per GPU model); it lives as long
    as the request's planners, which share it (`Planner.without`, `Planner.asked_only`)."""

    memory: dict[Layout, Breakdown] = field(default_factory=dict)
    spec_entries: dict[tuple[int, int], list[_SizedSpec]] = field(default_factory=dict)
    asked_entries: dict[tuple[int, int, bool, bool], list[_SizedSpec]] = field(default_factory=dict)
    least_memory: dict[tuple[int, int, bool, bool], float] = field(default_factory=dict)
    spec_attrs: dict[int, dict[str, Scalar]] = field(default_factory=dict)
    """by spec id: specs live as long as `spec_entries`, so their ids are stable"""
    usage: dict[float | None, Usage] = field(default_factory=dict)
    decode_work: dict[Layout, DecodeWork] = field(default_factory=dict)
    training_work: dict[tuple[str, bool], TrainingWork] = field(default_factory=dict)
    usable: dict[str, float] = field(default_factory=dict)


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
    ) -> None:
        """A planner for one request; `rent_rates` (cheapest on-demand $/GPU-hour per GPU id) and
        `buy_prices` (latest new price per GPU id) are the KB's, for the break-even figures."""
        self.job = job
        self.rent_rates = rent_rates
        self.buy_prices = buy_prices
        self.policy = policy
        self.request = request
        facts = policy.facts
        self.headroom = _number(facts.get("plan.memory_headroom_pct")) / 100
        """the share of each GPU's memory kept free (rule keep-memory-headroom), at least MIN_HEADROOM"""
        base = job.requested_precision or facts.get("plan.precision") or "bf16"
        self.base_precision = str(base)
        neutral = facts.get("plan.neutral_precision") if job.requested_precision is None else None
        self.neutral_precision = None if neutral is None else str(neutral)
        """a precision planned first, as the request's own, on the GPUs that run it natively (rule
        serve-in-fp8-where-native: fp8 serving is quality-neutral); elsewhere `base_precision`"""
        self.space = plan_space_for(
            job.task, policy, self.base_precision, self.neutral_precision, job.checkpointing, job.batch
        )
        self.strategies = self.space.strategies
        required = facts.get("sizing.required_tokens_per_s")
        self.required_tps = None if required is None else _number(required)
        self.required_prefill_tps = required_prefill_tokens_per_second(job)
        per_user = facts.get("sizing.per_user_tokens_per_s")
        self.per_user_tps = None if per_user is None else _number(per_user)
        self.spares = int(_number(facts.get("plan.spare_replicas"))) if job.task == "inference" else 0
        """replicas beyond those the traffic needs (rule availability-needs-a-spare-replica)"""
        self._as_asked_only = as_asked_only
        self._sizing = sizing or SizingMemo()
        self.checks = PlanChecks(
            job,
            policy,
            request,
            self.own_precisions,
            early=self.required_tps is None and not self.spares,
            spec_attr_memo=self._sizing.spec_attrs,
            memo=checked or ChecksMemo(),
        )
        """the rules' filters and preferences as plans meet them"""
        self.fits_rule = self.checks.fits_rule

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
            rent_rates=self.rent_rates,
            buy_prices=self.buy_prices,
            as_asked_only=as_asked_only,
            sizing=self._sizing,
            checked=self.checks.memo if policy is self.policy else None,
        )
        return sibling

    # --- plan space ----------------------------------------------------------------------------

    def specs(self, count: int, per_node: int) -> tuple[Spec, ...]:
        """Every spec for this many GPUs (`per_node` to a node), in preference order."""
        return plan_specs(self.space, count, per_node)

    def memory(self, layout: Layout) -> Breakdown:
        found = self._sizing.memory.get(layout)
        if found is None:
            found = self._sizing.memory[layout] = per_gpu(self.job, layout)
        return found

    def speed(self, option: Option, layout: Layout) -> Speed | None:
        """Tokens/s of a layout on an option's GPUs; the same for every offer and price of them
        (`_try` keeps them per spec entry)."""
        if layout.method == "inference":
            work = self._sizing.decode_work.get(layout)
            if work is None:
                work = self._sizing.decode_work[layout] = decode_work(self.job, layout)
            speed = inference_speed(
                self.job,
                option.gpu,
                layout,
                option.links,
                work,
                memory=self.memory(layout),
                budget=self.usable_on(option.gpu),
            )
        else:
            key = (layout.method, layout.checkpointing)
            step = self._sizing.training_work.get(key)
            if step is None:
                step = self._sizing.training_work[key] = training_work(self.job, layout)
            speed = training_speed(self.job, option.gpu, layout, option.links, nodes=option.nodes, work=step)
        return speed

    def fitting(self, count: int, per_node: int, gpu: Gpu) -> list[Spec]:
        """Specs that fit one of these GPUs (`usable_on`), in preference order."""
        usable = self.usable_on(gpu)
        entries = [self._sized(entry) for entry in self._entries(count, per_node)]
        return [e.spec for e in entries if e.total <= usable]

    def usable_on(self, gpu: Gpu) -> float:
        """Bytes of one of these GPUs a plan may fill: a serving engine's share of what the driver
        reports, else what it reports less the headroom kept free."""
        found = self._sizing.usable.get(gpu.id)
        if found is None:
            budget = serving_budget(gpu, self.job) if self.job.task == "inference" else None
            real = reported_bytes(gpu)
            found = self._sizing.usable[gpu.id] = (
                budget if budget is not None else real - self.kept_free(real / GB)
            )
        return found

    def kept_free(self, capacity_gb: float) -> float:
        """Bytes of a GPU's memory kept free: the headroom share, at least MIN_HEADROOM."""
        return max(MIN_HEADROOM, capacity_gb * GB * self.headroom)

    def _least(self, count: int, per_node: int, native: bool) -> float:
        """The least memory per GPU any spec for this many GPUs needs (bytes; inf when none), among the
        specs that keep the request's method and precision when only those are planned."""
        key = (count, per_node, self._as_asked_only, native)
        found = self._sizing.least_memory.get(key)
        if found is None:
            found = self._sizing.least_memory[key] = min(
                (self._sized(e).total for e in self._planned(count, per_node, native)), default=float("inf")
            )
        return found

    def precision_on(self, gpu: Gpu) -> str:
        """The precision the request runs in on this GPU as asked: the quality-neutral one where the
        GPU computes in it natively, else the requested or rule-chosen one."""
        neutral = self.neutral_precision
        return neutral if neutral is not None and neutral in gpu.native_precisions else self.base_precision

    @cached_property
    def own_precisions(self) -> tuple[str | None, ...]:
        """The precisions that count as the request's own: the requested or rule-chosen one, the
        quality-neutral one, and, with none stated and bf16 chosen, fp16 (where a GPU has no bf16 it
        runs fp16, with loss scaling when training: the same memory and, for the user, the same plan,
        as rule default-precision-bf16 says; a GPU with bf16 plans bf16 first)."""
        base = self.job.requested_precision or self.base_precision
        same = "fp16" if self.job.requested_precision is None and base == "bf16" else None
        return (base, self.neutral_precision, same)

    def runs_neutral(self, option: Option) -> bool:
        """Whether the option's GPU runs the quality-neutral precision natively (True when none is
        planned): where it does not, no spec in that precision is planned at all."""
        neutral = self.neutral_precision
        return neutral is None or bool(option.attrs.get(NATIVE_ATTRIBUTE.get(neutral, ""), False))

    def _entries(self, count: int, per_node: int) -> list[_SizedSpec]:
        """The specs for this many GPUs in preference order, each sized once it has been needed."""
        key = (count, per_node)
        found = self._sizing.spec_entries.get(key)
        if found is None:
            found = self._sizing.spec_entries[key] = [
                _SizedSpec(spec) for spec in self.specs(count, per_node)
            ]
        return found

    def _planned(self, count: int, per_node: int, native: bool = True) -> list[_SizedSpec]:
        """`_entries` less those that change the request while only the request's are planned, and
        less those in the quality-neutral precision on a GPU that does not run it (`native`)."""
        if not self._as_asked_only and native:
            return self._entries(count, per_node)
        key = (count, per_node, self._as_asked_only, native)
        found = self._sizing.asked_entries.get(key)
        if found is None:
            found = self._sizing.asked_entries[key] = [
                e
                for e in self._entries(count, per_node)
                if not (self._as_asked_only and self.checks.changes_request(e.spec))
                and (native or e.spec.layout.precision != self.neutral_precision)
            ]
        return found

    def _sized(self, entry: _SizedSpec) -> _SizedSpec:
        if entry.memory is None:
            entry.memory = self.memory(entry.spec.layout)
            entry.total = entry.memory.total
        return entry

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
        capacity = _number(option.attrs["vram_per_gpu_gb"])
        usable = self.usable_on(option.gpu)
        first: Rejection | None = None
        rules: set[str] = set()
        fitted = False
        host_short: float | None = None
        # A third of the options fit no spec: once one option of this GPU count has shown the least
        # need (below), the others are judged by it without walking their specs.
        native = self.runs_neutral(option)
        known = self._sizing.least_memory.get(
            (option.count, option.gpus_per_node, self._as_asked_only, native)
        )
        if known is not None and known > usable:
            return self._none_fits(option, known, capacity)
        # Specs in preference order: most options take an early one.
        for entry in self._planned(option.count, option.gpus_per_node, native):
            memory = entry.memory or self._sized(entry).memory  # inline check: the hot path
            assert memory is not None
            if entry.total > usable:
                continue
            host = memory.host * option.gpus_per_node
            if host > 0 and host > self._host_usable(option):
                host_short = host  # CPU offload needs more RAM than the machine has
                continue
            fitted = True
            outcome = self._try(option, entry, capacity, memory)
            if isinstance(outcome, Candidate):
                return outcome
            if outcome is not None:
                rules.add(outcome.rule)
                first = first or outcome
        if fitted:
            return None if first is None else Rejection(option, first.rule, first.reason, frozenset(rules))
        if host_short is not None:
            return Rejection(option, self.fits_rule, self._host_too_small(option, host_short))
        return self._none_fits(option, self._least(option.count, option.gpus_per_node, native), capacity)

    def _none_fits(self, option: Option, least: float, capacity: float) -> Rejection | None:
        if least == float("inf"):
            return None  # no layout for this many GPUs (no multi-GPU strategy applies)
        return Rejection(option, self.fits_rule, self._too_small(option, least, capacity))

    def _host_usable(self, option: Option) -> float:
        """Host RAM one node of the option offers less the headroom (bytes); unlimited when unknown
        (hardware bought is configured to order; the why states what offload needs)."""
        ram = option.offer.memory_gib if option.offer is not None else None
        return float("inf") if ram is None else ram * GIB * (1 - self.headroom)

    def _host_too_small(self, option: Option, needed: float) -> str:
        ram = option.offer.memory_gib if option.offer is not None else 0
        return (
            f"CPU offload needs {needed / GB:,.0f} GB of host RAM per node; "
            f"{option.offer.instance_type if option.offer else option.gpu.name} has {ram:g} GiB"
        )

    def _too_small(self, option: Option, least: float, capacity: float) -> str:
        count = f"{option.count} x " if option.count > 1 else ""
        return f"needs at least {least / GB:.1f} GB per GPU; {count}{option.gpu.name} {self.room(option.gpu)}"

    def room(self, gpu: Gpu) -> str:
        """What one GPU offers a plan, in words: its reported memory and the share or headroom kept."""
        real = reported_bytes(gpu) / GB
        usable = self.usable_on(gpu) / GB
        if self.job.task == "inference" and profile(self.job.engine).memory_utilization < 1.0:
            return f"has {real:.1f} GB, of which {self.job.engine} takes {usable:.1f} GB"
        return f"has {real:.1f} GB with {real - usable:.1f} GB kept free"

    def _try(
        self, option: Option, entry: _SizedSpec, capacity: float, memory: Breakdown
    ) -> Candidate | Rejection | None:
        """The plan of the entry's spec on the option, which fits its memory (`memory` per GPU)."""
        spec, job = entry.spec, self.job
        links = option.links
        # A key of plain values: hashing the Layout and Links dataclasses per plan costs more.
        key = (option.gpu.id, links.gpu_to_gpu, links.inter_node, links.host, option.nodes)
        speeds = entry.speeds
        if key in speeds:
            speed = speeds[key]
        else:
            speed = speeds[key] = self.speed(option, spec.layout)
        if speed is None:
            return None
        copies = 1
        if self.required_tps is not None:
            # a copy's time goes to decoding and to reading prompts (prefill), each at its own rate
            busy = self.required_tps / speed.aggregate_tokens_per_s
            if self.required_prefill_tps and speed.prefill_tokens_per_s and not job.encoder:
                busy += self.required_prefill_tps / speed.prefill_tokens_per_s
            copies = max(1, ceil(busy))
        copies += self.spares
        hours = speed.training_hours
        run_hours = hours if hours is not None else job.job_hours
        checks = self.checks.memo.spec_checks.get(id(spec)) or self.checks.checks(spec)
        option_attrs = option.attrs
        gpus = option.count * copies
        c = self.request.constraints
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
            "fast_enough_per_user": self.per_user_tps is None or speed.tokens_per_s >= self.per_user_tps,
        }
        priced: Costs | None = None
        # Costs are computed when a filter needs `within_budget`, or once every filter has passed:
        # most rejected plans never need them. Filters still run in the policy's order.
        for rule_filter, rest, needs_budget in checks.filters:
            if needs_budget and priced is None:
                priced = self._priced(option, copies, run_hours, speed, plan)
            if (rest is not None and passes_residual(rest, plan, option_attrs)) != rule_filter.keep_matching:
                return Rejection(option, rule_filter.rule, _with_figures(rule_filter, speed))
        if priced is None:
            priced = self._priced(option, copies, run_hours, speed, plan)
        matched = [
            p for p, rest in checks.preferences if not rest or passes_residual(rest, plan, option_attrs)
        ]
        return Candidate(
            option=option,
            spec=spec,
            memory=memory,
            headroom_pct=(1 - memory.total / (capacity * GB)) * 100,
            speed=speed,
            copies=copies,
            costs=priced,
            plan_attrs=plan,
            preference=sum(p.weight for p in matched),
            preferred_by=tuple(p.rule for p in matched),
            spares=self.spares,
            deadline_share=None if hours is None or not job.deadline_hours else hours / job.deadline_hours,
        )

    def usage(self, run_hours: float | None) -> Usage:
        found = self._sizing.usage.get(run_hours)
        if found is None:
            c = self.request.constraints
            found = usage(self.job.utilization, run_hours, self.job.horizon_hours, c.electricity_usd_per_kwh)
            self._sizing.usage[run_hours] = found
        return found

    def _priced(
        self, option: Option, copies: int, run_hours: float | None, speed: Speed, attrs: dict[str, Scalar]
    ) -> Costs:
        """The option's costs, with `within_budget` written into `attrs`."""
        priced = costs(
            option,
            copies,
            self.usage(run_hours),
            speed.aggregate_tokens_per_s,
            rent_per_gpu_hour=self.rent_rates.get(option.gpu.id),
            buy_per_gpu=self.buy_prices.get(option.gpu.id),
        )
        budget = self.request.constraints.budget_usd
        attrs["within_budget"] = budget is None or spend(priced, option.acquisition) <= budget
        return priced


def _with_figures(rule_filter: Filter, speed: Speed) -> str:
    """A filter's message, with the option's own figure where the filter reads a speed need."""
    message = rule_filter.message.rstrip(".")
    if "finishes_in_time" in rule_filter.where and speed.training_hours is not None:
        return f"{message}; this option takes {speed.training_hours:,.0f} h."
    if "fast_enough_per_user" in rule_filter.where:
        return f"{message}; this option gives {speed.tokens_per_s:,.1f} tokens/s per sequence."
    return rule_filter.message


def _number(value: Scalar | None) -> float:
    """A numeric fact or attribute; 0 when absent or not a number."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return 0.0
