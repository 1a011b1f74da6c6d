"""Percentiles and formatting shared by the benchmarks."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile (pct in 0-100) of `values`."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, round(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summary_ms(seconds: Sequence[float]) -> dict[str, float]:
    """median, mean, p99 and max of durations given in seconds, in milliseconds (throughput goes
    with the mean)."""
    return {
        "median_ms": statistics.median(seconds) * 1000,
        "mean_ms": statistics.fmean(seconds) * 1000,
        "p99_ms": percentile(seconds, 99) * 1000,
        "max_ms": max(seconds) * 1000,
    }
