"""Every error body can be sent, whatever client text it repeats: a lone UTF-16 surrogate (which
UTF-8 cannot encode) comes back as the text of its escape, and is never a 500 (api/errors.py)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.errors import ErrorResponse
from engine.recommend import Advisor
from tests.support_http import assert_clean_error

pytestmark = pytest.mark.usefixtures("nothing_logged_as_an_error")

SURROGATES = [
    # (case, raw JSON body, the loc the 422 must name): JSON escapes, so the body itself is ASCII
    ("in a value", r'{"workload": {"task": "inference", "model": "\ud800"}}', ["body", "workload", "model"]),
    (
        "low, in a value",
        r'{"workload": {"task": "inference", "model": "x\udfff"}}',
        ["body", "workload", "model"],
    ),
    (
        "reversed pair",
        r'{"workload": {"task": "inference", "model": "\udc00\ud800"}}',
        ["body", "workload", "model"],
    ),
    ("in an enum", r'{"workload": {"task": "\ud800"}}', ["body", "workload", "task"]),
    (
        "in a list",
        r'{"workload": {"task": "inference", "params_b": 7}, "constraints": {"providers": ["\ud800"]}}',
        ["body", "constraints", "providers", 0],
    ),
    ("in a top-level key", r'{"\ud800": 1, "workload": {"task": "inference", "params_b": 7}}', ["body"]),
    (
        "in a nested key",
        r'{"workload": {"task": "inference", "params_b": 7, "\ud800x": 1}}',
        ["body", "workload"],
    ),
    (
        "in a key and its value",
        r'{"workload": {"task": "inference", "params_b": 7}, "constraints": {"\udbff": "\udbff"}}',
        ["body", "constraints"],
    ),
]


@pytest.mark.parametrize(("case", "raw", "loc"), SURROGATES, ids=[case for case, _, _ in SURROGATES])
def test_a_lone_surrogate_is_a_422_that_shows_its_escape(
    client: TestClient, case: str, raw: str, loc: list[object]
) -> None:
    response = client.post("/recommend", content=raw.encode(), headers={"content-type": "application/json"})
    text = assert_clean_error(response, 422)
    assert loc in [error["loc"] for error in response.json()["detail"]]
    assert "\\\\ud" in text  # in JSON, the six characters of the escape: a backslash, then "ud..."


@pytest.mark.parametrize(
    "path",
    [
        "/gpus/%ED%A0%80",  # U+D800 as UTF-8 bytes, percent-encoded
        "/models/%ED%B0%80x",
        "/rules/%FF",
        "/offers?gpu=%ED%A0%80",
        "/offers?provider=%ED%A0%80%FF",
        "/gpus/%5Cud800",  # the escape itself, as text
    ],
)
def test_an_unencodable_id_in_a_path_or_query_is_a_404(client: TestClient, path: str) -> None:
    assert_clean_error(client.get(path), 404)


def test_headers_beyond_ascii_are_answered(advisor: Advisor) -> None:
    with TestClient(
        create_app(advisor=advisor, admin_token="s3cret"), raise_server_exceptions=False
    ) as admin:
        refused = admin.post("/admin/reload", headers={"Authorization": b"Bearer \xed\xa0\x80\xff"})
        assert_clean_error(refused, 401)
        odd_type = admin.post(
            "/recommend", content=b"{}", headers={"content-type": b"application/\xed\xa0\x80"}
        )
        assert_clean_error(odd_type, 415)


def test_error_bodies_escape_surrogates_wherever_they_are() -> None:
    """Locations, keys and messages too: whatever an error repeats of the request."""
    content = {
        "detail": [
            {"loc": ["body", "\ud800"], "msg": "unknown id '\udfff'", "input": {"\udbff": ["\ud800", 1.5]}}
        ]
    }
    body = json.loads(ErrorResponse(content, status_code=422).body.decode("utf-8"))
    (error,) = body["detail"]
    assert error["loc"] == ["body", "\\ud800"] and error["msg"] == "unknown id '\\udfff'"
    assert error["input"] == {"\\udbff": ["\\ud800", 1.5]}
