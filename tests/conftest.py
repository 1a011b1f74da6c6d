"""Shared fixtures: the embedded KB, a writable copy of it for tests that break files, and a client of
the service over it."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import settings

from api.app import create_app
from engine.knowledge import paths
from engine.knowledge.graph import KBGraph
from engine.knowledge.kb import KB, load_kb
from engine.models.kb import Price
from engine.planning.candidates import Option
from engine.recommend import Advisor, default_advisor

PROJECT = paths.PROJECT_ROOT

# The checked-KB cache goes to a folder of this test session, not the user's cache.
os.environ.setdefault("GPU_ADVISOR_CACHE", tempfile.mkdtemp(prefix="gpu-advisor-test-cache-"))

# CI runs the same examples every time (a red build must be reproducible); local runs explore anew.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def kb() -> KB:
    return load_kb(PROJECT / "kb")


@pytest.fixture(scope="session")
def graph(kb: KB) -> KBGraph:
    return KBGraph(kb)


@pytest.fixture(scope="module")
def advisor() -> Advisor:
    return default_advisor()


@pytest.fixture(scope="module")
def client(advisor: Advisor) -> Iterator[TestClient]:
    """The service over the embedded KB; a server error is a 500 response, as a client would see it."""
    with TestClient(create_app(advisor=advisor), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture
def nothing_logged_as_an_error(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """A client's mistake is answered, not logged as a fault of the service."""
    caplog.set_level(logging.WARNING)
    yield
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == []


@pytest.fixture
def kb_copy(tmp_path: Path) -> Iterator[Path]:
    """A writable copy of kb/ (and data/ beside it) for tests that break files."""
    shutil.copytree(PROJECT / "kb", tmp_path / "kb")
    shutil.copytree(PROJECT / "data", tmp_path / "data")
    yield tmp_path / "kb"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the hookless Schemathesis run (tests/test_schemathesis_hookless.py) now, when the suite
    holds it: it runs in a process of its own for most of a minute, on the core the suite leaves
    idle, and its test only collects the result."""
    from tests import test_schemathesis_hookless as hookless

    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # every worker collects every test: the one that runs it starts the run (cores are busy)
    if any(item.name == hookless.RUN_TEST for item in session.items):
        session.config.hookless_run = hookless.start_run()  # type: ignore[attr-defined]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A hookless run whose test did not collect it (deselected mid-way, interrupted) is stopped."""
    run = getattr(session.config, "hookless_run", None)
    if run is not None and run.poll() is None:
        run.kill()
        run.wait()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/*.response.json and the chat formats' recordings from the current answers "
        "(review the diff)",
    )


@pytest.fixture(scope="session")
def bought(kb: KB) -> Option:
    """8 H100 SXM (700 W each, kb/gpus) at $25,000 in one HGX H100 server ($50,000 without GPUs,
    3,000 W): a bought option as the adapter tests cost and explain it."""
    return Option(
        gpu=kb.gpus["nvidia-h100-sxm"],
        count=8,
        nodes=1,
        acquisition="buy",
        pricing="owned",
        price_kind="new",
        unit_price=Price(price_usd=25_000, kind="estimate", as_of=date(2024, 1, 1)),
        host=kb.hosts["hgx-h100-8gpu"],
        host_unit_usd=50_000,
    )
