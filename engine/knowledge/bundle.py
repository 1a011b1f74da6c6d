"""KB bundles: a knowledge base as one content-addressed file, so every replica of a deployment serves
the same bytes and a rollout is a restart with another digest.

A bundle is a gzip-compressed tar of the KB folder's files under `kb/`, written the same way every time
(members in name order, no times, owners or modes of the machine that wrote it: the `gzip` and `tar`
headers are fixed), and named by the SHA-256 of its bytes: `gpu-advisor-kb-<64 hex digits>.tar.gz`.
Opening one checks the bytes against the name before anything is unpacked, and unpacks only regular
files below `kb/` into a fresh private folder: a bundle is data, never trusted with paths of its own.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import tarfile
import tempfile
import urllib.parse
from pathlib import Path, PurePosixPath

from engine.knowledge.fetch import FetchError, fetch

__all__ = ["MAX_BUNDLE_BYTES", "BundleError", "bundle_name", "open_bundle", "read_source", "write_bundle"]

PREFIX = "gpu-advisor-kb-"
SUFFIX = ".tar.gz"
NAME = re.compile(rf"^{re.escape(PREFIX)}(?P<digest>[0-9a-f]{{64}}){re.escape(SUFFIX)}$")
TOP = "kb"
"""the folder every member of a bundle lies under"""
MAX_BUNDLE_BYTES = 64 * 1024 * 1024
"""the most a bundle may weigh, packed or unpacked (the KB is about 2 MB)"""
FETCH_TIMEOUT_S = 30.0


class BundleError(ValueError):
    """A bundle that cannot be written, fetched or opened; the message says which and why."""


def bundle_name(digest: str) -> str:
    """The file name of the bundle whose bytes have this SHA-256 (hex)."""
    return f"{PREFIX}{digest}{SUFFIX}"


def _packed(kb_root: Path) -> bytes:
    """The bundle's bytes: every regular file below `kb_root` (hidden ones left out), in name order."""
    files = sorted(
        path
        for path in kb_root.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(kb_root).parts)
    )
    if not files:
        raise BundleError(f"{kb_root}: no KB files to bundle")
    raw = io.BytesIO()
    # mtime 0 and no file name in the gzip header: the same files always give the same bytes
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for path in files:
            data = path.read_bytes()
            member = tarfile.TarInfo(f"{TOP}/{path.relative_to(kb_root).as_posix()}")
            member.size, member.mode, member.mtime = len(data), 0o644, 0
            tar.addfile(member, io.BytesIO(data))
    return raw.getvalue()


def write_bundle(kb_root: Path, out_dir: Path) -> Path:
    """Bundle the KB at `kb_root` into `out_dir` and return the file written (or found there already:
    a name is its content). Written to a temporary name and renamed, so no reader sees half a file."""
    if not kb_root.is_dir():
        raise BundleError(f"{kb_root}: not a folder")
    data = _packed(kb_root)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / bundle_name(hashlib.sha256(data).hexdigest())
    if target.is_file() and target.read_bytes() == data:
        return target
    handle, temporary = tempfile.mkstemp(dir=out_dir, prefix=".bundle-", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)  # published: readable by the replicas that fetch it
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def read_source(source: str) -> tuple[str, bytes]:
    """A bundle's file name and bytes, from a path or an http(s) or file URL."""
    name = PurePosixPath(urllib.parse.unquote(urllib.parse.urlsplit(source).path)).name
    try:
        return name, fetch(source, limit=MAX_BUNDLE_BYTES, timeout=FETCH_TIMEOUT_S, what="the bundle")
    except FetchError as exc:
        raise BundleError(str(exc)) from exc


def _checked_digest(name: str, data: bytes) -> str:
    """The digest a bundle's name states, once its bytes are shown to have it."""
    found = NAME.match(name)
    if found is None:
        raise BundleError(
            f"{name!r} is not a bundle name ({PREFIX}<sha256>{SUFFIX}, as `gpu-advisor kb bundle` writes)"
        )
    digest = hashlib.sha256(data).hexdigest()
    if digest != found["digest"]:
        raise BundleError(f"{name}: its bytes have digest {digest}, not the one its name states")
    return digest


def _members(tar: tarfile.TarFile) -> list[tuple[tarfile.TarInfo, PurePosixPath]]:
    """Every member with the path it unpacks to below `kb/`; BundleError on any other kind of member."""
    members = []
    total = 0
    for member in tar.getmembers():
        path = PurePosixPath(member.name)
        if not member.isfile():
            raise BundleError(f"member {member.name!r} is not a regular file")
        if path.is_absolute() or ".." in path.parts or path.parts[:1] != (TOP,) or len(path.parts) < 2:
            raise BundleError(f"member {member.name!r} does not lie below {TOP}/")
        total += member.size
        if total > MAX_BUNDLE_BYTES:
            raise BundleError(f"unpacks to more than {MAX_BUNDLE_BYTES:,} bytes")
        members.append((member, path))
    if not members:
        raise BundleError("it holds no files")
    return members


def open_bundle(source: str, into: Path | None = None) -> tuple[Path, str]:
    """Unpack the bundle at `source` (a path or URL) into `into` (default: a fresh private folder) and
    return the KB folder and the bundle's digest. The bytes are checked against the name first."""
    name, data = read_source(source)
    digest = _checked_digest(name, data)
    folder = Path(tempfile.mkdtemp(prefix=PREFIX)) if into is None else into
    try:  # a name and bytes that agree are still only data: every member is checked before it is written
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member, path in _members(tar):
                extracted = tar.extractfile(member)
                assert extracted is not None  # a regular file always has content
                target = folder.joinpath(*path.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(extracted.read())
    except BundleError as exc:
        raise BundleError(f"{name}: {exc}") from None
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(f"{name}: cannot unpack: {exc}") from exc
    return folder / TOP, digest
