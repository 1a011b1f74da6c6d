"""The knowledge base's keeping, for the faces: what `gpu-advisor kb ...` does (lint, rule cases, a
cloud catalog imported, the generated docs and schemas, a new rule scaffolded, counts) and what the
service does to load a checked KB and rules and share them between workers. The faces (api/, cli/)
call this and the Advisor (engine/recommend.py), nothing deeper (tests/test_layers.py)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from types import MappingProxyType

from pydantic import BaseModel

from engine.knowledge import cache, paths
from engine.knowledge.bundle import BundleError, open_bundle, write_bundle
from engine.knowledge.cache import CheckedKB
from engine.knowledge.catalog import (
    CATALOG_DIR,
    CHANGE_THRESHOLD,
    CatalogDiff,
    CatalogError,
    ImportResult,
    build_offers,
    catalog_diff,
    diff_markdown,
    report_markdown,
    write_offers,
)
from engine.knowledge.documents import ReadError, parse_yaml_mapping
from engine.knowledge.kb import KB, LoadResult, read_kb
from engine.knowledge.lint import lint_kb
from engine.knowledge.problems import KBInvalid, Problem
from engine.knowledge.refresh import (
    MAX_DROP_SHARE,
    NOT_REFRESHABLE,
    REFRESHABLE,
    SCHEMA_VERSION,
    Drop,
    RefreshError,
    catalog_path,
    checked_clouds,
    drops,
    fetcher,
    latest_commit,
    snapshot_rows,
)
from engine.knowledge.snapshot import Tree
from engine.knowledge.text import shown
from engine.models.kb import KIND_MODELS, Offer
from engine.models.rule import Rule
from engine.reasoning.checked import CheckFailed, disk_key, read_checked, read_checked_apart
from engine.reasoning.engines import EngineConfigError, make_engine
from engine.reasoning.ruledocs import new_rule_path, rules_markdown, scaffold, with_attribute_tables
from engine.reasoning.rules import CaseResult, read_rules, run_rule_cases

__all__ = [
    "CHANGE_THRESHOLD",
    "KB",
    "MAX_DROP_SHARE",
    "NOT_REFRESHABLE",
    "REFRESHABLE",
    "SCHEMA_VERSION",
    "BundleError",
    "CatalogError",
    "CatalogImport",
    "CheckFailed",
    "CheckedKB",
    "EngineConfigError",
    "KBInvalid",
    "Problem",
    "ReadError",
    "RefreshError",
    "RefreshRefused",
    "cache",
    "calibration_documents",
    "checked_clouds",
    "disk_key",
    "fetcher",
    "import_catalog",
    "kb_counts",
    "latest_commit",
    "lint",
    "new_rule",
    "open_bundle",
    "parse_yaml_mapping",
    "paths",
    "read_checked",
    "read_checked_apart",
    "read_kb",
    "refresh_catalog",
    "rule_cases",
    "rules_document",
    "schema_documents",
    "shown",
    "with_attribute_tables",
    "write_bundle",
]


def lint(kb_root: Path, rules_root: Path, data_root: Path, today: date) -> list[Problem]:
    """Every problem of the KB (its facts against the data snapshots) and of the rules."""
    return lint_kb(kb_root, data_root, today) + list(read_rules(rules_root).problems)


def rule_cases(rules_root: Path) -> tuple[list[Problem], list[CaseResult]]:
    """The rules' own test cases run on the engine (the rules' problems instead when they do not load)."""
    ruleset = read_rules(rules_root)
    if ruleset.problems:
        return list(ruleset.problems), []
    return [], run_rule_cases(ruleset.rules, make_engine(ruleset.rules))


@dataclass(frozen=True)
class CatalogImport:
    """A cloud catalog imported into kb/offers: the offers built, what changed, the files written."""

    result: ImportResult
    diff: CatalogDiff
    written: int
    removed: int


def import_catalog(kb_root: Path, data_root: Path) -> CatalogImport | list[Problem]:
    """The offers of the catalog snapshot under `data_root` written into `kb_root`/offers, with the
    import report and the price changes in docs/ beside the KB when it has one; the KB's problems
    when it does not load; `CatalogError` when the snapshot cannot be read."""
    loaded = read_kb(kb_root)
    if loaded.kb is None:
        return list(loaded.problems)
    result = build_offers(data_root, loaded.kb.gpus, loaded.kb.providers)
    return _applied(kb_root, loaded.kb.offers, result)


def _applied(kb_root: Path, before: Mapping[str, Offer], result: ImportResult) -> CatalogImport:
    """`result` written into `kb_root`/offers, with its import report and what changed from `before`."""
    diff = catalog_diff(before, result.offers)
    written, removed = write_offers(result, kb_root / "offers")
    docs = kb_root.parent / "docs"
    if docs.is_dir():
        (docs / "catalog-import.md").write_text(report_markdown(result), encoding="utf-8")
        if diff.added or diff.removed or diff.changed:
            changes = diff_markdown(diff, before, result.offers)
            (docs / "catalog-changes.md").write_text(changes, encoding="utf-8")
    return CatalogImport(result, diff, written, removed)


@dataclass(frozen=True)
class CatalogRefresh:
    """Clouds read afresh from the catalog at one commit, and the import they led to."""

    clouds: tuple[str, ...]
    commit: str
    imported: CatalogImport


class RefreshRefused(Exception):
    """A refresh that would remove more than the allowed share of a provider's offers; nothing written."""

    def __init__(self, too_many: Sequence[Drop], max_drop: float) -> None:
        self.drops = tuple(too_many)
        lost = "; ".join(
            f"{d.provider} would lose {d.removed} of its {d.before} offers ({d.share:.0%})" for d in too_many
        )
        super().__init__(
            f"refresh refused: {lost}, more than the {max_drop:.0%} allowed (a cut-off download or an "
            "outage upstream looks like this; check the catalog, then allow it with --max-drop). "
            "Nothing was written."
        )


def refresh_catalog(
    kb_root: Path,
    data_root: Path,
    read: Callable[[str], bytes],
    clouds: Sequence[str],
    commit: str,
    as_of: date,
    *,
    max_drop: float = MAX_DROP_SHARE,
    schema: str = SCHEMA_VERSION,
) -> CatalogRefresh | list[Problem]:
    """Each cloud's snapshot file rebuilt from the catalog's current `vms.csv` (`read` fetches a path of
    the catalog repository, at `commit`; its offers dated `as_of`), then imported as `import_catalog`
    does. Refused, with nothing written, when a provider would lose more than `max_drop` of its offers
    (`RefreshRefused`); `RefreshError` when a file cannot be fetched or read; the KB's problems when
    it does not load."""
    asked = checked_clouds(clouds)
    paths_of = {cloud: catalog_path(cloud, schema) for cloud in asked}
    snapshots = {
        f"{CATALOG_DIR}/{cloud}.csv": snapshot_rows(cloud, read(path), path, commit, as_of).encode("utf-8")
        for cloud, path in paths_of.items()
    }
    loaded = read_kb(kb_root)
    if loaded.kb is None:
        return list(loaded.problems)
    data = Tree.read(data_root)
    refreshed = dataclasses.replace(data, files=MappingProxyType({**data.files, **snapshots}))
    result = build_offers(refreshed, loaded.kb.gpus, loaded.kb.providers)
    providers = [p.id for p in loaded.kb.providers.values() if p.catalog_name in asked]
    too_many = [d for d in drops(loaded.kb.offers, result.offers, providers) if d.share > max_drop]
    if too_many:
        raise RefreshRefused(too_many, max_drop)
    for name, content in snapshots.items():
        _replace_file(data_root / name, content)
    return CatalogRefresh(asked, commit, _applied(kb_root, loaded.kb.offers, result))


def _replace_file(path: Path, content: bytes) -> None:
    """Write `content` to `path` under a temporary name and rename it: a reader sees one whole file."""
    temporary = path.with_name(f".{path.name}.part")
    temporary.write_bytes(content)
    os.replace(temporary, path)


def rules_document(root: Path) -> tuple[str | None, list[Problem]]:
    """docs/rules.md's text for the rules under `root` (None, problems when they do not load)."""
    ruleset = read_rules(root)
    if ruleset.problems:
        return None, list(ruleset.problems)
    categories = {path.stem: path.parent.name for path in root.glob("*/*.yaml")}
    return rules_markdown(ruleset.rules, categories), []


def calibration_documents(docs: Path) -> dict[Path, str]:
    """docs/calibration.md and its chart, from every file in data/calibration."""
    # imported here: the chart library costs the other commands a fifth of a second
    from engine.answer.calibration_doc import CHART_NAME, calibration_markdown, calibration_svg
    from engine.knowledge.kb import load_kb
    from engine.planning import calibration
    from engine.planning.calibration import comparisons

    kb = load_kb(paths.kb_dir())
    measured = calibration.files(paths.data_dir() / "calibration")
    found = [c for path in measured for c in comparisons(kb, path)]
    unread = [(path.name, f.run, f.error) for path in measured for f in calibration.load(path).failures]
    return {
        docs / "calibration.md": calibration_markdown(found, unread),
        docs / "images" / CHART_NAME: calibration_svg(found),
    }


def schema_documents() -> dict[str, str]:
    """File name → JSON Schema text for every KB kind and for rules (what `kb schema` writes)."""
    models: dict[str, type[BaseModel]] = {**KIND_MODELS, "rules": Rule}
    return {
        f"{kind}.schema.json": json.dumps(model.model_json_schema(by_alias=True), indent=2) + "\n"
        for kind, model in models.items()
    }


def new_rule(rules_root: Path, category: str, rule_id: str, today: date) -> Path:
    """A new rule file scaffolded at rules/<category>/<rule_id>.yaml; `ValueError` naming what is
    wrong when the id or category is not allowed or the file exists."""
    path = new_rule_path(rules_root, category, rule_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(scaffold(category, rule_id, today), encoding="utf-8")
    return path


def kb_counts(kb_root: Path) -> tuple[dict[str, int], str | None, list[Problem]]:
    """How many facts of each kind the KB at `kb_root` holds, its version (None when it does not load)
    and its problems."""
    loaded: LoadResult = read_kb(kb_root)
    if loaded.kb is None:
        return {}, None, list(loaded.problems)
    counts = {kind: len(loaded.kb.of_kind(kind)) for kind in KIND_MODELS}
    return counts, loaded.kb.version, list(loaded.problems)
