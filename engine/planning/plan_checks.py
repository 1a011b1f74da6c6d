"""The rules' filters and preferences as plans meet them: which filters screen hardware before any
sizing, which wait for a plan, and, per spec, what is left of each once the spec's own attributes
(method, precision, strategy) are known. The planner (planning/planner.py) sizes; this decides."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from engine.models.attributes import PLAN_ATTRIBUTES
from engine.models.request import RecommendRequest
from engine.models.rule import Scalar
from engine.planning.candidates import Option
from engine.planning.memory import Layout
from engine.planning.plan_space import Spec
from engine.planning.workload import Job
from engine.reasoning.policy import Filter, Policy, Preference, SourcedTest, Test, passes_plan, residual

PROVIDER_ATTRIBUTES = frozenset({"provider", "provider_hosts", "provider_kind", "provider_allowed"})
GROUP_VARYING = PROVIDER_ATTRIBUTES | {"price_kind"}
"""what may differ between the options of one price group: who rents it, new or used"""
EARLY_ATTRIBUTES = frozenset({"gpu_count", "within_max_gpus", "matches_gpu_count", "within_budget"})
"""Plan attributes that can be known before sizing: the GPU count (unless a serving fleet may add
copies of the option) and, for a bought or owned option, whether its capex is within the budget."""
MEMORY_RULE = "memory"
"""Rejections for memory name the rule that requires `fits`, or this when no rule does."""


_SettledFilters = tuple[tuple[Filter, tuple[SourcedTest, ...] | None, bool], ...]
_SettledPreferences = tuple[tuple[Preference, tuple[SourcedTest, ...]], ...]


@dataclass(frozen=True, slots=True)
class _SpecChecks:
    """The plan filters and preferences left to test on an option once a spec's attributes are known."""

    filters: _SettledFilters
    """(filter, its tests on other attributes or None when its spec part fails, whether they read
    `within_budget`), in the policy's order, without those that cannot reject on this spec"""
    preferences: _SettledPreferences
    """(preference, its tests on other attributes), without those that cannot hold on this spec"""
    attrs: Mapping[str, Scalar]
    """the spec's own plan attributes (`Planner._spec_attrs`)"""
    native: str | None
    """the option attribute that says whether the GPU runs the spec's precision natively (None: any does)"""


@dataclass(slots=True)
class ChecksMemo:
    """The rules' filters and preferences settled on each spec: they depend on the policy, so only
    planners with the same policy share them (`Planner.asked_only`). Bound: one entry per spec, and
    per distinct set of spec attributes."""

    spec_checks: dict[int, _SpecChecks] = field(default_factory=dict)
    residuals: dict[tuple[Scalar, ...], tuple[_SettledFilters, _SettledPreferences]] = field(
        default_factory=dict
    )


NO_FILTER = -1
"""`PlanChecks.first_rejecting`'s answer when no filter rejects"""


@dataclass(slots=True, eq=False)
class Rejection:
    """Why an option has no plan (never changed once made; not frozen for the same reason)."""

    option: Option
    rule: str
    reason: str
    rules: frozenset[str] = frozenset()
    """every rule that rejected one of the option's plans (`rule` is the first); lifting any other
    rule cannot make the option a candidate"""

    def rejected_by(self, rule: str) -> bool:
        return rule == self.rule or rule in self.rules


class PlanChecks:
    """The policy's filters and preferences for one request's plans, settled once per spec (its
    memo is shared by planners with the same policy)."""

    def __init__(
        self,
        job: Job,
        policy: Policy,
        request: RecommendRequest,
        own_precisions: tuple[str | None, ...],
        *,
        early: bool,
        spec_attr_memo: dict[int, dict[str, Scalar]],
        memo: ChecksMemo,
    ) -> None:
        """`own_precisions`: the precisions that count as the request's own (Planner); `early`:
        whether the count and budget filters can screen before sizing (no serving fleet's copies)."""
        self.job = job
        self.policy = policy
        self.request = request
        self.own_precisions = own_precisions
        self.spec_attr_memo = spec_attr_memo
        self.memo = memo
        self.fits_rule = next(
            (f.rule for f in policy.filters if f.keep_matching and f.where.get("fits") is True), MEMORY_RULE
        )
        self.option_filters = tuple(f for f in policy.filters if not f.per_plan)
        self.plan_filters = tuple(f for f in policy.filters if f.per_plan)
        self._count_attrs: dict[int, dict[str, Scalar]] = {}
        self.offload_listed = "offload" in (request.constraints.parallelism or ())
        # Without a serving fleet (no copies), the GPU count and a bought or owned option's spend
        # are known before sizing: filters on them alone (a fixed gpu_count, a budget) screen early.
        self.early_filters = (
            tuple(
                (f, frozenset(f.where) & PLAN_ATTRIBUTES)
                for f in self.plan_filters
                if set(f.where) & PLAN_ATTRIBUTES <= EARLY_ATTRIBUTES
            )
            if early
            else ()
        )

    def split_option_filters(self, varying: frozenset[str]) -> tuple[tuple[Filter, ...], tuple[Filter, ...]]:
        """The hardware filters that read none of the `varying` attributes, and those that read some."""
        shared = tuple(f for f in self.option_filters if not varying & f.where.keys())
        return shared, tuple(f for f in self.option_filters if varying & f.where.keys())

    def screen(
        self, option: Option, filters: tuple[Filter, ...] | None = None, *, early: bool = True
    ) -> Rejection | None:
        """The first filter on hardware alone that rejects the option, before any sizing (`filters`:
        only these of the hardware filters; `early`: also the count and budget filters)."""
        for rule_filter in self.option_filters if filters is None else filters:
            if rule_filter.rejects(option.attrs):
                return Rejection(option, rule_filter.rule, rule_filter.message)
        return self.screen_early(option) if early else None

    def first_rejecting(self, option: Option, filters: tuple[Filter, ...]) -> int:
        """The index of the first of `filters` that rejects the option on hardware alone, or NO_FILTER."""
        attrs = option.attrs
        for index, rule_filter in enumerate(filters):
            if rule_filter.rejects(attrs):
                return index
        return NO_FILTER

    def screen_early(self, option: Option) -> Rejection | None:
        """The first filter on the GPU count or a bought option's capex that rejects the option."""
        if self.early_filters:
            known = self.count_attrs(option.count)
            if option.acquisition != "rent":  # spend is the capex (0 when owned), whatever the plan
                budget = self.request.constraints.budget_usd
                known = {**known, "within_budget": budget is None or option.capex_usd <= budget}
            for rule_filter, reads in self.early_filters:
                # the plan's attributes from `known`, the rest from the option's (no merged copy:
                # this runs for every option of every price group walked)
                if reads <= known.keys() and passes_plan(rule_filter.tests, known, option.attrs) != (
                    rule_filter.keep_matching
                ):
                    return Rejection(option, rule_filter.rule, rule_filter.message)
        return None

    def count_attrs(self, gpus: int) -> dict[str, Scalar]:
        """The plan attributes a GPU count settles (shared: never changed by a caller)."""
        found = self._count_attrs.get(gpus)
        if found is None:
            c = self.request.constraints
            found = self._count_attrs[gpus] = {
                "within_max_gpus": c.max_gpus is None or gpus <= c.max_gpus,
                "matches_gpu_count": c.gpu_count is None or gpus == c.gpu_count,
                "gpu_count": gpus,
            }
        return found

    def changes_request(self, spec: Spec, owned: bool = False) -> bool:
        """Whether the spec changes what was asked: its method or precision, or CPU offload the request
        does not list. On hardware the user owns, neither offload nor a quantized form of the job (a
        quantized precision where the request leaves it open; QLoRA for LoRA) is planned as a change:
        each costs time or quality, not money, and is how owned cards run what does not fit them
        (Answer.AI's FSDP-QLoRA trains a 70B model on two 24 GB cards with offload; a 70B model in AWQ
        int4 serves from two or four RTX 3090s, vLLM issue 6955). Rules offload-is-a-slow-last-resort
        and quantization-escape-hatch-for-inference still rank them down, and the plan's
        `precision_changed` and `method_changed` still say so."""
        layout = spec.layout  # from the layout, not `spec_attrs`: most specs are never tried
        if layout.offload and not (self.offload_listed or owned):
            return True
        method_changed, precision_changed = self._changed(layout)
        if owned:
            return not runs_on_owned(self.job, layout.method, method_changed, precision_changed)
        return method_changed or precision_changed

    def _changed(self, layout: Layout) -> tuple[bool, bool]:
        """Whether a layout changes the requested method, and the precision (QLoRA computes in 16
        bits whatever is asked: its precision is never a change)."""
        method_changed = layout.method != self.job.task
        return method_changed, layout.precision not in self.own_precisions and layout.method != "qlora"

    def spec_attrs(self, spec: Spec) -> dict[str, Scalar]:
        """The attributes a spec has on any GPU, computed once per spec."""
        found = self.spec_attr_memo.get(id(spec))  # specs live as long as the planner: ids are stable
        if found is None:
            c = self.request.constraints
            layout = spec.layout
            method_changed, precision_changed = self._changed(layout)
            found = self.spec_attr_memo[id(spec)] = {
                "method": layout.method,
                "precision": layout.precision,
                "method_changed": method_changed,
                "precision_changed": precision_changed,
                "strategy": spec.strategy,
                "tp_degree": layout.tp,
                "offload": layout.offload,
                "strategy_allowed": c.parallelism is None
                or spec.strategy in ("single", "replicas")
                or spec.strategy in c.parallelism,
            }
        return found

    def checks(self, spec: Spec) -> _SpecChecks:
        """The plan filters and preferences with the tests on the spec's own attributes applied,
        once per spec: most read its method, precision or strategy, so on most specs they are
        settled before any option is seen."""
        found = self.memo.spec_checks.get(id(spec))  # ids are stable, as in `_spec_attrs`
        if found is None:
            attrs = self.spec_attrs(spec)
            # Specs that differ only in what no rule reads (data-parallel ranks, checkpointing, the
            # GPU count) have the same attributes: the residual tests depend on those alone.
            values = tuple(attrs.values())
            settled = self.memo.residuals.get(values)
            if settled is None:
                settled = self.memo.residuals[values] = self._settle(attrs)
            precision = spec.layout.precision
            native = "bf16_native" if precision == "bf16" else "fp8_native" if precision == "fp8" else None
            found = self.memo.spec_checks[id(spec)] = _SpecChecks(*settled, attrs, native)
        return found

    def _settle(self, attrs: Mapping[str, Scalar]) -> tuple[_SettledFilters, _SettledPreferences]:
        """`_SpecChecks.filters` and `.preferences` for a spec with these attributes."""
        # `fits` holds on every plan tried (only specs that fit are tried).
        known: dict[str, Scalar] = {**attrs, "fits": True}
        filters: list[tuple[Filter, tuple[SourcedTest, ...] | None, bool]] = []
        for rule_filter in self.plan_filters:
            rest = residual(rule_filter.tests, known)
            keeps = rule_filter.keep_matching
            if (rest is None and not keeps) or (rest == () and keeps):
                continue  # its verdict on this spec is to keep every option
            needs_budget = rest is not None and any(name == "within_budget" for name, _, _ in rest)
            filters.append((rule_filter, rest, needs_budget))
        preferences = tuple(
            (p, rest) for p in self.policy.preferences if (rest := residual(p.tests, known)) is not None
        )
        return tuple(filters), preferences

    def varying_tests(self, varying: frozenset[str]) -> tuple[Test, ...]:
        """The plan filters' and preferences' tests on the `varying` attributes (what differs inside
        price groups), the same objects for every request that fires the same rules
        (`policy.compiled_where`)."""
        wheres = [f.tests for f in self.plan_filters] + [p.tests for p in self.policy.preferences]
        return tuple((name, holds) for tests in wheres for name, holds in tests if name in varying)

    def tells_apart(self, groups: Iterable[Sequence[Option]], varying: frozenset[str]) -> bool:
        """Whether a plan filter or a preference judges two options of one price group differently
        by an attribute that varies inside groups (who rents it, new or used): then each option is
        planned on its own, else the cheapest of a group stands for it. A rule that reads such an
        attribute but gives every member of each group the same verdict (notebooks dropped for long
        runs, where no group mixes a notebook with a cloud) leaves the groups whole."""
        return tests_tell_apart(self.varying_tests(varying), groups)


def tests_tell_apart(tests: Sequence[Test], groups: Iterable[Sequence[Option]]) -> bool:
    """`PlanChecks.tells_apart` for its `varying_tests`."""
    if not tests:
        return False
    several = [group for group in groups if len(group) > 1]
    for name, holds in tests:
        # a test's verdict depends on the attribute's value alone, and a group holds few values
        # (its providers, new or used): each value is judged once
        verdict_of: dict[Scalar, bool] = {}
        for group in several:
            seen: bool | None = None
            for option in group:
                verdict = _judged(option.attrs, name, holds, verdict_of)
                if seen is None:
                    seen = verdict
                elif verdict != seen:
                    return True
    return False


def _judged(
    attrs: Mapping[str, Scalar], name: str, holds: Callable[[Scalar], object], memo: dict[Scalar, bool]
) -> bool:
    """Whether a test on `name` holds for these attributes (never on one they lack), each value judged
    once into `memo`."""
    if name not in attrs:
        return False
    value = attrs[name]
    verdict = memo.get(value)
    if verdict is None:
        verdict = memo[value] = bool(holds(value))
    return verdict


def runs_on_owned(job: Job, method: str, method_changed: bool, precision_changed: bool) -> bool:
    """Whether a plan on hardware the user owns runs the job asked or its quantized form: QLoRA for
    LoRA, and int8 or int4 weights where the request leaves the precision open (a stated precision is
    kept, on owned cards too)."""
    method_kept = not method_changed or (job.task == "lora" and method == "qlora")
    return method_kept and (not precision_changed or job.requested_precision is None)
