"""A `RecommendResponse` as a Slack message: Block Kit blocks built with slack_sdk's models, within
Slack's published limits (https://api.slack.com/reference/block-kit/blocks): at most 50 blocks per
message; a header's text at most 150 characters; a section's text at most 3000, its fields at most 10
of at most 2000 characters each; a context block at most 10 elements. Longer text is cut at a word
with an ellipsis; options that would not fit in 50 blocks are left out with a line saying so.

slack_sdk's `to_dict()` checks the header, section and context limits itself and raises
`SlackObjectFormationError` past one; the per-field and per-message limits are kept here.
"""

from __future__ import annotations

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


def slack_message(response: RecommendResponse) -> dict[str, Any]:
    """The message body for `chat.postMessage` or a slash command's response: `text` (the
    notification's fallback) and `blocks`."""
    head = [_header(response), _section(response.summary)]
    if response.relaxation is not None and response.relaxation.message not in response.summary:
        head.append(_section(f"*To make it feasible:* {response.relaxation.message}"))
    if not response.recommendations and response.rejected:
        head.append(_section(_ruled_out(response)))
    tail: list[Block] = []
    if response.warnings:
        tail.append(_section("*Warnings*\n" + "\n".join(f"• {warning}" for warning in response.warnings)))
    tail.append(ContextBlock(elements=[_mrkdwn(wording.prices_line(response), CONTEXT_TEXT)]))
    blocks = head + _options(response.recommendations, MAX_BLOCKS - len(head) - len(tail)) + tail
    return {
        "text": clip(_escaped(response.summary), MESSAGE_TEXT),
        "blocks": [block.to_dict() for block in blocks],
    }


def option_blocks(option: Recommendation) -> list[Block]:
    """One option: its figures as a section's fields, then its why."""
    fields = [
        ("GPUs", wording.gpus(option)),
        ("How to get them", wording.how_to_get(option)),
        ("Memory per GPU", wording.memory(option)),
        ("Speed", wording.speed(option)),
        ("Cost", wording.cost(option)),
        ("Plan", wording.plan(option)),
        ("Prices as of", option.price_as_of or "owned: no prices"),
    ]
    title = f"*{option.rank}. {_escaped(wording.gpus(option))}*"
    texts = [_mrkdwn(f"*{name}*\n{_escaped(value)}", FIELD_TEXT, escape=False) for name, value in fields]
    return [
        SectionBlock(text=_mrkdwn(title, SECTION_TEXT, escape=False), fields=texts[:SECTION_FIELDS]),
        _section(f"*Why:* {option.why}"),
    ]


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


def _header(response: RecommendResponse) -> HeaderBlock:
    return HeaderBlock(text=PlainTextObject(text=clip(wording.title(response), HEADER_TEXT), emoji=False))


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=_mrkdwn(text, SECTION_TEXT))


def _ruled_out(response: RecommendResponse) -> str:
    lines = [
        f"• {rejected.gpu_count} x `{rejected.gpu}` ({rejected.acquisition}): {rejected.reason}"
        for rejected in response.rejected
    ]
    return "*Ruled out*\n" + "\n".join(lines)


def _mrkdwn(text: str, limit: int, *, escape: bool = True) -> MarkdownTextObject:
    return MarkdownTextObject(text=clip(_escaped(text) if escape else text, limit))


def _escaped(text: str) -> str:
    """Text with the three characters Slack's mrkdwn reserves escaped
    (https://api.slack.com/reference/surfaces/formatting#escaping)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
