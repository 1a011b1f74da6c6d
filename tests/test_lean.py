"""API version 2 (POST /v2/recommend, /v2/compare; docs/api-contract.md "Version 2"): version 1's answer
with each source's text once, in `sources`, cited by id; version 1 unchanged for the clients that use it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.routes import ENCODE_CPU, ENGINE_CPU
from bench.http_cost import timing_ms
from engine.answer.lean import cited_texts, lean, lean_compare
from engine.models.compare import CompareRequest
from engine.models.lean import RecommendResponseV2
from engine.models.response import RecommendResponse
from tests.golden_support import advisor, golden_answer, golden_names, golden_request

COMPARE = {
    "request": {"workload": {"task": "inference", "model": "llama-3.1-8b"}},
    "choices": [{"gpu": "nvidia-rtx-4090", "count": 1}, {"gpu": "nvidia-h100-sxm", "count": 1}],
}


def resolved(v2: RecommendResponseV2) -> RecommendResponse:
    """Version 2 with its ids turned back into texts: version 1, field for field."""
    body = json.loads(v2.model_dump_json(exclude={"api_version", "sources"}))
    for option in body["recommendations"]:
        option["citations"] = cited_texts(option["citations"], v2.sources)
    for step in body["trace"]:
        step["citations"] = cited_texts(step["citations"], v2.sources)
    return RecommendResponse.model_validate(body)


@pytest.mark.parametrize("name", golden_names())
def test_version_2_is_version_1_with_each_source_once(name: str) -> None:
    v1 = golden_answer(name)
    v2 = lean(v1)
    assert resolved(v2) == v1
    texts = list(v2.sources.values())
    assert len(set(texts)) == len(texts)  # each text once
    assert list(v2.sources) == [f"s{i}" for i in range(1, len(texts) + 1)]
    cited = {c for step in v2.trace for c in step.citations} | {
        c for option in v2.recommendations for c in option.citations
    }
    assert cited == set(v2.sources)  # no source unused, none missing
    assert v2.api_version == "2"


def test_version_2_of_a_70b_rental_is_about_half_the_bytes() -> None:
    """Five options each repeated their rules' sources: 68.6 KB in version 1 when this was written."""
    v1 = advisor().recommend(golden_request("low-utilization-rents"))
    v2 = lean(v1)
    assert len(v2.model_dump_json()) < 0.6 * len(v1.model_dump_json())


def test_a_comparison_in_version_2_cites_its_choices_sources_by_id() -> None:
    v1 = advisor().compare(CompareRequest.model_validate(COMPARE))
    v2 = lean_compare(v1)
    for old, new in zip(v1.choices, v2.choices, strict=True):
        assert (old.option is None) == (new.option is None)
        if old.option is not None and new.option is not None:
            assert cited_texts(new.option.citations, v2.sources) == old.option.citations
    assert [cited_texts(s.citations, v2.sources) for s in v2.trace] == [s.citations for s in v1.trace]


@pytest.fixture(scope="module")
def service() -> Iterator[TestClient]:
    with TestClient(create_app(advisor=advisor())) as client:
        yield client


def test_both_versions_over_http(service: TestClient) -> None:
    body = json.loads(golden_request("serve-7b-batch-1").model_dump_json(exclude_unset=True))
    v1 = service.post("/recommend", json=body).json()
    assert "sources" not in v1 and "api_version" not in v1  # old clients get version 1
    answered = service.post("/v2/recommend", json=body)
    timing = answered.headers["server-timing"]  # bench/http_cost.py reads both: the engine's, the JSON's
    assert timing_ms(timing, ENGINE_CPU) > 0 and timing_ms(timing, ENCODE_CPU) > 0
    v2 = answered.json()
    assert v2["api_version"] == "2" and v2["sources"]
    assert all(c in v2["sources"] for option in v2["recommendations"] for c in option["citations"])
    slack = service.post("/v2/recommend?format=slack", json=body)
    assert slack.status_code == 200 and slack.json()["blocks"]
    compared = service.post("/v2/compare", json=COMPARE).json()
    assert compared["api_version"] == "2" and all(
        c in compared["sources"] for s in compared["trace"] for c in s["citations"]
    )
    wrong = service.post("/v2/recommend", json={"workload": {"task": "inference", "model": "no-such-model"}})
    assert wrong.status_code == 422
