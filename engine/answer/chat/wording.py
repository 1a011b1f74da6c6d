"""What both chat formats say about an answer and its options, and clean truncation to a length.

Rendering only: every figure comes from the response; nothing is computed that it does not hold.
"""

from __future__ import annotations

import re

from engine.models.response import Recommendation, RecommendResponse

ELLIPSIS = "…"
_PARTIAL_ENTITY = re.compile(r"&[#a-zA-Z0-9]*$")


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a word boundary where one is near, ending in an
    ellipsis when anything was cut; never in the middle of an HTML entity (`&amp;`)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - len(ELLIPSIS)]
    space = cut.rfind(" ")
    if space >= len(cut) * 4 // 5:  # a word boundary within the last fifth: cut there
        cut = cut[:space]
    cut = _PARTIAL_ENTITY.sub("", cut).rstrip(" ,;:")
    return cut + ELLIPSIS


def title(response: RecommendResponse) -> str:
    """The message's heading: the best option, or that nothing meets every constraint."""
    if response.recommendations:
        return f"GPU advice: {gpus(response.recommendations[0])}"
    return "GPU advice: no option meets every constraint"


def gpus(option: Recommendation) -> str:
    nodes = f" on {option.nodes} nodes" if option.nodes > 1 else ""
    return f"{option.gpu_count} x {option.gpu_name}{nodes}"


def how_to_get(option: Recommendation, code: str = "`") -> str:
    """Buy (new, used, ...), rent (on-demand or spot, from which provider's instance), or owned.
    Ids are set as code, so that an id's underscores are never read as emphasis."""
    if option.acquisition == "rent":
        pricing = "spot" if option.pricing == "spot" else "on-demand"
        instance = f" ({code}{option.instance_type}{code})" if option.instance_type else ""
        return f"rent {pricing} from {code}{option.provider}{code}{instance}"
    if option.acquisition == "owned":
        return "already owned"
    return f"buy ({option.price_kind.replace('_', ' ')})"


def memory(option: Recommendation) -> str:
    return (
        f"{option.memory.per_gpu_gb:,.1f} of {option.vram_per_gpu_gb:,.0f} GB "
        f"({option.memory.headroom_pct:.0f}% free)"
    )


def speed(option: Recommendation) -> str:
    throughput = option.throughput
    unit = "per sequence" if option.method == "inference" else "per replica"
    words = f"{throughput.tokens_per_s:,.0f} tokens/s {unit}"
    if throughput.aggregate_tokens_per_s != throughput.tokens_per_s:
        words += f", {throughput.aggregate_tokens_per_s:,.0f} in all"
    if throughput.training_hours is not None:
        words += f"; {throughput.training_hours:,.1f} h for the run"
    return words


def cost(option: Recommendation) -> str:
    """What it is paid in (up front, per hour), then the run's and the horizon's cost."""
    figures = option.cost
    if option.acquisition == "buy":
        paid = f"{usd(figures.capex_usd)} up front"
        if figures.capex_low_usd is not None and figures.capex_high_usd is not None:
            paid += f" ({usd(figures.capex_low_usd)} to {usd(figures.capex_high_usd)})"
    elif option.acquisition == "rent":
        paid = f"{usd(figures.hourly_usd, cents=True)}/h"
    else:
        paid = f"{usd(figures.hourly_usd, cents=True)}/h of power"
    parts = [paid]
    if figures.run_cost_usd is not None:
        parts.append(f"{usd(figures.run_cost_usd)} per run")
    parts.append(f"{usd(figures.horizon_cost_usd)} over the horizon")
    return "; ".join(parts)


def plan(option: Recommendation) -> str:
    words = [option.method.replace("_", " "), option.precision, *option.parallelism]
    if option.tp_degree > 1:
        words.append(f"TP degree {option.tp_degree}")
    if option.offload and "offload" not in option.parallelism:
        words.append("offload")
    return ", ".join(words) + f"; {option.platform} on {option.os_path}"


def prices_line(response: RecommendResponse) -> str:
    """The knowledge base's version and how old the prices are."""
    oldest = f" · oldest price as of {response.oldest_price_as_of}" if response.oldest_price_as_of else ""
    return f"kb {response.kb_version} · prices as of {response.prices_as_of}{oldest}"


def usd(value: float, *, cents: bool = False) -> str:
    return f"${value:,.2f}" if cents or 0 < value < 100 else f"${value:,.0f}"
