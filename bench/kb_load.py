"""Benchmark: time to read + validate the KB, build its graph, and run the full lint.

    .venv/bin/python -m bench.kb_load [--runs N]

Prints medians (and the slowest run) in milliseconds. A benchmark, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import date

from engine.knowledge import paths
from engine.knowledge.graph import build_graph
from engine.knowledge.kb import load_kb, read_kb
from engine.knowledge.lint import lint_kb


def measure(action: Callable[[], object], runs: int) -> tuple[float, float]:
    """(median, max) wall time of `action` in milliseconds over `runs` runs after one warm-up."""
    action()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    root, data = paths.kb_dir(), paths.data_dir()
    kb = load_kb(root)
    cases: dict[str, Callable[[], object]] = {
        "read + validate kb/": lambda: read_kb(root),
        "build graph": lambda: build_graph(kb),
        "kb lint (incl. catalog re-import)": lambda: lint_kb(root, data, date.today()),
    }
    print(f"{sum(len(kb.of_kind(k)) for k in ('gpus', 'offers', 'models'))} gpus+offers+models, {runs} runs")
    for name, action in cases.items():
        median, worst = measure(action, runs)
        print(f"{name:36} median {median:8.1f} ms   max {worst:8.1f} ms")


if __name__ == "__main__":
    main()
