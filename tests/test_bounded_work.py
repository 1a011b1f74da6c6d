"""What one request can cost the service: its error body and its log lines are bounded whatever it
sends, its answer has a deadline, a worker's queue has a bound past which requests are shed with a
503, and `/healthz` answers while the engine works (api/errors.py, api/admission.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.admission import Admission
from api.app import create_app
from engine.models.request import RecommendRequest
from engine.planning.deadline import DeadlineExceeded, deadline_in
from engine.recommend import Advisor
from tests.support_http import assert_clean_error

SMALL = {"workload": {"task": "inference", "params_b": 7}}
CHOICES = [{"gpu": "nvidia-h100-sxm"}, {"gpu": "nvidia-l40s"}]


def _logged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """What the service logged about its work: not the test client's own lines, nor the access log's
    one line per request (tests/test_metrics.py)."""
    return [r for r in caplog.records if not r.name.startswith("httpx") and r.name != "gpu_advisor.access"]


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [480, 900])
@pytest.mark.parametrize("path", ["/recommend", "/report", "/compare"])
def test_a_deeply_nested_unknown_field_is_a_short_422(
    client: TestClient, caplog: pytest.LogCaptureFixture, path: str, depth: int
) -> None:
    """The attack review's 1,251-byte body (a value 480+ deep in an unknown field) was a 500 with
    282 KB of traceback in the log: the 422 handler recursed into the input it echoed."""
    caplog.set_level(logging.INFO)
    body = '{"workload":{"task":"inference","params_b":7},"x":' + _nested(depth) + "}"
    if path == "/compare":
        body = f'{{"request":{body},"choices":{json.dumps(CHOICES)}}}'
    response = client.post(path, content=body, headers={"content-type": "application/json"})
    text = assert_clean_error(response, 422)
    assert len(text) < 400
    assert sum(len(record.getMessage()) for record in _logged(caplog)) < 400


def test_an_echoed_input_is_a_bounded_preview(client: TestClient) -> None:
    long_list = list(range(5000))
    response = client.post("/recommend", json={**SMALL, "x": {"k": long_list, "s": "y" * 10_000}})
    detail = assert_clean_error(response, 422)
    assert len(detail) < 600
    (error,) = response.json()["detail"]
    assert error["input"]["k"][-1] == "... 4992 more items" and len(error["input"]["s"]) <= 120


def test_many_errors_list_the_first_twenty_and_a_count(client: TestClient) -> None:
    providers = [1] * 90  # each item a wrong type: one validation error each (100 at most)
    response = client.post("/recommend", json={**SMALL, "constraints": {"providers": providers}})
    assert_clean_error(response, 422)
    detail = response.json()["detail"]
    assert len(detail) == 21 and detail[-1]["type"] == "too_many_errors" and "70 more" in detail[-1]["msg"]


@pytest.fixture
def failing_app(advisor: Advisor, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """The service with a fault in the engine that recurses without end, as the review's did."""

    def recurse(_: RecommendRequest) -> Any:
        def down(n: int) -> int:
            return down(n + 1) + 1

        return down(0)

    app = create_app(advisor=advisor)
    monkeypatch.setattr(advisor, "recommend", recurse)
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def test_a_fault_logs_its_traceback_once_then_one_line(
    failing_app: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    sizes = []
    for _ in range(3):
        caplog.clear()
        response = failing_app.post("/recommend", json=SMALL)
        assert_clean_error(response, 500)
        sizes.append(sum(len(record.getMessage()) for record in _logged(caplog)))
    first, *again = sizes
    assert 0 < first < 6000 and all(0 < size < 400 for size in again), sizes
    assert [r.levelno for r in _logged(caplog)] == [logging.ERROR]  # one line, not a second traceback


def test_a_client_that_disconnects_mid_body_is_not_a_server_error(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    """The body stops halfway and the connection closes: nothing for anyone to read, and nothing
    logged as a fault of the service (it was two tracebacks, 7 KB per 100-byte connection)."""
    caplog.set_level(logging.INFO)
    sent: list[dict[str, Any]] = []
    chunks = iter(
        [
            {"type": "http.request", "body": b'{"workload": {"task": "infer', "more_body": True},
            {"type": "http.disconnect"},
        ]
    )

    async def receive() -> dict[str, Any]:
        return next(chunks)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "path": "/recommend",
        "raw_path": b"/recommend",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"100")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "scheme": "http",
        "root_path": "",
        "state": {},
    }
    asyncio.run(client.app(scope, receive, send))  # type: ignore[arg-type]
    assert [r for r in _logged(caplog) if r.levelno >= logging.WARNING] == []
    assert sent[0]["status"] == 400


def test_a_trailing_slash_is_a_404_not_a_redirect_to_the_host_header(client: TestClient) -> None:
    response = client.get("/gpus/", headers={"Host": "evil.example"}, follow_redirects=False)
    assert response.status_code == 404 and "location" not in response.headers


# --- deadline, queue, liveness ---------------------------------------------------------------


def test_the_engine_stops_at_its_deadline(advisor: Advisor) -> None:
    request = RecommendRequest.model_validate(SMALL)
    with deadline_in(-1.0), pytest.raises(DeadlineExceeded):
        advisor.recommend(request)
    assert advisor.recommend(request).feasible  # without one, the same request is answered


def _slow(advisor: Advisor, monkeypatch: pytest.MonkeyPatch, seconds: float) -> threading.Event:
    """Each recommendation takes `seconds` more; the event is set when the first one starts."""
    started = threading.Event()
    recommend = advisor.recommend

    def slow(request: RecommendRequest) -> Any:
        started.set()
        time.sleep(seconds)
        return recommend(request)

    monkeypatch.setattr(advisor, "recommend", slow)
    return started


def test_an_answer_past_the_deadline_is_a_503_with_retry_after(
    advisor: Advisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    _slow(advisor, monkeypatch, 0.5)
    app = create_app(advisor=advisor, admission=Admission(deadline_s=0.2, max_queue=4))
    monkeypatch.setattr("api.admission.GRACE_S", 0.1)
    with TestClient(app) as client:
        response = client.post("/recommend", json=SMALL)
    assert_clean_error(response, 503)
    assert "0.2 s limit" in response.json()["detail"] and int(response.headers["retry-after"]) >= 1


async def _concurrently(app: Any, calls: list[tuple[str, str]]) -> list[tuple[httpx.Response, float]]:
    """Each (method, path) sent at once, in order a few milliseconds apart; each answer with its time."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        start = time.perf_counter()

        async def one(index: int, method: str, path: str) -> tuple[httpx.Response, float]:
            # timed from when it was due, not from when the event loop got to it
            await asyncio.sleep(0.02 * index)
            body = {"json": SMALL} if method == "POST" else {}
            response = await client.request(method, path, **body)  # type: ignore[arg-type]
            return response, time.perf_counter() - start - 0.02 * index

        return list(await asyncio.gather(*(one(i, m, p) for i, (m, p) in enumerate(calls))))


def test_past_the_queue_bound_requests_are_shed_at_once(
    advisor: Advisor, monkeypatch: pytest.MonkeyPatch
) -> None:
    _slow(advisor, monkeypatch, 0.6)
    app = create_app(advisor=advisor, admission=Admission(deadline_s=30, max_queue=2))
    answers = asyncio.run(_concurrently(app, [("POST", "/recommend")] * 3))
    statuses = [response.status_code for response, _ in answers]
    assert statuses == [200, 200, 503]
    shed, took = answers[2]
    assert took < 0.3 and int(shed.headers["retry-after"]) >= 1 and "busy" in shed.json()["detail"]


def test_healthz_answers_while_the_engine_works(advisor: Advisor, monkeypatch: pytest.MonkeyPatch) -> None:
    """A liveness probe does not wait behind queued answers: the engine works in its own thread."""
    _slow(advisor, monkeypatch, 0.8)
    app = create_app(advisor=advisor, admission=Admission(deadline_s=30, max_queue=8))
    answers = asyncio.run(_concurrently(app, [("POST", "/recommend")] * 2 + [("GET", "/healthz")]))
    (first, _), (_, _), (health, took) = answers
    assert first.status_code == 200 and health.status_code == 200
    assert took < 0.4  # behind the two answers it would take at least 1.6 s


def test_the_engine_thread_survives_a_lifespan_that_ends_and_starts_again(advisor: Advisor) -> None:
    """Test harnesses (Schemathesis' among them) end an app's lifespan after each test and start it
    again: the engine thread must be there for the next answer."""
    app = create_app(advisor=advisor)
    for _ in range(2):
        with TestClient(app) as client:
            assert client.post("/recommend", json=SMALL).status_code == 200
