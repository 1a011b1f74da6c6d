"""A cache of the checked KB and rules, keyed by their exact content.

Reading the KB means parsing ~750 YAML files, validating each, and linting the whole (the offers are
regenerated from data/ and compared): about a second. A CLI call or a server start over files that
have not changed since the last clean check reads one JSON file instead. The key covers every byte
of kb/, rules/ and data/, the date (lint checks dates against today) and the source of the schemas,
so any change misses the cache and goes through the full check. Only clean results are stored, and
they are stored as JSON and validated by the same pydantic models on the way back in: nothing in the
cache is executed.

The cache lives in $GPU_ADVISOR_CACHE, else $XDG_CACHE_HOME/gpu-advisor, else ~/.cache/gpu-advisor;
GPU_ADVISOR_CACHE=off turns it off. A cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from datetime import date
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ValidationError

from engine.kb import KB
from engine.models import kb as kb_models
from engine.models import rule as rule_models
from engine.models.kb import Gpu, Interconnect, Model, Offer, Platform, Precision, Provider, Stack
from engine.models.rule import Rule

CACHE_ENV = "GPU_ADVISOR_CACHE"
FORMAT = "1"
"""Bumped when what is stored changes shape."""


class CachedKB(BaseModel):
    """What is stored: the validated entities of each kind, the rules, and the KB's version."""

    version: str
    gpus: list[Gpu]
    interconnects: list[Interconnect]
    precisions: list[Precision]
    stacks: list[Stack]
    platforms: list[Platform]
    providers: list[Provider]
    offers: list[Offer]
    models: list[Model]
    rules: list[Rule]


def cache_dir() -> Path | None:
    configured = os.environ.get(CACHE_ENV)
    if configured == "off":
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpu-advisor"


def fingerprint(roots: list[Path | None], today: date) -> str:
    """A hash of every file under `roots` (path and bytes), the date and the schemas' source."""
    digest = hashlib.sha256(f"{FORMAT}\0{today.isoformat()}\0".encode())
    for module in (kb_models, rule_models):
        digest.update(Path(str(module.__file__)).read_bytes())
    for root in roots:
        if root is None or not root.is_dir():
            digest.update(b"\0missing\0")
            continue
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def load(key: str, kb_root: Path) -> tuple[KB, tuple[Rule, ...]] | None:
    """The KB and rules stored under `key`, or None when there are none (or they cannot be read)."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        cached = CachedKB.model_validate_json((folder / f"kb-{key}.json").read_bytes())
    except (OSError, ValidationError, ValueError):
        return None
    views: dict[str, Any] = {
        kind: MappingProxyType({entity.id: entity for entity in getattr(cached, kind)})
        for kind in kb_models.KIND_MODELS
    }
    kb = KB(root=kb_root, version=cached.version, origins=MappingProxyType({}), **views)
    return kb, tuple(cached.rules)


def store(key: str, kb: KB, rules: tuple[Rule, ...]) -> None:
    """Keep a clean KB and rule set under `key` (written atomically; failures are ignored)."""
    folder = cache_dir()
    if folder is None:
        return
    entities = {kind: list(kb.of_kind(kind).values()) for kind in kb_models.KIND_MODELS}
    payload = CachedKB(version=kb.version, rules=list(rules), **entities)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("kb-*.json"):  # one entry is enough: the KB in use
            stale.unlink(missing_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=folder, delete=False, suffix=".tmp") as handle:
            handle.write(payload.model_dump_json(by_alias=True).encode())
        Path(handle.name).replace(folder / f"kb-{key}.json")
    except OSError:
        return
