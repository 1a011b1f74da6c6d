"""Hardware options for a request: every GPU x count x acquisition the KB makes possible.

An option is hardware and a way to get it: bought (new or used, at the KB's latest price), rented
(each priced offer, on demand and, where the rules allow, spot; 8-GPU offers also as 2, 4 and 8 nodes),
or already owned. What runs on it (method, precision, layout) is chosen later by the planner.

A bought GPU needs a host (kb/hosts/): a bought option is the GPUs plus one host per node, and costs
both (see `placement`). GPUs sold as whole machines (Apple) need none; owned hardware costs nothing
to buy, though its host's power is still paid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from types import MappingProxyType

from engine.knowledge.graph import KBGraph
from engine.knowledge.kb import KB
from engine.models.kb import Gpu, Host, HostPrice, Interconnect, Offer, Price, Stack
from engine.models.request import RecommendRequest
from engine.models.rule import Scalar
from engine.planning.performance import Links
from engine.sizing import GB
from engine.sizing.power import required_psu_watts

CARD_COUNTS = (1, 2, 4, 8)
SERVER_COUNTS = (4, 8, 16, 32, 64)
"""SXM/OAM modules come on 4- or 8-GPU boards; beyond 8, whole servers joined by InfiniBand."""
OFFER_NODES = (1, 2, 4, 8)
INTER_NODE_LINK = "infiniband-ndr"
"""The network assumed between 8-GPU servers (NDR, 400 Gb/s per GPU, as in DGX H100 SuperPODs)."""
DEFAULT_HOST_LINK = "pcie-4"
RENTED_STACKS = ("cuda", "rocm", "xla", "synapseai", "cpu")
"""A rented GPU runs Linux with its vendor's first stack."""


@dataclass(frozen=True)
class Option:
    gpu: Gpu
    count: int
    nodes: int
    acquisition: str
    """buy | rent | owned"""
    pricing: str
    """owned | on_demand | spot (a bought option is `owned` once bought)"""
    price_kind: str
    """new | used | on_demand | spot | owned"""
    unit_price: Price | None = None
    offer: Offer | None = None
    hourly_rent_usd: float = 0.0
    """rent for all `count` GPUs per hour"""
    interconnect: str = "none"
    platform: str = "cuda"
    os_path: str = "linux"
    links: Links = field(default_factory=lambda: Links(1.0, 1.0, 1.0))
    attrs: Mapping[str, Scalar] = field(default_factory=lambda: MappingProxyType({}))
    host: Host | None = None
    """the system each node's GPUs go into (None: a whole machine, rented, or owned without a known host)"""
    host_unit_usd: float = 0.0
    """the price of one host, GPUs excluded (see `host_cost`)"""
    own_host: bool = False
    """bought cards that go into a machine the user already owns (`constraints.free_pcie_slots`)"""
    host_price: HostPrice | None = None
    """the price range `host_unit_usd` is the midpoint of"""
    assumed: bool = False
    """owned by assumption, not by the request: the computer a user already has, for a tiny job"""
    host_ram_gib: float | None = None
    """owned: the RAM of each machine the GPUs are in, where the request states it (an offer's is
    `offer.memory_gib`)"""
    maturity_reasons: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """`training_maturity` / `serving_maturity` -> why its stack is rated so (kb/stacks `maturity`)"""

    @cached_property
    def capex_usd(self) -> float:
        """GPUs x their unit price + hosts x their price, when bought; 0 when rented or owned (kept: the
        search reads it for every option it screens, and options are shared by every request)."""
        if self.acquisition != "buy":
            return 0.0
        gpus = self.unit_price.price_usd * self.count if self.unit_price else 0.0
        return gpus + self.host_capex_usd

    @property
    def capex_range_usd(self) -> tuple[float, float]:
        """The capex at the low and the high end of the GPU and host prices seen; (0, 0) unless bought."""
        if self.acquisition != "buy":
            return 0.0, 0.0
        unit, host = self.unit_price, self.host_price if self.host else None
        low = (unit.low * self.count if unit else 0.0) + (host.low_usd * self.nodes if host else 0.0)
        high = (unit.high * self.count if unit else 0.0) + (host.high_usd * self.nodes if host else 0.0)
        return low, high

    @property
    def price_as_of(self) -> date | None:
        """When the prices this option is costed with were seen: the offer's date when rented; the
        older of the GPU's and the host's when bought; None when owned."""
        if self.acquisition == "owned":
            return None
        if self.offer is not None:
            return self.offer.as_of
        dates = [p.as_of for p in (self.unit_price, self.host_price if self.host else None) if p is not None]
        return min(dates) if dates else None

    @property
    def host_capex_usd(self) -> float:
        """What the hosts add to the capex: one per node, when bought."""
        return self.host_unit_usd * self.nodes if self.acquisition == "buy" and self.host else 0.0

    @cached_property
    def gpus_per_node(self) -> int:
        return self.count // self.nodes

    @cached_property
    def price_group(self) -> tuple[object, ...] | None:
        """What this option shares with options that differ from it only in price: the same GPUs
        rented (from any provider) or bought (new or used). None for owned hardware."""
        if self.acquisition == "rent":
            return (
                "rent",
                self.gpu.id,
                self.count,
                self.nodes,
                self.pricing,
                self.attrs["interconnect"],
                self.attrs["tensor_parallel_suitable"],
                # a notebook's runtime is not a cloud's instance (session caps, no GPU guaranteed):
                # rules judge the two apart, so they never stand for each other
                self.attrs.get("provider_kind") == "notebook",
            )
        if self.acquisition == "buy":
            return ("buy", self.gpu.id, self.count, self.nodes)
        return None

    @cached_property
    def price_order(self) -> tuple[float, str]:
        """Cheapest first within a price group, then a stable tie-break."""
        if self.acquisition == "rent":
            return self.hourly_rent_usd, self.offer.id if self.offer else ""
        return self.capex_usd, self.price_kind


@dataclass(frozen=True)
class Context:
    """What options depend on beyond the KB: the user's OS and allow-lists, and whether spot is allowed."""

    os: str
    vendors: frozenset[str] | None
    providers: frozenset[str] | None
    spot: bool
    owned: tuple[tuple[str, int], ...]
    """(gpu, count) the user owns, by GPU id"""
    extra_counts: frozenset[tuple[str, int]]
    """(gpu, count) pairs the request names (target hardware, a fixed gpu_count)"""
    free_slots: int = 0
    """free PCIe x16 slots in a machine the user owns: bought PCIe cards up to that many need no host"""
    psu_watts: int | None = None
    """that machine's power supply rating, when stated"""
    your_computer: bool = False
    """a tiny job: the computer the user already has (its CPU, YOUR_COMPUTER) is an owned option
    (rule tiny-runs-need-no-gpu)"""
    gpu_classes: frozenset[str] | None = None
    """the GPU classes the user allows (`constraints.gpu_classes`), None for any"""
    owned_ram: tuple[tuple[str, float], ...] = ()
    """(gpu, GiB) the RAM of each machine the owned GPUs are in, where the request states it"""

    def without_owned(self) -> Context:
        """This context less the hardware the user owns: what the options of price groups depend on
        (owned hardware stands alone, outside them)."""
        return dataclasses.replace(self, owned=(), owned_ram=(), your_computer=False)


YOUR_COMPUTER = "cpu-x86-64gb"
"""The KB entry that stands for the computer a user already has, when a job is small enough for it."""


def context_for(request: RecommendRequest, *, spot: bool, your_computer: bool = False) -> Context:
    c = request.constraints
    owned: dict[str, int] = {}
    ram: dict[str, float] = {}
    for item in c.existing_hardware:
        owned[item.gpu] = owned.get(item.gpu, 0) + item.count
        if item.host_ram_gib is not None:  # listed twice: the smaller machine bounds a plan
            ram[item.gpu] = min(ram.get(item.gpu, item.host_ram_gib), item.host_ram_gib)
    extra = set()
    if c.target_hardware is not None:
        extra.add((c.target_hardware.gpu, c.target_hardware.count))
    return Context(
        os=c.os or "linux",
        vendors=frozenset(c.vendors) if c.vendors else None,
        providers=frozenset(c.providers) if c.providers else None,
        spot=spot,
        owned=tuple(sorted(owned.items())),
        extra_counts=frozenset(extra),
        free_slots=c.host_slots,
        psu_watts=c.existing_host.psu_watts if c.existing_host else None,
        your_computer=your_computer,
        gpu_classes=frozenset(c.gpu_classes) if c.gpu_classes else None,
        owned_ram=tuple(sorted(ram.items())),
    )


def options(graph: KBGraph, ctx: Context, gpu_count: int | None = None) -> Iterator[Option]:
    """Every option, in a fixed order (GPUs by id, then owned, bought, rented)."""
    for gpu_id in sorted(graph.kb.gpus):
        gpu = graph.kb.gpus[gpu_id]
        named = named_counts(ctx, gpu_id, gpu_count)
        yield from owned_options(graph, ctx, gpu, named)
        yield from bought_options(graph, ctx, gpu, named)
        yield from rented_options(graph, ctx, gpu)


def named_counts(ctx: Context, gpu_id: str, gpu_count: int | None) -> set[int]:
    """The GPU counts a request names for `gpu_id` (its target hardware, a fixed gpu_count)."""
    return {count for g, count in ctx.extra_counts if g == gpu_id} | ({gpu_count} if gpu_count else set())


# What each part of a GPU's options depends on, as a key: requests that differ elsewhere (another
# GPU owned, another provider allowed that rents something else) share the same options. The keys
# name only what the functions below read of the context.


def bought_key(ctx: Context, gpu: Gpu, named: set[int]) -> tuple[object, ...]:
    """What `bought_options` reads: the OS, whether the vendor and class are allowed, the counts named beyond
    the ones always listed, and the free slots that can take the cards (PCIe cards only)."""
    always = (1,) if gpu.sold_as == "machine" else SERVER_COUNTS if gpu.sold_as == "server" else CARD_COUNTS
    listed = set(always)
    extra = () if gpu.sold_as == "machine" else tuple(sorted(named - listed))
    desktop_card = gpu.form_factor == "pcie" and gpu.gpu_class != "datacenter"
    slots = min(ctx.free_slots, max(listed | named)) if desktop_card else 0
    psu = ctx.psu_watts if slots else None
    return ("buy", gpu.id, ctx.os, _vendor_allowed(ctx, gpu), _class_allowed(ctx, gpu), extra, slots, psu)


def rented_key(graph: KBGraph, ctx: Context, gpu: Gpu) -> tuple[object, ...]:
    """What `rented_options` reads: spot or not, whether the vendor and class are allowed, and which of the
    providers renting this GPU are allowed."""
    providers = None
    if ctx.providers is not None:
        providers = frozenset(o.provider for o in graph.offers_for_gpu(gpu.id) if o.provider in ctx.providers)
    return ("rent", gpu.id, ctx.spot, _vendor_allowed(ctx, gpu), _class_allowed(ctx, gpu), providers)


def _vendor_allowed(ctx: Context, gpu: Gpu) -> bool:
    return ctx.vendors is None or gpu.vendor in ctx.vendors


def _class_allowed(ctx: Context, gpu: Gpu) -> bool:
    return ctx.gpu_classes is None or gpu.gpu_class in ctx.gpu_classes


def owned_options(graph: KBGraph, ctx: Context, gpu: Gpu, named: set[int]) -> Iterator[Option]:
    have = dict(ctx.owned).get(gpu.id, 0)
    if not have and ctx.your_computer and gpu.id == YOUR_COMPUTER:
        yield dataclasses.replace(_local(graph, ctx, gpu, 1, "owned", "owned", None, None), assumed=True)
        return
    # the machines the owned cards are in: a run on some of them still runs those machines' hosts
    machine = placement(graph.hosts_for(gpu.id), have, "new") if have and gpu.sold_as != "machine" else None
    ram = dict(ctx.owned_ram).get(gpu.id)
    for count in sorted({c for c in (*CARD_COUNTS, *named) if c <= have} | ({have} if have else set())):
        placed = _in_owned_machines(machine, have, count) if machine is not None else None
        option = _local(graph, ctx, gpu, count, "owned", "owned", None, placed)
        yield option if ram is None else dataclasses.replace(option, host_ram_gib=ram)


def _in_owned_machines(machine: Placement, have: int, count: int) -> Placement:
    """The nodes of the owned machines `count` of the `have` owned cards run on: the machines' own host,
    whose power is drawn whichever of its cards are used (round 4, #38: a 4-GPU host's power made
    four of eight owned cards look cheaper to run than all eight in their 8-GPU server), on as few of
    its nodes as hold the cards."""
    per_node = have // machine.nodes
    return Placement(machine.host, -(-count // per_node), machine.price)


def bought_options(graph: KBGraph, ctx: Context, gpu: Gpu, named: set[int]) -> Iterator[Option]:
    if gpu.sold_as == "cloud-only":
        return
    if gpu.sold_as == "machine":
        counts: set[int] = {1}
    elif gpu.sold_as == "server":
        counts = set(SERVER_COUNTS)
    else:
        counts = set(CARD_COUNTS)
    hosts = graph.hosts_for(gpu.id)
    for kind, price in latest_prices(gpu.prices).items():
        # A machine (a Mac) is one computer: a fixed count asks for that many GPUs, not that many
        # computers chained by pipeline over Ethernet, which no one racks to serve a model.
        for count in sorted(counts if gpu.sold_as == "machine" else counts | named):
            if gpu.sold_as == "machine":
                yield _local(graph, ctx, gpu, count, "buy", kind, price, None)
            elif gpu.form_factor == "pcie" and gpu.gpu_class != "datacenter" and count <= ctx.free_slots:
                # into the user's own machine: the cards alone. Datacenter PCIe cards are passively
                # cooled and need a server's ducted airflow (NVIDIA T4 board specification: "a
                # passively cooled board that requires system air flow"), so they keep their host.
                yield _local(graph, ctx, gpu, count, "buy", kind, price, None, own_host=True)
            elif (placed := placement(hosts, count, kind)) is not None:
                yield _local(graph, ctx, gpu, count, "buy", kind, price, placed)


@dataclass(frozen=True)
class Placement:
    """Where `count` GPUs go: `nodes` hosts of one model, each bought at `price`."""

    host: Host
    nodes: int
    price: HostPrice


def placement(hosts: list[Host], count: int, kind: str) -> Placement | None:
    """The hosts `count` GPUs go into, or None when no host takes them in equal whole nodes.

    Fewest nodes first (GPUs in one node talk over their fast link), then the smallest host that
    fits (1-2 cards: a workstation; 3-4: a 4-GPU host; 5-8: an 8-GPU server), then the cheapest. A
    baseboard host (`whole_board`) holds exactly its slots per node: HGX H100 4 or 8, an OAM UBB 8,
    so 4 x MI300X has no placement. Its price is `host_cost`."""
    best: tuple[tuple[int, int, float, str], Placement] | None = None
    for host in hosts:
        nodes = -(-count // host.gpu_slots)
        per_node, rest = divmod(count, nodes)
        if rest or (host.whole_board and per_node != host.gpu_slots):
            continue
        price = host_cost(host, kind)
        key = (nodes, host.gpu_slots, price.midpoint_usd, host.id)
        if best is None or key < best[0]:
            best = key, Placement(host, nodes, price)
    return best[1] if best else None


def host_cost(host: Host, kind: str) -> HostPrice:
    """The host price a `kind` (new | used) GPU is bought with: the latest price of the same kind
    (used with used, anything else with new), else the latest. Capex counts its midpoint: host
    prices are ranges (list prices are rarely published), and the middle is the least biased point."""
    latest = sorted(host.prices, key=lambda p: (p.as_of, p.midpoint_usd))
    same = [p for p in latest if (p.kind == "used") == (kind == "used")]
    return (same or latest)[-1]


def latest_prices(prices: list[Price]) -> dict[str, Price]:
    """The latest used price and the latest new one (an MSRP or estimate stands for new)."""
    found: dict[str, Price] = {}
    for price in sorted(prices, key=lambda p: (p.as_of, p.price_usd)):
        found["used" if price.kind == "used" else "new"] = price
    return {kind: found[kind] for kind in sorted(found)}


def _local(
    graph: KBGraph,
    ctx: Context,
    gpu: Gpu,
    count: int,
    acquisition: str,
    kind: str,
    price: Price | None,
    placed: Placement | None,
    *,
    own_host: bool = False,
) -> Option:
    if placed is not None:
        nodes = placed.nodes
    else:
        per_node = gpu.link_domain_gpus if gpu.sold_as == "server" else count
        nodes = max(1, count // max(1, min(per_node, 8))) if count > 8 else 1
    routes = [r for r in graph.os_routes(gpu.id, ctx.os) if r.support in ("full", "limited")]
    platform = routes[0].platform if routes else gpu.platforms[0]
    os_path = "wsl2" if routes and routes[0].via == "wsl2" else ctx.os
    return _option(
        graph,
        ctx,
        gpu,
        count=count,
        nodes=nodes,
        acquisition=acquisition,
        pricing="owned",
        price_kind=kind,
        price=price,
        platform=platform,
        os_path=os_path,
        usable=bool(routes),
        placed=placed,
        own_host=own_host,
    )


def rented_options(graph: KBGraph, ctx: Context, gpu: Gpu) -> Iterator[Option]:
    stacks = [stack for stack in RENTED_STACKS if stack in gpu.platforms] or list(gpu.platforms)
    for offer in graph.offers_for_gpu(gpu.id):
        prices = [("on_demand", offer.on_demand_usd_per_hour)]
        if ctx.spot:
            prices.append(("spot", offer.spot_usd_per_hour))
        for pricing, hourly in prices:
            if hourly is None:
                continue
            for nodes in OFFER_NODES if offer.gpu_count == 8 else (1,):
                yield _option(
                    graph,
                    ctx,
                    gpu,
                    count=offer.gpu_count * nodes,
                    nodes=nodes,
                    acquisition="rent",
                    pricing=pricing,
                    price_kind=pricing,
                    offer=offer,
                    hourly=hourly * nodes,
                    platform=stacks[0],
                    os_path="linux",
                    usable=True,
                )


GPU_LINKS = frozenset({"nvlink", "nvswitch", "infinity-fabric", "fabric", "xgmi", "ici", "unified"})
"""links between GPUs that bypass the host's PCIe"""
ALL_REDUCE_LATENCY_S = {"gpu-link": 10e-6, "pcie": 24e-6}
"""A decode step's small all-reduce (tens of KB): vLLM's custom all-reduce over NVLink on H100s takes
8.7-11.8 us at 2-8 GPUs for 32 KB (SGLang PR 2904); NCCL across 4 GPUs behind one PCIe switch 19.4 us at
4 KB and 24.2 us at 32 KB inside a CUDA graph (NCCL's tuning adds 1.0 us a hop on PCIe against 0.6 on
NVLink, NCCL issue 1334)."""


def _one_way_gbs(link: Interconnect, figure: float | None = None) -> float:
    """One direction's bandwidth of a link (GB/s), from `figure` (a GPU's own) or the link's."""
    both = figure or link.bandwidth_gbs
    return both / 2 if link.direction == "bidirectional" else both


def _wiring(graph: KBGraph, gpu: Gpu, offer: Offer | None, count: int, nodes: int) -> tuple[str, bool, Links]:
    """How an option's GPUs are joined: the kind of link between them (`infiniband` across nodes,
    `none` for one GPU), whether it suits tensor parallelism, and its bandwidths."""
    link = graph.kb.interconnects[offer.interconnect] if offer else graph.gpu_link(gpu.id)
    joined = count // nodes <= max(gpu.link_domain_gpus, 1) or link.kind == "nvswitch"
    tp_ok = link.tensor_parallel_suitable and joined and count > 1
    kind = "infiniband" if nodes > 1 else link.kind if (count > 1 or link.kind == "unified") else "none"
    return kind, tp_ok, _links(graph.kb, gpu, link, joined)


def _links(kb: KB, gpu: Gpu, link: Interconnect, joined: bool) -> Links:
    """One direction's bandwidth between the option's GPUs (their own link when `joined` in one link
    domain, else the host's PCIe), between nodes and to the host, and an all-reduce's latency."""
    inter = kb.interconnects[INTER_NODE_LINK]
    host = kb.interconnects[gpu.host_interface or DEFAULT_HOST_LINK]
    return Links(
        gpu_to_gpu=(_one_way_gbs(link, gpu.interconnect_gbs) if joined else _one_way_gbs(host)) * GB,
        inter_node=_one_way_gbs(inter) * GB,
        host=_one_way_gbs(host) * GB,
        latency_s=ALL_REDUCE_LATENCY_S["gpu-link" if joined and link.kind in GPU_LINKS else "pcie"],
    )


def _maturity(stack: Stack | None, gpu: Gpu, attrs: dict[str, Scalar]) -> dict[str, str]:
    """Sets the option's `training_maturity` and `serving_maturity` (kb/stacks `maturity` for its
    device class) in `attrs`; returns why each rated one is rated so."""
    reasons: dict[str, str] = {}
    for task in ("training", "serving"):
        rated = stack.maturity_for(task, gpu.gpu_class) if stack else None
        attrs[f"{task}_maturity"] = rated.level if rated else "unrated"
        if rated is not None and stack is not None:
            reasons[f"{task}_maturity"] = f"{stack.name} for {task}: {rated.reason}"
    return reasons


def _base_attrs(
    ctx: Context, gpu: Gpu, *, count: int, nodes: int, acquisition: str, offer: Offer | None
) -> dict[str, Scalar]:
    """The attributes an option has from its GPU, its size and how it is got (docs/rule-facts.md),
    in the order rules and docs list them."""
    attrs: dict[str, Scalar] = {
        "gpu": gpu.id,
        "gpu_class": gpu.gpu_class,
        "vendor": gpu.vendor,
        "sold_as": gpu.sold_as,
        "form_factor": gpu.form_factor,
        "bf16_native": "bf16" in gpu.native_precisions,
        "fp8_native": "fp8" in gpu.native_precisions,
        "vram_per_gpu_gb": gpu.usable_memory_gb or gpu.memory_gb,
        "gpu_count": count,
        "nodes": nodes,
        "acquisition": acquisition,
        "vendor_allowed": _vendor_allowed(ctx, gpu),
        "class_allowed": _class_allowed(ctx, gpu),
        "provider_allowed": acquisition != "rent"
        or ctx.providers is None
        or (offer is not None and offer.provider in ctx.providers),
    }
    if gpu.compute_capability is not None:
        attrs["compute_capability"] = float(gpu.compute_capability)
    return attrs


def _option(
    graph: KBGraph,
    ctx: Context,
    gpu: Gpu,
    *,
    count: int,
    nodes: int,
    acquisition: str,
    pricing: str,
    price_kind: str,
    platform: str,
    os_path: str,
    usable: bool,
    price: Price | None = None,
    offer: Offer | None = None,
    hourly: float = 0.0,
    placed: Placement | None = None,
    own_host: bool = False,
) -> Option:
    kb = graph.kb
    kind, tp_ok, links = _wiring(graph, gpu, offer, count, nodes)
    provider = kb.providers[offer.provider] if offer else None
    attrs = _base_attrs(ctx, gpu, count=count, nodes=nodes, acquisition=acquisition, offer=offer)
    attrs.update(
        platform=platform,
        interconnect=kind,
        tensor_parallel_suitable=tp_ok,
        price_kind=price_kind,
        pricing=pricing,
        usable_from_os=usable,
        within_host_power=not own_host
        or ctx.psu_watts is None
        or required_psu_watts(gpu.tdp_w or 0, count) <= ctx.psu_watts,
    )
    reasons = _maturity(kb.stacks.get(platform), gpu, attrs)
    if provider is not None:
        attrs.update(provider=provider.id, provider_hosts=provider.hosts, provider_kind=provider.kind)
    return Option(
        gpu=gpu,
        count=count,
        nodes=nodes,
        acquisition=acquisition,
        pricing=pricing,
        price_kind=price_kind,
        unit_price=price,
        offer=offer,
        hourly_rent_usd=hourly,
        interconnect=kind,
        platform=platform,
        os_path=os_path,
        links=links,
        attrs=MappingProxyType(attrs),
        host=placed.host if placed else None,
        host_unit_usd=placed.price.midpoint_usd if placed else 0.0,
        own_host=own_host,
        host_price=placed.price if placed else None,
        maturity_reasons=MappingProxyType(reasons),
    )
