"""The search over a request's hardware options: screening by the rules' hardware filters, price
groups sized once by their cheapest option, options a smaller sibling already beats left unsized, and
the search for a way out once one rule is lifted. It sizes nothing itself: each option's plan is the
`Planner`'s; it ranks nothing either: the objective's measure is passed in (engine/planning/ranking.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import NamedTuple

from engine.knowledge.graph import KBGraph
from engine.models.attributes import PLAN_ATTRIBUTES
from engine.models.kb import Gpu
from engine.planning.bounded_cache import REFERENCE_BYTES, BoundedCache, weigh_references
from engine.planning.candidates import (
    Context,
    Option,
    bought_key,
    bought_options,
    named_counts,
    owned_options,
    rented_key,
    rented_options,
)
from engine.planning.measures import complexity_of, preference_factor, slack_weight
from engine.planning.memory import Layout
from engine.planning.performance import method_utilization, training_flops, training_peak_flops
from engine.planning.plan_checks import GROUP_VARYING, NO_FILTER, Rejection, runs_on_owned, tests_tell_apart
from engine.planning.planner import Candidate, Planner
from engine.planning.workload import Job
from engine.reasoning.policy import Filter

OPTION_BYTES = 2100
"""an option's memory, its attributes included (measured with tracemalloc over the embedded KB's 1,377)"""
SLICE_CACHE_BYTES = 48 * 2**20
"""the options themselves, per GPU and what they depend on: about 16 contexts' worth, shared by all"""
LIST_CACHE_BYTES = 8 * 2**20
"""each cache of what is built from shared options (lists, price groups, screens)"""
VERDICT_BYTES = 1024
"""a cached verdict on a context's price groups: its key (a context and a few tests) and entry"""
Parts = tuple[tuple[Option, ...], ...]
"""a context's options as the tuples they were made in: each GPU's bought and rented, and owned"""
Measure = Callable[[Candidate, str, float | None], float]
"""an objective's measure of a candidate, lower is better (`ranking.measure`)"""


class Grouped(NamedTuple):
    alone: tuple[Option, ...]
    """options that stand alone (owned hardware)"""
    groups: tuple[tuple[Option, ...], ...]
    """options that differ only in price, each group cheapest first"""
    varying: frozenset[str]
    """attributes whose value differs inside some group"""


GroupScreen = tuple[int, tuple[int, ...]]
"""A price group's verdict, for a group some filter rejects (one that passes has none): the filter
that rejects the whole group on what its options share, else NO_FILTER and, for each option of the
group (cheapest first), the filter that rejects it on what varies. Screens are cached for the
advisor's life, so a verdict names filters by their index in the screen's `filters`, in a plain tuple
of integers that the garbage collector stops tracking: a Rejection per option, or a named tuple, is
walked by every full collection (one rule that rejects multi-node marketplace options made the mixed
soak's longest pause 65 ms, bench/mixed_soak.py)."""


class Screened(NamedTuple):
    groups: tuple[tuple[Option, ...], ...]
    """the price groups (`Grouped.groups`, the same tuple)"""
    verdicts: tuple[GroupScreen | None, ...]
    """each group's verdict, None when no filter rejects any of its options"""
    filters: tuple[Filter, ...]
    """the filters the verdicts name by index"""
    cheapest: tuple[Option, ...]
    """per group not rejected as a whole, the cheapest option no filter rejects (when no count or
    budget filter applies)"""

    def rejections(self) -> list[Rejection]:
        """Every rejection of the screen when no count or budget filter applies, in `search`'s
        order (`_cheapest_passing`'s walk)."""
        found: list[Rejection] = []
        _cheapest_passing(self, found, None)
        return found


@dataclass(frozen=True)
class Search:
    candidates: list[Candidate]
    rejections: list[Rejection]


class Searcher:
    """The options of a KB and the search over them. Thread-safe as the Advisor is: the option caches
    only gain entries computed from the KB (a race computes one twice)."""

    def __init__(self, graph: KBGraph, measure: Measure) -> None:
        self.graph = graph
        self.measure = measure
        self._gpus = tuple(graph.kb.gpus[gpu_id] for gpu_id in sorted(graph.kb.gpus))
        # Every cache is bounded by the memory it holds (engine/planning/bounded_cache.py). The options
        # are made once per GPU and what they depend on (`bought_key`, `rented_key`); everything
        # else holds references to them.
        self._slices: BoundedCache[tuple[object, ...], Slice] = BoundedCache(SLICE_CACHE_BYTES, _weigh_slice)
        self._options: BoundedCache[tuple[Context, int | None], Parts] = BoundedCache(
            LIST_CACHE_BYTES, _weigh_parts
        )
        self._groups: BoundedCache[tuple[Context, int | None], Grouped] = BoundedCache(
            LIST_CACHE_BYTES, _weigh_grouped
        )
        self._screens: BoundedCache[tuple[Context, int | None, tuple[object, ...]], Screened] = BoundedCache(
            LIST_CACHE_BYTES, _weigh_screened
        )
        self._told_apart: BoundedCache[tuple[Context, int | None, tuple[object, ...]], bool] = BoundedCache(
            LIST_CACHE_BYTES, lambda _: VERDICT_BYTES
        )

    def search(self, planner: Planner, ctx: Context, gpu_count: int | None) -> Search:
        """Plan every option that passes the hardware filters. Options that differ only in price are
        sized once: the cheapest that passes the filters stands for the rest, unless a rule looks at
        what differs. Options of several nodes are sized only for GPUs that one node cannot run the
        job on."""
        grouped = self.grouped_options(ctx, gpu_count)
        if self._tells_apart(planner, ctx, gpu_count, grouped):
            return self.search_options(planner, self.options(ctx, gpu_count))
        found: list[Candidate] = []
        rejected: list[Rejection] = []
        for option in grouped.alone:
            screened = planner.checks.screen(option)
            if screened is not None:
                rejected.append(screened)
            else:
                self._plan_into(planner, option, found, rejected)
        screens = self.screened_groups(planner, ctx, gpu_count)
        if planner.checks.early_filters:
            cheapest = _cheapest_passing(screens, rejected, planner.checks.screen_early)
        else:
            rejected.extend(screens.rejections())
            cheapest = list(screens.cheapest)
        self._plan_cheapest(planner, cheapest, found, rejected)
        return Search(found, rejected)

    def _tells_apart(self, planner: Planner, ctx: Context, gpu_count: int | None, grouped: Grouped) -> bool:
        """`PlanChecks.tells_apart` on the context's price groups, once per context and set of tests
        (the groups are the KB's and the tests the rules', the same objects from one request to the
        next: the key holds them, so their ids cannot be reused while it stands)."""
        tests = planner.checks.varying_tests(grouped.varying)
        if not tests:
            return False
        key = (ctx.without_owned(), gpu_count, tests)
        return self._told_apart.get_or_make(key, lambda: tests_tell_apart(tests, grouped.groups))

    def screened_groups(self, planner: Planner, ctx: Context, gpu_count: int | None) -> Screened:
        """The price groups of a context judged by the hardware filters: built once per context and
        set of filters (hardware filters read only the KB's attributes, so their verdicts, unlike
        the count and budget filters', do not depend on the request)."""
        # Owned hardware stands alone, outside the price groups: requests that differ only in it
        # share the groups' screens.
        grouped_ctx = ctx.without_owned()
        checks = planner.checks
        key = (grouped_ctx, gpu_count, tuple(_filter_key(f) for f in checks.option_filters))
        found = self._screens.get(key)
        if found is None:
            _, groups, varying = self.grouped_options(grouped_ctx, gpu_count)
            shared_filters, own_filters = checks.split_option_filters(varying)
            verdicts: list[GroupScreen | None] = []
            filters = (*shared_filters, *own_filters)
            for group in groups:
                # Filters on what a group's options share judge the group once, by its cheapest;
                # filters on what varies judge each option.
                shared = checks.first_rejecting(group[0], shared_filters)
                after = len(shared_filters)
                own = (
                    ()
                    if shared != NO_FILTER
                    else tuple(_offset(checks.first_rejecting(o, own_filters), after) for o in group)
                )
                rejects = shared != NO_FILTER or any(index != NO_FILTER for index in own)
                verdicts.append((shared, own) if rejects else None)
            screened = Screened(groups, tuple(verdicts), filters, ())
            found = screened._replace(cheapest=tuple(_cheapest_passing(screened, [], None)))
            self._screens.put(key, found)
        return found

    def search_options(self, planner: Planner, options: Iterable[Option]) -> Search:
        """`search` over the given options."""
        found: list[Candidate] = []
        rejected: list[Rejection] = []
        passing: list[Option] = []
        for option in options:
            screened = planner.checks.screen(option)
            if screened is None:
                passing.append(option)
            else:
                rejected.append(screened)
        alone, cheapest = cheapest_per_group(planner, passing)
        for option in alone:
            self._plan_into(planner, option, found, rejected)
        self._plan_cheapest(planner, cheapest, found, rejected)
        return Search(found, rejected)

    def _plan_cheapest(
        self, planner: Planner, cheapest: list[Option], found: list[Candidate], rejected: list[Rejection]
    ) -> None:
        """Plan the cheapest option of each price group: one node first, then several nodes only for
        GPUs one node of which cannot run the job as asked, in the method and precision requested
        (across nodes the link is slower and every measure but raw speed is worse; the `fastest`
        objective plans them all)."""
        fastest = planner.request.objective == "fastest"
        if fastest:
            for option in cheapest:
                self._plan_into(planner, option, found, rejected)
        else:
            self._plan_per_gpu(planner, [o for o in cheapest if o.nodes == 1], found, rejected)
        one_node = {
            (c.option.gpu.id, c.option.acquisition)
            for c in found
            if not c.plan_attrs["method_changed"] and not c.plan_attrs["precision_changed"]
        }
        for option in cheapest:
            if option.nodes > 1 and not fastest and (option.gpu.id, option.acquisition) not in one_node:
                self._plan_into(planner, option, found, rejected)

    def _plan_per_gpu(
        self, planner: Planner, options: list[Option], found: list[Candidate], rejected: list[Rejection]
    ) -> None:
        """Plan options per GPU model, acquisition and pricing, fewest GPUs first. An option whose
        least possible measure (`measure_floor`) is above that of a plan already found on fewer of
        the same GPUs, got the same way, is not planned: the ranking keeps one option per GPU,
        acquisition, pricing, method and precision, the best, and it cannot be that one. (Not for
        `fastest`, where more GPUs are what can be better: skipping the smaller counts would also
        drop their rejections from the answer.)"""
        objective = planner.request.objective
        floor_of = measure_floor(planner, objective)
        best: dict[tuple[str, str, str], float] = {}
        ordered = sorted(options, key=lambda o: (o.gpu.id, o.acquisition, o.pricing, o.count))
        for option in ordered:
            key = (option.gpu.id, option.acquisition, option.pricing)
            held = best.get(key)
            if held is not None and floor_of(option) > held:
                continue
            before = len(found)
            self._plan_into(planner, option, found, rejected)
            if len(found) > before:
                c = found[-1]
                if not c.plan_attrs["method_changed"] and not c.plan_attrs["precision_changed"]:
                    value = self.measure(c, objective, planner.per_user_tps)
                    best[key] = value if held is None else min(held, value)

    def options(self, ctx: Context, gpu_count: int | None) -> tuple[Option, ...]:
        """The options for a context, in `candidates.options`' order, assembled from the options of
        each GPU (each part made once per what it depends on). The cache keeps the context's parts,
        not one tuple of their options: a full garbage collection walks every reference the cache
        holds, and a tuple of a thousand options per context made the mixed soak's collections walk a
        million (bench/mixed_soak.py)."""
        parts = self._options.get_or_make((ctx, gpu_count), lambda: self._assembled(ctx, gpu_count))
        return tuple(chain.from_iterable(parts))

    def _assembled(self, ctx: Context, gpu_count: int | None) -> Parts:
        found: list[tuple[Option, ...]] = []
        for gpu in self._gpus:
            named = named_counts(ctx, gpu.id, gpu_count)
            if ctx.owned or ctx.your_computer:
                found.append(tuple(owned_options(self.graph, ctx, gpu, named)))
            found.extend(part.options for part in self._parts(ctx, gpu, named))
        return tuple(part for part in found if part)

    def _parts(self, ctx: Context, gpu: Gpu, named: set[int]) -> tuple[Slice, Slice]:
        """The GPU's bought and rented options in this context, each made once per what it depends on."""
        graph, slices = self.graph, self._slices
        key = bought_key(ctx, gpu, named)
        bought = slices.get(key)
        if bought is None:
            bought = _slice(tuple(bought_options(graph, ctx, gpu, named)))
            slices.put(key, bought)
        key = rented_key(graph, ctx, gpu)
        rented = slices.get(key)
        if rented is None:
            rented = _slice(tuple(rented_options(graph, ctx, gpu)))
            slices.put(key, rented)
        return bought, rented

    def grouped_options(self, ctx: Context, gpu_count: int | None) -> Grouped:
        """The options for a context as those that stand alone (owned) and price groups, each
        cheapest first, with the attributes that differ inside some group. A price group never
        spans two GPUs or a purchase and a rental, so the groups are those of each GPU's parts, made
        with them and shared by every context that shares the part; owned hardware only adds options
        that stand alone."""
        groups_of = self._price_groups(ctx.without_owned(), gpu_count)
        if not ctx.owned and not ctx.your_computer:
            return groups_of
        alone = tuple(o for o in self.options(ctx, gpu_count) if o.price_group is None)
        return Grouped(alone, groups_of.groups, groups_of.varying)

    def _price_groups(self, ctx: Context, gpu_count: int | None) -> Grouped:
        key = (ctx, gpu_count)
        found = self._groups.get(key)
        if found is None:
            parts = [
                part
                for gpu in self._gpus
                for part in self._parts(ctx, gpu, named_counts(ctx, gpu.id, gpu_count))
            ]
            groups = tuple(group for part in parts for group in part.groups)
            found = Grouped((), groups, frozenset().union(*(part.varying for part in parts)))
            self._groups.put(key, found)
        return found

    @staticmethod
    def _plan_into(
        planner: Planner, option: Option, found: list[Candidate], rejected: list[Rejection]
    ) -> None:
        result = planner.plan_screened(option)
        if isinstance(result, Candidate):
            found.append(result)
        elif result is not None:
            rejected.append(result)


def cheapest_per_group(planner: Planner, options: Iterable[Option]) -> tuple[list[Option], list[Option]]:
    """The options that stand alone, and the cheapest of each price group (`Option.price_group`).
    Groups are formed only when no rule judges two members of one apart by what differs within it
    (the provider renting it; whether a bought GPU is new or used): then only its cheapest can rank,
    as every measure of the ranking is at least as good for it."""
    alone: list[Option] = []
    groups: dict[tuple[object, ...], list[Option]] = {}
    for option in options:
        group = option.price_group
        if group is None:
            alone.append(option)
        else:
            groups.setdefault(group, []).append(option)
    if planner.checks.tells_apart(groups.values(), GROUP_VARYING):
        return alone + [option for group in groups.values() for option in group], []
    return alone, [min(group, key=lambda o: o.price_order) for group in groups.values()]


def _cheapest_passing(
    screened: Screened,
    rejected: list[Rejection],
    screen_early: Callable[[Option], Rejection | None] | None,
) -> list[Option]:
    """Per group not rejected as a whole, the first option, cheapest first, that passes its own
    filters and then `screen_early` (the count and budget filters); it stands for the group. Every
    rejection on the way goes to `rejected`."""
    cheapest: list[Option] = []
    filters = screened.filters
    # The hot loop of a search (hundreds of groups, most rejected as a whole): rejections are made here
    # rather than through a method call each.
    for group, verdict in zip(screened.groups, screened.verdicts, strict=True):
        own: tuple[int, ...] | None = None
        if verdict is not None:
            shared, own = verdict
            if shared != NO_FILTER:
                rule_filter = filters[shared]
                rejected.append(Rejection(group[0], rule_filter.rule, rule_filter.message))
                continue
        for o, option in enumerate(group):
            index = NO_FILTER if own is None else own[o]
            screened_out: Rejection | None = None
            if index != NO_FILTER:
                rule_filter = filters[index]
                screened_out = Rejection(option, rule_filter.rule, rule_filter.message)
            elif screen_early is not None:
                screened_out = screen_early(option)
            if screened_out is None:
                cheapest.append(option)
                break
            rejected.append(screened_out)
    return cheapest


def _offset(index: int, by: int) -> int:
    """A filter's index in a list `by` filters further on (NO_FILTER stays NO_FILTER)."""
    return index if index == NO_FILTER else index + by


def _filter_key(rule_filter: Filter) -> tuple[object, ...]:
    """What a filter's verdicts and rejections depend on. Its `where` is the rule's own (rules live as
    long as the advisor, so its identity is stable); `step` is left out, as only the trace shows it."""
    return rule_filter.rule, rule_filter.keep_matching, id(rule_filter.where), rule_filter.message


def relaxed_objective(objective: str) -> str:
    """What a way out is chosen by: the objective, or the cost when it is `fastest` (a way out is a
    constraint to give up; the fastest at any price is not one)."""
    return "cheapest" if objective == "fastest" else objective


def best_when_lifted(
    relaxed: Planner, options: Sequence[Option], objective: str, to_beat: float | None, measure: Measure
) -> Candidate | None:
    """The candidate among `options` under the relaxed planner that `measure` ranks first,
    or None (also when none can measure less than `to_beat`). Of options that differ only in price
    the cheapest stands for the rest; they are planned from the lowest possible measure up (the
    cost floor, times the balanced GPU and node factor, times the largest bonus the preferences can
    give), stopping as soon as no remaining option can beat the best found."""
    alone, cheapest = cheapest_per_group(relaxed, options)
    lowest = measure_floor(relaxed, relaxed_objective(objective))
    floors = sorted(((lowest(o), i, o) for i, o in enumerate(alone + cheapest)), key=lambda t: t[:2])
    best: tuple[float, tuple[str, int, str], Candidate] | None = None
    for floor, _, option in floors:
        if (to_beat is not None and floor >= to_beat) or (best is not None and floor > best[0]):
            break
        if relaxed.checks.screen(option) is not None:
            continue
        found = relaxed.plan_screened(option)
        if isinstance(found, Candidate):
            value = measure(found, relaxed_objective(objective), relaxed.per_user_tps)
            key = (value, identity_key(found))
            if best is None or key < best[:2]:
                best = (*key, found)
    return None if best is None else best[2]


def measure_floor(planner: Planner, objective: str) -> Callable[[Option], float]:
    """The least `measure` (cheapest or balanced) an option can have before it is sized: its cost
    floor, times the balanced GPU and node factor, times the largest bonus the preferences give
    (the serving speed factor is at least 1)."""
    job = planner.job
    # A stated utilisation fixes the busy hours whatever the run takes; without one a run with a token
    # count, or a corpus to embed, pays for its own hours, known only once sized.
    tokens = job.training_tokens if job.utilization is None else None
    own_hours = tokens is not None or (job.corpus_run and job.utilization is None)
    busy = None if own_hours else planner.pricing.usage(job.job_hours).busy_hours
    # the preferences that could favour an option: their tests on the option's own attributes pass
    favouring = [
        (p.weight, tuple((name, holds) for name, holds in p.tests if name not in PLAN_ATTRIBUTES))
        for p in planner.policy.preferences
        if p.weight > 0
    ]
    balanced = objective == "balanced"
    # A rented run with no utilisation stated pays for its own hours, which are at least its
    # compute at the GPU's highest dense peak (every plan adds communication to that).
    # the least FLOPs a plan's method does (no recomputation), at the share of the peak it reaches
    run_flops = (
        tokens * training_flops(job, Layout(method=job.task, precision="bf16"))
        if tokens is not None and job.task != "inference"
        else None
    )
    achieved = method_utilization(job, job.task)
    # The compute formats a plan may use: only the requested one while only plans as asked are sized
    # (QLoRA computes in 16-bit whatever is asked); else the fastest the GPU has.
    requested = job.requested_precision or planner.base_precision
    asked = (requested,) if planner.neutral_precision is None else (requested, planner.neutral_precision)
    formats = asked if planner.as_asked_only and job.task != "qlora" else ("fp8", "bf16")

    deadline = job.deadline_hours if balanced else None
    peaks: dict[str, float] = {}  # `_highest_peak` per GPU id: the same for every option of the GPU

    def floor(option: Option) -> float:
        factor = (
            complexity_of(option.count, option.nodes, owned=option.acquisition == "owned")
            if balanced
            else 1.0
        )
        least = _cost_floor(option, busy)
        if run_flops is not None:
            # a run's compute at the highest peak its plans may use, on every GPU of the option (a
            # plan adds communication to it, and uses at most that many GPUs)
            peak = peaks.get(option.gpu.id)
            if peak is None:
                peak = peaks[option.gpu.id] = _highest_peak(option.gpu, formats)
            if peak > 0:
                hours = run_flops / (option.count * peak * achieved) / 3600.0
                if option.acquisition == "rent":
                    least = option.hourly_rent_usd * min(hours, job.horizon_hours)
                if deadline:  # balanced weighs the slack left before the deadline, rising with the hours
                    factor *= slack_weight(hours / deadline)
        attrs = option.attrs
        weight = sum(w for w, tests in favouring if all(n in attrs and holds(attrs[n]) for n, holds in tests))
        return least * factor * preference_factor(weight)

    return floor


def _highest_peak(gpu: Gpu, formats: Sequence[str]) -> float:
    """The GPU's highest dense peak in any of `formats`, FLOP/s (0 when it has none)."""
    return max((p for p in (training_peak_flops(gpu, f) for f in formats) if p), default=0.0)


def _cost_floor(option: Option, busy_hours: float | None) -> float:
    """The least this option can cost over the horizon: its capex when bought; when rented, its
    hourly rate over the busy hours if they are known before sizing; else 0."""
    if option.acquisition == "buy":
        return option.capex_usd
    if option.acquisition == "rent" and busy_hours is not None:
        return option.hourly_rent_usd * busy_hours
    return 0.0


def as_asked(candidates: Sequence[Candidate], job: Job) -> list[Candidate]:
    """The candidates that keep the requested method and precision, when any does: a plan that
    changes either is offered only when nothing runs the job as asked within the constraints, except
    the quantized form of the job on hardware the user owns (`ranks_as_asked`)."""
    kept = [c for c in candidates if ranks_as_asked(c, job)]
    return kept if any(c.as_asked for c in kept) else list(candidates)


def ranks_as_asked(candidate: Candidate, job: Job) -> bool:
    """Whether a plan ranks with those that run the job as asked: it keeps the requested method and
    precision, or it is the quantized form of the job on hardware the user owns, which weighs a quality
    trade-off against a purchase: QLoRA for LoRA, int8 or int4 weights where the request leaves the
    precision open (`PlanChecks.changes_request`)."""
    if candidate.as_asked:
        return True
    attrs = candidate.plan_attrs
    return candidate.option.acquisition == "owned" and runs_on_owned(
        job, candidate.spec.layout.method, bool(attrs["method_changed"]), bool(attrs["precision_changed"])
    )


def identity_key(candidate: Candidate) -> tuple[str, int, str]:
    return (candidate.option.gpu.id, candidate.gpu_count, candidate.option.acquisition)


class Slice(NamedTuple):
    """One GPU's bought or rented options in a context, with their price groups."""

    options: tuple[Option, ...]
    groups: tuple[tuple[Option, ...], ...]
    """options that differ only in price, each group cheapest first"""
    varying: frozenset[str]
    """attributes whose value differs inside some group"""


def _slice(options: tuple[Option, ...]) -> Slice:
    groups: dict[tuple[object, ...], list[Option]] = {}
    for option in options:
        if option.price_group is not None:  # bought and rented options always have one
            groups.setdefault(option.price_group, []).append(option)
    ordered = tuple(tuple(sorted(g, key=lambda o: o.price_order)) for g in groups.values())
    varying = frozenset(
        name
        for group in ordered
        for option in group[1:]
        for name, value in option.attrs.items()
        if group[0].attrs.get(name) != value
    )
    return Slice(options, ordered, varying)


def _weigh_slice(part: Slice) -> int:
    """The options and their groups (a tuple per group: what a full garbage collection walks)."""
    return OPTION_BYTES * len(part.options) + sum(weigh_references(group) for group in part.groups)


def _weigh_parts(parts: Parts) -> int:
    """A context's parts: references to each GPU's options, and the options of owned hardware, which
    only this entry holds."""
    owned = sum(OPTION_BYTES * len(part) for part in parts if part[0].pricing == "owned")
    return weigh_references(parts) + owned


def _weigh_grouped(grouped: Grouped) -> int:
    """A tuple of references to groups kept with the parts."""
    return weigh_references(grouped.alone) + weigh_references(grouped.groups)


def _weigh_screened(screened: Screened) -> int:
    """The verdicts made for this screen (integers, which no collection walks), and references to
    shared options and filters."""
    verdicts = [verdict for verdict in screened.verdicts if verdict is not None]
    items = len(screened.verdicts) + len(screened.cheapest) + len(screened.filters)
    return 72 * len(verdicts) + REFERENCE_BYTES * (items + sum(len(v[1]) for v in verdicts))
