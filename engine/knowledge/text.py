"""Text fit to show: what lint refuses in KB and rule strings, and how other text is shown inert.

Control characters do harm wherever text is shown or run. A newline in a GPU name is a new shell line
in a launch spec's `run:` block; a Markdown table row ends at it; ESC sequences make a terminal move
its cursor, clear the screen or retitle the window (ECMA-48); and Unicode's bidirectional controls
reorder what is displayed, so a reviewer reads something other than what is there (Trojan Source,
CVE-2021-42574). Lint refuses them in every string of a KB or rule file (`text_findings`); text that
comes from elsewhere (a request, a catalog CSV, a model's config.json) is shown with them escaped
(`shown`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from engine.knowledge.documents import Loc

REFUSED = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls and DEL (Unicode category Cc: newline and tab included), LINE and PARAGRAPH
SEPARATOR (Zl, Zp: Python's str.splitlines and YAML both break lines there), and the bidirectional
formatting characters of UAX #9 (ALM, LRM, RLM, LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI)."""

ONE_LINE = frozenset({"id", "name", "aliases", "gpu", "model", "provider", "instance_type", "region", "host"})
"""fields that name things and reach shell lines, YAML keys and table cells: not even a final newline"""
CHECK = "text"
FIX = "write it on one line without control characters (a folded `>-` block reads as one line)"


def escaped(char: str) -> str:
    """A character as its Python escape: `\\n`, `\\x1b`, `\\u202e`."""
    return ascii(char)[1:-1]


def shown(text: str) -> str:
    """`text` with every refused character written as its escape: visible, and inert in a terminal,
    a shell line, YAML, HTML or a Markdown table."""
    return REFUSED.sub(lambda found: escaped(found.group()), text)


def text_findings(value: Any, loc: Loc = ()) -> Iterator[tuple[Loc, str, str, str]]:
    """(location, message, check, fix) for each string in `value` (a model, mapping, list or string,
    keys included) that holds a refused character; the message names the character, not the text."""
    for where, text in _strings(value, loc):
        # A folded or literal block (`rationale: >`, as design.md writes it) ends in one newline,
        # which YAML adds and no output shows; prose may keep it, names may not.
        if text.endswith("\n") and _field(where) not in ONE_LINE:
            text = text[:-1]
        found = REFUSED.search(text)
        if found is not None:
            dotted = shown(".".join(map(str, where))) or "(value)"
            message = f"`{dotted}` holds the control character {escaped(found.group())} at {found.start()}"
            yield where, message, CHECK, FIX


def _field(loc: Loc) -> str | None:
    """The name of the field a location is in (the last name in it: a list's items are its field's)."""
    return next((part for part in reversed(loc) if isinstance(part, str)), None)


def _strings(value: Any, loc: Loc) -> Iterator[tuple[Loc, str]]:
    if isinstance(value, str):
        yield loc, value
    elif isinstance(value, BaseModel):
        for name, info in type(value).model_fields.items():
            yield from _strings(getattr(value, name), (*loc, info.alias or name))
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _strings(key, (*loc, str(key)))
            yield from _strings(child, (*loc, str(key)))
    elif isinstance(value, list | tuple):
        for i, child in enumerate(value):
            yield from _strings(child, (*loc, i))
