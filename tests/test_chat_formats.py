"""`POST /recommend?format=slack|markdown`: the answer as a Slack Block Kit message within Slack's
published limits (https://api.slack.com/reference/block-kit/blocks) and as Markdown, for every golden
request; recorded outputs for a few of them (`python3 scripts/dev.py golden`
rewrites them); the JSON answer unchanged by the new parameter."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from engine.answer.chat.markdown import markdown
from engine.answer.chat.slack import slack_message
from engine.answer.chat.wording import ELLIPSIS, clip
from engine.models.chat import SlackMessage
from engine.models.response import RecommendResponse
from tests.golden_support import GOLDEN, advisor, golden_answer, golden_names, golden_request

RECORDED = ("serve-70b-fleet-1000-rpm", "high-utilization-buys", "budget-too-small")
"""golden requests whose chat formats are recorded in tests/golden (<name>.slack.json, <name>.md)"""

# Slack's limits (https://api.slack.com/reference/block-kit/blocks)
MAX_BLOCKS, HEADER_TEXT, SECTION_TEXT, FIELDS, FIELD_TEXT, CONTEXT_ELEMENTS = 50, 150, 3000, 10, 2000, 10


def steady(answer: RecommendResponse) -> RecommendResponse:
    """The answer without what changes on every KB edit, as the golden recordings leave it out."""
    return answer.model_copy(update={"kb_version": "KB", "request_id": "REQUEST"})


def assert_within_slack_limits(message: dict[str, Any]) -> None:
    SlackMessage.model_validate(message)
    blocks = message["blocks"]
    assert 0 < len(blocks) <= MAX_BLOCKS
    assert len(message["text"]) <= SECTION_TEXT
    for block in blocks:
        kind = block["type"]
        if kind == "header":
            assert block["text"]["type"] == "plain_text"
            assert len(block["text"]["text"]) <= HEADER_TEXT
        elif kind == "section":
            assert len(block["text"]["text"]) <= SECTION_TEXT
            assert len(block.get("fields", [])) <= FIELDS
            assert all(len(field["text"]) <= FIELD_TEXT for field in block.get("fields", []))
        elif kind == "context":
            assert 0 < len(block["elements"]) <= CONTEXT_ELEMENTS
            assert all(len(element["text"]) <= SECTION_TEXT for element in block["elements"])
        else:
            assert kind == "divider", kind


@pytest.mark.parametrize("name", golden_names())
def test_the_slack_message_of_every_golden_answer_is_within_slack_limits(name: str) -> None:
    answer = golden_answer(name)
    message = slack_message(answer)
    assert_within_slack_limits(message)
    blocks = message["blocks"]
    assert blocks[0]["type"] == "header" and blocks[-1]["type"] == "context"
    context = blocks[-1]["elements"][0]["text"]
    assert answer.kb_version in context and f"prices as of {answer.prices_as_of}" in context
    if answer.oldest_price_as_of:
        assert f"oldest price as of {answer.oldest_price_as_of}" in context
    with_fields = [block for block in blocks if block.get("fields")]
    assert len(with_fields) == len(answer.recommendations)
    for block, option in zip(with_fields, answer.recommendations, strict=True):
        names = [field["text"].split("\n")[0] for field in block["fields"]]
        assert names[:5] == ["*GPUs*", "*How to get them*", "*Memory per GPU*", "*Speed*", "*Cost*"]
        assert block["text"]["text"].startswith(f"*{option.rank}. {option.gpu_count} x ")
    whys = [block for block in blocks if block.get("text", {}).get("text", "").startswith("*Why:*")]
    assert len(whys) == len(answer.recommendations)


@pytest.mark.parametrize("name", golden_names())
def test_the_markdown_of_every_golden_answer_has_a_heading_and_a_section_per_option(name: str) -> None:
    answer = golden_answer(name)
    text = markdown(answer)
    lines = text.splitlines()
    assert lines[0].startswith("# GPU advice: " if answer.target_fit is None else "# GPU advice on ")
    assert [line for line in lines if line.startswith("# ")] == [lines[0]]
    sections = [line for line in lines if re.match(r"## \d+\. ", line)]
    assert sections == [
        f"## {o.rank}. {o.gpu_count} x {o.gpu_name}" + _nodes(o.nodes) for o in answer.recommendations
    ]
    assert text.count("**Why:** ") == len(answer.recommendations)
    assert lines[-1] == f"_kb {answer.kb_version} · prices as of {answer.prices_as_of}" + (
        f" · oldest price as of {answer.oldest_price_as_of}_" if answer.oldest_price_as_of else "_"
    )
    assert text.count("`") % 2 == 0  # every code span closed


def _nodes(count: int) -> str:
    return f" on {count} nodes" if count > 1 else ""


def test_long_text_and_many_options_are_cut_cleanly_to_the_limits() -> None:
    answer = golden_answer("serve-70b-fp16")
    long = "word " * 2000
    options = [
        option.model_copy(
            update={"rank": rank, "why": long, "gpu_name": "G" * 3000, "instance_type": "i" * 3000}
        )
        for rank, option in enumerate(answer.recommendations * 2, start=1)
    ]
    huge = answer.model_copy(update={"summary": long, "recommendations": options, "warnings": [long] * 30})
    message = slack_message(huge)
    assert_within_slack_limits(message)
    texts = [block["text"]["text"] for block in message["blocks"] if "text" in block]
    assert all(text.endswith(ELLIPSIS) for text in texts)  # the header, summary, titles, whys, warnings
    # 20 options take 40 blocks, beside the header, summary, warnings and context: no room for dividers
    assert len(message["blocks"]) == 44 and all(block["type"] != "divider" for block in message["blocks"])
    assert "…and " not in json.dumps(message, ensure_ascii=False)
    more = huge.model_copy(update={"recommendations": options * 2})
    crowded = slack_message(more)
    assert_within_slack_limits(crowded)
    note = "…and 18 more options: ask for the JSON answer to see all."  # 22 options shown of 40
    assert crowded["blocks"][-3]["elements"][0]["text"] == note


def test_clip_cuts_at_a_word_and_never_inside_an_entity() -> None:
    assert clip("short", 10) == "short"
    assert clip("one two three four five", 16) == "one two three…"  # a word boundary near the end
    assert clip("one two three four five", 12) == "one two thr…"  # none near: cut inside the word
    assert clip("x" * 20, 10) == "x" * 9 + ELLIPSIS
    assert clip("a" * 8 + "&amp;b", 11) == "a" * 8 + ELLIPSIS
    assert all(len(clip("word " * 500, limit)) <= limit for limit in (1, 2, 10, 150, 2000))


def test_slack_text_is_escaped_as_slack_asks() -> None:
    answer = golden_answer("serve-7b-batch-1")
    option = answer.recommendations[0].model_copy(update={"why": "cost < $5 & speed > 10"})
    message = slack_message(answer.model_copy(update={"recommendations": [option]}))
    assert "*Why:* cost &lt; $5 &amp; speed &gt; 10" in json.dumps(message)


@pytest.mark.parametrize("name", RECORDED)
def test_chat_formats_match_the_recordings(name: str, request: pytest.FixtureRequest) -> None:
    answer = steady(golden_answer(name))
    outputs = {
        GOLDEN / f"{name}.slack.json": json.dumps(slack_message(answer), indent=1, ensure_ascii=False) + "\n",
        GOLDEN / f"{name}.md": markdown(answer),
    }
    for path, text in outputs.items():
        if request.config.getoption("--update-golden"):
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"no recording {path.name}: run python3 scripts/dev.py golden"
        assert text == path.read_text(encoding="utf-8"), path.name


@pytest.fixture(scope="module")
def service() -> Iterator[TestClient]:
    with TestClient(create_app(advisor=advisor())) as client:
        yield client


def _without_request_id(body: bytes) -> bytes:
    return re.sub(rb'"request_id":"[^"]*"', b'"request_id":""', body)


@pytest.mark.parametrize("name", ["serve-7b-batch-1", "budget-too-small"])
def test_the_json_answer_is_the_default_and_unchanged(service: TestClient, name: str) -> None:
    body = json.loads(golden_request(name).model_dump_json(exclude_unset=True))
    default = service.post("/recommend", json=body)
    as_json = service.post("/recommend?format=json", json=body)
    direct = advisor().recommend(golden_request(name)).model_dump_json().encode()
    assert default.headers["content-type"] == "application/json"
    assert (
        _without_request_id(default.content)
        == _without_request_id(as_json.content)
        == _without_request_id(direct)
    )


def test_the_formats_over_http(service: TestClient) -> None:
    body = json.loads(golden_request("serve-7b-batch-1").model_dump_json(exclude_unset=True))
    slack = service.post("/recommend?format=slack", json=body)
    assert slack.status_code == 200 and slack.headers["content-type"] == "application/json"
    assert_within_slack_limits(slack.json())
    text = service.post("/recommend?format=markdown", json=body)
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/markdown")
    assert text.text.startswith("# GPU advice: ")


def test_an_unknown_format_is_a_422_naming_format(service: TestClient) -> None:
    body = json.loads(golden_request("serve-7b-batch-1").model_dump_json(exclude_unset=True))
    answer = service.post("/recommend?format=xml", json=body)
    assert answer.status_code == 422
    assert [error["loc"] for error in answer.json()["detail"]] == [["query", "format"]]


HOSTILE = "*bold* _it_ ~gone~ `tick` <b>x</b> & [link](http://example.com) | # !"
"""text a request or the KB could carry, with every kind of markup both formats read"""


def _hostile(answer: RecommendResponse) -> RecommendResponse:
    options = [
        option.model_copy(
            update={"gpu_name": HOSTILE, "why": HOSTILE, "provider": "p`_*", "platform": HOSTILE}
        )
        for option in answer.recommendations
    ]
    return answer.model_copy(update={"summary": HOSTILE, "warnings": [HOSTILE], "recommendations": options})


def test_markdown_shows_text_from_a_request_or_the_kb_as_text() -> None:
    """Rendered by a CommonMark parser (markdown-it-py), the hostile text stays literal: no emphasis,
    link, HTML or code span comes from it, and every code span the format sets closes."""
    from markdown_it import MarkdownIt

    answer = _hostile(golden_answer("low-utilization-rents"))
    html = MarkdownIt("commonmark").render(markdown(answer))
    literal = HOSTILE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # the title, the summary, the warning, and each option's heading, plan and why
    assert html.count(literal) == 3 + 3 * len(answer.recommendations)
    assert html.count("<em>") == 1  # the closing line's own
    assert "<del>" not in html and "<a " not in html and "<b>" not in html
    assert html.count("<code>p`_*</code>") == len(answer.recommendations)


def test_slack_disarms_every_formatting_character_from_a_request_or_the_kb() -> None:
    answer = _hostile(golden_answer("low-utilization-rents"))
    blocks = slack_message(answer)["blocks"]
    assert blocks[0]["text"]["type"] == "plain_text" and blocks[0]["text"]["text"].endswith(HOSTILE)
    message = json.dumps(blocks[1:], ensure_ascii=False)
    z = "\u200b"  # a zero-width space after each character that could open a format
    disarmed = (
        f"*{z}bold* _{z}it_ ~{z}gone~ `{z}tick`{z} &lt;b&gt;x&lt;/b&gt; &amp; "
        "[link](http://example.com) | # !"
    )
    assert message.count(disarmed) >= 2 + len(answer.recommendations)  # summary, warning, each why
    assert "<b>" not in message and "[link](" in message  # Slack reads no Markdown links
    assert "`p\u02cb_*`" in message  # an id stays one code span


def test_a_target_question_is_headed_by_the_target() -> None:
    answer = golden_answer("finetune-3b-adam-on-rtx-3090")
    assert answer.target_fit is not None
    heading = f"GPU advice on 1 x {answer.target_fit.gpu_name}: the job "
    assert slack_message(answer)["blocks"][0]["text"]["text"].startswith(heading)
    assert markdown(answer).startswith(f"# {heading}")


COMPARE_BODY = {
    "request": {"workload": {"task": "inference", "model": "llama-3.1-8b"}},
    "choices": [{"gpu": "nvidia-rtx-4090", "count": 1}, {"gpu": "nvidia-l4", "count": 1}],
}


def test_compare_speaks_every_format(service: TestClient) -> None:
    as_json = service.post("/compare", json=COMPARE_BODY).json()
    best = as_json["choices"][as_json["best"]]
    slack = service.post("/compare?format=slack", json=COMPARE_BODY)
    assert slack.status_code == 200 and slack.headers["content-type"] == "application/json"
    message = slack.json()
    assert_within_slack_limits(message)
    assert message["blocks"][0]["text"]["text"] == f"GPU comparison: 1 x {best['gpu_name']} is best"
    assert sum(block["type"] == "divider" for block in message["blocks"]) == len(COMPARE_BODY["choices"])
    text = service.post("/compare?format=markdown", json=COMPARE_BODY)
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/markdown")
    sections = [line for line in text.text.splitlines() if line.startswith("## 1 x ")]
    assert sections == [
        f"## 1 x {c['gpu_name']}" + (" (best)" if c is best else "") for c in as_json["choices"]
    ]
    wrong = service.post("/compare?format=slackk", json=COMPARE_BODY)
    assert wrong.status_code == 422
    assert [error["loc"] for error in wrong.json()["detail"]] == [["query", "format"]]


def test_the_report_refuses_a_format_it_cannot_give(service: TestClient) -> None:
    body = json.loads(golden_request("serve-7b-batch-1").model_dump_json(exclude_unset=True))
    refused = service.post("/report?format=pdf", json=body)
    assert refused.status_code == 422
    assert [error["loc"] for error in refused.json()["detail"]] == [["query", "format"]]
