"""The knowledge base as a typed NetworkX graph, and the queries the recommender asks of it.

Nodes are keyed `"<type>:<id>"` (ids are unique per type, not across types: `cpu` is both a
stack and part of a GPU id) and carry `type`, `id` and the validated `entity`. Edges carry a
`relation`; a MultiDiGraph keyed by relation lets a GPU reach one interconnect both as its
GPU-to-GPU link and as its host link, and a stack reach an OS both natively and via WSL2.

    gpu ──links_via──► interconnect      gpu ──host_link──► interconnect
    gpu ──supports───► precision         gpu ──runs_on────► platform (software stack)
    gpu ──fits_in────► host              (the hosts a bought GPU can go into)
    platform ──available_on──► os        (attrs: via native|wsl2, support full|limited|experimental)
    offer ──offers──► gpu    offer ──offered_by──► provider    offer ──links_via──► interconnect
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import networkx as nx

from engine.knowledge.kb import KB, host_takes
from engine.models.kb import Entity, Gpu, Host, Interconnect, Offer

NodeType = Literal["gpu", "host", "interconnect", "precision", "platform", "os", "provider", "offer", "model"]
Support = Literal["full", "limited", "experimental"]

_NODE_TYPE_BY_KIND: dict[str, NodeType] = {
    "gpus": "gpu",
    "hosts": "host",
    "interconnects": "interconnect",
    "precisions": "precision",
    "stacks": "platform",
    "platforms": "os",
    "providers": "provider",
    "offers": "offer",
    "models": "model",
}
_SUPPORT_ORDER: dict[str, int] = {"full": 0, "limited": 1, "experimental": 2}


def node_key(node_type: NodeType, entity_id: str) -> str:
    return f"{node_type}:{entity_id}"


def build_graph(kb: KB) -> nx.MultiDiGraph:
    """Every KB entity as a node and every reference between them as a typed edge."""
    graph = nx.MultiDiGraph(kb_version=kb.version)
    for kind, node_type in _NODE_TYPE_BY_KIND.items():
        for entity_id, entity in kb.of_kind(kind).items():
            graph.add_node(node_key(node_type, entity_id), type=node_type, id=entity_id, entity=entity)
    for gpu in kb.gpus.values():
        source = node_key("gpu", gpu.id)
        _edge(graph, source, node_key("interconnect", gpu.interconnect), "links_via")
        if gpu.host_interface:
            _edge(graph, source, node_key("interconnect", gpu.host_interface), "host_link")
        for precision in gpu.native_precisions:
            _edge(graph, source, node_key("precision", precision), "supports")
        for stack in gpu.platforms:
            _edge(graph, source, node_key("platform", stack), "runs_on")
        for host in kb.hosts.values():
            if host_takes(host, gpu):
                _edge(graph, source, node_key("host", host.id), "fits_in")
    for os_entity in kb.platforms.values():
        for way in os_entity.stacks:
            _edge(
                graph,
                node_key("platform", way.stack),
                node_key("os", os_entity.id),
                "available_on",
                key=f"available_on:{way.via}",
                via=way.via,
                support=way.support,
                note=way.note,
            )
    for offer in kb.offers.values():
        source = node_key("offer", offer.id)
        _edge(graph, source, node_key("gpu", offer.gpu), "offers")
        _edge(graph, source, node_key("provider", offer.provider), "offered_by")
        _edge(graph, source, node_key("interconnect", offer.interconnect), "links_via")
    return graph


def _edge(
    graph: nx.MultiDiGraph, source: str, target: str, relation: str, key: str | None = None, **attrs: Any
) -> None:
    # A dangling reference (lint reports it) must not create an untyped node.
    if source in graph and target in graph:
        graph.add_edge(source, target, key=key or relation, relation=relation, **attrs)


@dataclass(frozen=True)
class OsRoute:
    """How a GPU is used from an OS: through which software stack, natively or via WSL2."""

    gpu: str
    platform: str
    via: str
    support: Support


class KBGraph:
    """Read-only queries over the KB graph."""

    def __init__(self, kb: KB) -> None:
        self.kb = kb
        self.graph = build_graph(kb)
        self._hosts: dict[str, list[Host]] = {}

    def _targets(self, source: str, relation: str) -> list[str]:
        if source not in self.graph:
            raise KeyError(source)
        return sorted(
            {target for _, target, rel in self.graph.out_edges(source, data="relation") if rel == relation}
        )

    def _sources(self, target: str, relation: str) -> list[str]:
        if target not in self.graph:
            raise KeyError(target)
        return sorted(
            {source for source, _, rel in self.graph.in_edges(target, data="relation") if rel == relation}
        )

    def _entity(self, key: str) -> Entity:
        entity: Entity = self.graph.nodes[key]["entity"]
        return entity

    def gpu_link(self, gpu_id: str) -> Interconnect:
        """The GPU-to-GPU interconnect of a GPU."""
        (target,) = self._targets(node_key("gpu", gpu_id), "links_via")
        link = self._entity(target)
        assert isinstance(link, Interconnect)
        return link

    def hosts_for(self, gpu_id: str) -> list[Host]:
        """Hosts a GPU goes into, by id (worked out once per GPU: options ask for every count)."""
        found = self._hosts.get(gpu_id)
        if found is None:
            hosts = [self._entity(k) for k in self._targets(node_key("gpu", gpu_id), "fits_in")]
            found = self._hosts[gpu_id] = [host for host in hosts if isinstance(host, Host)]
        return list(found)

    def platforms_of(self, gpu_id: str) -> list[str]:
        """Software stacks (cuda, rocm, mps, ...) a GPU runs on."""
        return [self.graph.nodes[k]["id"] for k in self._targets(node_key("gpu", gpu_id), "runs_on")]

    def gpus_with_native(self, precision_id: str) -> list[str]:
        """GPUs with hardware support for a precision."""
        return [
            self.graph.nodes[k]["id"] for k in self._sources(node_key("precision", precision_id), "supports")
        ]

    def os_routes(self, gpu_id: str, os_id: str) -> list[OsRoute]:
        """Ways to use `gpu_id` from `os_id`, best supported first (native before WSL2 on ties)."""
        os_node = node_key("os", os_id)
        if os_node not in self.graph:
            raise KeyError(os_node)
        routes = []
        for platform_key in self._targets(node_key("gpu", gpu_id), "runs_on"):
            for _, target, attrs in self.graph.out_edges(platform_key, data=True):
                if target == os_node and attrs["relation"] == "available_on":
                    routes.append(
                        OsRoute(gpu_id, self.graph.nodes[platform_key]["id"], attrs["via"], attrs["support"])
                    )
        return sorted(routes, key=lambda r: (_SUPPORT_ORDER[r.support], r.via != "native", r.platform))

    def gpus_usable_from(self, os_id: str, min_support: Support = "limited") -> list[str]:
        """GPUs with at least one route from `os_id` supported at `min_support` or better."""
        limit = _SUPPORT_ORDER[min_support]
        return [
            gpu_id
            for gpu_id in self.kb.gpus
            if any(_SUPPORT_ORDER[r.support] <= limit for r in self.os_routes(gpu_id, os_id))
        ]

    def offers_for_gpu(self, gpu_id: str, providers: frozenset[str] | None = None) -> list[Offer]:
        """Priced offers of a GPU, cheapest per GPU-hour first, optionally from some providers."""
        offers = [self._entity(k) for k in self._sources(node_key("gpu", gpu_id), "offers")]
        typed = [o for o in offers if isinstance(o, Offer) and (providers is None or o.provider in providers)]
        return sorted(typed, key=lambda o: (_hourly_per_gpu(o), o.id))

    def gpus_offered_by(self, provider_id: str) -> list[str]:
        """GPUs a provider rents out."""
        gpus: set[str] = set()
        for offer_key in self._sources(node_key("provider", provider_id), "offered_by"):
            gpus.update(self.graph.nodes[k]["id"] for k in self._targets(offer_key, "offers"))
        return sorted(gpus)

    def gpus(self) -> list[Gpu]:
        return list(self.kb.gpus.values())


def _hourly_per_gpu(offer: Offer) -> float:
    price = (
        offer.on_demand_usd_per_hour if offer.on_demand_usd_per_hour is not None else offer.spot_usd_per_hour
    )
    return (price or 0.0) / offer.gpu_count
