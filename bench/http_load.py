"""HTTP benchmarks against the real server (uvicorn, loopback): throughput and latency of
`POST /recommend` at several concurrencies with `GET /healthz` as the ceiling, 2 workers vs 1, a
soak, and start-up time. Every run is bounded in both request count and time.

The load generator is aiohttp's client. httpx's async client is not used for load: past about 32
connections its own pool is the bottleneck (on 2 cores it drives `/healthz` at 180 requests/s where
aiohttp drives 1,800), which would understate the ceiling and so overstate every ratio against it.

    .venv/bin/python -m bench.http_load [--seconds S] [--soak-calls N] [--soak-seconds S]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from bench.mix import requests
from bench.stats import percentile
from engine.knowledge.paths import PROJECT_ROOT

HOST = "127.0.0.1"
POSTED = ("/recommend", "/report")
"""the paths `load` posts the mix's bodies to"""


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    startup_s: float

    def rss_kb(self) -> int:
        """Resident memory of the server process (its own, as Linux reports it)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(
    workers: int = 1, extra: tuple[str, ...] = (), env: dict[str, str] | None = None, app: str | None = None
) -> Iterator[Server]:
    """The service as `gpu-advisor serve` starts it (with `extra` arguments and `env` on top of this
    process's environment), or uvicorn serving the ASGI `app` named ("module:attribute") with the
    service's settings, until the block ends."""
    port = free_port()
    command = [sys.executable, "-m", "cli.main", "serve", "--host", HOST, "--port", str(port)]
    command += ["--workers", str(workers), *extra]
    if app is not None:
        command = [sys.executable, "-m", "uvicorn", app, "--host", HOST, "--port", str(port)]
        command += ["--no-access-log", "--log-level", "warning"]
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    url = f"http://{HOST}:{port}"
    try:
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.perf_counter() - started > 60:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield Server(url, process, time.perf_counter() - started)
    finally:
        process.terminate()
        process.wait(timeout=30)


async def load(
    url: str,
    path: str,
    concurrency: int,
    max_requests: int,
    max_seconds: float,
    check: Callable[[bytes], bool] | None = None,
    mix: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """`concurrency` clients in a closed loop until `max_requests` are sent or `max_seconds` pass,
    posting the bodies of `mix` (default: bench/mix.py) in turn. `check`, when given, judges each
    200's body; the bodies it rejects are counted as `wrong`."""
    bodies = itertools.cycle([json.dumps(body).encode() for body in mix or list(requests().values())])
    headers = {"content-type": "application/json"}
    latencies: list[float] = []
    errors = wrong = 0
    sent = 0
    deadline = time.perf_counter() + max_seconds
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(url, connector=connector, timeout=timeout) as session:

        async def worker() -> None:
            nonlocal errors, sent, wrong
            while sent < max_requests and time.perf_counter() < deadline:
                sent += 1
                start = time.perf_counter()
                try:
                    if path in POSTED:
                        call = session.post(path, data=next(bodies), headers=headers)
                    else:
                        call = session.get(path)
                    async with call as response:
                        body = await response.read()
                        if response.status != 200:
                            errors += 1
                        elif check is not None and not check(body):
                            wrong += 1
                except (aiohttp.ClientError, TimeoutError):
                    errors += 1
                latencies.append(time.perf_counter() - start)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - began
    return {
        "path": path,
        "concurrency": concurrency,
        "requests": len(latencies),
        "seconds": elapsed,
        "rps": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "errors": errors,
        "wrong": wrong,
    }


def sweep(seconds: float) -> list[dict[str, Any]]:
    rows = []
    with serve() as server:
        for concurrency in (1, 8, 32, 64):
            recommend = asyncio.run(load(server.url, "/recommend", concurrency, 100_000, seconds))
            health = asyncio.run(load(server.url, "/healthz", concurrency, 100_000, seconds / 2))
            rows.append(
                {**recommend, "healthz_rps": health["rps"], "ratio": recommend["rps"] / health["rps"]}
            )
    return rows


def workers_compared(seconds: float) -> dict[str, Any]:
    found = {}
    for workers in (1, 2):
        with serve(workers) as server:
            found[f"{workers}_worker"] = asyncio.run(load(server.url, "/recommend", 32, 100_000, seconds))
    return found


def soak(calls: int, seconds: float) -> dict[str, Any]:
    with serve() as server:
        asyncio.run(load(server.url, "/recommend", 8, 200, 30))  # warm: caches filled, arenas grown
        rss_start = server.rss_kb()
        result = asyncio.run(load(server.url, "/recommend", 8, calls, seconds))
        rss_end = server.rss_kb()
        health = httpx.get(f"{server.url}/healthz").json()
    return {
        **result,
        "calls_goal": calls,
        "rss_start_kb": rss_start,
        "rss_end_kb": rss_end,
        "rss_growth_pct": (rss_end - rss_start) / rss_start * 100,
        "open_rule_sessions": health.get("open_rule_sessions"),
    }


REPORT_MODELS = (
    "llama-3-1-70b",
    "llama-3-1-8b",
    "mixtral-8x7b",
    "qwen3-32b",
    "mistral-7b",
    "llama-3-1-405b",
    "deepseek-v3",
    "gemma-2-27b",
)
REPORT_BODIES = [
    {"workload": {"task": task, "model": model}, "top_k": top_k}
    for model in REPORT_MODELS
    for task, top_k in (("inference", 20), ("lora", 5))
]
"""`/report` bodies, each answered differently (the issue's case first: a 70B model, top_k 20)"""


def reports_alone() -> dict[str, Any]:
    """Each `/report` body once, one at a time: every report's charts drawn anew."""
    with serve() as server:
        time.sleep(3)  # the renderer starts beside the server: let it warm, as a server in service has
        result = asyncio.run(load(server.url, "/report", 1, len(REPORT_BODIES), 300, mix=REPORT_BODIES))
        again = asyncio.run(load(server.url, "/report", 1, len(REPORT_BODIES), 300, mix=REPORT_BODIES))
    return {
        "reports": result["requests"],
        "errors": result["errors"] + again["errors"],
        "p50_ms": result["p50_ms"],
        "p99_ms": result["p99_ms"],
        "repeated_p50_ms": again["p50_ms"],
        "repeated_p99_ms": again["p99_ms"],
    }


async def _probe(url: str, seconds: float, every_s: float = 0.05) -> list[float]:
    """`/healthz` every `every_s` on a connection of its own for `seconds`: each answer's time."""
    times: list[float] = []
    async with aiohttp.ClientSession(url, timeout=aiohttp.ClientTimeout(total=60)) as session:
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            start = time.perf_counter()
            async with session.get("/healthz") as response:
                await response.read()
            times.append(time.perf_counter() - start)
            await asyncio.sleep(every_s)
    return times


def health_under_reports(seconds: float, loops: int = 16) -> dict[str, Any]:
    """`loops` concurrent closed loops of `POST /report` against one worker while a probe asks
    `/healthz` every 50 ms: the probe's latency, and each report's (503s are load shed)."""

    async def run(url: str) -> tuple[dict[str, Any], list[float]]:
        reports = load(url, "/report", loops, 100_000, seconds, mix=REPORT_BODIES)
        answered, probes = await asyncio.gather(reports, _probe(url, seconds))
        return answered, probes

    with serve() as server:
        asyncio.run(load(server.url, "/report", 1, 4, 60, mix=REPORT_BODIES))  # warm: the renderer
        reports, probes = asyncio.run(run(server.url))
    return {
        "loops": loops,
        "seconds": seconds,
        "healthz_p50_ms": percentile(probes, 50) * 1000,
        "healthz_p99_ms": percentile(probes, 99) * 1000,
        "healthz_max_ms": max(probes) * 1000,
        "healthz_probes": len(probes),
        "reports": reports["requests"],
        "reports_refused": reports["errors"],
        "report_p50_ms": reports["p50_ms"],
        "report_p99_ms": reports["p99_ms"],
    }


def startup(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        with serve() as server:
            times.append(server.startup_s)
    return times


def cli_times(runs: int) -> list[float]:
    command = [sys.executable, "-m", "cli.main", "recommend", "--params-b", "7", "--task", "inference"]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            command, cwd=PROJECT_ROOT, capture_output=True, check=True, env={**os.environ, "COLUMNS": "100"}
        )
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=8.0, help="time per concurrency level")
    parser.add_argument("--soak-calls", type=int, default=50_000)
    parser.add_argument("--soak-seconds", type=float, default=90.0)
    args = parser.parse_args()
    report = {
        "sweep": sweep(args.seconds),
        "workers": workers_compared(args.seconds),
        "soak": soak(args.soak_calls, args.soak_seconds),
        "startup_s": startup(3),
        "cli_s": cli_times(3),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
