"""Hosts: the kind loads and lints (every GPU sold as a card or on a board has a host; a host names
only GPUs that exist), and a bought option's capex is its GPUs plus one host per node."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.knowledge.graph import KBGraph
from engine.knowledge.kb import KB
from engine.planning.candidates import Context, Option, host_cost, options
from engine.planning.economics import owned_watts
from tests.test_lint import assert_reported, edit, run_lint

LINUX = Context(os="linux", vendors=None, providers=None, spot=False, owned=(), extra_counts=frozenset())


def bought(graph: KBGraph, gpu: str, count: int, kind: str) -> Option | None:
    found = [
        o
        for o in options(graph, LINUX, count)
        if o.gpu.id == gpu and o.count == count and o.acquisition == "buy" and o.price_kind == kind
    ]
    assert len(found) <= 1
    return found[0] if found else None


def test_the_host_kind_loads_with_its_board(kb: KB) -> None:
    hgx = kb.hosts["hgx-h100-8gpu"]
    assert hgx.kind == "sxm-server" and hgx.whole_board and hgx.gpu_slots == 8
    assert set(hgx.gpus) == {"nvidia-h100-sxm", "nvidia-h200-sxm"}  # an HGX H100 board, not V100 SXM2
    assert "nvidia-v100-sxm2-32gb" in kb.hosts["sxm2-v100-8gpu"].gpus
    assert kb.hosts["workstation-tower-2gpu"].gpu_classes == ["consumer", "workstation"]


def test_every_gpu_bought_on_its_own_has_a_host(kb: KB, graph: KBGraph) -> None:
    for gpu in kb.gpus.values():
        if gpu.sold_as in ("card", "server"):
            assert graph.hosts_for(gpu.id), gpu.id
        elif gpu.sold_as == "machine":
            assert not graph.hosts_for(gpu.id), gpu.id


def test_a_gpu_no_host_takes_is_a_lint_problem(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("sxm2-v100-8gpu.yaml", "sxm2-v100-4gpu.yaml"):
        (kb_copy / "hosts" / name).unlink()
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    for gpu in ("nvidia-v100-sxm2-16gb", "nvidia-v100-sxm2-32gb"):
        line = next(
            i
            for i, text in enumerate((kb_copy / f"gpus/{gpu}.yaml").read_text().splitlines(), 1)
            if text.startswith("sold_as:")
        )
        assert_reported(out, f"gpus/{gpu}.yaml", line, "host")


def test_a_host_naming_an_unknown_gpu_is_a_lint_problem(
    kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = edit(kb_copy / "hosts/hgx-b200-8gpu.yaml", r"gpus:", "gpus: [nvidia-b200, nvidia-b250]")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, "hosts/hgx-b200-8gpu.yaml", line, "reference")


def test_a_host_naming_a_gpu_of_another_form_factor_is_a_lint_problem(
    kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = edit(kb_copy / "hosts/hgx-b200-8gpu.yaml", r"gpus:", "gpus: [nvidia-b200, nvidia-rtx-4090]")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, "hosts/hgx-b200-8gpu.yaml", line, "consistency")


def test_eight_h100_sxm_cost_eight_gpus_and_an_hgx_server(kb: KB, graph: KBGraph) -> None:
    option = bought(graph, "nvidia-h100-sxm", 8, "new")
    assert option is not None and option.host is not None and option.nodes == 1
    assert option.host.id == "hgx-h100-8gpu"
    # kb/gpus/nvidia-h100-sxm.yaml: 27,500 per GPU (2023-2024 market estimate 25,000-30,000);
    # kb/hosts/hgx-h100-8gpu.yaml: 50,000-97,000 (DGX H100 ~270,000 and a Thinkmate quote ~317,000,
    # each less 8 GPUs), midpoint 73,500
    assert option.capex_usd == pytest.approx(8 * 27_500 + 73_500)


def test_four_h100_sxm_go_on_the_four_gpu_board(graph: KBGraph) -> None:
    option = bought(graph, "nvidia-h100-sxm", 4, "new")
    assert option is not None and option.host is not None
    # kb/hosts/hgx-h100-4gpu.yaml: 30,000-55,000 (scaled from the 8-GPU host), midpoint 42,500
    assert (option.host.id, option.capex_usd) == ("hgx-h100-4gpu", 4 * 27_500 + 42_500)


def test_sixteen_h100_sxm_are_two_eight_gpu_servers(graph: KBGraph) -> None:
    option = bought(graph, "nvidia-h100-sxm", 16, "new")
    assert option is not None and option.host is not None
    assert (option.host.id, option.nodes, option.capex_usd) == ("hgx-h100-8gpu", 2, 16 * 27_500 + 2 * 73_500)


def test_two_rtx_4090_cost_two_cards_and_a_workstation(graph: KBGraph) -> None:
    option = bought(graph, "nvidia-rtx-4090", 2, "new")
    assert option is not None and option.host is not None
    # kb/gpus/nvidia-rtx-4090.yaml: 1,599 launch MSRP; kb/hosts/workstation-tower-2gpu.yaml: new
    # 2,000-3,500 (estimate), midpoint 2,750
    assert (option.host.id, option.capex_usd) == ("workstation-tower-2gpu", 2 * 1_599 + 2_750)


def test_eight_used_rtx_3090_cost_eight_cards_and_a_used_eight_gpu_server(graph: KBGraph) -> None:
    option = bought(graph, "nvidia-rtx-3090", 8, "used")
    assert option is not None and option.host is not None
    # kb/gpus/nvidia-rtx-3090.yaml: used 800 (range 700-900); kb/hosts/pcie-server-8gpu.yaml: used
    # 2,500-6,000 (decommissioned 8-GPU servers on eBay), midpoint 4,250
    assert (option.host.id, option.capex_usd) == ("pcie-server-8gpu", 8 * 800 + 4_250)
    new = bought(graph, "nvidia-rtx-3090", 8, "new")
    assert new is not None and new.host is not None
    # a new (MSRP 1,499) card goes with the new server: 8,000-16,000, midpoint 12,000
    assert new.capex_usd == 8 * 1_499 + 12_000


def test_mi300x_is_bought_eight_to_a_board(kb: KB, graph: KBGraph) -> None:
    # AMD sells the assembled 8-OAM universal baseboard, not single modules (kb/hosts/oam-mi300x-8gpu.yaml)
    assert bought(graph, "amd-mi300x", 4, "new") is None
    option = bought(graph, "amd-mi300x", 8, "new")
    assert option is not None and option.host is not None
    # kb/gpus/amd-mi300x.yaml: 12,500 (midpoint of 10,000-15,000); host 50,000-97,000, midpoint 73,500
    assert (option.host.id, option.capex_usd) == ("oam-mi300x-8gpu", 8 * 12_500 + 73_500)


def test_a_datacenter_card_needs_a_server_not_a_tower(graph: KBGraph) -> None:
    option = bought(graph, "nvidia-l40s", 1, "new")
    assert option is not None and option.host is not None
    assert option.host.id == "pcie-server-4gpu"  # passive cards need server airflow


def test_a_mac_is_priced_whole_and_owned_hardware_costs_nothing(graph: KBGraph) -> None:
    mac = bought(graph, "apple-m4-max-128gb", 1, "new")
    assert mac is not None and mac.host is None
    assert mac.unit_price is not None and mac.capex_usd == mac.unit_price.price_usd
    ctx = Context(
        os="linux",
        vendors=None,
        providers=None,
        spot=False,
        owned=(("nvidia-rtx-4090", 2),),
        extra_counts=frozenset(),
    )
    (owned,) = [o for o in options(graph, ctx) if o.acquisition == "owned" and o.count == 2]
    assert owned.capex_usd == 0
    # power: 2 x 450 W (RTX 4090 TDP) + the tower's 300 W without GPUs
    assert owned.host is not None and owned_watts(owned) == 2 * 450 + 300


def test_a_used_gpu_is_bought_with_the_hosts_used_price(kb: KB) -> None:
    host = kb.hosts["pcie-server-8gpu"]
    assert host_cost(host, "used").kind == "used"
    assert host_cost(host, "new").kind == "estimate"
    only_new = kb.hosts["hgx-h100-8gpu"]
    assert host_cost(only_new, "used") == only_new.prices[-1]  # no used price: the latest stands in
