"""Models and GPUs by the names people use: their KB id, an alias (for a model, a Hugging Face repo id
such as `meta-llama/Llama-3.1-70B-Instruct` or a short name such as `llama3.1:8b`; for a GPU, `RTX
4090` or `4090`), their name (`NVIDIA GeForce RTX 4090`), or, for a model, the repo's name without
its owner; matched case-insensitively and with `.`, `_`, `:`, `/` and spaces read as `-`. An unknown
name is answered with the known ones holding all its words, then the closest by difflib's ratio (Python's
standard library)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

_SEPARATORS = re.compile(r"[^a-z0-9]+")
CLOSEST = 3
"""how many known names an unknown one is answered with"""
CUTOFF = 0.6
"""difflib's default similarity below which a name is not offered"""


class Aliased(Protocol):
    """A KB entity known by other names than its id: its name and its aliases."""

    @property
    def name(self) -> str: ...

    @property
    def aliases(self) -> Sequence[str]: ...


def normal_name(name: str) -> str:
    """The form names are compared in: lower case, runs of other characters as one `-`."""
    return _SEPARATORS.sub("-", name.lower()).strip("-")


@dataclass(frozen=True)
class Names:
    """Every name of every entity of one kind, normalised, to the entity's id."""

    ids: Mapping[str, str]

    @classmethod
    def of(cls, entities: Mapping[str, Aliased]) -> Names:
        ids: dict[str, str] = {}
        # ids first, then aliases, then names (`NVIDIA GeForce RTX 4090`), then repo names without their
        # owner: an earlier name is never taken over by a later one (kb lint refuses an alias naming two
        # models)
        for entity_id in sorted(entities):
            ids.setdefault(normal_name(entity_id), entity_id)
        for entity_id, entity in sorted(entities.items()):
            for alias in entity.aliases:
                ids.setdefault(normal_name(alias), entity_id)
        for entity_id, entity in sorted(entities.items()):
            ids.setdefault(normal_name(entity.name), entity_id)
        owners = _repo_names(entities.items())
        for name, entity_id in owners.items():
            ids.setdefault(name, entity_id)
        return cls(ids)

    def find(self, name: str) -> str | None:
        """The id of the entity this name means, or None."""
        return self.ids.get(normal_name(name))

    def suggestion(self, name: str) -> str:
        """`did you mean a, b? ` naming the closest known ids, or nothing when none is close."""
        closest = self.closest(name)
        return f"did you mean {', '.join(closest)}? " if closest else ""

    def closest(self, name: str, n: int = CLOSEST) -> list[str]:
        """The ids of the entities whose names are closest to `name`, closest first: those with a name
        holding every word of it (`H100` is three GPUs, SXM, PCIe and NVL: naming them beats difflib's
        first pick, the P100, one letter away), shortest first, then difflib's."""
        wanted = normal_name(name)
        words = set(wanted.split("-"))
        holding = {entity_id for known, entity_id in self.ids.items() if words <= set(known.split("-"))}
        found = sorted(holding, key=lambda entity_id: (len(entity_id), entity_id))
        for match in difflib.get_close_matches(wanted, self.ids, n=4 * n, cutoff=CUTOFF):
            entity_id = self.ids[match]
            if entity_id not in found:
                found.append(entity_id)
        return found[: max(n, len(holding))]


def _repo_names(entities: Iterable[tuple[str, Aliased]]) -> dict[str, str]:
    """`Llama-3.1-70B-Instruct` for `meta-llama/Llama-3.1-70B-Instruct`, when it names one entity only."""
    seen: dict[str, set[str]] = {}
    for entity_id, entity in entities:
        for alias in entity.aliases:
            if "/" in alias:
                seen.setdefault(normal_name(alias.rsplit("/", 1)[1]), set()).add(entity_id)
    return {name: next(iter(ids)) for name, ids in seen.items() if len(ids) == 1}
