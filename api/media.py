"""Request bodies are JSON in UTF-8; a body that is not gets the status that says which part is wrong.

- Its media type: `application/json` or any `application/*+json` (RFC 6839 §3.1), with no charset
  or `charset=utf-8`, and no content coding. Anything else, a missing Content-Type included, is a
  415 (RFC 9110 §15.5.16) whose `Accept` header and `detail` name what to send. Left to itself,
  FastAPI reads such a body as bytes and answers a 422 about a field the client never sent.
- Its encoding: JSON exchanged between systems is UTF-8 (RFC 8259 §8.1). A body that is not valid
  UTF-8 (a stray byte, an overlong form, an encoded surrogate, UTF-16 or UTF-32) is a 400 naming
  the first bad byte. Python's JSON reader would guess UTF-16 and UTF-32 and pass encoded
  surrogates through; this reads UTF-8 only. A leading byte-order mark is skipped, as RFC 8259 §8.1
  allows.

An empty body is left to validation, which names the missing body as a 422 like any missing field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from email.message import Message
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

from engine.models.views import ErrorDetail

JSON_TYPES = "application/json"

BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorDetail, "description": "the body is not UTF-8 text (RFC 8259 §8.1)"},
    415: {
        "model": ErrorDetail,
        "description": "the body is not sent as `application/json` (or `application/*+json`) in UTF-8",
        "headers": {
            "Accept": {"description": "the media types read", "schema": {"type": "string"}},
            "Accept-Encoding": {"description": "the content codings read", "schema": {"type": "string"}},
        },
    },
}
"""The OpenAPI `responses` of a route whose body `JsonBodyRoute` checks."""


class JsonBodyRoute(APIRoute):
    """A route whose JSON body is checked for its media type and encoding before FastAPI parses it."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def checked(request: Request) -> Response:
            request = Utf8JsonRequest(request.scope, request.receive)
            if await request.body():
                _require_json(request.headers.get("content-type"), request.headers.get("content-encoding"))
            return await handler(request)

        return checked


class Utf8JsonRequest(Request):
    """A request whose body is read as JSON in UTF-8 only."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = json.loads(utf8_text(await self.body()))
        return self._json


def utf8_text(body: bytes) -> str:
    """`body` as text, or an HTTP 400 naming its first byte that UTF-8 JSON text cannot hold."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _not_utf8(body[exc.start], exc.start, exc.reason) from None
    if "\0" in text:  # valid UTF-8, but never in JSON text (RFC 8259 §2, §7): UTF-16 or UTF-32
        raise _not_utf8(0, body.index(b"\0"), "a NUL byte, as in UTF-16 or UTF-32 text")
    return text


def _not_utf8(byte: int, offset: int, reason: str) -> HTTPException:
    return HTTPException(
        400, f"the request body is not valid UTF-8: byte 0x{byte:02x} at offset {offset}: {reason}"
    )


def _require_json(content_type: str | None, content_encoding: str | None) -> None:
    if content_type == JSON_TYPES and content_encoding is None:  # the common case, read without parsing
        return
    if content_type is None:
        raise _unsupported("the request has no Content-Type")
    header = Message()
    header["content-type"] = content_type
    main, sub = header.get_content_maintype(), header.get_content_subtype()
    if main != "application" or not (sub == "json" or sub.endswith("+json")):
        raise _unsupported(f"Content-Type {content_type[:100]!r} is not JSON")
    charset = header.get_content_charset()
    if charset not in (None, "utf-8"):
        raise _unsupported(f"charset={charset[:40]!r} is not read: JSON is UTF-8 (RFC 8259 §8.1)")
    if content_encoding is not None and content_encoding.strip().lower() != "identity":
        raise _unsupported(f"Content-Encoding {content_encoding[:40]!r} is not read: send the body as is")


def _unsupported(why: str) -> HTTPException:
    return HTTPException(
        415,
        f"{why}; send the body as JSON in UTF-8 with Content-Type: application/json",
        headers={"Accept": JSON_TYPES, "Accept-Encoding": "identity"},  # RFC 9110 §12.5.1, §12.5.3
    )
