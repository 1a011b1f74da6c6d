"""The mixed soak: 2,000 varied requests through one worker's app, its memory and its GC pauses.

Every request differs the way real traffic does: owned and target hardware of random GPUs and
counts, `/compare` of random choices, `/report` (a tenth of the calls), models from the catalog
and random `hf_config`s, every task. They are sent through the ASGI app in a process of their own,
as a worker runs it (its lifespan, its engine thread, its chart renderer), so its resident memory
is a worker's; the renderer child's is read too. GC pauses are timed with `gc.callbacks`.

    .venv/bin/python -m bench.mixed_soak [--calls N] [--seed S]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.stats import percentile

TASKS = ("inference", "lora", "qlora", "full_finetune", "pretrain")


def _rss_kb(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def random_hf_config(rng: random.Random) -> dict[str, Any]:
    heads = rng.choice([8, 16, 32, 64])
    kv = rng.choice([h for h in (1, 2, 4, 8) if heads % h == 0])
    head_dim = rng.choice([64, 128])
    return {
        "model_type": rng.choice(["llama", "qwen2", "mistral", "gemma"]),
        "num_hidden_layers": rng.randint(2, 80),
        "hidden_size": heads * head_dim,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": heads * head_dim * rng.choice([2, 3, 4]),
        "vocab_size": rng.choice([32000, 128256, 151936]),
        "max_position_embeddings": rng.choice([4096, 32768, 131072]),
    }


def random_call(rng: random.Random, models: list[str], gpus: list[str]) -> tuple[str, dict[str, Any]]:
    """One (path, body) of the mix."""
    task = rng.choice(TASKS)
    workload: dict[str, Any] = {"task": task}
    if rng.random() < 0.25:
        workload["hf_config"] = random_hf_config(rng)
    else:
        workload["model"] = rng.choice(models)
    constraints: dict[str, Any] = {}
    kind = rng.random()
    if kind < 0.25:
        constraints["existing_hardware"] = [{"gpu": rng.choice(gpus), "count": rng.randint(1, 8)}]
        constraints["on_prem_only"] = rng.random() < 0.5
    elif kind < 0.5:
        constraints["target_hardware"] = {"gpu": rng.choice(gpus), "count": rng.choice([1, 2, 3, 4, 6, 8])}
    body = {"workload": workload, "constraints": constraints, "top_k": rng.randint(1, 10)}
    path = rng.random()
    if path < 0.1:
        return "/report", body
    if path < 0.25:
        picked = rng.sample(gpus, rng.randint(2, 4))
        choices = [{"gpu": gpu, "count": rng.choice([1, 2, 4, 8])} for gpu in picked]
        return "/compare", {"request": {**body, "constraints": {}}, "choices": choices}
    return "/recommend", body


async def _soak(calls: int, seed: int) -> dict[str, Any]:
    import httpx

    from api.app import create_app
    from engine.answer.svg_render import RENDERER
    from engine.recommend import default_advisor

    pauses: list[float] = []
    generations: list[int] = []
    began: list[float] = []

    def timer(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            began.append(time.perf_counter())
        elif began:
            pauses.append(time.perf_counter() - began.pop())
            generations.append(info["generation"])

    advisor = default_advisor()
    app = create_app(advisor=advisor)
    rng = random.Random(seed)
    # a convolutional network is refused (422): the soak asks about the models the advisor sizes
    models = sorted(m.id for m in advisor.kb.models.values() if m.sized)
    gpus = sorted(advisor.kb.gpus)
    statuses: dict[int, int] = {}
    latency: dict[str, list[float]] = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://soak", timeout=120) as client:
            await client.post("/recommend", json={"workload": {"task": "inference", "params_b": 7}})
            rss_start = _rss_kb()
            gc.callbacks.append(timer)
            try:
                started = time.perf_counter()
                for _ in range(calls):
                    path, body = random_call(rng, models, gpus)
                    t = time.perf_counter()
                    response = await client.post(path, json=body)
                    latency.setdefault(path, []).append(time.perf_counter() - t)
                    statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                took = time.perf_counter() - started
            finally:
                gc.callbacks.remove(timer)
            child = RENDERER._child
            renderer_kb = _rss_kb(child.pid) if child is not None and child.poll() is None else 0
            rss_end = _rss_kb()
    young = [pause for pause, generation in zip(pauses, generations, strict=True) if generation < 2]
    return {
        "calls": calls,
        "seconds": took,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "rss_start_kb": rss_start,
        "rss_end_kb": rss_end,
        "renderer_rss_kb": renderer_kb,
        "gc_collections": len(pauses),
        "gc_pause_max_ms": max(pauses, default=0.0) * 1000,
        "gc_full_collections": generations.count(2),
        "gc_pause_max_young_ms": max(young, default=0.0) * 1000,
        "gc_pause_p99_ms": percentile(pauses, 99) * 1000 if pauses else 0.0,
        "latency_ms": {
            path: {"median": percentile(t, 50) * 1000, "p99": percentile(t, 99) * 1000, "calls": len(t)}
            for path, t in sorted(latency.items())
        },
    }


def run(calls: int = 2000, seed: int = 1) -> dict[str, Any]:
    """The soak in a fresh process (so this one's memory is not counted)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.mixed_soak", "--child", "--calls", str(calls), "--seed", str(seed)],
        capture_output=True,
        check=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_soak(args.calls, args.seed))))
    else:
        print(json.dumps(run(args.calls, args.seed), indent=2))


if __name__ == "__main__":
    main()
