"""Every file under a folder, read once into memory: what is hashed is exactly what is parsed.

The KB, the rules and the catalog snapshot are read through a `Tree` rather than from the disk
file by file. Hashing one pass over the disk and parsing another would let an edit that lands in
between be checked, and cached, under the hash of the bytes before it; with a `Tree` the cache key,
the `kb_version` and every parsed entity come from the same bytes.

A `Tree` answers the few questions the readers ask of a folder (is this a folder, what is in it,
what are this file's bytes) with `Path`s rooted where the folder is, so problems still name the
real files.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Files above this are not read into memory: a KB file is a few KB, a catalog CSV tens of KB. Such a
file is recorded by its size (so the hash still changes with it) and reading it is an error."""


@dataclass(frozen=True)
class Unreadable:
    """A file that could not be read (or is too large to), and why."""

    errno: int
    reason: str
    size: int = 0


@dataclass(frozen=True)
class Tree:
    root: Path
    files: Mapping[str, bytes | Unreadable]
    """relative POSIX path → the file's bytes (or why it has none)"""
    folders: frozenset[str]
    """relative POSIX paths of the folders, "" for the root itself when it exists"""

    @classmethod
    def read(cls, root: Path) -> Tree:
        """Read every file below `root` (hidden ones too: they count for the hash, not for the KB).
        A missing `root` is an empty tree whose root does not exist."""
        files: dict[str, bytes | Unreadable] = {}
        folders: set[str] = set()
        if root.is_dir():
            for folder, subfolders, names in os.walk(root):
                relative = Path(folder).relative_to(root).as_posix()
                folders.add("" if relative == "." else relative)
                subfolders.sort()
                for name in sorted(names):
                    path = Path(folder) / name
                    files[path.relative_to(root).as_posix()] = _read(path)
        return cls(root, MappingProxyType(files), frozenset(folders))

    def _relative(self, path: Path) -> str | None:
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            return None
        return "" if relative == "." else relative

    def is_dir(self, path: Path) -> bool:
        return self._relative(path) in self.folders

    def is_file(self, path: Path) -> bool:
        return self._relative(path) in self.files

    def iterdir(self, folder: Path) -> list[Path]:
        """The files and folders directly in `folder`, sorted by name (empty if it is not a folder)."""
        relative = self._relative(folder)
        if relative is None or relative not in self.folders:
            return []
        prefix = f"{relative}/" if relative else ""
        children = {
            name[len(prefix) :].split("/", 1)[0]
            for name in (*self.files, *self.folders)
            if name.startswith(prefix) and name != relative
        }
        return [folder / child for child in sorted(children) if child]

    def read_bytes(self, path: Path) -> bytes:
        """The file's bytes as they were when the tree was read; OSError as reading it would raise."""
        relative = self._relative(path)
        content = self.files.get(relative) if relative is not None else None
        if content is None:
            raise FileNotFoundError(errno.ENOENT, "no such file", str(path.name))
        if isinstance(content, Unreadable):
            raise OSError(content.errno, content.reason, str(path.name))
        return content

    def yaml_files(self) -> Iterator[tuple[str, bytes | Unreadable]]:
        """(relative path, content) of every .yaml file, in path order."""
        for name in sorted(self.files):
            if name.endswith(".yaml"):
                yield name, self.files[name]

    def feed(self, digest: hashlib._Hash) -> None:
        """Add the tree (each file's path and bytes) to `digest`."""
        if "" not in self.folders:
            digest.update(b"\0missing\0")
            return
        for name in sorted(self.files):
            content = self.files[name]
            digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
            if isinstance(content, Unreadable):
                digest.update(f"\0unreadable:{content.errno}:{content.size}\0".encode())
            else:
                digest.update(content)
            digest.update(b"\0")


def _read(path: Path) -> bytes | Unreadable:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return Unreadable(errno.EFBIG, f"file is {size:,} bytes, over {MAX_FILE_BYTES:,}", size)
        return path.read_bytes()
    except OSError as exc:
        return Unreadable(exc.errno or errno.EIO, exc.strerror or str(exc))
