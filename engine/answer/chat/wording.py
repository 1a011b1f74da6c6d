"""What both chat formats say about an answer and its options, and clean truncation to a length.

Rendering only: every figure comes from the response; nothing is computed that it does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from engine.models.compare import ComparedChoice, CompareResponse
from engine.models.response import Recommendation, RecommendResponse

Escape = Callable[[str], str]
"""a format's escaping of text that came from a request or the KB: as running text, or as code"""


def verbatim(text: str) -> str:
    """No escaping: for plain-text places (a Slack header), where nothing is markup."""
    return text


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


def title(response: RecommendResponse, text: Escape) -> str:
    """The message's heading: for a question about named hardware, that hardware and whether the job
    fits it; else the best option, or that nothing meets every constraint."""
    target = response.target_fit
    if target is not None:
        verdict = "the job fits" if target.fits else "the job does not fit as asked"
        return f"GPU advice on {target.count} x {text(target.gpu_name or target.gpu)}: {verdict}"
    if response.recommendations:
        return f"GPU advice: {gpus(response.recommendations[0], text)}"
    return "GPU advice: no option meets every constraint"


def compare_title(response: CompareResponse, text: Escape) -> str:
    """A comparison's heading: the best choice, or that none runs within the constraints."""
    if response.best is None:
        return f"GPU comparison: none of the {len(response.choices)} choices runs within the constraints"
    return f"GPU comparison: {choice_label(response.choices[response.best], text)} is best"


def choice_label(choice: ComparedChoice, text: Escape) -> str:
    how = f" ({choice.acquisition})" if choice.acquisition else ""
    return f"{choice.count} x {text(choice.gpu_name)}{how}"


def gpus(option: Recommendation, text: Escape) -> str:
    nodes = f" on {option.nodes} nodes" if option.nodes > 1 else ""
    return f"{option.gpu_count} x {text(option.gpu_name)}{nodes}"


def how_to_get(option: Recommendation, code: Escape) -> str:
    """Buy (new, used, ...), rent (on-demand or spot, from which provider's instance), or owned.
    Ids are set as code (`code`), so that an id's underscores are never read as emphasis."""
    if option.acquisition == "rent":
        pricing = "spot" if option.pricing == "spot" else "on-demand"
        instance = f" ({code(option.instance_type)})" if option.instance_type else ""
        return f"rent {pricing} from {code(option.provider or '')}{instance}"
    if option.acquisition == "owned":
        return "already owned"
    return f"buy ({option.price_kind.replace('_', ' ')})"


def memory(option: Recommendation) -> str:
    held = option.memory
    free = f"{held.headroom_pct:.0f}% free"
    if held.reported_gb is not None and abs(held.reported_gb - option.vram_per_gpu_gb) >= 0.5:
        free = f"{held.reported_gb:,.1f} GB reported, {free}"  # the card's name rounds its bytes
    return f"{held.per_gpu_gb:,.1f} of {option.vram_per_gpu_gb:,.0f} GB ({free})"


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


def plan(option: Recommendation, text: Escape) -> str:
    words = [option.method.replace("_", " "), option.precision, *option.parallelism]
    if option.tp_degree > 1:
        words.append(f"TP degree {option.tp_degree}")
    if option.offload and "offload" not in option.parallelism:
        words.append("offload")
    return text(", ".join(words) + f"; {option.platform} on {option.os_path}")


def prices_line(response: RecommendResponse | CompareResponse) -> str:
    """The knowledge base's version and how old the prices are."""
    oldest_as_of = getattr(response, "oldest_price_as_of", None)
    oldest = f" · oldest price as of {oldest_as_of}" if oldest_as_of else ""
    return f"kb {response.kb_version} · prices as of {response.prices_as_of}{oldest}"


def usd(value: float, *, cents: bool = False) -> str:
    return f"${value:,.2f}" if cents or 0 < value < 100 else f"${value:,.0f}"
