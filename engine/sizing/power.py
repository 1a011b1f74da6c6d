"""The power supply a desktop needs for the cards it holds: the cards' board power plus the rest of the
system, over the share of its rating a supply may carry for hours."""

from __future__ import annotations

REST_OF_SYSTEM_W = 250
"""what a desktop draws beside its cards under a training or serving load (CPU, board, drives, fans)"""
PSU_LOAD_SHARE = 0.85
"""the share of a power supply's rating a sustained load may take: NVIDIA's system-power figures (750 W
for an RTX 3090 at 350 W, 850 W for an RTX 4090 at 450 W) are the cards plus about 250 W over 0.85"""


def required_psu_watts(card_w: float, count: int) -> int:
    """The power supply rating a desktop needs for `count` cards of `card_w` watts each (rounded up to
    the 50 W steps supplies are sold in)."""
    need = (card_w * count + REST_OF_SYSTEM_W) / PSU_LOAD_SHARE
    return int(-(-need // 50) * 50)
