"""The FastAPI application: `create_app()` loads and validates the KB once, at start-up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI

from api.routes import router
from engine import paths
from engine.graph import KBGraph
from engine.kb import load_kb


def create_app(kb_root: Path | None = None) -> FastAPI:
    """The service over the KB at `kb_root` (default: $GPU_ADVISOR_KB or the embedded kb/)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        kb = load_kb(kb_root or paths.kb_dir())
        app.state.kb = kb
        app.state.graph = KBGraph(kb)
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
