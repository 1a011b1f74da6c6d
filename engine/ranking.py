"""Ordering sized candidates by the request's objective: a pure, deterministic function.

Each candidate gets a base score in [0, 1] relative to the best candidate on each measure, plus the
weights of the rules' `prefer` actions that match it:

- cheapest: least total cost over the horizon (`horizon_cost_usd`) / this candidate's;
- fastest: this candidate's aggregate tokens/s / the most;
- balanced: 0.6 x value + 0.2 x speed + 0.2 x cheapness, where value is what a dollar buys: memory
  bandwidth per dollar (`ranking.value: bandwidth_per_dollar`, small-batch decoding), dense FLOPS per
  dollar (`compute_per_dollar`, training), else tokens per dollar.

Ties break on cost, then speed, then the option's identity, so the order never depends on the order
candidates were produced in. Near-duplicates (the same GPU, acquisition, pricing, method and precision
from several offers) keep only their best.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.planner import Candidate

BALANCED_WEIGHTS = (0.6, 0.2, 0.2)
"""value, speed, cheapness"""


@dataclass(frozen=True)
class Ranked:
    score: float
    candidate: Candidate


def value(candidate: Candidate, value_kind: str | None) -> float:
    """What the horizon's dollars buy: bandwidth (GB/s), dense TFLOPS, or tokens/s, per dollar."""
    gpu, gpus = candidate.option.gpu, candidate.gpu_count
    dollars = max(candidate.costs.horizon_cost_usd, 1e-9)
    if value_kind == "bandwidth_per_dollar":
        return gpu.memory_bandwidth_gbs * gpus / dollars
    if value_kind == "compute_per_dollar":
        flops = gpu.bf16_dense_tflops or gpu.fp16_dense_tflops or gpu.fp32_tflops or 0.0
        return flops * gpus / dollars
    return candidate.speed.aggregate_tokens_per_s * candidate.copies / dollars


def kind(c: Candidate) -> tuple[str, str, str, str, str]:
    """What makes two candidates different answers: GPU, acquisition, pricing, method, precision."""
    return (
        c.option.gpu.id,
        c.option.acquisition,
        c.option.pricing,
        c.spec.layout.method,
        c.spec.layout.precision,
    )


def identity(candidate: Candidate) -> tuple[str, int, str, str, str, str]:
    option = candidate.option
    offer = option.offer
    return (
        option.gpu.id,
        candidate.gpu_count,
        option.acquisition,
        option.price_kind,
        offer.provider if offer else "",
        offer.instance_type if offer else "",
    )


def rank(candidates: Sequence[Candidate], objective: str, value_kind: str | None) -> list[Ranked]:
    """Candidates best first, one per (GPU, acquisition, pricing, method, precision)."""
    if not candidates:
        return []
    cheapest = min(max(c.costs.horizon_cost_usd, 1e-9) for c in candidates)
    fastest = max(c.speed.aggregate_tokens_per_s * c.copies for c in candidates)
    best_value = max(value(c, value_kind) for c in candidates)
    scored = []
    for c in candidates:
        cheap = cheapest / max(c.costs.horizon_cost_usd, 1e-9)
        speed = c.speed.aggregate_tokens_per_s * c.copies / fastest
        if objective == "cheapest":
            base = cheap
        elif objective == "fastest":
            base = speed
        else:
            worth = value(c, value_kind) / best_value if best_value > 0 else 0.0
            v, s, k = BALANCED_WEIGHTS
            base = v * worth + s * speed + k * cheap
        scored.append(Ranked(round(base + c.preference, 6), c))
    scored.sort(
        key=lambda r: (
            -r.score,
            r.candidate.costs.horizon_cost_usd,
            -r.candidate.speed.aggregate_tokens_per_s,
            identity(r.candidate),
        )
    )
    seen: set[tuple[str, str, str, str, str]] = set()
    unique = []
    for ranked in scored:
        key = kind(ranked.candidate)
        if key not in seen:
            seen.add(key)
            unique.append(ranked)
    return unique
