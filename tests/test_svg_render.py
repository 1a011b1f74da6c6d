"""The report's charts: each distinct set drawn once, and in the service outside the worker's
interpreter (engine/answer/svg_render.py), where vl-convert's drawing, which holds the GIL for up to
400 ms, cannot stall the event loop and `/healthz` with it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from engine.answer import svg_render
from engine.answer.svg_render import SvgRenderer
from engine.models.request import RecommendRequest
from engine.models.response import RecommendResponse
from engine.planning.deadline import DeadlineExceeded, deadline_in
from engine.recommend import Advisor

SERVING_70B = {"workload": {"task": "inference", "model": "llama-3-1-70b"}, "top_k": 3}


@pytest.fixture(scope="module")
def answer(advisor: Advisor) -> RecommendResponse:
    return advisor.recommend(RecommendRequest.model_validate(SERVING_70B))


def test_the_service_draws_its_charts_outside_the_worker() -> None:
    """A worker that answered a report has imported neither Vega-Altair nor vl-convert."""
    script = textwrap.dedent(
        """
        import sys
        from fastapi.testclient import TestClient
        from api.app import create_app
        with TestClient(create_app()) as client:
            body = {"workload": {"task": "inference", "model": "mistral-7b"}}
            page = client.post("/report", json=body).text
        print(page.count("<svg"), "altair" in sys.modules, "vl_convert" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["3", "False", "False"], done.stderr


def test_equal_answers_are_drawn_once(answer: RecommendResponse, monkeypatch: pytest.MonkeyPatch) -> None:
    drawings: list[object] = []
    draw = svg_render.draw
    monkeypatch.setattr(svg_render, "draw", lambda payload: drawings.append(payload) or draw(payload))
    renderer = SvgRenderer()
    first = renderer.draw(answer, 36, 3)
    again = renderer.draw(answer.model_copy(update={"request_id": "another"}), 36, 3)
    assert first == again and len(drawings) == 1
    renderer.draw(answer, 12, 3)  # another horizon: another break-even chart
    assert len(drawings) == 2


def test_the_cache_keeps_within_its_bytes(answer: RecommendResponse) -> None:
    one = sum(len(svg or "") for _, svg in SvgRenderer().draw(answer, 12, 3))
    renderer = SvgRenderer(cache_bytes=int(one * 1.5))  # room for one set of charts, not two
    for months in (12, 24, 36):
        renderer.draw(answer, months, 3)
    assert len(renderer._kept) == 1 and renderer._kept_bytes <= renderer.cache_bytes


def test_a_renderer_that_died_is_started_again(answer: RecommendResponse) -> None:
    renderer = SvgRenderer()
    renderer.draw_apart()
    try:
        drawn = renderer.draw(answer, 36, 3)
        assert renderer._child is not None
        renderer._child.kill()
        renderer._child.wait()
        renderer._kept.clear()
        assert renderer.draw(answer, 36, 3) == drawn
    finally:
        renderer.close()


def test_a_drawing_past_the_deadline_stops_and_the_next_one_is_drawn(answer: RecommendResponse) -> None:
    renderer = SvgRenderer()
    renderer.draw_apart()
    try:
        with deadline_in(0.0), pytest.raises(DeadlineExceeded):
            renderer.draw(answer, 36, 3)
        assert renderer._child is None  # stopped: its late answer must not be read as the next one's
        assert [name for name, _ in renderer.draw(answer, 36, 3)] == ["cost-time", "break-even", "memory"]
    finally:
        renderer.close()
