"""Which specs fit a GPU: each spec's memory per GPU (sized once per workload), the bytes a GPU lets a
plan fill (a serving engine's share, else its memory less the headroom), and the least any spec of
a GPU count needs, by which most options are judged without walking their specs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from engine.models.kb import Gpu
from engine.models.rule import Scalar
from engine.planning.bounded_cache import BoundedCache
from engine.planning.candidates import Option
from engine.planning.memory import Breakdown, Layout, per_gpu, reported_bytes, serving_budget
from engine.planning.operating_point import FleetPlan
from engine.planning.performance import DecodeWork, Speed, TrainingWork, decode_work
from engine.planning.plan_space import PlanSpace, Spec, plan_specs
from engine.planning.workload import Job
from engine.sizing import GB

GIB = 2**30
MIN_HEADROOM = 1 * GB
"""the least memory kept free on a GPU, whatever its size (rule keep-memory-headroom)"""
SERVING_MARGIN = 0.05
"""the share of a serving engine's budget a plan leaves unfilled. The engine fills its budget itself
(vLLM gives the KV cache whatever its profiled weights and workspace leave of gpu_memory_utilization),
so a plan sized at its edge starts only if the sizing is not low: serving memory is predicted at
0.97-1.15x of what 99 runs measured (data/calibration, median 1.00), and its band allows 5% under."""


SpeedKey = tuple[str, float, float, float, float, int]
"""GPU model, links (gpu-to-gpu, inter-node, host, latency) and nodes: what a spec's speed depends on"""


@dataclass(slots=True)
class SizedSpec:
    """A spec and, once needed, its memory per GPU (filled in place: the workload's cache)."""

    spec: Spec
    memory: Breakdown | None = None
    total: float = 0.0
    speeds: dict[SpeedKey, Speed | None] = field(default_factory=dict)
    """the spec's speed by GPU model, links (gpu-to-gpu, inter-node, host, latency) and nodes; filled by
    `planner.plan_entry`, shared with relaxed planners as the entries are (speed ignores filters)"""
    points: dict[SpeedKey, FleetPlan | None] = field(default_factory=dict)
    """a serving fleet's plan at its operating point on each GPU model and links (`fleet_plans`)"""


MEMO_BYTES = 4096
"""a memo's own dicts, empty"""
MEMO_ITEM_BYTES = 320
"""each spec, layout or speed it holds: 174-220 bytes measured over the bench mix (a 13B full
fine-tune's memo, the largest: 414 KB for 2,130 items), weighed at this"""
SIZING_CACHE_BYTES = 6 * 2**20
"""About 30 workloads: the bench mix's 21 memos weigh 4.2 MB. Bounded for the garbage collector as
much as for memory: the memos are some 1,700 objects per MB weighed, and every full collection walks
them (about 1.2 microseconds each on a 2-core host; 16 MB of memos lengthened the mixed soak's longest
pause from 56 to 89 ms, bench/mixed_soak.py)."""
SizingKey = tuple[Job, PlanSpace, float, tuple[str | None, ...], tuple[str, ...] | None]
"""what a request's sizing memo depends on (`SizingCache.memo_for`)"""


class SizingCache:
    """Each workload's `SizingMemo`, kept for the advisor's life, least recently used first out, so the
    requests that ask about one workload again (with another budget, provider or privacy need) share
    its sizing. Keyed by all it depends on (`memo_for`); filled in place as plans need it, a race
    between two requests sizes one thing twice."""

    def __init__(self, max_bytes: int = SIZING_CACHE_BYTES) -> None:
        self._held: BoundedCache[SizingKey, SizingMemo] = BoundedCache(max_bytes, weigh_memo)

    def memo_for(
        self,
        job: Job,
        space: PlanSpace,
        headroom: float,
        own_precisions: tuple[str | None, ...],
        parallelism: tuple[str, ...] | None,
    ) -> SizingMemo:
        """The memo of a job (its memory and work per layout) in a plan space, at a headroom (what a
        GPU lets a plan fill, so which specs fit and how fast they serve), with the precisions that
        count as the request's own and the parallelism it lists (which specs change what was asked)."""
        key = (job, space, headroom, own_precisions, parallelism)
        return self._held.get_or_make(key, lambda: SizingMemo(key=key))

    def settle(self, memo: SizingMemo) -> None:
        """Weigh a memo again once a request has filled it (it grows as plans need it)."""
        if memo.key is not None:
            self._held.reweigh(memo.key)

    def clear(self) -> None:
        self._held.clear()

    def __len__(self) -> int:
        return len(self._held)

    @property
    def bytes(self) -> int:
        return self._held.bytes


def weigh_memo(memo: SizingMemo) -> int:
    """A memo's estimated bytes, from what it holds."""
    entries = [e for found in memo.spec_entries.values() for e in found]
    items = (
        len(entries)
        + sum(len(e.speeds) for e in entries)
        + sum(len(found) for found in memo.asked_entries.values())
        + sum(
            len(d)
            for d in (
                memo.memory,
                memo.least_memory,
                memo.spec_attrs,
                memo.decode_work,
                memo.training_work,
                memo.usable,
                memo.too_small,
            )
        )
    )
    return MEMO_BYTES + MEMO_ITEM_BYTES * items


@dataclass(slots=True)
class SizingMemo:
    """What a planner works out once and reuses, independent of the rules' filters: the specs for
    each GPU count, their memory and work, the usable memory of each GPU. Bound: one
    request's plan space (a few hundred specs, one entry per GPU model); the request's planners share
    it (`Planner.without`, `Planner.asked_only`), and the requests with its key (`SizingCache`)."""

    memory: dict[Layout, Breakdown] = field(default_factory=dict)
    least_held: dict[Layout, Breakdown] = field(default_factory=dict)
    """a serving fleet's layouts at one sequence a replica (`PlanFit.need`)"""
    spec_entries: dict[tuple[int, int], list[SizedSpec]] = field(default_factory=dict)
    asked_entries: dict[tuple[int, int, bool, bool, bool], list[SizedSpec]] = field(default_factory=dict)
    least_memory: dict[tuple[int, int, bool, bool, bool], float] = field(default_factory=dict)
    spec_attrs: dict[int, dict[str, Scalar]] = field(default_factory=dict)
    """by spec id: specs live as long as `spec_entries`, so their ids are stable"""
    decode_work: dict[Layout, DecodeWork] = field(default_factory=dict)
    training_work: dict[tuple[str, bool], TrainingWork] = field(default_factory=dict)
    usable: dict[str, float] = field(default_factory=dict)
    too_small: dict[tuple[str, int, float], str] = field(default_factory=dict)
    """why an option has no plan, by GPU, count and least need: one text for each offer of that kind"""
    key: SizingKey | None = None
    """its key in a `SizingCache`, when it is kept in one"""


class PlanFit:
    """The memory side of planning for one request: which specs fit which GPU, at how many bytes."""

    def __init__(
        self,
        job: Job,
        space: PlanSpace,
        headroom: float,
        memo: SizingMemo,
        *,
        as_asked_only: bool,
        changes_request: Callable[[Spec, bool], bool],
        neutral_precision: str | None,
    ) -> None:
        """`headroom`: the share of a GPU's memory kept free (rule keep-memory-headroom);
        `changes_request`: whether a spec changes the requested method or precision, on owned hardware
        or not (left out while `as_asked_only`); `neutral_precision`: left out on a GPU that does not
        run it."""
        self.job = job
        self.space = space
        self.headroom = headroom
        self.memo = memo
        self.as_asked_only = as_asked_only
        self.changes_request = changes_request
        self.neutral_precision = neutral_precision

    def memory(self, layout: Layout) -> Breakdown:
        found = self.memo.memory.get(layout)
        if found is None:
            found = self.memo.memory[layout] = per_gpu(self.job, layout)
        return found

    def decode_work(self, layout: Layout) -> DecodeWork:
        """What a decode step of the layout moves and computes, sized once per layout."""
        found = self.memo.decode_work.get(layout)
        if found is None:
            found = self.memo.decode_work[layout] = decode_work(self.job, layout)
        return found

    def need(self, layout: Layout) -> Breakdown:
        """What a layout needs on each GPU to run at all: the job's batch, or for a serving fleet one
        sequence a replica (how many it holds is its operating point on a GPU: operating_point.py)."""
        if not self.job.batch_from_serving:
            return self.memory(layout)
        found = self.memo.least_held.get(layout)
        if found is None:
            found = self.memo.least_held[layout] = per_gpu(replace(self.job, batch=layout.dp), layout)
        return found

    def fitting(self, count: int, per_node: int, gpu: Gpu) -> list[Spec]:
        """Specs that fit one of these GPUs (`usable_on`), in preference order."""
        usable = self.usable_on(gpu)
        entries = [self.sized(entry) for entry in self.entries(count, per_node)]
        return [e.spec for e in entries if e.total <= usable]

    def usable_on(self, gpu: Gpu) -> float:
        """Bytes of one of these GPUs a plan may fill: a serving engine's share of what the driver
        reports less SERVING_MARGIN of it, else what it reports less the headroom kept free."""
        found = self.memo.usable.get(gpu.id)
        if found is None:
            budget = self._engine_budget(gpu)
            real = reported_bytes(gpu)
            found = self.memo.usable[gpu.id] = (
                budget * (1 - SERVING_MARGIN) if budget is not None else real - self.kept_free(real / GB)
            )
        return found

    def _engine_budget(self, gpu: Gpu) -> float | None:
        return serving_budget(gpu, self.job) if self.job.task == "inference" else None

    def kept_free(self, capacity_gb: float) -> float:
        """Bytes of a GPU's memory kept free: the headroom share, at least MIN_HEADROOM."""
        return max(MIN_HEADROOM, capacity_gb * GB * self.headroom)

    def least(self, count: int, per_node: int, native: bool, owned: bool = False) -> float:
        """The least memory per GPU any spec for this many GPUs needs (bytes; inf when none), among the
        specs that keep the request's method and precision when only those are planned."""
        key = (count, per_node, self.as_asked_only, native, owned)
        found = self.memo.least_memory.get(key)
        if found is None:
            found = self.memo.least_memory[key] = min(
                (self.sized(e).total for e in self.planned(count, per_node, native, owned)),
                default=float("inf"),
            )
        return found

    def entries(self, count: int, per_node: int) -> list[SizedSpec]:
        """The specs for this many GPUs in preference order, each sized once it has been needed."""
        key = (count, per_node)
        found = self.memo.spec_entries.get(key)
        if found is None:
            found = self.memo.spec_entries[key] = [
                SizedSpec(spec) for spec in plan_specs(self.space, count, per_node)
            ]
        return found

    def planned(self, count: int, per_node: int, native: bool = True, owned: bool = False) -> list[SizedSpec]:
        """`_entries` less those that change the request while only the request's are planned (on
        `owned` hardware CPU offload is not a change), and less those in the quality-neutral precision
        on a GPU that does not run it (`native`)."""
        if not self.as_asked_only and native:
            return self.entries(count, per_node)
        key = (count, per_node, self.as_asked_only, native, owned)
        found = self.memo.asked_entries.get(key)
        if found is None:
            found = self.memo.asked_entries[key] = [
                e
                for e in self.entries(count, per_node)
                if not (self.as_asked_only and self.changes_request(e.spec, owned))
                and (native or e.spec.layout.precision != self.neutral_precision)
            ]
        return found

    def sized(self, entry: SizedSpec) -> SizedSpec:
        if entry.memory is None:
            memory = self.need(entry.spec.layout)
            # the total first: an entry is shared by requests, and one that sees `memory` reads `total`
            entry.total = memory.total
            entry.memory = memory
        return entry

    def room(self, gpu: Gpu) -> str:
        """What one GPU offers a plan, in words: its reported memory and the share or headroom kept."""
        real = reported_bytes(gpu) / GB
        usable = self.usable_on(gpu) / GB
        budget = self._engine_budget(gpu)
        if budget is not None:
            return (
                f"has {real:.1f} GB, of which {self.job.engine} takes {budget / GB:.1f} GB and a plan "
                f"{usable:.1f} GB"
            )
        return f"has {real:.1f} GB with {real - usable:.1f} GB kept free"

    def host_usable(self, option: Option) -> float:
        """Host RAM one node of the option offers less the headroom (bytes); unlimited when unknown
        (hardware bought is configured to order, owned hardware's unless the request states it; the
        why states what offload needs)."""
        ram = _host_ram_gib(option)
        return float("inf") if ram is None else ram * GIB * (1 - self.headroom)

    def host_too_small(self, option: Option, needed: float) -> str:
        where = (
            option.offer.instance_type if option.offer else f"the machine the {option.gpu.name} cards are in"
        )
        return (
            f"CPU offload needs {needed / GB:,.0f} GB of host RAM per node; "
            f"{where} has {_host_ram_gib(option) or 0:g} GiB"
        )

    def too_small(self, option: Option, least: float) -> str:
        key = (option.gpu.id, option.count, least)
        found = self.memo.too_small.get(key)
        if found is None:
            count = f"{option.count} x " if option.count > 1 else ""
            room = self.room(option.gpu)
            found = self.memo.too_small[key] = (
                f"needs at least {least / GB:.1f} GB per GPU; {count}{option.gpu.name} {room}"
            )
        return found


def _host_ram_gib(option: Option) -> float | None:
    """The RAM of each node of the option, GiB: its offer's, or what the request states for owned GPUs."""
    return option.offer.memory_gib if option.offer is not None else option.host_ram_gib
