"""A fixed piece of pure-Python work, timed to say how fast this host runs Python.

Shared cloud hosts of one nominal type differ: the same commit answered the bench mix in 4.9 ms one
day and in 11.3 ms on another host of the "2 cores, AMD EPYC" kind. The engine's figures in
bench/RESULTS.md are in milliseconds of whatever host ran them; this yardstick is the same work on
every host, independent of the project's code, so two runs can be compared by how many yardsticks
an answer takes. The work is of the engine's kind: small dicts and tuples made and read, frozen
dataclasses, sorting, float arithmetic and string formatting, with no I/O and no C extensions.

It is a rough guide only: on hosts of one type it read 28.0 ms in one `make bench` and 15.7 ms in the
next, a day apart, where the engine's median moved from 15.7 to 13.7 ms. Two commits are compared
best by timing them side by side, alternating, on one host.

.venv/bin/python -m bench.yardstick
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

ROUNDS = 1_000
"""items of work per run: about 25 ms on the host of bench/RESULTS.md"""


@dataclass(frozen=True, slots=True)
class _Item:
    """An offer of the work: frozen dataclasses are what the engine makes most of."""

    name: str
    count: int
    price: float
    spot: bool = False


def _work(rounds: int) -> float:
    """The fixed work: its result is returned so that none of it can be skipped."""
    total = 0.0
    seen: dict[tuple[str, int], float] = {}
    for i in range(rounds):
        items = [_Item(f"gpu-{(i * 7 + j) % 53}", 1 << (j % 4), 0.5 + (i * j) % 97 / 10) for j in range(8)]
        attrs: dict[str, float | str] = {"vram": 80.0 + i % 3, "bandwidth": 3350.0, "name": items[0].name}
        ranked = sorted(items, key=lambda item: (item.price * item.count, item.name))
        for item in ranked[:3]:
            key = (item.name, item.count)
            seen[key] = min(seen.get(key, item.price), item.price)
        label = f"{attrs['name']}: {total:,.2f}"
        total += sum(item.price for item in ranked) / float(attrs["vram"]) + len(label)
    return total + len(seen)


def yardstick_ms(runs: int = 7) -> float:
    """The median milliseconds of `runs` runs of the fixed work, after one to warm up."""
    _work(ROUNDS)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        _work(ROUNDS)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


if __name__ == "__main__":
    print(f"{yardstick_ms():.1f} ms")
