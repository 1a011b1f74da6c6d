"""The factors of the objectives' measures that depend on hardware and rules alone: what a GPU count,
a node count and a rule's preference weight do to an option's measure (docs/ranking.md). The
ranking (engine/planning/ranking.py) applies them; the search uses them to bound a measure before an
option is sized."""

from __future__ import annotations

from math import log2, sqrt

GPU_DOUBLING_FACTOR = 4 / 3
"""balanced: a doubling of the GPU count must cut the job's cost by a quarter (1 - 3/4) to rank higher"""
NODE_DOUBLING_FACTOR = 1.5
"""balanced: a doubling of the node count must cut the cost by a third (1 - 1/1.5): the step from one
machine to two adds a network, a scheduler and failure modes one machine does not have, and each
doubling after it doubles the machines that can fail. Per doubling, like the GPU count, not per node:
1.5 per extra node made eight nodes weigh 17x one and sixteen 440x, so a 7B pretraining run ranked
32 B300s at $524k above 64 H200s of the same speed at $123k."""
FASTEST_GPU_DOUBLING_FACTOR = 1.05
"""fastest: a doubling of the GPU count must cut the wall-clock by 5% to rank higher. A modelled speed is
good to about a third either way (docs/calibration.md), so a fleet eight times larger for 2% more
tokens/s per user is no faster that anyone could measure: 64 B200s ranked above 8 for 225 tokens/s
against 220. A training run's doubling saves nearly half its time and is not held back."""
PREFERENCE_BASE = 4.0
"""a rule's `prefer` weight w scales the measure by 4^-w: -0.1 costs 15%, -0.4 costs 74%, +1 quarters it"""


def complexity_of(gpus: int, nodes: int, *, owned: bool = False) -> float:
    """balanced: the factor on cost for so many GPUs over so many nodes (grows with both). On hardware
    the user owns the GPU count weighs nothing: the cards are bought and in their machines, and using
    more of them buys nothing and adds no machine (the node factor still counts a cluster's network,
    scheduler and failure modes)."""
    per_gpu = 1.0 if owned else float(GPU_DOUBLING_FACTOR ** log2(gpus))
    return float(per_gpu * NODE_DOUBLING_FACTOR ** log2(nodes))


def scale_factor(gpus: int, *, owned: bool = False) -> float:
    """fastest: the factor on the wall-clock for so many GPUs (none on hardware the user owns, which
    costs nothing more to use)."""
    return 1.0 if owned else float(FASTEST_GPU_DOUBLING_FACTOR ** log2(gpus))


def preference_factor(weight: float) -> float:
    """The factor a summed preference weight puts on a measure: 4^-w."""
    return float(PREFERENCE_BASE**-weight)


LEAST_SLACK = 0.01
"""balanced training: the slack weight's floor on 1 - T/D, so a run that takes its whole deadline
weighs ten times its cost rather than infinitely"""


def slack_weight(share: float) -> float:
    """balanced training: 1 / sqrt(1 - T/D) for a run taking the share T/D of its deadline. Rising
    with the share, so the weight of a run's least possible hours bounds the weight of its plans'."""
    return 1.0 / sqrt(max(1.0 - share, LEAST_SLACK))
