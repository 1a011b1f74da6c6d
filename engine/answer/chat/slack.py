"""A `RecommendResponse` as a Slack message: Block Kit blocks built with slack_sdk's models, within
Slack's published limits (https://api.slack.com/reference/block-kit/blocks): at most 50 blocks per
message; a header's text at most 150 characters; a section's text at most 3000, its fields at most 10
of at most 2000 characters each; a context block at most 10 elements. Longer text is cut at a word
with an ellipsis; options that would not fit in 50 blocks are left out with a line saying so.

slack_sdk's `to_dict()` checks the header, section and context limits itself and raises
`SlackObjectFormationError` past one; the per-field and per-message limits are kept here.

Every text that came from a request or the KB is escaped before the message's own markup is added:
`&`, `<` and `>` as entities (https://api.slack.com/reference/surfaces/formatting#escaping), and a
`*`, `_` or `~` that could open a format (not inside a word) and every backtick followed by a
zero-width space, since mrkdwn has no escape for them (a backslash stays visible;
slackhq/slack-api-docs#34, #93) and the character itself stays for copy and paste. A comparison
(`POST /compare?format=slack`) is built the same way.
"""

from __future__ import annotations

import re
from typing import Any

from slack_sdk.models.blocks import (
    Block,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from engine.answer.chat import wording
from engine.answer.chat.wording import clip
from engine.models.compare import ComparedChoice, CompareResponse
from engine.models.response import Recommendation, RecommendResponse

MAX_BLOCKS = 50
HEADER_TEXT = 150
SECTION_TEXT = 3000
SECTION_FIELDS = 10
FIELD_TEXT = 2000
CONTEXT_ELEMENTS = 10
CONTEXT_TEXT = 3000
MESSAGE_TEXT = 3000
"""the fallback `text` shown in notifications: the summary, held to a section's length"""
ZERO_WIDTH_SPACE = "\u200b"
MODIFIER_GRAVE = "\u02cb"
"""what a backtick inside inline code becomes: it looks the same and does not end the code"""
_FORMATTING = re.compile(r"((?<!\w)[*_~]|`)")
"""what could open a format: `*`, `_` or `~` not inside a word (mrkdwn formats only between word
boundaries, so `dc_wildebeest` is left as it is, and an id in a sentence copies cleanly), and any
backtick"""


def text(value: str) -> str:
    """`value` as literal mrkdwn text: entities for `& < >`, formatting characters disarmed."""
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _FORMATTING.sub(rf"\1{ZERO_WIDTH_SPACE}", escaped)


def code(value: str) -> str:
    """`value` as inline code (mrkdwn applies no formatting inside; a backtick would end it early)."""
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"`{escaped.replace('`', MODIFIER_GRAVE)}`"


def slack_message(response: RecommendResponse) -> dict[str, Any]:
    """The message body for `chat.postMessage` or a slash command's response: `text` (the
    notification's fallback) and `blocks`."""
    head = [_header(wording.title(response, wording.verbatim)), _section(text(response.summary))]
    if response.relaxation is not None and response.relaxation.message not in response.summary:
        head.append(_section(f"*To make it feasible:* {text(response.relaxation.message)}"))
    if not response.recommendations and response.rejected:
        head.append(_section(_ruled_out(response)))
    tail = _closing(response)
    blocks = head + _options(response.recommendations, MAX_BLOCKS - len(head) - len(tail)) + tail
    return _message(response.summary, blocks)


def compare_slack_message(response: CompareResponse) -> dict[str, Any]:
    """A comparison as a message: its heading and summary, then each choice (at most four) with its
    verdict and, when a plan on it passes, that plan's figures."""
    head = [_header(wording.compare_title(response, wording.verbatim)), _section(text(response.summary))]
    best = None if response.best is None else response.choices[response.best]
    choices = [block for choice in response.choices for block in choice_blocks(choice, best=choice is best)]
    blocks = head + choices + _closing(response)
    return _message(response.summary, blocks)


def _message(summary: str, blocks: list[Block]) -> dict[str, Any]:
    return {"text": clip(text(summary), MESSAGE_TEXT), "blocks": [block.to_dict() for block in blocks]}


def option_blocks(option: Recommendation) -> list[Block]:
    """One option: its figures as a section's fields, then its why."""
    title = f"*{option.rank}. {wording.gpus(option, text)}*"
    return [
        SectionBlock(text=_mrkdwn(title, SECTION_TEXT), fields=_figures(option)),
        _section(f"*Why:* {text(option.why)}"),
    ]


def choice_blocks(choice: ComparedChoice, *, best: bool) -> list[Block]:
    """One choice of a comparison: its verdict, and the plan's figures when one passes."""
    title = f"*{wording.choice_label(choice, text)}*" + (" (best)" if best else "")
    verdict = f"{title}\n{text(choice.verdict)}"
    if choice.option is None:
        return [DividerBlock(), _section(verdict)]
    return [DividerBlock(), SectionBlock(text=_mrkdwn(verdict, SECTION_TEXT), fields=_figures(choice.option))]


def _figures(option: Recommendation) -> list[MarkdownTextObject]:
    fields = [
        ("GPUs", wording.gpus(option, text)),
        ("How to get them", wording.how_to_get(option, code)),
        ("Memory per GPU", wording.memory(option)),
        ("Speed", wording.speed(option)),
        ("Cost", wording.cost(option)),
        ("Plan", wording.plan(option, text)),
        ("Prices as of", option.price_as_of or "owned: no prices"),
    ]
    return [_mrkdwn(f"*{name}*\n{value}", FIELD_TEXT) for name, value in fields][:SECTION_FIELDS]


def _closing(response: RecommendResponse | CompareResponse) -> list[Block]:
    tail: list[Block] = []
    if response.warnings:
        warned = "\n".join(f"• {text(warning)}" for warning in response.warnings)
        tail.append(_section(f"*Warnings*\n{warned}"))
    tail.append(ContextBlock(elements=[_mrkdwn(text(wording.prices_line(response)), CONTEXT_TEXT)]))
    return tail


def _options(options: list[Recommendation], room: int) -> list[Block]:
    """Each option's blocks, a divider before each when there is room for them, and as many options
    as fit in `room` blocks (one kept for a line naming those left out)."""
    per_option = [option_blocks(option) for option in options]
    needed = sum(len(blocks) for blocks in per_option)
    if needed + len(options) <= room:
        return [block for blocks in per_option for block in [DividerBlock(), *blocks]]
    if needed <= room:
        return [block for blocks in per_option for block in blocks]
    shown: list[Block] = []
    for count, blocks in enumerate(per_option):
        if len(shown) + len(blocks) > room - 1:
            left = len(options) - count
            note = f"…and {left} more option{'s' if left > 1 else ''}: ask for the JSON answer to see all."
            return [*shown, ContextBlock(elements=[_mrkdwn(note, CONTEXT_TEXT)])]
        shown += blocks
    return shown


def _header(title: str) -> HeaderBlock:
    return HeaderBlock(text=PlainTextObject(text=clip(title, HEADER_TEXT), emoji=False))


def _section(mrkdwn: str) -> SectionBlock:
    """A section of mrkdwn whose data is escaped already (`text`, `code`)."""
    return SectionBlock(text=_mrkdwn(mrkdwn, SECTION_TEXT))


def _ruled_out(response: RecommendResponse) -> str:
    lines = [
        f"• {rejected.gpu_count} x {code(rejected.gpu)} ({rejected.acquisition}): {text(rejected.reason)}"
        for rejected in response.rejected
    ]
    return "*Ruled out*\n" + "\n".join(lines)


def _mrkdwn(mrkdwn: str, limit: int) -> MarkdownTextObject:
    return MarkdownTextObject(text=clip(mrkdwn, limit))
