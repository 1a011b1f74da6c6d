"""A request body is JSON in UTF-8: another media type is a 415, another encoding a 400, each a JSON
body saying what to send (api/media.py)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.support_http import assert_clean_error

pytestmark = pytest.mark.usefixtures("nothing_logged_as_an_error")

BODY = json.dumps({"workload": {"task": "inference", "model": "mistral-7b"}, "top_k": 1})


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "text/json",
        "application/x-www-form-urlencoded",  # what `curl -d` sends unless told otherwise
        "multipart/form-data; boundary=x",
        "application/xml",
        "application/jsonp",
        "application/json; charset=latin-1",
        "application/json; charset=utf-16",
        "not a media type",
        "application/json\xff",
    ],
)
def test_a_body_not_sent_as_json_is_a_415_naming_the_type_to_send(
    client: TestClient, content_type: str | None
) -> None:
    headers = {"content-type": content_type.encode("latin-1")} if content_type is not None else {}
    response = client.post("/recommend", content=BODY.encode(), headers=headers)
    assert "application/json" in assert_clean_error(response, 415)
    assert "application/json" in response.headers["accept"]


def test_a_compressed_body_is_a_415_naming_the_coding_to_send(client: TestClient) -> None:
    response = client.post(
        "/recommend",
        content=BODY.encode(),
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert "gzip" in assert_clean_error(response, 415)
    assert response.headers["accept-encoding"] == "identity"


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "Application/JSON",  # media types are case-insensitive (RFC 9110 §8.3.1)
        "application/json; charset=utf-8",
        'application/json;charset="UTF-8"',
        "application/vnd.gpu-advisor+json",  # a structured syntax suffix (RFC 6839 §3.1)
    ],
)
def test_json_is_read_with_any_spelling_of_its_media_type(client: TestClient, content_type: str) -> None:
    response = client.post("/recommend", content=BODY.encode(), headers={"content-type": content_type})
    assert response.status_code == 200, response.text


def test_an_empty_body_is_a_422_naming_the_body(client: TestClient) -> None:
    response = client.post("/recommend")
    assert_clean_error(response, 422)
    assert response.json()["detail"][0]["loc"] == ["body"]


PREFIX = b'{"workload": {"task": "inference", "model": "'
NOT_UTF8 = [
    # (case, body, offset of the first byte UTF-8 cannot hold)
    ("stray byte", PREFIX + b'\xff"}}', len(PREFIX)),
    ("Latin-1", '{"workload": {"task": "inférence"}}'.encode("latin-1"), len(b'{"workload": {"task": "inf')),
    ("overlong slash", PREFIX + b'\xc0\xaf"}}', len(PREFIX)),
    ("overlong NUL", PREFIX + b'\xe0\x80\x80"}}', len(PREFIX)),
    ("encoded surrogate", PREFIX + b'\xed\xa0\x80"}}', len(PREFIX)),
    ("truncated sequence", PREFIX + b"\xe2\x82", len(PREFIX)),
    ("beyond U+10FFFF", PREFIX + b'\xf4\x90\x80\x80"}}', len(PREFIX)),
    ("UTF-16", BODY.encode("utf-16-le"), 1),
    ("UTF-16 with its BOM", BODY.encode("utf-16"), 0),
    ("UTF-32", BODY.encode("utf-32-be"), 0),
]


@pytest.mark.parametrize(("case", "body", "offset"), NOT_UTF8, ids=[case for case, _, _ in NOT_UTF8])
def test_a_body_not_in_utf8_is_a_400_naming_the_byte(
    client: TestClient, case: str, body: bytes, offset: int
) -> None:
    response = client.post("/recommend", content=body, headers={"content-type": "application/json"})
    text = assert_clean_error(response, 400)
    assert "not valid UTF-8" in text and f"offset {offset}" in text, text


def test_a_leading_byte_order_mark_is_skipped(client: TestClient) -> None:
    """RFC 8259 §8.1 lets a parser ignore one rather than refuse the text."""
    response = client.post(
        "/recommend", content=b"\xef\xbb\xbf" + BODY.encode(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 200, response.text


def test_utf8_beyond_ascii_is_read(client: TestClient) -> None:
    body = '{"workload": {"task": "inference", "model": "mistral-7b", "modèle": "😀"}}'.encode()
    response = client.post("/recommend", content=body, headers={"content-type": "application/json"})
    text = assert_clean_error(response, 422)
    assert response.json()["detail"][0]["loc"] == ["body", "workload", "modèle"] and "😀" in text


def test_the_openapi_document_lists_these_answers(client: TestClient) -> None:
    responses = client.get("/openapi.json").json()["paths"]["/recommend"]["post"]["responses"]
    assert {"400", "413", "415", "422"} <= set(responses)
    assert {"Accept", "Accept-Encoding"} <= set(responses["415"]["headers"])
