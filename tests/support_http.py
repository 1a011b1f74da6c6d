"""What every error answer of the service must be, whatever the client sent."""

from __future__ import annotations

import json

import httpx

from engine.knowledge.paths import PROJECT_ROOT


def assert_clean_error(response: httpx.Response, status: int) -> str:
    """`response` has `status` and a JSON body with a `detail`, in UTF-8, showing no traceback and
    no file of the service; returns the body's text."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    text = response.content.decode("utf-8")  # strict: a lone surrogate cannot have been encoded
    assert "detail" in json.loads(text)
    assert "Traceback" not in text and ".py" not in text and str(PROJECT_ROOT) not in text
    return text
