"""`GET /metrics` in Prometheus's text format, and one JSON log line per request.

The series (all prefixed `gpu_advisor_`):
- `requests_total{route, method, status}`: requests answered, by the route's template (`/gpus/{gpu_id}`,
  never the raw path, so a scan of random paths cannot grow the series without bound; a path no route
  matches is `unmatched`);
- `request_seconds{route}`: a histogram of the time to answer;
- `answer_phase_seconds{phase}`: a histogram of the engine's CPU time per answer (`engine`, the
  Server-Timing `engine-cpu` the answer routes report) beside the whole request's wall time (`request`);
- `kb_info{version}` = 1 for the KB version each worker serves, and `oldest_price_age_days{kind}`: how old
  the oldest rental offer (`rent`) and the oldest GPU or host price (`buy`) in that KB are;
- `reloads_total{outcome}`: `POST /admin/reload` by outcome (`switched`, `refused`, `unfinished`).

Across uvicorn's worker processes the client's multiprocess mode adds the workers' figures up: `serve`
points $PROMETHEUS_MULTIPROC_DIR at a fresh private folder before the workers start (cli/main.py), and
`/metrics` then reads every worker's files (prometheus_client's `MultiProcessCollector`). One process
serving alone keeps its figures in memory.

The log line (logger `gpu_advisor.access`, one JSON object a line) carries the request's id (the
client's `X-Request-ID` when it is a short token, else a new one, echoed in the response), route,
method, status and duration in milliseconds.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import time
import uuid
from datetime import date
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.config import LOGGING_CONFIG

if TYPE_CHECKING:  # a worker imports this module before the engine; a reading process never needs it
    from engine.recommend import Advisor

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""the environment variable prometheus_client reads for its multiprocess mode"""
REQUEST_ID_HEADER = "X-Request-ID"
KB_VERSION_HEADER = "X-KB-Version"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
"""a client's request id is echoed only when it is a short token (never a header injection)"""
UNMATCHED = "unmatched"

# Buckets from the bench (bench/RESULTS.md): answers take 10-60 ms on two cores, reports up to seconds.
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUESTS = Counter(
    "gpu_advisor_requests_total",
    "HTTP requests answered, by route template and status",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "gpu_advisor_request_seconds", "Time to answer a request, by route template", ["route"], buckets=_SECONDS
)
PHASES = Histogram(
    "gpu_advisor_answer_phase_seconds",
    "An answer's time by phase: the engine's CPU (engine) and the whole request (request)",
    ["phase"],
    buckets=_SECONDS,
)
KB_INFO = Gauge(
    "gpu_advisor_kb_info", "The KB version served (1 per version)", ["version"], multiprocess_mode="max"
)
OLDEST_PRICE = Gauge(
    "gpu_advisor_oldest_price_age_days",
    "Age in days of the oldest price in the KB served: rental offers (rent), GPU and host prices (buy)",
    ["kind"],
    multiprocess_mode="max",
)
RELOADS = Counter("gpu_advisor_reloads_total", "KB reloads by outcome", ["outcome"])

access_log = logging.getLogger("gpu_advisor.access")


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's logging configuration with the access log's JSON lines on stdout, where uvicorn writes
    its own access lines (stderr is for faults). `serve` passes it to uvicorn, which applies it in every
    worker; an app made elsewhere (tests, scripts) logs through whatever its caller configured, and
    prints nothing of its own."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["gpu_advisor_access"] = {"format": "%(message)s"}
    config["handlers"]["gpu_advisor_access"] = {
        "class": "logging.StreamHandler",
        "formatter": "gpu_advisor_access",
        "stream": "ext://sys.stdout",
    }
    config["loggers"][access_log.name] = {
        "handlers": ["gpu_advisor_access"],
        "level": "INFO",
        "propagate": False,
    }
    return config


def exposition() -> tuple[bytes, str]:
    """The metrics page and its content type: every worker's figures in multiprocess mode."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


_served: list[str] = []
"""the KB version this process last reported serving"""


def kb_served(advisor: Advisor, today: date | None = None) -> None:
    """Set the KB gauges for the advisor this worker now serves (at start and after a reload): the
    version it left goes to 0 rather than away, since a worker's figures outlive it in multiprocess
    mode and the highest value across workers is the one shown."""
    for left in _served:
        KB_INFO.labels(version=left).set(0)
    _served[:] = [advisor.version]
    KB_INFO.labels(version=advisor.version).set(1)
    kb, day = advisor.kb, today or date.today()
    rented = [offer.as_of for offer in kb.offers.values()]
    bought = [price.as_of for gpu in kb.gpus.values() for price in gpu.prices]
    bought += [price.as_of for host in kb.hosts.values() for price in host.prices]
    for kind, dates in (("rent", rented), ("buy", bought)):
        if dates:
            OLDEST_PRICE.labels(kind=kind).set((day - min(dates)).days)


def engine_seconds(seconds: float) -> None:
    PHASES.labels(phase="engine").observe(seconds)


def request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            given = bytes(value).decode("latin-1")
            if _REQUEST_ID.match(given):
                return given
    return uuid.uuid4().hex


def kb_version_of(scope: Scope) -> str | None:
    """The KB version of a request's answer: the one its route took the advisor at
    (`routes.current_advisor`), else the one in service now (a route that reads no KB, an error)."""
    version = scope.get("state", {}).get("kb_version")
    if version is None:
        advisor = getattr(getattr(scope.get("app"), "state", None), "advisor", None)
        version = getattr(advisor, "version", None)
    return version if isinstance(version, str) else None


def route_of(scope: Scope) -> str:
    """The template of the route that answered (`/gpus/{gpu_id}`: the router leaves the route it
    matched in the scope), or `unmatched` when none did."""
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) else UNMATCHED


class Observe:
    """Pure ASGI middleware: counts and times every HTTP request, echoes its id, and logs it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        rid = request_id(scope)
        status = 500  # what the client sees if the app fails before it answers

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [*message.get("headers", []), (b"x-request-id", rid.encode())]
                version = kb_version_of(scope)
                if version is not None:
                    headers.append((b"x-kb-version", version.encode()))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - start
            route, method = route_of(scope), str(scope.get("method", ""))
            REQUESTS.labels(route=route, method=method, status=str(status)).inc()
            LATENCY.labels(route=route).observe(seconds)
            PHASES.labels(phase="request").observe(seconds)
            access_log.info(
                json.dumps(
                    {
                        "id": rid,
                        "route": route,
                        "method": method,
                        "status": status,
                        "ms": round(seconds * 1000, 2),
                    }
                )
            )
