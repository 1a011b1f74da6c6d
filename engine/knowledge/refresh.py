"""Fresh cloud offers from SkyPilot's public catalog: the upstream `vms.csv` of each cloud, folded into
the snapshot's own rows (data/cloud-catalog/<cloud>.csv), as data/cloud-catalog/README.md describes the
snapshot was first taken: per instance type, accelerator and count, the least price and spot price over
the regions listed, the regions counted.

Only clouds whose upstream file names the accelerator on each instance's row are refreshed. AWS (rows
per availability zone, whose Local Zone spot prices the snapshot's rows annotate by hand), GCP (a host
row and a GPU row per region, paired by machine family) and Azure and RunPod (read from an older schema)
keep their snapshot rows until they are taken again by hand.

A refresh is checked before anything is written (engine/maintenance.py): a cloud that would lose more
than a stated share of its offers is refused, as a truncated download or an upstream outage looks
exactly like that.
"""

from __future__ import annotations

import csv
import io
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from engine.knowledge.fetch import FetchError, fetch, is_url
from engine.models.kb import Offer

CATALOG_RAW_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog"
CATALOG_COMMITS_API = "https://api.github.com/repos/skypilot-org/skypilot-catalog/commits"
SCHEMA_VERSION = "v8"
"""the catalog schema released SkyPilot reads (skypilot 0.14.1: CATALOG_SCHEMA_VERSION = 'v8')"""

REFRESHABLE = (
    "hyperbolic",
    "hyperstack",
    "jarvislabs",
    "lambda",
    "lium",
    "nebius",
    "primeintellect",
    "seeweb",
    "shadeform",
    "vast",
    "verda",
    "yotta",
)
"""clouds whose upstream rows carry the accelerator and the instance's whole price"""

NOT_REFRESHABLE = {
    "aws": "its rows are per availability zone and the snapshot annotates Local Zone spot prices by hand",
    "gcp": "its GPU prices are separate rows to pair with each machine's host row",
    "azure": "the snapshot reads an older catalog schema (v6)",
    "runpod": "the snapshot reads an older catalog schema (v6)",
    "mithril": "its prices are placeholders (data/catalog-import.yaml skips the cloud)",
}

MAX_DROP_SHARE = 0.25
"""the most of one provider's offers a refresh may remove before it is refused"""

FETCH_TIMEOUT_S = 60.0
MAX_CATALOG_BYTES = 16 * 1024 * 1024  # the largest v8 file a refreshable cloud has is a few MB

SNAPSHOT_COLUMNS = (
    "cloud",
    "instance_type",
    "accelerator_name",
    "accelerator_count",
    "vcpus",
    "memory_gib",
    "price_min_usd_hr",
    "spot_min_usd_hr",
    "n_regions",
    "regions",
    "catalog_path",
    "source_commit",
    "coverage",
    "as_of",
)
UPSTREAM_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
COMMIT = re.compile(r"[0-9a-f]{40}")


class RefreshError(Exception):
    """The catalog could not be fetched or read; the message names the file and why."""


@dataclass(frozen=True)
class Drop:
    """A provider that would lose offers in a refresh."""

    provider: str
    removed: int
    before: int

    @property
    def share(self) -> float:
        return self.removed / self.before if self.before else 0.0


def catalog_path(cloud: str, schema: str = SCHEMA_VERSION) -> str:
    """A cloud's file in the catalog repository, in a schema version's folder (`v8`)."""
    if not re.fullmatch(r"v\d+", schema):
        raise RefreshError(f"schema {schema!r} is not a catalog schema version such as {SCHEMA_VERSION}")
    return f"catalogs/{schema}/{cloud}/vms.csv"


def checked_clouds(clouds: Iterable[str]) -> tuple[str, ...]:
    """The clouds asked for, each one that can be refreshed; RefreshError naming any that cannot."""
    asked = tuple(dict.fromkeys(clouds))
    for cloud in asked:
        if cloud in NOT_REFRESHABLE:
            raise RefreshError(f"{cloud} cannot be refreshed: {NOT_REFRESHABLE[cloud]}")
        if cloud not in REFRESHABLE:
            raise RefreshError(f"{cloud!r} is not a cloud of the catalog (one of: {', '.join(REFRESHABLE)})")
    return asked


def snapshot_rows(cloud: str, upstream: bytes, path: str, commit: str, as_of: date) -> str:
    """The snapshot file of `cloud` (data/cloud-catalog/<cloud>.csv) from its upstream `vms.csv` bytes:
    one row per instance type, accelerator and count that has an accelerator, with the least price and
    spot price over its rows (a price of 0 is none), its regions, and the vCPUs and memory of its
    cheapest row (marketplaces list several shapes under one type). Rows are sorted by instance type."""
    try:
        text = upstream.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RefreshError(f"{path}: not valid UTF-8 at byte {exc.start}") from exc
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in UPSTREAM_COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise RefreshError(f"{path}: not a SkyPilot vms.csv (no column {', '.join(missing)})")
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for row in reader:
        accelerator = (row.get("AcceleratorName") or "").strip()
        gpus = _number(row.get("AcceleratorCount"))
        if not accelerator or not gpus:
            continue  # CPU instances
        key = (row["InstanceType"].strip(), accelerator, _shown(gpus))
        groups.setdefault(key, []).append(row)
    if not groups:
        raise RefreshError(f"{path}: no row with an accelerator")
    out = io.StringIO()
    writer = csv.writer(out)  # "\r\n" line ends, as the snapshot's files were written
    writer.writerow(SNAPSHOT_COLUMNS)
    for (instance, accelerator, count), rows in sorted(groups.items()):
        writer.writerow(_folded(cloud, instance, accelerator, count, rows, path, commit, as_of))
    return out.getvalue()


def _folded(
    cloud: str,
    instance: str,
    accelerator: str,
    count: str,
    rows: list[dict[str, str]],
    path: str,
    commit: str,
    as_of: date,
) -> list[str]:
    priced = [(p, row) for row in rows if (p := _number(row.get("Price"))) is not None and p > 0]
    spots = [s for row in rows if (s := _number(row.get("SpotPrice"))) is not None and s > 0]
    cheapest = min(priced, key=lambda pair: pair[0])[1] if priced else rows[0]
    regions = sorted({r for row in rows if (r := (row.get("Region") or "").strip())})
    return [
        cloud,
        instance,
        accelerator,
        count,
        _shown(_number(cheapest.get("vCPUs"))),
        _shown(_number(cheapest.get("MemoryGiB"))),
        _shown(min(p for p, _ in priced) if priced else None),
        _shown(min(spots) if spots else None),
        str(len(regions)),
        ";".join(regions),
        path,
        commit,
        "full",
        as_of.isoformat(),
    ]


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _shown(value: float | None) -> str:
    """A figure as the snapshot writes it: 44.0 as 44, 13.10904 as it is."""
    if value is None:
        return ""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def drops(before: Mapping[str, Offer], after: Mapping[str, Offer], providers: Iterable[str]) -> list[Drop]:
    """For each provider, the offers a refresh removes, of those it had."""
    found = []
    for provider in sorted(set(providers)):
        had = {i for i, o in before.items() if o.provider == provider}
        kept = {i for i, o in after.items() if o.provider == provider}
        if had - kept:
            found.append(Drop(provider, len(had - kept), len(had)))
    return found


def fetcher(source: str | None, commit: str) -> Callable[[str], bytes]:
    """Reads a catalog file by its path in the repository: from `source`, a folder holding a copy of
    the repository at `commit` (a clone, or recorded files) or a URL under which the repository's
    paths lie; by default from GitHub at `commit`."""
    base = source if source is not None else f"{CATALOG_RAW_URL}/{commit}"
    if not is_url(base) and not Path(base).is_dir():
        raise RefreshError(f"{base}: not a folder (give a copy of the catalog repository or a URL)")
    return lambda path: _read(f"{base.rstrip('/')}/{path}")


def latest_commit(branch: str = "master") -> tuple[str, date]:
    """The commit the catalog's `branch` is at now, and its date (GitHub's API): every file is read at
    that one commit, and its offers dated by it."""
    url = f"{CATALOG_COMMITS_API}/{urllib.parse.quote(branch)}"
    try:
        answer = json.loads(_read(url, accept="application/vnd.github+json"))
        sha, when = answer["sha"], answer["commit"]["committer"]["date"]
        if not isinstance(sha, str) or not COMMIT.fullmatch(sha):
            raise ValueError(f"{sha!r} is not a commit id")
        return sha, date.fromisoformat(str(when)[:10])
    except (ValueError, KeyError, TypeError) as exc:
        raise RefreshError(f"{url}: not the commit GitHub describes: {exc}") from exc


def _read(source: str, accept: str | None = None) -> bytes:
    try:
        return fetch(source, limit=MAX_CATALOG_BYTES, timeout=FETCH_TIMEOUT_S, accept=accept)
    except FetchError as exc:
        raise RefreshError(str(exc)) from exc
