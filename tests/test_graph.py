"""The KB graph: typed nodes and edges, and the queries the recommender relies on."""

from __future__ import annotations

from engine.knowledge.graph import KBGraph, node_key
from engine.knowledge.kb import KB


def test_every_entity_is_a_typed_node(kb: KB, graph: KBGraph) -> None:
    expected = sum(
        len(kb.of_kind(kind))
        for kind in (
            "gpus",
            "hosts",
            "interconnects",
            "precisions",
            "stacks",
            "platforms",
            "providers",
            "offers",
            "models",
        )
    )
    assert graph.graph.number_of_nodes() == expected
    types = {data["type"] for _, data in graph.graph.nodes(data=True)}
    assert types == {
        "gpu",
        "host",
        "interconnect",
        "precision",
        "platform",
        "os",
        "provider",
        "offer",
        "model",
    }


def test_edges_follow_the_schema(graph: KBGraph) -> None:
    allowed = {
        ("gpu", "interconnect", "links_via"),
        ("gpu", "interconnect", "host_link"),
        ("gpu", "precision", "supports"),
        ("gpu", "platform", "runs_on"),
        ("gpu", "host", "fits_in"),
        ("platform", "os", "available_on"),
        ("offer", "gpu", "offers"),
        ("offer", "provider", "offered_by"),
        ("offer", "interconnect", "links_via"),
    }
    nodes = graph.graph.nodes
    seen = {(nodes[s]["type"], nodes[t]["type"], rel) for s, t, rel in graph.graph.edges(data="relation")}
    assert seen == allowed


def test_macos_reaches_only_apple_silicon_and_cpus(kb: KB, graph: KBGraph) -> None:
    usable = graph.gpus_usable_from("macos")
    assert usable
    assert {kb.gpus[g].gpu_class for g in usable} <= {"apple-silicon", "cpu"}
    assert "nvidia-h100-sxm" not in usable


def test_windows_reaches_cuda_natively_and_through_wsl2(graph: KBGraph) -> None:
    routes = graph.os_routes("nvidia-rtx-4090", "windows")
    assert {(r.platform, r.via) for r in routes} >= {("cuda", "native"), ("cuda", "wsl2")}
    assert routes[0].support == "full"  # best-supported route first (WSL2 for ML tooling)


def test_linux_reaches_every_nvidia_and_amd_gpu(kb: KB, graph: KBGraph) -> None:
    usable = set(graph.gpus_usable_from("linux", min_support="full"))
    vendors = {gpu.id for gpu in kb.gpus.values() if gpu.vendor in ("nvidia", "amd")}
    assert vendors <= usable


def test_fp8_is_native_on_hopper_not_ampere(graph: KBGraph) -> None:
    fp8 = set(graph.gpus_with_native("fp8"))
    assert "nvidia-h100-sxm" in fp8
    assert "nvidia-a100-sxm-80gb" not in fp8


def test_bf16_is_missing_on_turing_and_volta(graph: KBGraph) -> None:
    bf16 = set(graph.gpus_with_native("bf16"))
    assert "nvidia-t4" not in bf16 and "nvidia-v100-sxm2-16gb" not in bf16
    assert "nvidia-a100-sxm-80gb" in bf16


def test_offers_for_a_gpu_are_cheapest_per_gpu_hour_first(graph: KBGraph) -> None:
    offers = graph.offers_for_gpu("nvidia-h100-sxm")
    assert len(offers) >= 10
    per_gpu = [(o.on_demand_usd_per_hour or o.spot_usd_per_hour or 0) / o.gpu_count for o in offers]
    assert per_gpu == sorted(per_gpu)
    only_aws = graph.offers_for_gpu("nvidia-h100-sxm", providers=frozenset({"aws"}))
    assert only_aws and {o.provider for o in only_aws} == {"aws"}


def test_gpu_links(graph: KBGraph) -> None:
    assert graph.gpu_link("nvidia-h100-sxm").tensor_parallel_suitable
    assert not graph.gpu_link("nvidia-rtx-4090").tensor_parallel_suitable


def test_providers_offer_gpus(graph: KBGraph) -> None:
    assert "nvidia-h100-sxm" in graph.gpus_offered_by("lambda")
    assert graph.graph.has_node(node_key("provider", "coreweave"))
