"""`gpu-advisor recommend --launch skypilot|dstack`: the launch spec of the best rented recommendation
the tool can launch (`Recommendation.launch`, built by engine/answer/launch.py), naming the better ones
it skipped and why; or why there is none."""

from __future__ import annotations

from typing import Literal

from engine.models.response import Recommendation, RecommendResponse

TOOLS = ("skypilot", "dstack")
TOOL_NAMES = {"skypilot": "SkyPilot", "dstack": "dstack"}


def launch_spec(response: RecommendResponse, tool: Literal["skypilot", "dstack"]) -> tuple[str | None, str]:
    """(the YAML text of the best rented recommendation `tool` launches, the ones ranked before it that
    it cannot, and why; "" when none), or (None, why there is none)."""
    rented = [r for r in response.recommendations if r.acquisition == "rent" and r.launch is not None]
    if not rented:
        return None, (
            "no recommendation is rented, so there is nothing to launch "
            "(ask for rented options with --acquisition rent)"
        )
    skipped: list[str] = []
    for option in rented:
        assert option.launch is not None
        text = option.launch.skypilot if tool == "skypilot" else option.launch.dstack
        if text is not None:
            note = f"skipped {'; '.join(skipped)}; launching #{option.rank}" if skipped else ""
            return text, note
        skipped.append(
            f"#{option.rank} ({_option(option)}: {option.launch.unavailable.get(tool, 'no spec')})"
        )
    return None, f"no {TOOL_NAMES[tool]} spec for any rented recommendation: {'; '.join(skipped)}"


def _option(option: Recommendation) -> str:
    return f"{option.gpu_count} x {option.gpu} on {option.provider}"
