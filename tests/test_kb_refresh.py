"""`gpu-advisor kb refresh`: fresh offers from SkyPilot's catalog, tested offline against files
recorded from the catalog repository (tests/fixtures/skypilot-catalog/README.md)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import date
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from engine.knowledge import refresh
from engine.knowledge.refresh import RefreshError, catalog_path, snapshot_rows

PROJECT = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).parent / "fixtures" / "skypilot-catalog"
SNAPSHOT_COMMIT = "0082b0435f3912ae4c566856b272455cc78f4f61"
"""the commit data/cloud-catalog/nebius.csv and hyperbolic.csv were taken at (data/cloud-catalog/README.md)"""
LATER_COMMIT = "d9bf3aa4d21f5c1e1f3d8fde27adf0204c46fbc8"
"""a later commit, whose catalogs/v9/nebius/vms.csv lists a second B200 machine and B200 spot prices"""


def _refresh(kb: Path, *args: str) -> int:
    return main(["kb", "refresh", "--kb", str(kb), "--data", str(kb.parent / "data"), *args])


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("cloud", ["nebius", "hyperbolic"])
def test_the_snapshot_rows_are_rebuilt_exactly_from_the_commit_they_were_taken_at(cloud: str) -> None:
    """The refresh folds upstream rows as the snapshot was first folded: the same least prices and spot
    prices over regions, regions, vCPUs and memory, byte for byte (less the new as_of column)."""
    path = catalog_path(cloud)
    rebuilt = snapshot_rows(
        cloud, (RECORDED / SNAPSHOT_COMMIT / path).read_bytes(), path, SNAPSHOT_COMMIT, date(2026, 11, 26)
    )
    kept = (PROJECT / "data" / "cloud-catalog" / f"{cloud}.csv").read_bytes().decode("utf-8")
    without_as_of = "".join(line.rsplit(",", 1)[0] + "\r\n" for line in rebuilt.split("\r\n") if line)
    assert without_as_of == kept
    assert rebuilt.splitlines()[1].endswith(",full,2026-11-26")


def test_a_refresh_to_a_later_catalog_gives_the_expected_diff(
    kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """nebius at LATER_COMMIT (recorded): one machine added (gpu-b200-sxm-a in me-west1), a spot price
    of 23.20 listed for the B200 machine that had none; nothing removed, every other price as it was."""
    before = set(_files(kb_copy / "offers"))
    docs = kb_copy.parent / "docs"
    docs.mkdir()
    code = _refresh(
        kb_copy,
        "--clouds=nebius",
        f"--from={RECORDED / LATER_COMMIT}",
        f"--commit={LATER_COMMIT}",
        "--schema=v9",
        "--as-of=2026-11-20",
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"refreshed nebius from the SkyPilot catalog at {LATER_COMMIT}" in out
    assert "1 added, 0 removed, 1 prices changed" in out
    assert set(_files(kb_copy / "offers")) - before == {"nebius-gpu-b200-sxm-a-8gpu-160vcpu-1792gb.yaml"}
    assert before <= set(_files(kb_copy / "offers"))
    b200 = _offer(kb_copy, "nebius-gpu-b200-sxm-8gpu-160vcpu-1792gb")
    assert (b200["on_demand_usd_per_hour"], b200["spot_usd_per_hour"], b200["as_of"]) == (
        44.0,
        23.2,
        "2026-11-20",
    )
    assert b200["sources"][0]["url"].endswith(f"/{LATER_COMMIT}/catalogs/v9/nebius/vms.csv")
    # offers of the other clouds keep their snapshot's date
    assert _offer(kb_copy, "hyperbolic-1x-h100-75-722") == _offer(PROJECT / "kb", "hyperbolic-1x-h100-75-722")
    changes = (docs / "catalog-changes.md").read_text(encoding="utf-8")
    assert "| `nebius-gpu-b200-sxm-8gpu-160vcpu-1792gb` | spot_usd_per_hour | 0 | 23.2 | new |" in changes
    assert "| `nebius-gpu-b200-sxm-a-8gpu-160vcpu-1792gb` | 8 x nvidia-b200 | 44 | 2026-11-20 |" in changes
    rows = (kb_copy.parent / "data" / "cloud-catalog" / "nebius.csv").read_text(encoding="utf-8")
    assert (
        f"B200,8,160,1792,44,23.2,1,me-west1,catalogs/v9/nebius/vms.csv,{LATER_COMMIT},full,2026-11-20"
        in rows
    )


def _offer(kb: Path, offer_id: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(
        (kb / "offers" / f"{offer_id}.yaml").read_text(encoding="utf-8")
    )
    return document


def test_a_refresh_that_would_remove_most_offers_is_refused_and_writes_nothing(
    kb_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A download cut off part way (the recorded file's first 40%) lists 2 of nebius's 17 machines:
    refused with the reason, every file as it was; allowed with --max-drop 1."""
    path = catalog_path("nebius")
    whole = (RECORDED / SNAPSHOT_COMMIT / path).read_bytes()
    cut = tmp_path / "cut" / path
    cut.parent.mkdir(parents=True)
    cut.write_bytes(whole[: len(whole) * 2 // 5])
    before = _files(kb_copy.parent)
    args = ["--clouds=nebius", f"--from={tmp_path / 'cut'}", f"--commit={SNAPSHOT_COMMIT}"]
    assert _refresh(kb_copy, *args) == 1
    err = capsys.readouterr().err
    assert "refresh refused: nebius would lose 15 of its 17 offers (88%), more than the 25% allowed" in err
    assert "Nothing was written." in err
    assert _files(kb_copy.parent) == before
    assert _refresh(kb_copy, *args, "--max-drop=1") == 0
    assert len(list((kb_copy / "offers").glob("nebius-*.yaml"))) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--clouds=aws"], "aws cannot be refreshed: its rows are per availability zone"),
        (["--clouds=nimbus"], "'nimbus' is not a cloud of the catalog"),
        ([f"--from={RECORDED / SNAPSHOT_COMMIT}"], "--from needs --commit"),
        (
            ["--clouds=lambda", f"--from={RECORDED / SNAPSHOT_COMMIT}", "--commit=abc"],
            "catalogs/v8/lambda/vms.csv: cannot read it",
        ),
        (
            ["--clouds=nebius", f"--from={RECORDED / SNAPSHOT_COMMIT}", "--commit=abc", "--schema=latest"],
            "schema 'latest' is not",
        ),
    ],
)
def test_bad_input_is_one_line_naming_what_is_wrong(
    kb_copy: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _files(kb_copy.parent)
    assert _refresh(kb_copy, *args) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert _files(kb_copy.parent) == before


def test_a_file_that_is_not_a_catalog_is_refused() -> None:
    with pytest.raises(RefreshError, match=r"not a SkyPilot vms.csv \(no column InstanceType"):
        snapshot_rows("nebius", b"<html>rate limited</html>\n", "p", SNAPSHOT_COMMIT, date(2026, 11, 26))
    with pytest.raises(RefreshError, match="no row with an accelerator"):
        snapshot_rows(
            "nebius",
            b"InstanceType,AcceleratorName,AcceleratorCount,Price,Region\nc,,0,1,r\n",
            "p",
            "c",
            date.today(),
        )


@pytest.fixture
def catalog_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The recorded files served over HTTP as GitHub serves the repository (raw files under
    /<commit>/) and its commits API (/commits/master), on loopback."""

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(RECORDED), **kwargs)  # type: ignore[arg-type]

        def do_GET(self) -> None:
            if self.path == "/commits/master":
                body = json.dumps(
                    {"sha": SNAPSHOT_COMMIT, "commit": {"committer": {"date": "2025-11-30T08:00:00Z"}}}
                )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())
                return
            super().do_GET()

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setattr(refresh, "CATALOG_RAW_URL", base)
    monkeypatch.setattr(refresh, "CATALOG_COMMITS_API", f"{base}/commits")
    yield base
    server.shutdown()


def test_by_default_every_file_is_read_at_the_newest_commit_and_dated_by_it(
    kb_copy: Path, catalog_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _refresh(kb_copy, "--clouds=nebius,hyperbolic") == 0
    assert f"at {SNAPSHOT_COMMIT}" in capsys.readouterr().out
    assert _offer(kb_copy, "hyperbolic-2x-h100-149-1443")["as_of"] == "2025-11-30"
    assert _offer(kb_copy, "nebius-gpu-h200-sxm-1gpu-16vcpu-200gb")["spot_usd_per_hour"] == 1.45


def test_an_unreachable_catalog_is_one_line(
    kb_copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh, "CATALOG_COMMITS_API", "http://127.0.0.1:9/commits")
    before = _files(kb_copy.parent)
    assert _refresh(kb_copy, "--clouds=nebius") == 1
    assert "http://127.0.0.1:9/commits/master: cannot fetch it" in capsys.readouterr().err
    assert _files(kb_copy.parent) == before
