"""Every file under a folder, read once into memory: what is hashed is exactly what is parsed.

The KB, the rules and the catalog snapshot are read through a `Tree` rather than from the disk
file by file. Hashing one pass over the disk and parsing another would let an edit that lands in
between be checked, and cached, under the hash of the bytes before it; with a `Tree` the cache key,
the `kb_version` and every parsed entity come from the same bytes.

A `Tree` answers the few questions the readers ask of a folder (is this a folder, what is in it,
what are this file's bytes) with `Path`s rooted where the folder is, so problems still name the
real files.

A tree trusts only regular files inside it (`read_file`): a symlink is followed only to a file inside
the folder, folders are not followed through symlinks, a FIFO or a device is never opened for a
read that could block or never end, and no file is read past a size cap. What is refused is recorded
as `Unreadable` with the reason, never with any of its content.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Files above this are not read into memory: a KB file is a few KB, a catalog CSV tens of KB. Such a
file is recorded by its size (so the hash still changes with it) and reading it is an error."""

_CHUNK_BYTES = 64 * 1024
_TOO_LARGE_FIX = "split or trim it"


@dataclass(frozen=True)
class Unreadable:
    """A file that could not be read, or was refused, and why: the `check` and `fix` a problem about it
    shows. Never any of its content."""

    errno: int
    reason: str
    size: int = 0
    check: str = "read"
    fix: str = "check the file's permissions"


class UnreadableFile(OSError):
    """Reading a file the tree holds as `Unreadable`."""

    def __init__(self, unreadable: Unreadable, name: str) -> None:
        super().__init__(unreadable.errno, unreadable.reason, name)
        self.unreadable = unreadable


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
            inside = root.resolve()
            # os.walk does not enter a symlinked folder (followlinks=False) but lists it among the
            # folders; it is recorded with the files instead, as a link the tree refuses.
            for folder, subfolders, names in os.walk(root):
                relative = Path(folder).relative_to(root).as_posix()
                folders.add("" if relative == "." else relative)
                links = [name for name in subfolders if os.path.islink(os.path.join(folder, name))]
                subfolders[:] = sorted(set(subfolders) - set(links))
                for name in sorted([*names, *links]):
                    path = Path(folder) / name
                    files[path.relative_to(root).as_posix()] = _read(path, inside)
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

    def content(self, path: Path) -> bytes | Unreadable:
        """The file's bytes as they were when the tree was read, or why it has none."""
        relative = self._relative(path)
        content = self.files.get(relative) if relative is not None else None
        return Unreadable(errno.ENOENT, "no such file") if content is None else content

    def read_bytes(self, path: Path) -> bytes:
        """The file's bytes as they were when the tree was read; OSError as reading it would raise."""
        content = self.content(path)
        if isinstance(content, Unreadable):
            raise UnreadableFile(content, str(path.name))
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


def _read(path: Path, inside: Path) -> bytes | Unreadable:
    """A file of the tree whose resolved root is `inside`. A symlink is read only when it leads to a
    regular file inside the tree: a link to a file elsewhere (a token under ~/.config, say) would
    otherwise carry that file's content into what is parsed and into the messages about it."""
    if not path.is_symlink():
        return read_file(path)
    try:
        target = path.resolve(strict=True)
        mode = target.stat().st_mode
    except (OSError, RuntimeError):  # pathlib raises RuntimeError for a symlink loop (Python < 3.13)
        return _refused("a symlink that leads nowhere (broken or a loop)", inside)
    if not target.is_relative_to(inside):
        return _refused(f"a symlink to {_kind(mode)} outside {inside.name}/", inside)
    return read_file(target)


def read_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | Unreadable:
    """The bytes of `path` if it is a regular file (not a symlink) of at most `limit` bytes, else why
    not.

    The type is checked before opening: open(2) of a FIFO for reading waits for a writer, and a read
    of a device such as /dev/zero never ends. The file is then opened with O_NONBLOCK (POSIX open(2):
    a FIFO so opened returns at once; on a regular file the flag has no effect) and O_NOFOLLOW (a
    symlink swapped in meanwhile fails with ELOOP), and checked again on the open descriptor. A file
    whose size is over `limit` is not read at all; any other is read at most `limit` + 1 bytes, since
    the size stat gives is no bound (a /proc file says 0 and holds more)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            return _not_regular(mode)
        descriptor = os.open(path, flags | getattr(os, "O_BINARY", 0))
        try:
            opened = os.fstat(descriptor)
            if not stat.S_ISREG(opened.st_mode):  # replaced between the check and the open
                return _not_regular(opened.st_mode)
            size = opened.st_size
            content = _read_at_most(descriptor, limit + 1) if size <= limit else b""
        finally:
            os.close(descriptor)
    except OSError as exc:
        return Unreadable(exc.errno or errno.EIO, exc.strerror or str(exc))
    if size > limit or len(content) > limit:
        return Unreadable(
            errno.EFBIG, f"larger than {limit:,} bytes", max(size, len(content)), "size", _TOO_LARGE_FIX
        )
    return content


def _read_at_most(descriptor: int, count: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < count:
        chunk = os.read(descriptor, min(_CHUNK_BYTES, count - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _not_regular(mode: int) -> Unreadable:
    return Unreadable(
        errno.EINVAL,
        f"not a regular file ({_kind(mode)})",
        check="file-type",
        fix="remove it: only regular files are read",
    )


def _refused(reason: str, inside: Path) -> Unreadable:
    return Unreadable(
        errno.EACCES, reason, check="symlink", fix=f"put the file itself in {inside.name}/, not a link"
    )


_KINDS = (
    (stat.S_ISREG, "a file"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symlink"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    """What a file of this `st_mode` is, in words."""
    return next((words for test, words in _KINDS if test(mode)), "a special file")
