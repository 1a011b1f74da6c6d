"""Error bodies: every client error names what is wrong; nothing else escapes as a traceback.

422s keep FastAPI's validation shape (`detail[].loc` names the field), so a request that is
well-formed but names an id the KB lacks looks to a client exactly like a schema error.

Every error body can be encoded, whatever client text it repeats: a JSON string may spell a lone
UTF-16 surrogate (`"\\ud800"`), which no UTF-8 text can hold (RFC 3629 §3; RFC 8259 §8.2 leaves
its meaning open), so each one is reported back as the six characters of its escape.

What an error body repeats of the request is a preview, bounded in depth, length and count
(`preview`): a value nested hundreds deep or a list of thousands of wrong items is answered in a few
hundred bytes, and the repetition itself can never recurse past Python's stack. What the service
logs of a request is bounded the same way (`ContainErrors`): one line per fault, the traceback only
the first time a fault is met at that place in the code.
"""

from __future__ import annotations

import logging
import math
import traceback
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.admission import Admission, Overloaded
from engine.recommend import DeadlineExceeded, InvalidRequest, UnknownReference

log = logging.getLogger("gpu_advisor.api")

PREVIEW_DEPTH = 4
"""containers deeper than this in an echoed value are shown as their kind and size"""
PREVIEW_ITEMS = 8
"""items shown of an echoed list or mapping"""
PREVIEW_CHARS = 120
"""characters shown of an echoed string"""
MESSAGE_CHARS = 600
"""characters shown of an error message (the service's words, which may quote the request)"""
MAX_ERRORS = 20
"""validation errors listed in one 422; a body with more gets the first ones and a count"""
MAX_LOC = 16
"""parts of an error's `loc` shown"""
INTERNAL_ERROR = "internal error; it has been logged. Please report it."


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(InvalidRequest, invalid_request)
    app.add_exception_handler(ClientDisconnect, client_gone)
    app.add_exception_handler(Overloaded, overloaded)
    app.add_exception_handler(DeadlineExceeded, too_late)
    app.add_middleware(ContainErrors)


class ErrorResponse(JSONResponse):
    """An error body, made JSON-safe first: a NaN or a lone surrogate the request sent is reported
    back, not a crash of the encoder (JSON has no NaN; UTF-8 has no lone surrogates)."""

    def render(self, content: Any) -> bytes:
        return super().render(_json_safe(content))


async def validation_error(request: Request, exc: Exception) -> ErrorResponse:
    """FastAPI's 422 body, with each error's `loc`, `msg`, `type` and the `input` it refused."""
    assert isinstance(exc, RequestValidationError)
    found = exc.errors()
    errors = [
        {"loc": _loc(error["loc"]), "msg": _text(str(error["msg"]), MESSAGE_CHARS), "type": error["type"]}
        | ({"input": preview(error["input"])} if "input" in error else {})
        for error in found[:MAX_ERRORS]
    ]
    if len(found) > MAX_ERRORS:
        errors.append(
            {
                "loc": ["body"],
                "msg": f"{len(found) - MAX_ERRORS} more errors not listed; fix these first",
                "type": "too_many_errors",
            }
        )
    return ErrorResponse(status_code=422, content={"detail": errors})


async def invalid_request(request: Request, exc: Exception) -> ErrorResponse:
    assert isinstance(exc, InvalidRequest)
    kind = "unknown_reference" if isinstance(exc, UnknownReference) else "value_error"
    error = {"loc": _loc(["body", *exc.loc]), "msg": _text(str(exc), MESSAGE_CHARS), "type": kind}
    return ErrorResponse(status_code=422, content={"detail": [error]})


async def http_error(request: Request, exc: Exception) -> ErrorResponse:
    """A 4xx raised by a route or the framework (404 for an unknown id, 405, 413, 415...)."""
    assert isinstance(exc, HTTPException)
    return ErrorResponse(status_code=exc.status_code, content={"detail": exc.detail}, headers=exc.headers)


async def client_gone(request: Request, exc: Exception) -> ErrorResponse:
    """The client closed the connection before its body arrived: nobody reads the answer, and it is
    no fault of the service (logged at debug level only)."""
    log.debug("client disconnected before its body arrived on %s %s", request.method, request.url.path)
    return ErrorResponse(status_code=400, content={"detail": "the client disconnected mid-body"})


async def overloaded(request: Request, exc: Exception) -> ErrorResponse:
    """Load shed: the worker's queue is full (api/admission.py)."""
    assert isinstance(exc, Overloaded)
    headers = {"Retry-After": str(exc.retry_after_s)}
    return ErrorResponse(status_code=503, content={"detail": str(exc)}, headers=headers)


async def too_late(request: Request, exc: Exception) -> ErrorResponse:
    """The answer was not done within the service's time limit (api/admission.py)."""
    admission: Admission = request.app.state.admission
    retry = admission.retry_after_s()
    detail = (
        f"the answer could not be finished within the service's {admission.deadline_s:g} s limit; "
        f"retry in {retry} s, or ask for less (a smaller top_k)"
    )
    log.warning("%s %s passed the %g s deadline", request.method, request.url.path, admission.deadline_s)
    return ErrorResponse(status_code=503, content={"detail": detail}, headers={"Retry-After": str(retry)})


class ContainErrors:
    """The last line of defence, inside Starlette's ServerErrorMiddleware: an exception no handler
    took is answered 500 without its traceback and logged in one bounded line, with the traceback
    only the first time a fault is met at that place in the code. (Left to Starlette, the exception is
    re-raised to the server, which logs its whole traceback again: two tracebacks per request, 282 KB
    for a RecursionError.) Thereby a client that can trigger a fault cannot flood the log with it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: set[tuple[str, str, int]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked_send)
        except Exception as exc:  # the point of this middleware: whatever no handler took
            self.log(scope, exc)
            if not started:
                await ErrorResponse(status_code=500, content={"detail": INTERNAL_ERROR})(scope, receive, send)

    def log(self, scope: Scope, exc: BaseException) -> None:
        where = _where(exc)
        first = where not in self.seen
        if first and len(self.seen) < 1024:  # bounded: a fault's places in the code are few
            self.seen.add(where)
        summary = _text(f"{type(exc).__name__}: {exc}", MESSAGE_CHARS)
        method, path = scope.get("method", "?"), _text(str(scope.get("path", "?")))
        if first:
            frames = "".join(traceback.format_tb(exc.__traceback__, limit=-8))[-4000:]
            log.error(
                "unhandled error on %s %s: %s (first at %s:%d)\n%s", method, path, summary, *where[1:], frames
            )
        else:
            log.error("unhandled error on %s %s: %s (again at %s:%d)", method, path, summary, *where[1:])


def _where(exc: BaseException) -> tuple[str, str, int]:
    """The exception's kind and the innermost line it was raised at."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code if tb is not None else None
    return type(exc).__name__, code.co_filename if code else "?", tb.tb_lineno if tb is not None else 0


def preview(value: Any, depth: int = 0) -> Any:
    """`value` as JSON can carry it, cut to a preview: strings to PREVIEW_CHARS, lists and mappings to
    PREVIEW_ITEMS items and PREVIEW_DEPTH levels (deeper ones become a word of their kind and size)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf"
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if abs(value) < 10**18 else _text(str(value))
    if isinstance(value, dict):
        if depth >= PREVIEW_DEPTH:
            return f"<an object of {len(value)} keys>"
        items = list(value.items())
        shown = {_text(str(k)): preview(v, depth + 1) for k, v in items[:PREVIEW_ITEMS]}
        if len(items) > PREVIEW_ITEMS:
            shown["..."] = f"{len(items) - PREVIEW_ITEMS} more keys"
        return shown
    if isinstance(value, list | tuple):
        if depth >= PREVIEW_DEPTH:
            return f"<a list of {len(value)} items>"
        listed = [preview(v, depth + 1) for v in value[:PREVIEW_ITEMS]]
        return listed + (
            [f"... {len(value) - PREVIEW_ITEMS} more items"] if len(value) > PREVIEW_ITEMS else []
        )
    return _text(str(value))


def _loc(loc: Any) -> list[Any]:
    parts = [part if isinstance(part, int) else _text(str(part)) for part in loc]
    return parts if len(parts) <= MAX_LOC else [*parts[: MAX_LOC - 1], f"... {len(parts) - MAX_LOC + 1} more"]


def _text(text: str, limit: int = PREVIEW_CHARS) -> str:
    """`text` cut to `limit` characters, with each lone surrogate written as its escape."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text if text.isascii() else _escape_surrogates(text)


def _json_safe(value: Any) -> Any:
    """`value` with what JSON or UTF-8 cannot carry made text: error bodies are built by this module
    (their echoes already previews), so the depth here is a few levels."""
    if isinstance(value, str):
        return value if value.isascii() else _escape_surrogates(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf"
    if isinstance(value, dict):
        return {_json_safe(str(k)): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, int | float | bool):
        return value
    return _json_safe(str(value))


def _escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its escape: U+D800 becomes the text `\\ud800`."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
