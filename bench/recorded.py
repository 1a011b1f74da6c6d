"""The engine replaced by its recorded answers, to weigh what HTTP itself costs an answer.

Each answer of the bench mix (bench/mix.py) is computed once, as the advisor is made, and looked up
by its request afterwards, so a server built on `recorded_advisor()` does all of an answer's HTTP work
(read the body, validate it, hand it to the engine thread, write the JSON, count and log it) and none
of its engine's. `service` is the service's own app over such an advisor; bench/bare_app.py answers
the same recorded answers through uvicorn with no framework. bench/http_cost.py serves both, one
request at a time."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from fastapi import FastAPI

from api.app import create_app
from bench.mix import requests
from engine.models.request import RecommendRequest
from engine.models.response import RecommendResponse
from engine.recommend import Advisor, default_advisor


def recorded_answers(advisor: Advisor) -> dict[str, RecommendResponse]:
    """The mix's answers by their request's JSON (as `RecommendRequest.model_dump_json` writes it)."""
    found = {}
    for body in requests().values():
        request = RecommendRequest.model_validate(body)
        found[request.model_dump_json()] = advisor.recommend(request)
    return found


def recorded_advisor() -> Advisor:
    """A copy of the default advisor answering the mix's requests from their recorded answers (a
    KeyError for any other request: it serves the bench, nothing else). The default advisor, which the
    process may share, is left as it is."""
    advisor = copy.copy(default_advisor())
    answers = recorded_answers(advisor)

    def recommend(request: RecommendRequest) -> RecommendResponse:
        return answers[request.model_dump_json()]

    advisor.recommend = recommend  # type: ignore[method-assign]
    return advisor


@cache
def _service() -> FastAPI:
    return create_app(advisor=recorded_advisor())


def __getattr__(name: str) -> Any:
    """`service`: the service's app, its engine answering from the recorded answers (`uvicorn
    bench.recorded:service`). Made when first read, so that bench/bare_app.py, which imports
    `recorded_answers` from here, neither builds it nor plans the mix for it."""
    if name == "service":
        return _service()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
