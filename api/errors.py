"""Error bodies: every client error names what is wrong; nothing else escapes as a traceback.

422s keep FastAPI's validation shape (`detail[].loc` names the field), so a request that is
well-formed but names an id the KB lacks looks to a client exactly like a schema error.

Every error body can be encoded, whatever client text it repeats: a JSON string may spell a lone
UTF-16 surrogate (`"\\ud800"`), which no UTF-8 text can hold (RFC 3629 §3; RFC 8259 §8.2 leaves
its meaning open), so each one is reported back as the six characters of its escape.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from engine.planning.workload import InvalidRequest, UnknownReference

log = logging.getLogger("gpu_advisor.api")


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(InvalidRequest, invalid_request)
    app.add_exception_handler(Exception, internal_error)


class ErrorResponse(JSONResponse):
    """An error body, made JSON-safe first: a NaN or a lone surrogate the request sent is reported
    back, not a crash of the encoder (JSON has no NaN; UTF-8 has no lone surrogates)."""

    def render(self, content: Any) -> bytes:
        return super().render(_json_safe(content))


async def validation_error(request: Request, exc: Exception) -> ErrorResponse:
    """FastAPI's 422 body, with each error's `loc`, `msg`, `type` and the `input` it refused."""
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(error["loc"]), "msg": error["msg"], "type": error["type"]}
        | ({"input": error["input"]} if "input" in error else {})
        for error in exc.errors()
    ]
    return ErrorResponse(status_code=422, content={"detail": errors})


async def invalid_request(request: Request, exc: Exception) -> ErrorResponse:
    assert isinstance(exc, InvalidRequest)
    kind = "unknown_reference" if isinstance(exc, UnknownReference) else "value_error"
    error = {"loc": ["body", *exc.loc], "msg": str(exc), "type": kind}
    return ErrorResponse(status_code=422, content={"detail": [error]})


async def http_error(request: Request, exc: Exception) -> ErrorResponse:
    """A 4xx raised by a route or the framework (404 for an unknown id, 405, 413, 415...)."""
    assert isinstance(exc, HTTPException)
    return ErrorResponse(status_code=exc.status_code, content={"detail": exc.detail}, headers=exc.headers)


async def internal_error(request: Request, exc: Exception) -> ErrorResponse:
    """The last line of defence: log the traceback here, answer without it."""
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return ErrorResponse(
        status_code=500, content={"detail": "internal error; it has been logged. Please report it."}
    )


def _json_safe(value: Any) -> Any:
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
