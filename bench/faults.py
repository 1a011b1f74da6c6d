"""Faults under load (benchmarks, not tests): reloads landing while `/recommend` is under load, on
one worker and on two, and many reloads in a row. Every run is bounded in requests and time.

- Reload under load: the same closed-loop load (concurrency 8) runs once undisturbed and once while
  a reload lands every few seconds, each renaming a GPU. Reported: p50/p99 of both, errors, and
  answers that mix two KBs (an answer whose `kb_version` belongs to one generation while its text
  names the GPU as another generation does).
- Many reloads: the server's RSS after a warm-up and after N more reloads.

    .venv/bin/python -m bench.faults [--seconds S] [--reloads N]

Writes bench/faults.json, which bench/RESULTS.md reports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.http_load import Server, load, serve
from bench.mix import requests
from bench.stats import percentile
from engine.knowledge.kb import content_version
from engine.knowledge.paths import PROJECT_ROOT
from engine.knowledge.snapshot import Tree

FAULTS = Path(__file__).with_name("faults.json")
TOKEN = "bench-admin-token"
RTX_4090 = "gpus/nvidia-rtx-4090.yaml"
OWNED_4090 = {
    "workload": {"task": "inference", "model": "mistral-7b"},
    "constraints": {"on_prem_only": True, "existing_hardware": [{"gpu": "nvidia-rtx-4090", "count": 1}]},
    "top_k": 1,
}
"""Its summary names the owned GPU, so an answer shows which generation of the KB it came from."""


@contextmanager
def kb_service(workers: int) -> Iterator[tuple[Server, Path]]:
    """The service over a private copy of kb/ and data/, with reload enabled."""
    with tempfile.TemporaryDirectory(prefix="gpu-advisor-bench-") as folder:
        root = Path(folder)
        for name in ("kb", "data"):
            shutil.copytree(PROJECT_ROOT / name, root / name)
        env = {
            "GPU_ADVISOR_ADMIN_TOKEN": TOKEN,
            "GPU_ADVISOR_DATA": str(root / "data"),
            "GPU_ADVISOR_CACHE": str(root / "cache"),
        }
        with serve(workers, ("--kb", str(root / "kb")), env) as server:
            yield server, root / "kb"


def rename_4090(kb_root: Path, name: str) -> None:
    """A valid edit, saved whole (a new file renamed over the old, as editors save)."""
    gpu = kb_root / RTX_4090
    draft = kb_root.parent / "draft.yaml"
    draft.write_text(re.sub(r"(?m)^name: .*$", f"name: {name}", gpu.read_text()))
    draft.replace(gpu)


def served_version(kb_root: Path) -> str:
    """The `kb_version` a reload of the KB at `kb_root` (and the embedded rules) will answer with."""
    return content_version([Tree.read(kb_root), Tree.read(PROJECT_ROOT / "rules")])


def reload(server: Server) -> tuple[int, str, float]:
    began = time.perf_counter()
    answer = httpx.post(
        f"{server.url}/admin/reload", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300
    )
    version = answer.json().get("kb_version", "") if answer.status_code == 200 else ""
    return answer.status_code, version, time.perf_counter() - began


def reload_under_load(workers: int, seconds: float, every_s: float) -> dict[str, Any]:
    mix = [OWNED_4090, *requests().values()]
    with kb_service(workers) as (server, kb_root):
        generation_of = {httpx.get(f"{server.url}/version").json()["kb_version"]: "NVIDIA GeForce RTX 4090"}

        def consistent(body: bytes) -> bool:
            answer = json.loads(body)
            name = generation_of.get(answer["kb_version"])
            owned = "already owned" in answer["summary"]
            return name is not None and (not owned or f"is {name}, already owned" in answer["summary"])

        quiet = asyncio.run(load(server.url, "/recommend", 8, 10**9, seconds, consistent, mix))
        reloads: list[tuple[int, str, float]] = []
        stop = threading.Event()

        def reloader() -> None:
            generation = 0
            while not stop.wait(every_s):
                generation += 1
                name = f"RTX 4090 generation {generation}"
                rename_4090(kb_root, name)
                # known before the reload, since answers of the new generation come before its 200
                generation_of[served_version(kb_root)] = name
                reloads.append(reload(server))

        thread = threading.Thread(target=reloader)
        thread.start()
        try:
            busy = asyncio.run(load(server.url, "/recommend", 8, 10**9, seconds, consistent, mix))
        finally:
            stop.set()
            thread.join()
    took = [t for _, _, t in reloads]
    return {
        "workers": workers,
        "quiet": quiet,
        "reloading": busy,
        "reloads": len(reloads),
        "reloads_ok": sum(status == 200 for status, _, _ in reloads),
        "reload_median_s": percentile(took, 50) if took else None,
        "p99_ratio": busy["p99_ms"] / quiet["p99_ms"],
    }


def many_reloads(count: int) -> dict[str, Any]:
    with kb_service(1) as (server, kb_root):
        for warm_up in range(5):
            rename_4090(kb_root, f"warm-up {warm_up}")
            reload(server)
        before = server.rss_kb()
        statuses = []
        for n in range(count):
            rename_4090(kb_root, f"reload {n}")
            statuses.append(reload(server)[0])
        after = server.rss_kb()
    return {
        "reloads": count,
        "ok": statuses.count(200),
        "rss_before_kb": before,
        "rss_after_kb": after,
        "rss_growth_kb_per_reload": (after - before) / count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0, help="each load phase")
    parser.add_argument("--every", type=float, default=3.0, help="seconds between reloads under load")
    parser.add_argument("--reloads", type=int, default=100)
    args = parser.parse_args()
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "under_load": [reload_under_load(workers, args.seconds, args.every) for workers in (1, 2)],
        "many": many_reloads(args.reloads),
    }
    FAULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
