"""A `RecommendResponse` or a `CompareResponse` as Markdown that reads the same on GitHub and in Slack's
Markdown: a heading, the summary, one `##` section per option or choice (its figures as a list, then
its why or verdict), warnings, and a closing line with the KB version and the age of the prices.

Every text that came from a request or the KB is escaped (CommonMark 0.31, "Backslash escapes": any
ASCII punctuation may be escaped), so that a name or a reason is never read as markup; ids are set as
code spans whose fence is longer than any run of backticks inside (CommonMark, "Code spans")."""

from __future__ import annotations

import re

from engine.answer.chat import wording
from engine.models.compare import ComparedChoice, CompareResponse
from engine.models.response import Recommendation, RecommendResponse

PARAGRAPH_TEXT = 3000
"""the longest paragraph, as a Slack section's text: a longer summary or why is cut at a word"""
_MARKUP = re.compile(r"([\\`*\[\]<>|~&]|(?<!\w)_|_(?!\w)|^#)", re.MULTILINE)
"""what CommonMark (and GitHub's tables and strikethrough) could read as markup: an `_` only where it
could open or close emphasis (not inside a word: `max_price_age_days` stays as it is), a `#` only
where it could open a heading"""
_BACKTICKS = re.compile(r"`+")


def text(value: str) -> str:
    """`value` as literal running text: each character Markdown could read as markup escaped."""
    return _MARKUP.sub(r"\\\1", value)


def code(value: str) -> str:
    """`value` as a code span, whatever backticks it holds."""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def paragraph(value: str) -> str:
    return text(wording.clip(value, PARAGRAPH_TEXT))


def markdown(response: RecommendResponse) -> str:
    lines = [f"# {wording.title(response, text)}", "", paragraph(response.summary), ""]
    if response.relaxation is not None and response.relaxation.message not in response.summary:
        lines += ["## To make it feasible", "", paragraph(response.relaxation.message), ""]
    if not response.recommendations and response.rejected:
        lines += ["## Ruled out", ""]
        lines += [
            f"- {rejected.gpu_count} x {code(rejected.gpu)} ({rejected.acquisition}): {text(rejected.reason)}"
            for rejected in response.rejected
        ]
        lines.append("")
    for option in response.recommendations:
        lines += option_section(option)
    return "\n".join(lines + _closing(response)) + "\n"


def compare_markdown(response: CompareResponse) -> str:
    """A comparison: each choice in the order asked, with its verdict and, when a plan on it passes,
    that plan's figures."""
    lines = [f"# {wording.compare_title(response, text)}", "", paragraph(response.summary), ""]
    for choice in response.choices:
        lines += choice_section(choice, best=choice is _best(response))
    return "\n".join(lines + _closing(response)) + "\n"


def option_section(option: Recommendation) -> list[str]:
    return [
        f"## {option.rank}. {wording.gpus(option, text)}",
        "",
        *_figures(option),
        "",
        f"**Why:** {paragraph(option.why)}",
        "",
    ]


def choice_section(choice: ComparedChoice, *, best: bool) -> list[str]:
    heading = f"## {wording.choice_label(choice, text)}" + (" (best)" if best else "")
    lines = [heading, "", f"**Verdict:** {text(choice.verdict)}", ""]
    if choice.option is not None:
        lines += [*_figures(choice.option), ""]
    elif choice.ruled_out:
        lines += [f"**Ruled out:** {paragraph(choice.ruled_out)}", ""]
    return lines


def _figures(option: Recommendation) -> list[str]:
    return [
        f"- **How to get them:** {wording.how_to_get(option, code)}",
        f"- **Memory per GPU:** {wording.memory(option)}",
        f"- **Speed:** {wording.speed(option)}",
        f"- **Cost:** {wording.cost(option)}",
        f"- **Plan:** {wording.plan(option, text)}",
        f"- **Prices as of:** {option.price_as_of or 'owned: no prices'}",
    ]


def _closing(response: RecommendResponse | CompareResponse) -> list[str]:
    lines = []
    if response.warnings:
        lines += ["## Warnings", "", *(f"- {text(warning)}" for warning in response.warnings), ""]
    lines.append(f"_{wording.prices_line(response)}_")
    return lines


def _best(response: CompareResponse) -> ComparedChoice | None:
    return None if response.best is None else response.choices[response.best]
