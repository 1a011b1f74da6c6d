"""In-process benchmarks: `Advisor.recommend` over the mix (durable-rules and the reference engine),
the sizing math alone, the rule chaining alone, and the same mix over a KB whose GPUs and offers are
multiplied.

    .venv/bin/python -m bench.inprocess [--rounds N]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from api import heap
from bench.mix import requests
from bench.stats import summary_ms
from bench.yardstick import yardstick_ms
from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest
from engine.planning.requirements import sizing_facts
from engine.planning.workload import resolve
from engine.reasoning.engines import make_engine
from engine.recommend import Advisor, default_advisor


def timed_calls(
    call: Callable[[RecommendRequest], object], mix: list[RecommendRequest], rounds: int
) -> list[float]:
    """Seconds per call, over `rounds` passes of the mix after one warm-up pass."""
    for request in mix:
        call(request)
    times = []
    for _ in range(rounds):
        for request in mix:
            start = time.perf_counter()
            call(request)
            times.append(time.perf_counter() - start)
    return times


def scaled_kb(kb: KB, factor: int, *, gpus_too: bool = True) -> KB:
    """The KB with every offer present `factor` times (synthetic copies `<id>-xN`), and with
    `gpus_too` every GPU as well (each copied offer then rents the copied GPU)."""
    gpus = dict(kb.gpus)
    offers = dict(kb.offers)
    for n in range(2, factor + 1):
        if gpus_too:
            for gpu in kb.gpus.values():
                copy_id = f"{gpu.id}-x{n}"
                gpus[copy_id] = gpu.model_copy(update={"id": copy_id, "aliases": []})
        for offer in kb.offers.values():
            copy_id = f"{offer.id}-x{n}"
            gpu_id = f"{offer.gpu}-x{n}" if gpus_too else offer.gpu
            offers[copy_id] = offer.model_copy(update={"id": copy_id, "gpu": gpu_id})
    return dataclasses.replace(kb, gpus=MappingProxyType(gpus), offers=MappingProxyType(offers))


def cold_calls(advisor: Advisor, mix: list[RecommendRequest]) -> list[float]:
    """Seconds of each request's first call on an advisor that has answered nothing yet, warmed as
    the service warms it at start-up (option lists of the commonest contexts built)."""
    fresh = Advisor(advisor.kb, advisor.rules, advisor.rules_root)
    fresh.warm()
    times = []
    for request in mix:
        start = time.perf_counter()
        fresh.recommend(request)
        times.append(time.perf_counter() - start)
    return times


def in_service(advisor: Advisor) -> Advisor:
    """The advisor as a worker serves it: warmed, then the heap settled (api/lifecycle.py, `start`), so
    that full collections skip the KB, the rules and the option lists built so far (api/heap.py)."""
    advisor.warm()
    heap.settle()
    return advisor


def run(rounds: int, scale_rounds: int) -> dict[str, Any]:
    advisor = in_service(default_advisor())
    mix = [RecommendRequest.model_validate(body) for body in requests().values()]
    durable = timed_calls(advisor.recommend, mix, rounds)
    reference = Advisor(
        advisor.kb, advisor.rules, advisor.rules_root, engine=make_engine(advisor.rules, "reference")
    )
    ref_times = timed_calls(reference.recommend, mix, max(1, rounds // 4))
    kb = advisor.kb
    sizing = timed_calls(lambda r: sizing_facts(resolve(r, kb), kb), mix, rounds)
    chaining = timed_calls(lambda r: advisor.engine.run(advisor.facts(r, resolve(r, kb))), mix, rounds)
    cold = cold_calls(advisor, mix)
    results: dict[str, Any] = {
        "requests_in_mix": len(mix),
        "yardstick_ms": yardstick_ms(),
        "durable": {"calls": len(durable), **summary_ms(durable)},
        "cold": {"calls": len(cold), **summary_ms(cold)},
        "reference": {"calls": len(ref_times), **summary_ms(ref_times)},
        "sizing_alone": {"calls": len(sizing), **summary_ms(sizing)},
        "chaining_alone": {"calls": len(chaining), **summary_ms(chaining)},
        "scale": {},
    }
    for name, factor, gpus_too in (
        ("x1", 1, True),
        ("x5", 5, True),
        ("x20", 20, True),
        ("offers x20", 20, False),
    ):
        kb = scaled_kb(advisor.kb, factor, gpus_too=gpus_too) if factor > 1 else advisor.kb
        scaled = Advisor(kb, advisor.rules, advisor.rules_root)
        times = timed_calls(scaled.recommend, mix, scale_rounds)
        results["scale"][name] = {
            "gpus": len(kb.gpus),
            "offers": len(kb.offers),
            "calls": len(times),
            **summary_ms(times),
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=100, help="passes over the mix (22 requests each)")
    parser.add_argument("--scale-rounds", type=int, default=3, help="passes over the mix at each scale")
    args = parser.parse_args()
    print(json.dumps(run(args.rounds, args.scale_rounds), indent=2))


if __name__ == "__main__":
    main()
