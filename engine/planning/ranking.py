"""Ordering sufficient options by the request's objective: a pure, deterministic function.

Every candidate reaching here already meets the need: it fits in memory, passes every rule's filter
(budget, deadline, per-user speed) and, for a serving fleet, carries the demand. What is left is which
of them to propose first. docs/ranking.md states the formulas with worked examples:

- cheapest: least cost for the job, C (`horizon_cost_usd`): one training run's cost when the request
  gives no utilisation (a bought option pays its capex for it), else the stated use over the horizon;
- fastest: least wall-clock, T (a training run's hours; for serving, seconds per generated token of
  one sequence), ties broken by cost;
- balanced (default): the simplest sufficient option unless a larger one is clearly cheaper. Each
  doubling of the GPU count must save a quarter of the cost, and each doubling of the nodes one copy
  spans a third: E = C x (4/3)^log2(GPUs) x 1.5^log2(nodes). One GPU at $100 beats two at $76; two
  at $74 win.
  Serving also weighs speed up to three times the per-user floor: E x 3f / min(tokens/s, 3f); a
  training run weighs the slack it leaves before its deadline: E x 1 / sqrt(1 - T/D).

Each measure is scaled by 4^-w for the summed weight w of the rules' `prefer` actions matching the
option (w = 0.1: 13% better; w = -0.3: 52% worse; owned hardware, w = 1: a quarter). The score is the best
measure over this one's (1 for the first). Ties break on simplicity (GPUs, nodes), then cost, then
time, then the option's identity, so the order never depends on the order candidates came in.
Near-duplicates (the same GPU, acquisition, pricing, method and precision) keep only their best.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import inf

from engine.planning.measures import complexity_of, preference_factor, scale_factor, slack_weight
from engine.planning.planner import Candidate

SPEED_CREDIT = 3.0
"""balanced serving: speed counts up to three times the per-user floor (30 tokens/s at the default 10)"""


@dataclass(frozen=True)
class Ranked:
    score: float
    candidate: Candidate
    measure: float
    """the objective's measure, lower is better (dollars, effective dollars or seconds)"""


def cost(candidate: Candidate) -> float:
    """C: the job's cost, in dollars (`horizon_cost_usd`): one training run when no utilisation is
    stated (a bought option then pays its whole capex for it), else the stated use over the horizon."""
    return max(candidate.costs.horizon_cost_usd, 0.0)


def speed_factor(candidate: Candidate, floor: float | None) -> float:
    """balanced serving: how much short of SPEED_CREDIT x the per-user floor a sequence decodes. Speed
    beyond that earns nothing (a reader cannot use it); below it, the cost is scaled up in proportion."""
    if floor is None or candidate.spec.layout.method != "inference":
        return 1.0
    enough = SPEED_CREDIT * floor
    return enough / max(min(candidate.speed.tokens_per_s, enough), 1e-12)


def slack_factor(candidate: Candidate) -> float:
    """balanced training: 1 / sqrt(1 - T/D) for a run of T hours with a deadline of D. A run that takes
    a small share of its deadline is barely weighed (a tenth: 5% more); one that takes most of it is
    one restart from missing it (a rerun after a crash, a node lost, a learning rate retuned), so
    time counts as it nears the deadline: half of it 1.41x, three quarters 2x, 93% 3.8x. An option
    that finishes in a fraction of the time for about the same cost ranks first."""
    share = candidate.deadline_share
    if share is None or candidate.spec.layout.method == "inference":
        return 1.0
    return slack_weight(share)


def wall_clock(candidate: Candidate) -> float:
    """T (`Candidate.wall_clock_s`)."""
    return candidate.wall_clock_s


def complexity(candidate: Candidate) -> float:
    """The balanced objective's factor on cost for the GPUs an option takes and the nodes one copy of
    it spans: a serving fleet's copies share no interconnect and fail apart, so more of them make the
    service more available, not harder to run as one cluster (the GPU factor still counts them)."""
    option = candidate.option
    return complexity_of(candidate.gpu_count, option.nodes, owned=option.acquisition == "owned")


def measure(candidate: Candidate, objective: str, floor: float | None = None) -> float:
    """The objective's measure (lower is better), with the rules' preferences applied; `floor` is the
    per-user speed a served sequence needs."""
    if objective == "fastest":
        base = wall_clock(candidate) * _scale(candidate)
    elif objective == "cheapest":
        base = cost(candidate)
    else:
        base = (
            cost(candidate) * complexity(candidate) * speed_factor(candidate, floor) * slack_factor(candidate)
        )
    return float(base * preference_factor(candidate.preference))


def _scale(candidate: Candidate) -> float:
    """fastest: the GPU factor on the wall-clock (`measures.scale_factor`)."""
    return scale_factor(candidate.gpu_count, owned=candidate.option.acquisition == "owned")


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


def rank(candidates: Sequence[Candidate], objective: str, floor: float | None = None) -> list[Ranked]:
    """Candidates best first, one per (GPU, acquisition, pricing, method, precision); `floor` is the
    per-user speed a served sequence needs (balanced credits speed up to SPEED_CREDIT times it)."""
    if not candidates:
        return []
    measured = [(measure(c, objective, floor), c) for c in candidates]
    measured.sort(
        key=lambda mc: (
            mc[0],
            mc[1].gpu_count,
            mc[1].option.nodes * mc[1].copies,
            cost(mc[1]),
            wall_clock(mc[1]),
            identity(mc[1]),
        )
    )
    best = measured[0][0]
    seen: set[tuple[str, str, str, str, str]] = set()
    unique = []
    for value, candidate in measured:
        key = kind(candidate)
        if key not in seen:
            seen.add(key)
            score = best / value if 0 < value < inf else 1.0 if value == best else 0.0
            unique.append(Ranked(round(score, 6), candidate, value))
    return unique


@dataclass(frozen=True)
class Outranked:
    """An option ranked above one that is both faster and cheaper (as the report's cost-time chart
    plots them), or cheaper and as fast as the balanced objective counts a served sequence's speed,
    and what put it first: the factors of the objective's measure that favour it."""

    above: int
    """its index in the ranking"""
    below: int
    """the index of the faster, cheaper option ranked after it"""
    margin: float
    """how much higher the lower option's measure is (0.07: 7%)"""
    cheaper: float
    """how much less the lower option costs (0.12: 12%)"""
    fewer_gpus: bool
    """balanced: the first takes fewer GPUs or nodes, each doubling of which must save a quarter"""
    preferred_by: tuple[str, ...]
    """when the rules' preferences favour the first: those that weigh one of the two and not the other"""
    slack: bool
    """balanced training: the other leaves less slack before the deadline"""
    fewer_for_speed: bool = False
    """fastest: the first takes fewer GPUs, each doubling of which must save 5% of the time"""
    speed_credited: float | None = None
    """balanced serving, when the other is not faster: the speed both reach (tokens/s a sequence,
    SPEED_CREDIT x the per-user floor), beyond which the measure credits none, so it holds them as
    fast"""


def outranked(
    ranked: Sequence[Ranked], objective: str, firsts: int, floor: float | None = None
) -> list[Outranked]:
    """For each of the `firsts` first options, the first one ranked after it that is cheaper and
    faster (the cost-time chart shows it dominated), else, serving under `balanced`, the first that is
    cheaper and as fast as the measure counts (`_as_fast`), with the reasons the ranking put it first
    (docs/ranking.md). 16 H100s serving a fleet at 32 tokens/s a sequence for 27% less than 6 B200s
    at 33 answer the same need for less: the B200s' rank above them wants its reason too."""
    costs = [cost(r.candidate) for r in ranked]
    found = []
    for i in range(min(firsts, len(ranked))):
        a, cheaper = ranked[i].candidate, [j for j in range(i + 1, len(ranked)) if costs[j] < costs[i]]
        # one the cost-time chart shows dominating it first, else one as fast as the measure counts
        j = next((j for j in cheaper if wall_clock(ranked[j].candidate) < wall_clock(a)), None)
        if j is None:
            j = next((j for j in cheaper if _as_fast(ranked[j].candidate, a, objective, floor)), None)
        if j is not None:
            found.append(_why_first(i, j, ranked[i], ranked[j], objective, floor))
    return found


def _as_fast(other: Candidate, first: Candidate, objective: str, floor: float | None) -> bool:
    """Serving under `balanced`: whether both decode at least SPEED_CREDIT x the per-user `floor`,
    beyond which the measure credits no speed."""
    if objective != "balanced" or floor is None:
        return False
    return speed_factor(other, floor) == 1.0 and speed_factor(first, floor) == 1.0


def _why_first(
    i: int, j: int, first: Ranked, second: Ranked, objective: str, floor: float | None
) -> Outranked:
    a, b = first.candidate, second.candidate
    balanced = objective == "balanced"
    favoured = a.preference > b.preference
    return Outranked(
        above=i,
        below=j,
        margin=second.measure / first.measure - 1 if first.measure > 0 else 0.0,
        cheaper=1 - cost(b) / cost(a) if cost(a) > 0 else 0.0,
        fewer_gpus=balanced and complexity(a) < complexity(b),
        fewer_for_speed=objective == "fastest" and _scale(a) < _scale(b),
        preferred_by=tuple(sorted(set(a.preferred_by) ^ set(b.preferred_by))) if favoured else (),
        slack=balanced and slack_factor(a) < slack_factor(b),
        speed_credited=SPEED_CREDIT * floor if floor is not None and wall_clock(b) >= wall_clock(a) else None,
    )
