"""Golden answers: each canonical request's whole response, recorded in tests/golden.

`pytest tests/test_golden.py --update-golden` rewrites the recordings; the diff is the review.
"""

from __future__ import annotations

import json

import pytest

from tests.golden_support import GOLDEN, as_text, golden_answer, golden_names, recorded


@pytest.mark.parametrize("name", golden_names())
def test_answer_matches_the_recording(name: str, request: pytest.FixtureRequest) -> None:
    answer = recorded(golden_answer(name))
    path = GOLDEN / f"{name}.response.json"
    if request.config.getoption("--update-golden"):
        path.write_text(as_text(answer), encoding="utf-8")
    assert path.exists(), f"no recording for {name}: run pytest with --update-golden"
    assert answer == json.loads(path.read_text(encoding="utf-8"))


def test_at_least_twelve_canonical_requests() -> None:
    assert len(golden_names()) >= 12
