"""What HTTP adds to an answer's CPU cost, and how big an answer is: the goal restated in issue 25 is
that serving an answer over HTTP costs at most 10% more CPU than answering it in process, and that a
five-option answer is at most 25 KB.

    .venv/bin/python -m bench.http_cost [--passes N]

CPU, not wall time, in one server process: its whole CPU time (utime + stime in /proc, every thread)
across the mix's requests sent one at a time on one keep-alive connection (the load generator's CPU is
not counted), against the engine's share of it, which each answer reports in its Server-Timing header
(the engine thread's CPU around `Advisor.recommend`). The ratio is the first over the second: 1.10 means
HTTP adds 10%. Measuring both in the same process at the same time keeps the machine's noise (±15%
between processes here) out of the ratio. Version 1 (`/recommend`) and version 2 (`/v2/recommend`,
sources cited by id) take turns each pass. The in-process figure (`Advisor.recommend` in this process)
is reported beside them, and so is the floor under the ratio: the JSON's writing (each answer's
`encode-cpu`), a `/healthz` through the service, and a `/healthz` through uvicorn alone serving a bare
ASGI app (bench/bare_app.py), whose difference is FastAPI's stack and the service's middleware; and
HTTP's own work on a whole answer, the engine's replaced by its recorded answers (bench/recorded.py),
through the service and through that bare app.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from api.routes import ENCODE_CPU, ENGINE_CPU
from bench.http_load import serve
from bench.inprocess import in_service
from bench.mix import requests
from engine.models.request import RecommendRequest
from engine.recommend import default_advisor, lean

SIZED = {"workload": {"task": "inference", "model": "llama-3-1-70b"}, "constraints": {"acquisition": "rent"}}
"""the answer whose size the goal names: a 70B model rented, the default top_k of 5"""
TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """A process's CPU seconds so far, every thread's (fields 14 and 15 of /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def in_process_ms(bodies: list[dict[str, Any]], passes: int) -> float:
    """CPU milliseconds per answer in process (`Advisor.recommend`), the advisor as a worker serves it
    (`inprocess.in_service`), after a warm-up pass."""
    advisor = in_service(default_advisor())
    mix = [RecommendRequest.model_validate(body) for body in bodies]
    for request in mix:
        advisor.recommend(request)
    began = time.process_time()
    for _ in range(passes):
        for request in mix:
            advisor.recommend(request)
    return (time.process_time() - began) * 1000 / (passes * len(mix))


@dataclass
class Served:
    """CPU seconds the server spent on one path's answers: all of its process's, and its engine's."""

    process_s: float = 0.0
    engine_s: float = 0.0
    encode_s: float = 0.0
    answers: int = 0

    def ratio(self) -> float:
        return self.process_s / self.engine_s if self.engine_s else float("nan")


def over_http(bodies: list[dict[str, Any]], passes: int, paths: tuple[str, ...]) -> dict[str, Served]:
    """Each path's CPU on one server, the paths taking turns each pass (so the server's state and the
    machine's load weigh on them alike), after a warm-up pass. The engine's share is what the answers'
    Server-Timing header reports (`engine-cpu`, the engine thread's CPU around `Advisor.recommend`)."""
    served = {path: Served() for path in paths}
    with serve() as server, httpx.Client(base_url=server.url, timeout=60) as client:
        for path in paths:
            for body in bodies:
                client.post(path, json=body).raise_for_status()
        for _ in range(passes):
            for path in paths:
                began, engine, encode = process_cpu_s(server.process.pid), 0.0, 0.0
                for body in bodies:
                    answer = client.post(path, json=body)
                    answer.raise_for_status()
                    engine += timing_ms(answer.headers["server-timing"], ENGINE_CPU) / 1000
                    encode += timing_ms(answer.headers["server-timing"], ENCODE_CPU) / 1000
                took = served[path]
                took.process_s += process_cpu_s(server.process.pid) - began
                took.engine_s += engine
                took.encode_s += encode
                took.answers += len(bodies)
    return served


def timing_ms(header: str, name: str) -> float:
    """The milliseconds of metric `name` in a Server-Timing header
    (`engine-cpu;dur=12.3, encode-cpu;dur=0.1`)."""
    metric = next(part for part in header.split(",") if part.strip().startswith(f"{name};"))
    return float(metric.split("dur=")[1])


def healthz_ms(calls: int, app: str | None = None) -> float:
    """The server's CPU milliseconds per `/healthz`: what any request costs before the engine; with
    `app`, uvicorn's alone, serving that bare ASGI app (bench/bare_app.py)."""
    with serve(app=app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        for _ in range(20):
            client.get("/healthz").raise_for_status()
        began = process_cpu_s(server.process.pid)
        for _ in range(calls):
            client.get("/healthz").raise_for_status()
        return (process_cpu_s(server.process.pid) - began) * 1000 / calls


def recorded_ms(app: str, bodies: list[dict[str, Any]], passes: int) -> float:
    """The server's CPU milliseconds per `/v2/recommend` answer when its engine answers from recorded
    answers (bench/recorded.py): HTTP's own work on an answer, through the ASGI `app` named."""
    with serve(app=app) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        for body in bodies:
            client.post("/v2/recommend", json=body).raise_for_status()
        began = process_cpu_s(server.process.pid)
        for _ in range(passes):
            for body in bodies:
                client.post("/v2/recommend", json=body).raise_for_status()
        return (process_cpu_s(server.process.pid) - began) * 1000 / (passes * len(bodies))


def answer_bytes() -> dict[str, int]:
    """The serialised size of the sized answer in each version."""
    answer = default_advisor().recommend(RecommendRequest.model_validate(SIZED))
    return {"v1": len(answer.model_dump_json()), "v2": len(lean(answer).model_dump_json())}


def run(passes: int) -> dict[str, Any]:
    bodies = list(requests().values())
    served = over_http(bodies, passes, ("/recommend", "/v2/recommend"))
    return {
        "passes": passes,
        "requests": len(bodies),
        "in_process_ms": in_process_ms(bodies, passes),
        **{
            version: {
                "server_ms": took.process_s * 1000 / took.answers,
                "engine_ms": took.engine_s * 1000 / took.answers,
                "encode_ms": took.encode_s * 1000 / took.answers,
                "ratio": took.ratio(),
            }
            for version, took in zip(("v1", "v2"), served.values(), strict=True)
        },
        "bytes": answer_bytes(),
        "healthz_ms": healthz_ms(500),
        "bare_healthz_ms": healthz_ms(500, app="bench.bare_app:app"),
        # at least 20 passes: a process's CPU is counted in 10 ms ticks
        "recorded_service_ms": recorded_ms("bench.recorded:service", bodies, max(passes, 20)),
        "recorded_bare_ms": recorded_ms("bench.bare_app:app", bodies, max(passes, 20)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=20, help="passes over the mix (22 requests each)")
    print(json.dumps(run(parser.parse_args().passes), indent=2))


if __name__ == "__main__":
    main()
