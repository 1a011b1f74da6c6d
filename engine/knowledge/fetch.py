"""The bytes of a path or of an http(s) or file URL, within a size cap and a time limit: what a KB
bundle (`serve --kb-bundle`) and the cloud catalog (`kb refresh`) are read from."""

from __future__ import annotations

import urllib.parse
import urllib.request
from pathlib import Path

URL_SCHEMES = ("http", "https", "file")


class FetchError(Exception):
    """The source could not be read, or is larger than allowed; the message names it and why."""


def is_url(source: str) -> bool:
    return urllib.parse.urlsplit(source).scheme in URL_SCHEMES


def fetch(source: str, *, limit: int, timeout: float, what: str = "it", accept: str | None = None) -> bytes:
    """`source`'s bytes (a path, or an http(s) or file URL; `accept`: the Accept header asked for);
    FetchError when they cannot be had or are more than `limit` bytes (a file's size is checked before
    it is read, a download's as it is read)."""
    if is_url(source):
        request = urllib.request.Request(source, headers={"Accept": accept} if accept else {})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                data: bytes = response.read(limit + 1)
        except (OSError, ValueError) as exc:
            raise FetchError(f"{source}: cannot fetch {what}: {exc}") from exc
    else:
        path = Path(source)
        try:
            if path.stat().st_size > limit:
                raise FetchError(f"{source}: larger than {limit:,} bytes")
            data = path.read_bytes()
        except OSError as exc:
            raise FetchError(f"{source}: cannot read {what}: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise FetchError(f"{source}: larger than {limit:,} bytes")
    return data
