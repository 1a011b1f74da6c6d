"""The path one request's call takes through the engine's folders: which files it visits, how often it
moves between folders, and how often it goes back down into planning once the answer layer has
started describing the result (docs/architecture.md: the answer layer only describes, so 0).

    .venv/bin/python -m bench.call_path [request.json ...]

Every Python function call under engine/ made while the Advisor answers is recorded (sys.setprofile),
after one warm-up answer so that option lists built once per process are not counted. A "move" is a
call from one folder into another (a property's getter, reading a result's data, is not one); "back
down" is a move into engine/planning/ made after the first move into engine/answer/. A benchmark's
report, not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from engine.models.compare import CompareRequest
from engine.models.request import RecommendRequest
from engine.recommend import Advisor, default_advisor

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"
DEFAULT_REQUESTS = (
    ROOT / "tests" / "golden" / "finetune-3b-adam-on-rtx-3090.request.json",
    ROOT / "tests" / "golden" / "serve-70b-fp16.request.json",
)


def folder_of(path: str) -> str | None:
    """engine/<folder> for a file under engine/ (engine/recommend.py is the Advisor's), else None."""
    try:
        relative = Path(path).resolve().relative_to(ENGINE)
    except ValueError:
        return None
    return "advisor" if len(relative.parts) == 1 else relative.parts[0]


@dataclass
class CallPath:
    files: Counter[str] = field(default_factory=Counter)
    moves: Counter[tuple[str, str]] = field(default_factory=Counter)
    """calls between folders, by (caller, callee) folder"""
    answer_started: bool = False
    back_down: Counter[str] = field(default_factory=Counter)
    """planning functions called after the answer layer started, by caller -> callee"""
    answer_into_planning: int = 0

    def record(self, frame: FrameType) -> None:
        callee = folder_of(frame.f_code.co_filename)
        if callee is None:
            return
        self.files[str(Path(frame.f_code.co_filename).resolve().relative_to(ROOT))] += 1
        caller_frame = frame.f_back
        caller = folder_of(caller_frame.f_code.co_filename) if caller_frame else None
        if caller is None or caller == callee or is_property(frame):
            return
        self.moves[caller, callee] += 1
        if callee == "answer":
            self.answer_started = True
        if callee == "planning" and self.answer_started and caller_frame is not None:
            self.back_down[f"{caller}:{caller_frame.f_code.co_name} -> planning:{frame.f_code.co_name}"] += 1
            if caller == "answer":
                self.answer_into_planning += 1


def is_property(frame: FrameType) -> bool:
    """A property's getter (`candidate.gpu_count`): reading a result's data, not asking for work."""
    owner = frame.f_locals.get("self")
    return owner is not None and isinstance(getattr(type(owner), frame.f_code.co_name, None), property)


def trace_answer(advisor: Advisor, body: dict[str, Any]) -> CallPath:
    """The call path of one answer to `body` (a recommend request, or a compare body with `choices`)."""
    if "choices" in body:
        compare = CompareRequest.model_validate(body)

        def answer() -> object:
            return advisor.compare(compare)
    else:
        request = RecommendRequest.model_validate(body)

        def answer() -> object:
            return advisor.recommend(request)

    answer()  # warm-up: option lists are built once per process
    path = CallPath()

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call":
            path.record(frame)

    sys.setprofile(profile)
    try:
        answer()
    finally:
        sys.setprofile(None)
    return path


def report(name: str, path: CallPath) -> str:
    lines = [
        f"## {name}",
        f"- files visited: {len(path.files)}; calls between folders: {path.moves.total()} "
        f"({', '.join(f'{a} -> {b} {n}' for (a, b), n in sorted(path.moves.items()))})",
        f"- moves into planning after the answer layer started: {sum(path.back_down.values())} "
        f"({path.answer_into_planning} of them from the answer layer)",
    ]
    lines += [f"  - {edge}: {n}" for edge, n in path.back_down.most_common()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", nargs="*", type=Path, default=list(DEFAULT_REQUESTS))
    args = parser.parse_args(argv)
    advisor = default_advisor()
    for file in args.requests:
        print(report(file.name, trace_answer(advisor, json.loads(file.read_text()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
