"""The service's read-only endpoints, in the contract's shape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from engine.kb import KB
from engine.problems import KBInvalid


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as test_client:
        yield test_client


def test_healthz(client: TestClient, kb: KB) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "kb_version": kb.version}


def test_gpus_list_has_the_contract_shape(client: TestClient, kb: KB) -> None:
    body = client.get("/gpus").json()
    assert len(body) == len(kb.gpus)
    for row in body:
        assert set(row) == {"id", "name", "vendor", "memory_gb", "memory_bandwidth_gbs", "platform", "class"}
        assert row["class"] in {"consumer", "workstation", "datacenter", "apple-silicon", "cpu"}
    h100 = next(row for row in body if row["id"] == "nvidia-h100-sxm")
    assert (h100["memory_gb"], h100["platform"], h100["class"]) == (80, "cuda", "datacenter")


def test_one_gpu_has_every_field_and_its_sources(client: TestClient) -> None:
    body = client.get("/gpus/nvidia-h100-sxm").json()
    assert body["memory_bandwidth_gbs"] == 3350
    assert body["class"] == "datacenter"
    assert body["sources"] and body["sources"][0]["accessed"]


def test_unknown_gpu_is_a_404_naming_the_id(client: TestClient) -> None:
    response = client.get("/gpus/no-such-gpu")
    assert response.status_code == 404
    assert "no-such-gpu" in response.json()["detail"]


def test_version(client: TestClient, kb: KB) -> None:
    body = client.get("/version").json()
    assert body["kb_version"] == kb.version
    assert body["prices_as_of"] >= "2025-01-01"


def test_an_app_over_an_invalid_kb_refuses_to_start(kb_copy: Path) -> None:
    (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
    with pytest.raises(KBInvalid) as raised, TestClient(create_app(kb_copy)):
        pass
    assert any(p.check == "missing-field" for p in raised.value.problems)
