"""The bench's floor under HTTP's cost (bench/http_cost.py, issue 25's 10% goal) weighs the same work
as the service: its bare ASGI app and the service over recorded answers give the answer the service
gives, byte for byte but the request id, so what they cost is what HTTP costs that answer."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient

from api.app import create_app
from bench.mix import requests
from engine.recommend import default_advisor
from tests.golden_support import advisor


def answered(app: Any, body: dict[str, Any]) -> dict[str, Any]:
    with TestClient(app) as client:
        response = client.post("/v2/recommend", json=body)
        assert response.status_code == 200, response.text
        found: dict[str, Any] = json.loads(response.content)
        found.pop("request_id")
        return found


def test_the_bare_app_and_the_recorded_service_answer_as_the_service_does() -> None:
    from bench import bare_app, recorded  # each plans the mix once, at import

    bodies = list(requests().values())
    service = create_app(advisor=advisor())
    for body in (bodies[0], bodies[-1]):
        expected = answered(service, body)
        assert answered(recorded.service, body) == expected
        assert answered(bare_app.app, body) == expected
    with TestClient(bare_app.app) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
    # the process's shared advisor still plans: only the bench's copy answers from the recordings
    outside = {"workload": {"task": "inference", "params_b": 3.3}}
    assert answered(create_app(advisor=default_advisor()), outside)["recommendations"]
