"""A problem found in a KB or rule file, printed as `path:line: check: message (how to fix)`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One finding. `line` is 1-based; 0 means the file as a whole (or no file)."""

    path: str
    line: int
    check: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.check}: {self.message} ({self.fix})"


class KBInvalid(Exception):
    """The knowledge base (or rules) failed validation; `problems` says where and why."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems)
        super().__init__(f"{len(self.problems)} problem(s) in the knowledge base")
