"""The chat formats of a `POST /recommend` answer (`?format=slack`, `?format=markdown`), as the
OpenAPI document states them; engine/answer/chat/ builds them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

AnswerFormat = Literal["json", "slack", "markdown"]


class SlackMessage(BaseModel):
    """`POST /recommend?format=slack`: a Slack message body, ready for `chat.postMessage` or a slash
    command's response (https://api.slack.com/reference/block-kit/blocks)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="the summary, shown in notifications and where blocks cannot be")
    blocks: list[dict[str, Any]] = Field(
        max_length=50,
        description="Block Kit blocks: a header, the summary, each option's figures (a section's fields) "
        "and its why, the warnings, and a context line with the KB version and the age of the prices",
    )
