"""The embedded knowledge base: breadth, provenance, immutability, and its link to the snapshots."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest
from pydantic import ValidationError

from engine.knowledge.kb import KB, load_kb, read_kb
from engine.knowledge.paths import PROJECT_ROOT as PROJECT
from engine.knowledge.problems import KBInvalid


def test_breadth_required_by_the_project(kb: KB) -> None:
    assert len(kb.gpus) >= 35
    assert len(kb.providers) >= 12
    assert len(kb.offers) >= 200
    assert len(kb.models) >= 15


def test_every_gpu_class_is_present(kb: KB) -> None:
    classes = {gpu.gpu_class for gpu in kb.gpus.values()}
    assert classes == {"consumer", "workstation", "datacenter", "apple-silicon", "cpu"}


def test_every_row_of_the_gpu_spec_snapshot_is_in_the_kb(kb: KB) -> None:
    known = set(kb.gpus) | {alias for gpu in kb.gpus.values() for alias in gpu.aliases}
    with (PROJECT / "data/gpu-specs.csv").open(newline="") as handle:
        rows = [row["id"] for row in csv.DictReader(handle)]
    assert len(rows) == 37
    assert [row for row in rows if row not in known] == []


def test_apple_silicon_comes_in_the_memory_sizes_people_buy(kb: KB) -> None:
    sizes = {gpu.memory_gb for gpu in kb.gpus.values() if gpu.gpu_class == "apple-silicon"}
    assert {36, 64, 128, 192} <= sizes


def test_snapshot_figures_survive_into_the_kb(kb: KB) -> None:
    # data/gpu-specs.csv: H100 SXM 80 GB, 3,350 GB/s, 989.4 dense BF16 TFLOPS (datasheet 1,979 sparse)
    h100 = kb.gpus["nvidia-h100-sxm"]
    assert (h100.memory_gb, h100.memory_bandwidth_gbs, h100.bf16_dense_tflops) == (80, 3350, 989.4)
    # data/gpu-specs.csv: RTX 4090 24 GB, 1,008 GB/s
    rtx4090 = kb.gpus["nvidia-rtx-4090"]
    assert (rtx4090.memory_gb, rtx4090.memory_bandwidth_gbs) == (24, 1008)


def test_every_file_names_its_sources(kb: KB) -> None:
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
    ):
        for entity in kb.of_kind(kind).values():
            assert entity.sources, f"{kind}/{entity.id}"


def test_published_parameter_counts_are_stored_with_a_source(kb: KB) -> None:
    # Llama-3.1-8B: 8.03B per Meta's model card; Mixtral-8x7B: 46.7B total, 12.9B active (Mistral AI)
    assert kb.models["llama-3-1-8b"].params_b == pytest.approx(8.03)
    mixtral = kb.models["mixtral-8x7b"]
    assert (mixtral.params_b, mixtral.active_params_b) == (46.7, 12.9)
    for model in kb.models.values():
        assert any(source.url or source.document for source in model.sources), model.id


def test_prices_carry_a_date(kb: KB) -> None:
    for gpu in kb.gpus.values():
        for price in gpu.prices:
            assert price.as_of.year >= 2015, gpu.id
    for offer in kb.offers.values():
        assert offer.as_of is not None


def test_every_offer_maps_to_a_kb_gpu_and_provider(kb: KB) -> None:
    for offer in kb.offers.values():
        assert offer.gpu in kb.gpus
        assert offer.provider in kb.providers


def test_kb_is_immutable(kb: KB) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        kb.version = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        kb.gpus["x"] = kb.gpus["nvidia-h100-sxm"]  # type: ignore[index]
    with pytest.raises(ValidationError):
        kb.gpus["nvidia-h100-sxm"].memory_gb = 1  # type: ignore[misc]


def test_version_is_a_content_hash(kb_copy: Path) -> None:
    before = read_kb(kb_copy)
    again = read_kb(kb_copy)
    assert before.kb is not None and again.kb is not None
    assert before.kb.version == again.kb.version
    path = kb_copy / "gpus/nvidia-h100-sxm.yaml"
    path.write_text(path.read_text() + "\n# touched\n")
    after = read_kb(kb_copy)
    assert after.kb is not None and after.kb.version != before.kb.version


def test_load_kb_refuses_an_invalid_kb(kb_copy: Path) -> None:
    (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
    with pytest.raises(KBInvalid) as raised:
        load_kb(kb_copy)
    assert any(p.check == "missing-field" for p in raised.value.problems)
