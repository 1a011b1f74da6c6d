"""Golden answers: each canonical request's whole response, recorded in tests/golden.

`python3 scripts/dev.py golden` rewrites these and every other recording; the diff is the review.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from tests.golden_support import GOLDEN, as_text, golden_answer, golden_names, recorded


@pytest.mark.parametrize("name", golden_names())
def test_answer_matches_the_recording(name: str, request: pytest.FixtureRequest) -> None:
    answer = recorded(golden_answer(name))
    path = GOLDEN / f"{name}.response.json"
    if request.config.getoption("--update-golden"):
        path.write_text(as_text(answer), encoding="utf-8")
    assert path.exists(), f"no recording for {name}: run python3 scripts/dev.py golden"
    assert answer == json.loads(path.read_text(encoding="utf-8"))


def test_at_least_twelve_canonical_requests() -> None:
    assert len(golden_names()) >= 12


def test_the_golden_command_rewrites_every_recording() -> None:
    """`scripts/dev.py golden` runs every test file that keeps recordings, so a contributor who runs it
    leaves none stale (CONTRIBUTING.md)."""
    root = Path(__file__).resolve().parent.parent
    script = ast.parse((root / "scripts" / "dev.py").read_text(encoding="utf-8"))
    (listed,) = (
        ast.literal_eval(node.value)
        for node in script.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "GOLDEN_TESTS" for t in node.targets)
    )
    recording = {
        f"tests/{path.name}"
        for path in (root / "tests").glob("test_*.py")
        if 'getoption("--update-golden")' in path.read_text(encoding="utf-8")
    }
    assert recording and set(listed) == recording
