"""`GET /metrics` (Prometheus's text format) and the JSON log line per request (api/metrics.py)."""

from __future__ import annotations

import json
import logging
import logging.config
import os
import re
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api import metrics
from engine.recommend import Advisor

PROJECT = Path(__file__).resolve().parent.parent


def samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the page, by name and sorted labels."""
    page = client.get("/metrics")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/plain")
    found = {}
    for family in text_string_to_metric_families(page.text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def count(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def test_requests_are_counted_by_route_template_and_status(client: TestClient) -> None:
    before = samples(client)
    assert client.get("/healthz").status_code == 200
    assert client.get("/gpus/no-such-gpu").status_code == 404
    assert client.get("/no/such/path/at/all").status_code == 404
    answered = client.post("/recommend", json={"workload": {"model": "llama-3-1-8b", "task": "inference"}})
    assert answered.status_code == 200
    after = samples(client)
    requests = "gpu_advisor_requests_total"
    for route, method, status in (
        ("/healthz", "GET", "200"),
        ("/gpus/{gpu_id}", "GET", "404"),  # the template: a scan of random ids adds no series
        ("unmatched", "GET", "404"),
        ("/recommend", "POST", "200"),
    ):
        labels = {"route": route, "method": method, "status": status}
        assert count(after, requests, **labels) == count(before, requests, **labels) + 1, labels
    assert not any("no-such-gpu" in str(key) or "/no/such" in str(key) for key in after)
    histogram = "gpu_advisor_request_seconds_count"
    assert count(after, histogram, route="/recommend") == count(before, histogram, route="/recommend") + 1
    # the engine's CPU for the answer, beside each request's wall time
    phases = "gpu_advisor_answer_phase_seconds_count"
    assert count(after, phases, phase="engine") == count(before, phases, phase="engine") + 1
    assert count(after, phases, phase="request") >= count(before, phases, phase="request") + 4


def test_the_kb_served_and_its_oldest_price_are_gauges(client: TestClient, advisor: Advisor) -> None:
    found = samples(client)
    assert count(found, "gpu_advisor_kb_info", version=advisor.version) == 1
    oldest = min(offer.as_of for offer in advisor.kb.offers.values())  # 2025-12-01 in this KB
    age = (date.today() - oldest).days
    assert count(found, "gpu_advisor_oldest_price_age_days", kind="rent") == age > 300
    bought = min(price.as_of for gpu in advisor.kb.gpus.values() for price in gpu.prices)
    assert count(found, "gpu_advisor_oldest_price_age_days", kind="buy") >= (date.today() - bought).days


def test_the_metrics_page_is_not_in_the_api_document(client: TestClient) -> None:
    assert "/metrics" not in client.get("/openapi.json").json()["paths"]


def test_each_request_is_one_json_log_line_with_its_id(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gpu_advisor.access")
    given = client.get("/healthz", headers={"X-Request-ID": "bot-42.a_b"})
    assert given.headers["x-request-id"] == "bot-42.a_b"
    forged = client.get("/healthz", headers={"X-Request-ID": "x\r\nSet-Cookie: a=b"})
    assert re.fullmatch(r"[0-9a-f]{32}", forged.headers["x-request-id"])  # a new id, not the header
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "gpu_advisor.access"]
    assert [line["id"] for line in lines[-2:]] == ["bot-42.a_b", forged.headers["x-request-id"]]
    assert set(lines[-1]) == {"id", "route", "method", "status", "ms"}
    assert lines[-1]["route"] == "/healthz" and lines[-1]["status"] == 200 and lines[-1]["ms"] >= 0


def test_every_answer_names_the_kb_version_that_produced_it(client: TestClient, advisor: Advisor) -> None:
    """X-KB-Version on every response: a load balancer's logs tell which KB each replica answered
    from, and an answer's body never names another than its header."""
    body = {"workload": {"task": "inference", "model": "llama-3-1-8b"}, "top_k": 1}
    answer = client.post("/recommend", json=body)
    assert answer.headers["x-kb-version"] == answer.json()["kb_version"] == advisor.version
    for path in ("/healthz", "/readyz", "/gpus", "/metrics", "/no-such-route"):
        assert client.get(path).headers["x-kb-version"] == advisor.version, path


COUNT_ONE = """
from api import metrics
metrics.REQUESTS.labels(route="/healthz", method="GET", status="200").inc()
"""
READ = """
from api import metrics
print(metrics.exposition()[0].decode())
"""


def test_workers_figures_add_up_in_multiprocess_mode(tmp_path: Path) -> None:
    """Two worker processes each count a request; a third reads both from the shared folder, as
    `serve --workers N` has it (cli/main.py sets $PROMETHEUS_MULTIPROC_DIR)."""
    env = {**os.environ, metrics.MULTIPROC_ENV: str(tmp_path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", COUNT_ONE], cwd=PROJECT, env=env, check=True, timeout=60)
    page = subprocess.run(
        [sys.executable, "-c", READ],
        cwd=PROJECT,
        env=env,
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    ).stdout
    assert 'gpu_advisor_requests_total{method="GET",route="/healthz",status="200"} 2.0' in page


def test_serve_sends_the_access_log_to_stdout_in_every_worker(capsys: pytest.CaptureFixture[str]) -> None:
    """uvicorn configures only its own loggers unless given a configuration, which it applies in each
    worker: `serve` gives it one that writes the access log's JSON lines, and nothing else, to stdout."""
    config = metrics.uvicorn_log_config()
    assert config["loggers"]["gpu_advisor.access"] == {
        "handlers": ["gpu_advisor_access"],
        "level": "INFO",
        "propagate": False,
    }
    assert config["loggers"]["uvicorn.error"]  # uvicorn's own loggers kept as they were
    logging.config.dictConfig(config)
    try:
        metrics.access_log.info('{"id": "x"}')
        assert capsys.readouterr().out == '{"id": "x"}\n'
    finally:  # leave the logger as the other tests expect it: propagating, no handler
        metrics.access_log.handlers.clear()
        metrics.access_log.propagate = True
        metrics.access_log.setLevel(logging.NOTSET)
