"""A `RecommendResponse` as Markdown that reads the same on GitHub and in Slack's Markdown: a
heading, the summary, one `##` section per option (its figures as a list, then its why), warnings,
and a closing line with the KB version and the age of the prices. Ids are set as code, so that an
id's underscores are never read as emphasis."""

from __future__ import annotations

from engine.answer.chat import wording
from engine.models.response import Recommendation, RecommendResponse

PARAGRAPH_TEXT = 3000
"""the longest paragraph, as a Slack section's text: a longer summary or why is cut at a word"""


def markdown(response: RecommendResponse) -> str:
    lines = [f"# {wording.title(response)}", "", wording.clip(response.summary, PARAGRAPH_TEXT), ""]
    if response.relaxation is not None and response.relaxation.message not in response.summary:
        lines += ["## To make it feasible", "", response.relaxation.message, ""]
    if not response.recommendations and response.rejected:
        lines += ["## Ruled out", ""]
        lines += [
            f"- {rejected.gpu_count} x `{rejected.gpu}` ({rejected.acquisition}): {rejected.reason}"
            for rejected in response.rejected
        ]
        lines.append("")
    for option in response.recommendations:
        lines += option_section(option)
    if response.warnings:
        lines += ["## Warnings", "", *(f"- {warning}" for warning in response.warnings), ""]
    lines.append(f"_{wording.prices_line(response)}_")
    return "\n".join(lines) + "\n"


def option_section(option: Recommendation) -> list[str]:
    return [
        f"## {option.rank}. {wording.gpus(option)}",
        "",
        f"- **How to get them:** {wording.how_to_get(option)}",
        f"- **Memory per GPU:** {wording.memory(option)}",
        f"- **Speed:** {wording.speed(option)}",
        f"- **Cost:** {wording.cost(option)}",
        f"- **Plan:** {wording.plan(option)}",
        f"- **Prices as of:** {option.price_as_of or 'owned: no prices'}",
        "",
        f"**Why:** {wording.clip(option.why, PARAGRAPH_TEXT)}",
        "",
    ]
