"""A serving copy's operating point: the sequences it holds in flight while it carries its share of a
request rate, by Little's law at its own speed, and the copies the rate needs.

A rate fixes the sequences in flight only together with their speed: L = arrival rate x time in
system (W = output tokens / tokens per second of one sequence). `ServingNeeds.in_flight` takes the
per-user floor's speed: the most a fleet holds while it still meets the floor, capped at vLLM's 256 a
copy. A copy that decodes faster finishes each sequence sooner and holds fewer, and its KV cache need
hold only those. 600 requests/min of 512 + 256 tokens to Llama 3.1 8B are 256 sequences in flight at
the 10 tokens/s floor: two RTX 4090s as replicas were sized to hold 128 each (18.7 GB a GPU) and to
decode each at 24 tokens/s, where the rate needs about 45 each, decoding at 47 tokens/s in 14.3 GB.
With the token counts unstated (2,048 a sequence) the floor's share did not fit four 4090s as replicas
at all, and they were planned in tensor parallel.

Serving engines batch continuously (Kwon et al. 2023, vLLM), so a copy under a steady rate settles
at the batch whose throughput equals its share of the rate: the least batch whose tokens/s carry the
demand (which holds the request's 20% burst headroom, `required_tokens_per_second`).

Pure: the caller gives the most sequences a replica may hold and its speed at a batch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import ceil, inf, isfinite, sqrt

from engine.planning.memory import Breakdown
from engine.planning.performance import Speed


@dataclass(frozen=True)
class Demand:
    """What a serving fleet must carry (tokens/s, burst headroom included) and the per-user floor."""

    decode_tokens_per_s: float
    prefill_tokens_per_s: float
    per_user_tokens_per_s: float | None


@dataclass(frozen=True)
class OperatingPoint:
    """Where a plan's copies settle under the rate: `per_replica` sequences in flight on each replica of
    a copy, and the `copies` of the option the demand needs (an availability target's spares apart)."""

    per_replica: int
    copies: int


@dataclass(frozen=True)
class FleetPlan:
    """A serving plan at its operating point: its speed and memory per GPU there, and the copies the
    demand needs (spares apart)."""

    speed: Speed
    memory: Breakdown
    copies: int


SEARCH_TOLERANCE = 8
"""a batch is searched to within 1/8 of itself (on the larger side: a little more KV cache, never
less): each step is a speed evaluation, and the figures it feeds are good to a few percent"""


def load(demand: Demand, speed: Speed, per_replica: int, replicas: int) -> float:
    """The share of one copy's time the demand takes at this batch: decoding, and reading the prompts
    (prefill), each at its own rate (more than 1: more copies are needed)."""
    decoded = speed.tokens_per_s * per_replica * replicas
    share = demand.decode_tokens_per_s / decoded if decoded > 0 else inf
    if demand.prefill_tokens_per_s and speed.prefill_tokens_per_s:
        share += demand.prefill_tokens_per_s / speed.prefill_tokens_per_s
    return share


def operating_point(
    demand: Demand, replicas: int, most: int, speed_at: Callable[[int], Speed]
) -> OperatingPoint | None:
    """The fewest copies that carry `demand`, each replica at the least batch that does, within the
    per-user floor where one sequence a replica can meet it; None when a replica decodes nothing.

    `replicas`: a copy's replicas (its data-parallel ranks); `most`: the most sequences a replica may
    hold (its share of the floor's in-flight sequences, and what its memory holds); `speed_at(b)`: a
    replica's speed at b sequences."""
    floor = demand.per_user_tokens_per_s
    top = most
    if floor:
        # seconds a sequence's token takes beyond the floor's: at most 0 where the batch is fast enough
        def slowness(b: int) -> float:
            speed = speed_at(b).tokens_per_s
            return (1.0 / speed if speed > 0 else inf) - 1.0 / floor

        late = slowness(most)
        early = slowness(1) if late > 0 else 0.0
        if late > 0 and early <= 0:
            top, _ = _narrowed(slowness, 1, most, early, late, inverse=False)
        # else too slow even alone: sized for the rate all the same, which the per-user filter rules
        # out unless it is lifted (the way-out search asks what the rate costs at any speed)
    most_load = load(demand, speed_at(top), top, replicas)
    if not isfinite(most_load):  # a replica that decodes nothing (no speed figure) carries no rate
        return None
    copies = max(1, ceil(most_load - 1e-9))

    def excess(b: int) -> float:  # the load beyond the copies': at most 0 where they carry it
        return load(demand, speed_at(b), b, replicas) - copies

    over = excess(1)
    if over <= 0:
        return OperatingPoint(1, copies)
    _, least = _narrowed(excess, 1, top, over, excess(top), inverse=True)
    return OperatingPoint(least, copies)


def _narrowed(
    f: Callable[[int], float], lo: int, hi: int, f_lo: float, f_hi: float, *, inverse: bool
) -> tuple[int, int]:
    """[lo, hi], where the monotone `f` changes sign (f_lo and f_hi of opposite signs), narrowed to
    within SEARCH_TOLERANCE of hi. Each step tries where the line through the ends crosses zero, in b
    (a step's time, hence `slowness`, grows linearly with the batch on a roofline) or, `inverse`, in
    1 / b (so does a copy's load: fixed costs over b plus each sequence's own); the geometric middle once
    a line has twice failed to halve the bracket (an MoE's weights read grow with the batch, bending it).
    """
    stalls = 0
    while hi - lo > max(1, hi // SEARCH_TOLERANCE):
        width = hi - lo
        if stalls < 2 and isfinite(f_lo) and isfinite(f_hi):
            share = f_lo / (f_lo - f_hi)
            guess = 1.0 / (1.0 / lo + share * (1.0 / hi - 1.0 / lo)) if inverse else lo + share * width
            mid = min(hi - 1, max(lo + 1, round(guess)))
        else:
            mid = min(hi - 1, max(lo + 1, round(sqrt(lo * hi))))
        value = f(mid)
        if (value > 0) == (f_lo > 0):
            lo, f_lo = mid, value
        else:
            hi, f_hi = mid, value
        stalls += hi - lo > width / 2
    return lo, hi
