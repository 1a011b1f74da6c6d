"""A least-recently-used cache bounded by the memory its entries hold, estimated by a weight function.

Bounded by entries (as the option caches were, 256 each), a cache of values of very different sizes
has no bound worth the name: 256 option lists of 3 MB each is most of a gigabyte, which a soak of
requests naming owned hardware reached (issue: a worker grew from 95 MB to 1.2 GB). Each entry here
is weighed when stored, and the least recently used go once the total passes `max_bytes`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

REFERENCE_BYTES = 8
"""a pointer in a tuple: what a tuple of shared objects costs per item"""


class BoundedCache(Generic[K, V]):
    """Thread-safe: a lock around each lookup and store (the engine thread and a reload's warm-up
    may use one advisor at once)."""

    def __init__(self, max_bytes: int, weigh: Callable[[V], int]) -> None:
        self.max_bytes = max_bytes
        self._weigh = weigh
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self.bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value kept for `key`, else `make()` kept (made outside the lock: a race makes it twice)."""
        found = self.get(key)
        if found is None:
            found = make()
            self.put(key, found)
        return found

    def put(self, key: K, value: V) -> None:
        weight = self._weigh(value)
        with self._lock:
            held = self._entries.pop(key, None)
            if held is not None:
                self.bytes -= held[1]
            self._entries[key] = (value, weight)
            self.bytes += weight
            self._evict()

    def reweigh(self, key: K) -> None:
        """Weigh the value kept for `key` again, for a value that grows after it is stored."""
        with self._lock:
            held = self._entries.get(key)
            if held is None:
                return
            weight = self._weigh(held[0])
            self._entries[key] = (held[0], weight)
            self.bytes += weight - held[1]
            self._evict()

    def _evict(self) -> None:
        """Drop the least recently used entries until the total is within bounds (the lock held)."""
        while self.bytes > self.max_bytes and len(self._entries) > 1:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0


def weigh_references(items: tuple[object, ...]) -> int:
    """A tuple of objects held elsewhere: its pointers and header."""
    return 56 + REFERENCE_BYTES * len(items)
