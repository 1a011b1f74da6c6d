"""The advisor in service and how it changes: start-up, reload, and following the other workers.

Every change goes through `_install`: the new advisor replaces the old one as a whole (a request holds
the one it started with, so no answer mixes two KBs), the old one's rule engine frees what it holds
outside Python, and the long-lived heap is frozen again (api/heap.py).
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from api import heap, metrics
from api.generations import Convergence, Generations, Watcher, private_folder
from engine.maintenance import disk_key, read_checked, read_checked_apart
from engine.recommend import Advisor


@dataclass(frozen=True)
class Reload:
    """What a reload did: the versions before and after, and how many workers serve the new one."""

    previous: Advisor
    fresh: Advisor
    convergence: Convergence


class ServedKB:
    """Owns `app.state.advisor` for one worker process."""

    def __init__(self, state: Any, kb_root: Path, rules_root: Path, data_root: Path | None) -> None:
        self.state = state
        self.kb_root, self.rules_root, self.data_root = kb_root, rules_root, data_root
        self._shared = Generations.from_env()
        self._own: Generations | None = None
        """this process's own generations when no folder is shared with other workers (made on use)"""
        self._watcher: Watcher | None = None
        self._switching = threading.Lock()
        """held while the advisor is replaced: one reload or switch at a time"""

    @property
    def generations(self) -> Generations:
        if self._shared is not None:
            return self._shared
        if self._own is None:
            self._own = Generations(private_folder(), workers=1)
        return self._own

    @property
    def advisor(self) -> Advisor:
        advisor: Advisor = self.state.advisor
        return advisor

    def start(self, given: Advisor | None) -> None:
        """Serve `given`, else the generation the other workers serve, else the KB on disk (checked)."""
        key = self.generations.current()
        advisor = given or self._published(key) or self._checked_from_disk()
        advisor.warm()
        self.state.advisor = advisor
        metrics.kb_served(advisor)
        if self._shared is not None and advisor.checked is not None and advisor.key != key:
            # none was published yet, or it could not be read: what this process serves becomes the
            # generation, so that the other workers follow it rather than each serve its own
            self._shared.publish(advisor.checked)
        if advisor.key is not None:
            self.generations.acknowledge(advisor.key)
        heap.settle()
        self._watcher = Watcher(self.generations, self.adopt)
        self._watcher.start()

    def _published(self, key: str | None) -> Advisor | None:
        checked = self.generations.load(key, self.kb_root) if key else None
        return Advisor.of(checked, self.rules_root) if checked else None

    def _checked_from_disk(self) -> Advisor:
        checked = read_checked(self.kb_root, self.rules_root, self.data_root, date.today())
        return Advisor.of(checked, self.rules_root)

    def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
        if self._own is not None:
            shutil.rmtree(self._own.folder, ignore_errors=True)
            self._own = None  # a later start (the app started again) makes a new one

    def reload(self) -> Reload:
        """Check the KB and rules on disk and, when they are clean, serve them on every worker.
        `KBInvalid` (nothing changed) or `CheckFailed` when they cannot be served."""
        with self._switching:
            current = fresh = self.advisor
            key, today = current.key, date.today()
            if key is None or key != disk_key(self.kb_root, self.rules_root, self.data_root, today):
                checked = read_checked_apart(
                    self.kb_root, self.rules_root, self.data_root, today, self.generations.folder
                )
                fresh = Advisor.of(checked, self.rules_root)
                fresh.warm()
                self.generations.publish(checked)
                self._install(fresh)
                key = checked.key
        # Unchanged files still wait: a reload just before this one may not have reached every
        # worker yet, and this answer must not say otherwise (nor answer 503 while it converges).
        return Reload(current, fresh, self.generations.wait_for(key))

    def adopt(self, key: str) -> None:
        """Serve the published generation `key` (the watcher's call when another worker reloaded)."""
        if self.advisor.key == key:
            return
        with self._switching:
            if self.advisor.key == key or self.generations.current() != key:
                return
            checked = self.generations.load(key, self.kb_root)
            if checked is None:
                raise RuntimeError("the published KB generation cannot be read")
            fresh = Advisor.of(checked, self.rules_root)
            fresh.warm()
            self._install(fresh)

    def _install(self, fresh: Advisor) -> None:
        old = self.advisor
        self.state.advisor = fresh
        metrics.kb_served(fresh)
        self.state.kb_changed()
        if fresh.key is not None:
            self.generations.acknowledge(fresh.key)
        old.close()
        del old  # kept only by requests still running on it, so `settle` can free it
        heap.settle()
