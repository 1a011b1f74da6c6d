"""Models by the names people use: their KB id, an alias (a Hugging Face repo id such as
`meta-llama/Llama-3.1-70B-Instruct`, a short name such as `llama3.1:8b`), or the repo's name without
its owner; matched case-insensitively and with `.`, `_`, `:`, `/` and spaces read as `-`. An unknown
name is answered with the closest known ones (difflib's ratio, Python's standard library)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.models.kb import Model

_SEPARATORS = re.compile(r"[^a-z0-9]+")
CLOSEST = 3
"""how many known names an unknown one is answered with"""
CUTOFF = 0.6
"""difflib's default similarity below which a name is not offered"""


def normal_name(name: str) -> str:
    """The form names are compared in: lower case, runs of other characters as one `-`."""
    return _SEPARATORS.sub("-", name.lower()).strip("-")


@dataclass(frozen=True)
class ModelNames:
    """Every name of every KB model, normalised, to the model's id."""

    ids: Mapping[str, str]

    @classmethod
    def of(cls, models: Mapping[str, Model]) -> ModelNames:
        ids: dict[str, str] = {}
        # ids first, then aliases, then repo names without their owner: an earlier name is never
        # taken over by a later one (kb lint refuses an alias naming two models)
        for model_id in sorted(models):
            ids.setdefault(normal_name(model_id), model_id)
        for model_id, model in sorted(models.items()):
            for alias in model.aliases:
                ids.setdefault(normal_name(alias), model_id)
        owners = _repo_names(models.items())
        for name, model_id in owners.items():
            ids.setdefault(name, model_id)
        return cls(ids)

    def find(self, name: str) -> str | None:
        """The id of the model this name means, or None."""
        return self.ids.get(normal_name(name))

    def closest(self, name: str, n: int = CLOSEST) -> list[str]:
        """The ids of the models whose names are closest to `name`, closest first."""
        found: list[str] = []
        for match in difflib.get_close_matches(normal_name(name), self.ids, n=4 * n, cutoff=CUTOFF):
            model_id = self.ids[match]
            if model_id not in found:
                found.append(model_id)
        return found[:n]


def _repo_names(models: Iterable[tuple[str, Model]]) -> dict[str, str]:
    """`Llama-3.1-70B-Instruct` for `meta-llama/Llama-3.1-70B-Instruct`, when it names one model only."""
    seen: dict[str, set[str]] = {}
    for model_id, model in models:
        for alias in model.aliases:
            if "/" in alias:
                seen.setdefault(normal_name(alias.rsplit("/", 1)[1]), set()).add(model_id)
    return {name: next(iter(ids)) for name, ids in seen.items() if len(ids) == 1}
