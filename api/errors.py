"""Error bodies: every client error names what is wrong; nothing else escapes as a traceback.

422s keep FastAPI's validation shape (`detail[].loc` names the field), so a request that is
well-formed but names an id the KB lacks looks to a client exactly like a schema error.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from engine.workload import InvalidRequest, UnknownReference

log = logging.getLogger("gpu_advisor.api")


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(InvalidRequest, invalid_request)
    app.add_exception_handler(Exception, internal_error)


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 body, with each error's `input` made JSON-safe: a NaN the request sent must be
    reported back, not crash the encoder (JSON has no NaN)."""
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"loc": list(error["loc"]), "msg": error["msg"], "type": error["type"]}
        | ({"input": _json_safe(error["input"])} if "input" in error else {})
        for error in exc.errors()
    ]
    return JSONResponse(status_code=422, content={"detail": errors})


async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, InvalidRequest)
    kind = "unknown_reference" if isinstance(exc, UnknownReference) else "value_error"
    error = {"loc": ["body", *exc.loc], "msg": str(exc), "type": kind}
    return JSONResponse(status_code=422, content={"detail": [error]})


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """The last line of defence: log the traceback here, answer without it."""
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return JSONResponse(
        status_code=500, content={"detail": "internal error; it has been logged. Please report it."}
    )


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf"
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
