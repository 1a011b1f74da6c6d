"""A time limit for one answer, checked where the work is: each option sized, each chart drawn.

The service sets a deadline per request (api/admission.py); the engine does not know about HTTP,
so the limit travels in a context variable, copied into the thread that answers the request. With
none set (the CLI, the tests) `check` costs one lookup and never raises. Cooperative on purpose:
a thread cannot be stopped from outside, so the work itself looks at the clock between steps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[float | None] = ContextVar("gpu_advisor_deadline", default=None)
"""the `time.monotonic()` by which the answer must be done, or None for no limit"""


class DeadlineExceeded(Exception):
    """The answer was not done by its deadline; the work stops where it is."""

    def __init__(self, limit_s: float | None = None) -> None:
        self.limit_s = limit_s
        within = f" within the service's {limit_s:g} s limit" if limit_s else ""
        super().__init__(f"the answer could not be finished{within}")


def set_deadline(seconds: float) -> None:
    """Work in this context from now on must end within `seconds` (the service sets it in a copy of
    the context made for one request; `deadline_in` is the scoped form)."""
    _deadline.set(time.monotonic() + seconds)


@contextmanager
def deadline_in(seconds: float) -> Iterator[None]:
    """Work in this block must end within `seconds`."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left before the deadline (negative once past), or None with no deadline."""
    at = _deadline.get()
    return None if at is None else at - time.monotonic()


def check() -> None:
    """Raise `DeadlineExceeded` once the deadline has passed."""
    at = _deadline.get()
    if at is not None and time.monotonic() > at:
        raise DeadlineExceeded()
