"""A cache of the checked KB and rules, keyed by the exact bytes they were parsed from.

Reading the KB means parsing ~750 YAML files, validating each, and linting the whole (the offers are
regenerated from data/ and compared): about a second. A CLI call or a server start over files that
have not changed since the last clean check reads one JSON file instead.

Why an entry can be trusted:
- The key hashes the bytes that were parsed (the `Tree`s of engine/knowledge/snapshot.py, read once:
  an edit landing mid-check cannot be stored under the key of the bytes before it), the date (lint
  checks dates against today), the source of every module under engine/ (any change to what decides
  validity misses the cache) and the versions of the libraries that parse and validate.
- Only clean results are stored. Each entry carries an HMAC-SHA256 of its key and content under a
  random secret kept beside the entries (RFC 2104; Python's `hmac`). The signature tells an entry
  this code wrote whole from one edited by hand, truncated, damaged, or left by another version; it
  is not a defence against anyone who can read the folder: with the secret they can sign an entry
  of their own, and it is accepted.
- Who can: the folder must belong to the user running gpu-advisor and be writable by no one else
  (the test ssh applies to ~/.ssh), and it is created private (0700), so only that same user (or
  root), who could as well edit kb/ itself. A folder others can write to is not used, with a warning.
- What a forged entry can do is bounded: what is read back is validated again by the same pydantic
  models (every field has its schema's type and range) and put through every check that needs only
  the entities (references, values, consistency, text fit to show: `lint.entity_problems`) and the
  rules' consistency (unique ids, `replaced_by`, text fit to show); nothing in the cache is executed.
  So a forged entry can at most serve a KB that passes those checks, which that user could as well
  get by editing kb/. Not checked again are the checks of files as such: an id equal to its file
  name, no scaffold placeholder, offers equal to a fresh import of data/, dates not after today.
- The entry and the secret are read only as regular files, no further than a size cap
  (`snapshot.read_file`): a symlink to /dev/zero or a FIFO is not read, it is a miss.

The cache lives in $GPU_ADVISOR_CACHE, else $XDG_CACHE_HOME/gpu-advisor, else ~/.cache/gpu-advisor;
GPU_ADVISOR_CACHE=off turns it off. A cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import os
import platform
import secrets
import stat
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from importlib import metadata
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ValidationError

from engine.knowledge.kb import KB
from engine.knowledge.snapshot import Tree, Unreadable, read_file
from engine.knowledge.text import text_findings
from engine.models import kb as kb_models
from engine.models.kb import Gpu, Host, Interconnect, Model, Offer, Platform, Precision, Provider, Stack
from engine.models.rule import Rule

CACHE_ENV = "GPU_ADVISOR_CACHE"
FORMAT = "3"
"""Bumped when what is stored changes shape."""
MAGIC = f"gpu-advisor-cache {FORMAT}\n".encode()
SECRET_FILE = "secret"
SECRET_BYTES = 32
MAX_ENTRY_BYTES = 64 * 1024 * 1024
"""An entry holds the whole KB as JSON, about 1.3 MB today: one far larger is not read into memory."""
STALE_TEMP_SECONDS = 600
"""A temporary file this old was left by a writer that died mid-write (a live one renames it at once)."""
LIBRARIES = ("pydantic", "pydantic-core", "PyYAML")
"""The libraries whose behaviour decides what parses and validates."""

log = logging.getLogger("gpu_advisor.cache")


@dataclass(frozen=True)
class CheckedKB:
    """A KB and rule set that passed every check, with what identifies them."""

    kb: KB
    rules: tuple[Rule, ...]
    key: str
    """the cache key: the bytes they were parsed from, the date, the code (see `fingerprint`)"""
    version: str
    """the content hash of the KB's and the rules' YAML: the `kb_version` of responses"""
    categories: Mapping[str, str]
    """rule id → its category (the folder it is in)"""


class CachedKB(BaseModel):
    """What is stored: the validated entities of each kind, the rules, and what identifies them."""

    version: str
    kb_version: str
    categories: dict[str, str]
    gpus: list[Gpu]
    hosts: list[Host]
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


def fingerprint(trees: list[Tree | None], today: date) -> str:
    """The cache key: every file of `trees` (path and bytes), the date, and the code and libraries
    that decide whether those files are valid."""
    digest = hashlib.sha256(f"{FORMAT}\0{today.isoformat()}\0{code_digest()}\0".encode())
    for tree in trees:
        if tree is None:
            digest.update(b"\0none\0")
        else:
            tree.feed(digest)
    return digest.hexdigest()


@functools.cache
def code_digest() -> str:
    """A hash of every module under engine/ and of the parsing and validating libraries' versions."""
    digest = hashlib.sha256(platform.python_version().encode())
    for name in LIBRARIES:
        try:
            digest.update(f"\0{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"\0{name}=?".encode())
    package = Path(__file__).resolve().parents[1]  # the engine package
    for module in code_files():
        digest.update(module.as_posix().encode() + b"\0")
        digest.update((package / module).read_bytes())
    return digest.hexdigest()


def code_files() -> list[Path]:
    """The modules of the engine package, relative to it: all of them, not a list someone must keep
    up to date, since reading, linting, importing and the schemas all decide what is valid."""
    package = Path(__file__).resolve().parents[1]  # the engine package
    return sorted(module.relative_to(package) for module in package.rglob("*.py"))


def usable_dir(folder: Path | None = None) -> Path | None:
    """The cache folder, created if need be, when it is safe to use: owned by this user and writable
    by no one else. None (with a warning) when it is not, or when the cache is off."""
    folder = folder if folder is not None else cache_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError as exc:
        log.warning("the KB cache at %s is not used: %s", folder, exc.strerror or exc)
        return None
    getuid = getattr(os, "getuid", None)
    if getuid is not None and (info.st_uid != getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        log.warning(
            "the KB cache at %s is not used: it must belong to this user and be writable by no one else "
            "(chmod 700 it, or set %s to another folder)",
            folder,
            CACHE_ENV,
        )
        return None
    return folder


def load(key: str, kb_root: Path, folder: Path | None = None) -> CheckedKB | None:
    """The KB and rules stored under `key`, or None when there are none, or they cannot be read, or
    they fail any check (see the module's docstring)."""
    folder = usable_dir(folder)
    if folder is None:
        return None
    raw = read_file(folder / entry_name(key), MAX_ENTRY_BYTES)
    if isinstance(raw, Unreadable):
        return None
    try:
        secret = _secret(folder, create=False)
    except OSError:
        return None
    payload = _verified(raw, key, secret)
    if payload is None:
        log.warning("the KB cache entry %s failed its integrity check and is ignored", key[:12])
        return None
    try:
        cached = CachedKB.model_validate_json(payload)
    except (ValidationError, ValueError):
        return None
    views: dict[str, Any] = {
        kind: MappingProxyType({entity.id: entity for entity in getattr(cached, kind)})
        for kind in kb_models.KIND_MODELS
    }
    kb = KB(root=kb_root, version=cached.version, origins=MappingProxyType({}), **views)
    rules = tuple(cached.rules)
    from engine.knowledge.lint import entity_problems  # lint reads the catalog: imported only on a hit

    if entity_problems(kb) or not _rules_consistent(rules):
        log.warning("the KB cache entry %s fails the KB checks and is ignored", key[:12])
        return None
    return CheckedKB(kb, rules, key, cached.kb_version, MappingProxyType(cached.categories))


def store(checked: CheckedKB, folder: Path | None = None) -> None:
    """Keep a clean KB and rule set under `key`: written to a temporary file, flushed to disk, then
    renamed over the entry, so a reader sees the whole entry or none. Failures are ignored."""
    folder = usable_dir(folder)
    if folder is None:
        return
    kb, key = checked.kb, checked.key
    entities = {kind: list(kb.of_kind(kind).values()) for kind in kb_models.KIND_MODELS}
    payload = CachedKB(
        version=kb.version,
        kb_version=checked.version,
        categories=dict(checked.categories),
        rules=list(checked.rules),
        **entities,
    ).model_dump_json(by_alias=True)
    entry = folder / entry_name(key)
    try:
        secret = _secret(folder, create=True)
        with tempfile.NamedTemporaryFile("wb", dir=folder, delete=False, suffix=".tmp") as handle:
            handle.write(MAGIC + _mac(secret, key, payload.encode()).encode() + b"\n" + payload.encode())
            handle.flush()
            os.fsync(handle.fileno())
        Path(handle.name).replace(entry)
    except OSError:
        return
    _prune(folder, keep=entry)


def entry_name(key: str) -> str:
    return f"kb-{key}.json"


def _prune(folder: Path, keep: Path) -> None:
    """One entry is enough (the KB in use); temporary files of writers that died are removed."""
    now = time.time()
    for path in folder.iterdir():
        try:
            replaced = path.name.startswith("kb-") and path.suffix == ".json" and path != keep
            abandoned = path.suffix == ".tmp" and now - path.stat().st_mtime > STALE_TEMP_SECONDS
            if replaced or abandoned:
                path.unlink()
        except OSError:
            continue


def _secret(folder: Path, create: bool) -> bytes:
    """The folder's HMAC secret; with `create`, a new one when there is none or it is damaged (which
    makes every entry already there unreadable, as it should)."""
    path = folder / SECRET_FILE
    secret = read_file(path, SECRET_BYTES)
    if isinstance(secret, bytes) and len(secret) == SECRET_BYTES:
        return secret
    if not create:
        raise OSError("no usable cache secret")
    with tempfile.NamedTemporaryFile("wb", dir=folder, delete=False, suffix=".tmp") as handle:
        handle.write(secrets.token_bytes(SECRET_BYTES))  # NamedTemporaryFile is mode 0600
    Path(handle.name).replace(path)
    secret = read_file(path, SECRET_BYTES)  # a writer racing this one may have won: use what is there now
    if isinstance(secret, Unreadable):
        raise OSError(secret.errno, secret.reason)
    return secret


def _mac(secret: bytes, key: str, payload: bytes) -> str:
    return hmac.new(secret, key.encode() + b"\0" + payload, hashlib.sha256).hexdigest()


def _verified(raw: bytes, key: str, secret: bytes) -> bytes | None:
    """The entry's content when its header and HMAC are right, else None."""
    if not raw.startswith(MAGIC):
        return None
    mac, _, payload = raw[len(MAGIC) :].partition(b"\n")
    expected = _mac(secret, key, payload).encode()
    return payload if hmac.compare_digest(mac, expected) else None


def _rules_consistent(rules: tuple[Rule, ...]) -> bool:
    """What the rules reader checks beyond the schema: unique ids, known `replaced_by`, clean text."""
    ids = {rule.id for rule in rules}
    return (
        len(ids) == len(rules)
        and all(r.replaced_by is None or r.replaced_by in ids for r in rules)
        and not any(finding for rule in rules for finding in text_findings(rule))
    )
