"""Shared fixtures: the embedded KB, and a writable copy of it for tests that break files."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import paths
from engine.graph import KBGraph
from engine.kb import KB, load_kb

PROJECT = paths.PROJECT_ROOT


@pytest.fixture(scope="session")
def kb() -> KB:
    return load_kb(PROJECT / "kb")


@pytest.fixture(scope="session")
def graph(kb: KB) -> KBGraph:
    return KBGraph(kb)


@pytest.fixture
def kb_copy(tmp_path: Path) -> Iterator[Path]:
    """A writable copy of kb/ (and data/ beside it) for tests that break files."""
    shutil.copytree(PROJECT / "kb", tmp_path / "kb")
    shutil.copytree(PROJECT / "data", tmp_path / "data")
    yield tmp_path / "kb"
