"""The checked-KB cache: what comes back equals what was read; any change to a file misses it, so
an invalid KB is never served from it; a damaged or disabled cache is ignored."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from engine import cache, paths
from engine.models.kb import KIND_MODELS
from engine.problems import KBInvalid
from engine.recommend import load_advisor

TODAY = date(2026, 11, 23)


@pytest.fixture
def cache_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    return folder


def test_a_cached_kb_equals_the_one_read(cache_at: Path) -> None:
    fresh = load_advisor(paths.kb_dir(), paths.rules_dir(), paths.data_dir(), TODAY)
    assert len(list(cache_at.glob("kb-*.json"))) == 1
    cached = load_advisor(paths.kb_dir(), paths.rules_dir(), paths.data_dir(), TODAY)
    assert not cached.kb.origins  # it came from the cache, not from the YAML files
    for kind in KIND_MODELS:
        assert cached.kb.of_kind(kind) == fresh.kb.of_kind(kind), kind
    assert cached.rules == fresh.rules
    assert cached.version == fresh.version and cached.kb.version == fresh.kb.version


def test_a_changed_file_misses_the_cache_and_is_checked(cache_at: Path, kb_copy: Path) -> None:
    data = kb_copy.parent / "data"
    load_advisor(kb_copy, paths.rules_dir(), data, TODAY)  # clean: stored
    (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
    with pytest.raises(KBInvalid) as raised:
        load_advisor(kb_copy, paths.rules_dir(), data, TODAY)
    assert any(p.check == "missing-field" for p in raised.value.problems)


def test_the_key_covers_content_and_date(kb_copy: Path) -> None:
    before = cache.fingerprint([kb_copy], TODAY)
    assert cache.fingerprint([kb_copy], date(2026, 11, 24)) != before
    gpu = kb_copy / "gpus/nvidia-rtx-4090.yaml"
    gpu.write_text(gpu.read_text() + "\n")
    assert cache.fingerprint([kb_copy], TODAY) != before


def test_a_damaged_cache_is_ignored(cache_at: Path) -> None:
    load_advisor(paths.kb_dir(), paths.rules_dir(), paths.data_dir(), TODAY)
    (stored,) = cache_at.glob("kb-*.json")
    stored.write_text('{"version": "x", "gpus": "not a list"}')
    advisor = load_advisor(paths.kb_dir(), paths.rules_dir(), paths.data_dir(), TODAY)
    assert advisor.kb.origins  # read from the files again


def test_the_cache_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    assert cache.cache_dir() is None
    assert cache.load("anything", paths.kb_dir()) is None
