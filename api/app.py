"""The FastAPI application: `create_app()` loads and checks the KB once, at start-up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import date
from pathlib import Path

from fastapi import FastAPI

from api.routes import router
from engine import paths
from engine.graph import KBGraph
from engine.kb import KB
from engine.lint import load_checked_kb


def create_app(kb_root: Path | None = None, *, kb: KB | None = None) -> FastAPI:
    """The service over `kb` when the caller has already loaded and checked it, else over the KB at
    `kb_root` (default: $GPU_ADVISOR_KB or the embedded kb/), which must pass every lint check."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loaded = kb or load_checked_kb(kb_root or paths.kb_dir(), paths.data_dir(), date.today())
        app.state.kb = loaded
        app.state.graph = KBGraph(loaded)
        yield

    app = FastAPI(
        title="gpu-advisor",
        summary="What should we run this on? ML hardware recommendations with a traced justification.",
        version=_version(),
        lifespan=lifespan,
    )
    app.include_router(router)
    return app


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpu-advisor")
    except PackageNotFoundError:
        return "0+unknown"
