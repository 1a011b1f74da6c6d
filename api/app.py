"""The FastAPI application: `create_app()` loads and checks the KB and rules once, at start-up."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from api import admin, errors, metrics
from api.admission import Admission
from api.lifecycle import ServedKB
from api.limits import BodySizeLimit
from api.openapi import kb_aware_openapi
from api.routes import router
from engine.maintenance import paths
from engine.recommend import RENDERER, Advisor

ADMIN_TOKEN_ENV = "GPU_ADVISOR_ADMIN_TOKEN"
WARM_CHARTS_ENV = "GPU_ADVISOR_WARM_CHARTS"
"""set by `serve`: each worker starts its chart process with it, not on its first report"""
MAX_BODY_BYTES = 64 * 1024
"""The largest request body accepted (a 413 beyond): a full `POST /recommend` body is under 4 KB."""

DESCRIPTION = """\
Ranked ML hardware recommendations (GPU x count x interconnect x buy/rent x provider x precision x
parallelism), each with memory per GPU, tokens/s and cost, and a traced justification: which rule
fired, on which facts, citing which source. The model, GPU and provider ids this service knows are
listed as enums in the request schema, and by `GET /models`, `GET /gpus` and `GET /providers`.
"""


def create_app(
    kb_root: Path | None = None,
    *,
    rules_root: Path | None = None,
    advisor: Advisor | None = None,
    admin_token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    admission: Admission | None = None,
) -> FastAPI:
    """The service over `advisor` when the caller has already loaded and checked it, else over the
    KB at `kb_root` and the rules at `rules_root` (defaults: $GPU_ADVISOR_KB / $GPU_ADVISOR_RULES or
    the embedded kb/ and rules/), which must pass every lint check or start-up fails with `KBInvalid`.
    `POST /admin/reload` is mounted only when an admin token is given (or $GPU_ADVISOR_ADMIN_TOKEN).
    Answers are computed within the deadline and queue bound of `admission` (default: from the
    environment `serve` sets, api/admission.py)."""
    rules_at = rules_root or (advisor.rules_root if advisor else None) or paths.rules_dir()
    token = admin_token if admin_token is not None else os.environ.get(ADMIN_TOKEN_ENV) or None
    kb_at = kb_root or (advisor.kb.root if advisor else None) or paths.kb_dir()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            app.state.served.start(advisor)
            # Charts are drawn in a child process: vl-convert holds the GIL while it draws, which
            # would stall the event loop, and /healthz with it (engine/answer/svg_render.py).
            RENDERER.draw_apart(start_now=os.environ.get(WARM_CHARTS_ENV) == "1")
            yield
        finally:  # also when start-up fails: nothing it made is left behind
            app.state.served.stop()
            app.state.admission.close()
            RENDERER.close()

    app = FastAPI(
        title="gpu-advisor",
        summary="What should we run this on? ML hardware recommendations with a traced justification.",
        description=DESCRIPTION,
        version=_version(),
        lifespan=lifespan,
        # No trailing-slash redirects: Starlette builds them from the Host header, so `/gpus/` with
        # `Host: evil.example` would redirect a client to that host. `/gpus/` is a 404 instead.
        redirect_slashes=False,
    )
    if advisor is not None:  # ready before start-up: the OpenAPI document can be read at once
        app.state.advisor = advisor
    app.state.served = ServedKB(app.state, kb_at, rules_at, paths.data_dir())
    app.state.admin_token = token
    app.state.admission = admission or Admission.from_env()
    app.state.kb_changed = lambda: setattr(app, "openapi_schema", None)
    app.include_router(router)
    if token:
        app.include_router(admin.router)
    errors.install(app)
    app.add_middleware(BodySizeLimit, max_bytes=max_body_bytes)
    app.add_middleware(metrics.Observe)  # outermost: counts what the client got, 413s included

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = kb_aware_openapi(app, app.state.advisor.kb)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpu-advisor")
    except PackageNotFoundError:
        return "0+unknown"
