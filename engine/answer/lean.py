"""Version 2 of an answer (engine/models/lean.py): version 1's, each source's text once in `sources`,
the recommendations and trace steps citing it by id, numbered in the order the serialized answer
first cites it. Written straight to JSON from the version-1 answer (its citation fields serialize as
ids when the context numbers them: engine/models/response.py `cited`), so the two versions never
disagree on anything else, and version 2 costs no more than version 1 to serve; `lean` reads that
JSON back as a model for Python callers."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from engine.models.compare import CompareResponse
from engine.models.lean import API_VERSION, CompareResponseV2, RecommendResponseV2
from engine.models.response import CITE_BY_ID, RecommendResponse


class Sources:
    """Source texts numbered in the order first cited."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def cite(self, texts: Iterable[str]) -> list[str]:
        return [self.ids.get(text) or self.ids.setdefault(text, f"s{len(self.ids) + 1}") for text in texts]

    def by_id(self) -> dict[str, str]:
        return {number: text for text, number in self.ids.items()}


def lean_json(answer: RecommendResponse | CompareResponse) -> str:
    """`answer` as version-2 JSON: version 1's fields with citations by id, then `api_version` and
    `sources`."""
    sources = Sources()
    body = answer.model_dump_json(context={CITE_BY_ID: sources.cite})
    extra = json.dumps({"api_version": API_VERSION, "sources": sources.by_id()}, ensure_ascii=False)
    return f"{body[:-1]},{extra[1:]}"


def lean(answer: RecommendResponse) -> RecommendResponseV2:
    """`answer` as a version-2 model."""
    return RecommendResponseV2.model_validate_json(lean_json(answer))


def lean_compare(answer: CompareResponse) -> CompareResponseV2:
    """A comparison as a version-2 model."""
    return CompareResponseV2.model_validate_json(lean_json(answer))


def cited_texts(ids: Sequence[str], sources: Mapping[str, str]) -> list[str]:
    """The texts `ids` cite (version 1's `citations`)."""
    return [sources[number] for number in ids]
