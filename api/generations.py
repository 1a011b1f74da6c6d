"""One KB for every worker process: the generation the service serves, shared through a folder.

`gpu-advisor serve --workers N` runs N processes, and `POST /admin/reload` reaches one of them. So a
reload does not swap the KB of one process only: it publishes a *generation* (the checked KB, stored
as a cache entry, and a pointer naming its key) in a folder all workers share, and each worker's
watcher switches to it and acknowledges. The reload answers 200 only once every live worker serves
the new generation. A worker that starts later (a restart after a crash) starts on the generation
published, not on whatever the files hold by then.

The folder holds `generation` (the key in service), the entries (`kb-<key>.json`, with the cache's
integrity checks) and one `worker-<pid>` file per worker naming the key it serves.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.maintenance import CheckedKB, cache

STATE_ENV = "GPU_ADVISOR_STATE"
WORKERS_ENV = "GPU_ADVISOR_WORKERS"
POINTER = "generation"
WATCH_INTERVAL_S = 0.2
ACK_TIMEOUT_S = 60.0

log = logging.getLogger("gpu_advisor.api")


@dataclass(frozen=True)
class Convergence:
    switched: int
    """live workers serving the generation"""
    expected: int
    superseded_by: str | None = None
    """a newer generation published meanwhile, if any"""

    @property
    def complete(self) -> bool:
        return self.superseded_by is None and self.switched >= self.expected


class Generations:
    """The shared folder of one service's generations."""

    def __init__(self, folder: Path, workers: int) -> None:
        self.folder = folder
        self.workers = workers

    @classmethod
    def from_env(cls) -> Generations | None:
        """The folder `serve` prepared for its workers ($GPU_ADVISOR_STATE), if any."""
        folder = os.environ.get(STATE_ENV)
        if not folder:
            return None
        return cls(Path(folder), int(os.environ.get(WORKERS_ENV) or 1))

    def current(self) -> str | None:
        """The key of the generation in service, or None before the first is published."""
        try:
            return (self.folder / POINTER).read_text().strip() or None
        except OSError:
            return None

    def publish(self, checked: CheckedKB) -> None:
        """Make `checked` the generation every worker serves: its entry first, then the pointer,
        each written whole (a temporary file renamed over the old one)."""
        if not (self.folder / cache.entry_name(checked.key)).is_file():  # the reload's check stored it
            cache.store(checked, self.folder)
        _write_atomically(self.folder / POINTER, checked.key)

    def load(self, key: str, kb_root: Path) -> CheckedKB | None:
        return cache.load(key, kb_root, self.folder)

    def acknowledge(self, key: str) -> None:
        """Say that this process now serves `key`."""
        _write_atomically(self.folder / f"worker-{os.getpid()}", key)

    def convergence(self, key: str) -> Convergence:
        """How many live workers serve `key`. Files of processes that are gone are removed."""
        switched = 0
        for path in self.folder.glob("worker-*"):
            pid = int(path.name.removeprefix("worker-") or 0)
            if not _alive(pid):
                path.unlink(missing_ok=True)
                continue
            try:
                switched += path.read_text().strip() == key
            except OSError:
                continue
        current = self.current()
        return Convergence(switched, self.workers, current if current not in (None, key) else None)

    def wait_for(self, key: str, timeout_s: float = ACK_TIMEOUT_S) -> Convergence:
        """Wait until every worker serves `key`, a newer generation replaces it, or time runs out."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.convergence(key)
            if state.complete or state.superseded_by or time.monotonic() > deadline:
                return state
            time.sleep(WATCH_INTERVAL_S / 2)


class Watcher:
    """A worker's thread that follows the published generation: when the pointer names another key
    than the one served, `adopt(key)` switches to it (and acknowledges)."""

    def __init__(self, generations: Generations, adopt: Callable[[str], None]) -> None:
        self.generations = generations
        self.adopt = adopt
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-advisor-generations", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        failed: str | None = None
        while not self._stop.wait(WATCH_INTERVAL_S):
            key = self.generations.current()
            if key is None or key == failed:
                continue
            try:
                self.adopt(key)
            except Exception:  # the old KB stays; a later generation is tried again
                log.exception("could not switch to the published KB generation %s", key[:12])
                failed = key


def private_folder() -> Path:
    """A new folder only this user can use (mode 0700), for one service's generations."""
    return Path(tempfile.mkdtemp(prefix="gpu-advisor-state-"))


def _write_atomically(path: Path, text: str) -> None:
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as handle:
        handle.write(text)
    Path(handle.name).replace(path)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
