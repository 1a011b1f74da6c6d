"""KB bundles (engine/knowledge/bundle.py): one content-addressed file a deployment's replicas all
serve, `gpu-advisor kb bundle` to write it and `serve --kb-bundle` to serve it."""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cli.main import main
from engine.knowledge.bundle import BundleError, bundle_name, open_bundle, write_bundle
from engine.knowledge.paths import PROJECT_ROOT
from engine.maintenance import kb_counts

KB = PROJECT_ROOT / "kb"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(KB, tmp_path_factory.mktemp("published"))


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_bundle_is_named_by_the_digest_of_its_bytes_which_the_same_files_always_give(
    bundle: Path, tmp_path: Path
) -> None:
    assert bundle.name == bundle_name(hashlib.sha256(bundle.read_bytes()).hexdigest())
    again = write_bundle(KB, tmp_path)  # another folder, another moment
    assert again.name == bundle.name and again.read_bytes() == bundle.read_bytes()
    assert write_bundle(KB, tmp_path) == again  # written once: the name is the content


def test_a_bundle_unpacks_to_the_kb_it_was_made_from(bundle: Path, tmp_path: Path) -> None:
    kb_root, digest = open_bundle(str(bundle), tmp_path)
    assert bundle.name == bundle_name(digest)
    assert _files(kb_root) == _files(KB)
    assert kb_counts(kb_root)[1] == kb_counts(KB)[1]  # the same KB version on every replica


def test_a_changed_kb_is_another_bundle(kb_copy: Path, bundle: Path, tmp_path: Path) -> None:
    gpu = kb_copy / "gpus/nvidia-h100-sxm.yaml"
    gpu.write_text(gpu.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert write_bundle(kb_copy, tmp_path).name != bundle.name


def test_bytes_that_do_not_have_the_digest_their_name_states_are_refused(
    bundle: Path, tmp_path: Path
) -> None:
    forged = tmp_path / bundle_name("0" * 64)
    shutil.copyfile(bundle, forged)
    with pytest.raises(BundleError, match="not the one its name states"):
        open_bundle(str(forged), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    renamed = tmp_path / "kb.tar.gz"
    shutil.copyfile(bundle, renamed)
    with pytest.raises(BundleError, match="is not a bundle name"):
        open_bundle(str(renamed), tmp_path / "out")


def _forged(tmp_path: Path, name: str) -> Path:
    """A bundle, correctly named by its digest, holding one member called `name`."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        member = tarfile.TarInfo(name)
        member.size = 4
        tar.addfile(member, io.BytesIO(b"id: "))
    data = raw.getvalue()
    path = tmp_path / bundle_name(hashlib.sha256(data).hexdigest())
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("member", ["../escaped.yaml", "/etc/escaped.yaml", "other/x.yaml", "kb/../../x"])
def test_a_member_outside_kb_is_refused_and_nothing_is_written(tmp_path: Path, member: str) -> None:
    forged = _forged(tmp_path, member)
    with pytest.raises(BundleError, match="does not lie below kb/"):
        open_bundle(str(forged), tmp_path / "out" / "here")
    assert not list((tmp_path / "out").rglob("*.yaml")) and not (tmp_path / "escaped.yaml").exists()


@pytest.fixture
def http_folder(bundle: Path) -> Iterator[str]:
    """The bundle's folder served over HTTP on a loopback port: the URL of the folder."""
    handler = partial(SimpleHTTPRequestHandler, directory=str(bundle.parent))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_bundle_is_fetched_from_a_url(bundle: Path, http_folder: str, tmp_path: Path) -> None:
    kb_root, _ = open_bundle(f"{http_folder}/{bundle.name}", tmp_path / "http")
    assert _files(kb_root) == _files(KB)
    kb_root, _ = open_bundle(bundle.as_uri(), tmp_path / "file")
    assert _files(kb_root) == _files(KB)
    with pytest.raises(BundleError, match="cannot fetch the bundle"):
        open_bundle(f"{http_folder}/{bundle_name('1' * 64)}", tmp_path / "missing")


def test_the_command_refuses_to_bundle_a_kb_with_problems(
    kb_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
    assert main(["kb", "bundle", "--kb", str(kb_copy), "--out", str(tmp_path / "out")]) == 1
    assert "no bundle written" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_serve_serves_the_kb_of_a_bundle_and_refuses_a_forged_one(
    bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    import api.app
    import cli.main

    served: list[Path] = []

    def loaded(kb_root: Path, *args: object) -> object:
        served.append(kb_root)
        return object()

    monkeypatch.setattr(cli.main, "load_advisor", loaded)
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)
    monkeypatch.setattr(api.app, "create_app", lambda **kwargs: None)
    monkeypatch.setattr("api.listen.why_not_listening", lambda host, port: None)
    monkeypatch.delenv(api.app.WARM_CHARTS_ENV, raising=False)  # serve sets it: restored after
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the bundle is unpacked in a folder of its own
    assert main(["serve", "--kb-bundle", str(bundle), "--port", "8999"]) == 0
    assert len(served) == 1 and _files(served[0]) == _files(KB)
    forged = tmp_path / bundle_name("f" * 64)
    shutil.copyfile(bundle, forged)
    assert main(["serve", "--kb-bundle", str(forged), "--port", "8999"]) == 1
    assert "not starting" in capsys.readouterr().err
    assert main(["serve", "--kb-bundle", str(bundle), "--kb", str(KB), "--port", "8999"]) == 2
