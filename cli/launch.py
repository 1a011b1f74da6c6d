"""`gpu-advisor recommend --launch skypilot|dstack`: the launch spec of the first rented recommendation
(`Recommendation.launch`, built by engine/answer/launch.py), or why there is none."""

from __future__ import annotations

from typing import Literal

from engine.models.response import RecommendResponse

TOOLS = ("skypilot", "dstack")
TOOL_NAMES = {"skypilot": "SkyPilot", "dstack": "dstack"}


def launch_spec(response: RecommendResponse, tool: Literal["skypilot", "dstack"]) -> tuple[str | None, str]:
    """(the YAML text, "") for the first rented recommendation, or (None, why not)."""
    rented = [r for r in response.recommendations if r.acquisition == "rent" and r.launch is not None]
    if not rented:
        return None, (
            "no recommendation is rented, so there is nothing to launch "
            "(ask for rented options with --acquisition rent)"
        )
    first = rented[0]
    assert first.launch is not None
    text = first.launch.skypilot if tool == "skypilot" else first.launch.dstack
    if text is None:
        why = first.launch.unavailable.get(tool, "no spec")
        return None, (
            f"no {TOOL_NAMES[tool]} spec for recommendation {first.rank} "
            f"({first.gpu_count} x {first.gpu} on {first.provider}): {why}"
        )
    return text, ""
