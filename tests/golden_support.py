"""Golden requests (tests/golden/<name>.request.json) and their recorded answers."""

from __future__ import annotations

import json
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine.models.request import RecommendRequest
from engine.models.response import RecommendResponse
from engine.recommend import Advisor, default_advisor

GOLDEN = Path(__file__).parent / "golden"
VOLATILE = ("request_id", "kb_version")
"""Fields that change on every call or every KB edit, left out of the recorded answers."""


def golden_names() -> list[str]:
    return sorted(path.name.removesuffix(".request.json") for path in GOLDEN.glob("*.request.json"))


def golden_request(name: str) -> RecommendRequest:
    text = (GOLDEN / f"{name}.request.json").read_text(encoding="utf-8")
    return RecommendRequest.model_validate_json(text)


@cache
def golden_answer(name: str) -> RecommendResponse:
    return advisor().recommend(golden_request(name))


GOLDEN_DAY = date(2026, 11, 26)
"""the day golden answers are recorded on: the age of the prices they use is counted from it"""


def advisor() -> Advisor:
    """The embedded KB's advisor on GOLDEN_DAY (a copy: the shared advisor keeps today)."""
    return default_advisor().on_day(lambda: GOLDEN_DAY)


def recorded(response: BaseModel) -> dict[str, Any]:
    data = response.model_dump(mode="json")
    for field in VOLATILE:
        data.pop(field)
    return data


def as_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"
