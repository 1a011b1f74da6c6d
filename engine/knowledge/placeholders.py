"""The placeholder text of a scaffolded file (`gpu-advisor kb new-rule`), which must be rewritten
before the file can land: kb lint refuses a rule or KB file that still holds any of it. The scaffold
writes these very strings (engine/reasoning/ruledocs.py), so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.knowledge.documents import Document, Loc
from engine.knowledge.problems import Problem

TITLE = "Say what the rule decides, in one sentence"
RATIONALE = "Why it holds and what to do instead (at most 400 characters)."
SOURCE = "a guide's title and section, a paper or a page title (add url: where one exists)"
CAVEAT = "When the advice does not apply."
MESSAGE_HINT = "say what this means for the user"

PLACEHOLDERS = (TITLE, RATIONALE, SOURCE, CAVEAT, MESSAGE_HINT)


def placeholder_problems(document: Document) -> Iterator[Problem]:
    """A problem for each text value that still holds a placeholder, at its line."""
    for loc, text in _texts(document.data, ()):
        found = next((p for p in PLACEHOLDERS if p.lower() in text.lower()), None)
        if found is not None:
            yield Problem(
                document.display,
                document.line_of(loc),
                "placeholder",
                f"`{'.'.join(map(str, loc))}` still holds the scaffold's text {found!r}",
                "write the real text in its place",
            )


def _texts(value: Any, loc: Loc) -> Iterator[tuple[Loc, str]]:
    if isinstance(value, str):
        yield loc, value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _texts(child, (*loc, str(key)))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _texts(child, (*loc, i))
