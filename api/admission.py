"""Bounded work per request: one engine thread per worker, a bounded queue in front of it, a deadline
per answer, and load shed with a 503 rather than queued without end.

Why a thread: the engine is CPU-bound Python. Run on the event loop (as it was), every answer held
the loop for its whole length, so `/healthz` waited behind every queued `/report` (16 concurrent
report loops put its median at 10.8 s). Run in one thread beside the loop, the interpreter switches
between the two every few milliseconds (`sys.getswitchinterval()`, 5 ms by default), so the loop
answers liveness probes and refuses excess work while the engine computes. One thread, not a pool:
threads cannot run Python in parallel (the GIL), so more would only interleave answers and make each
slower; the service scales with worker processes.

Why a bound: a worker answers about one request at a time, so a queue longer than a few seconds of
work only turns every answer late. Past `max_queue` requests waiting or running, a new one is
answered at once with 503 and `Retry-After` (load shedding), which a client or a load balancer can
act on, rather than time out.

Why a deadline: an answer that cannot be finished in `deadline_s` is answered 503 with the reason;
the engine stops at its next step (engine/planning/deadline.py), so the thread is free again soon.
A request that waited in the queue past its deadline is not started at all.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from math import ceil
from typing import TypeVar

from engine.recommend import deadline

T = TypeVar("T")

DEADLINE_ENV = "GPU_ADVISOR_DEADLINE_S"
QUEUE_ENV = "GPU_ADVISOR_MAX_QUEUE"
DEFAULT_DEADLINE_S = 10.0
"""a report of a 70B model takes under a second of CPU; ten seconds is far past any healthy answer"""
DEFAULT_MAX_QUEUE = 128
"""requests waiting or running per worker: at about 10 ms a recommendation, a second and a bit of
work; 64 concurrent clients (bench/'s heaviest load) queue within it rather than see 503s. A queued
request waits at most its deadline anyway."""
GRACE_S = 1.0
"""how long past its deadline an answer is waited for before the client is told (the engine checks
the clock between steps; a step in a C library cannot be interrupted)"""


class Overloaded(Exception):
    """This worker has `max_queue` requests waiting or running already."""

    def __init__(self, in_flight: int, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(
            f"the service is busy: {in_flight} requests are waiting on this worker, its limit; "
            f"retry in {retry_after_s} s"
        )


def _setting(name: str, kind: Callable[[str], T], default: T) -> T:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"${name} must be a number, not {text!r}") from None


class Admission:
    """One worker's engine thread and the bound in front of it."""

    def __init__(self, deadline_s: float, max_queue: int) -> None:
        if not deadline_s > 0 or max_queue < 1:  # `not >` so that NaN is refused too
            raise ValueError("the deadline must be positive and the queue hold at least one request")
        self.deadline_s = deadline_s
        self.max_queue = max_queue
        self.in_flight = 0
        self._mean_s = 0.01
        """moving mean of an answer's time, for `Retry-After`"""
        self._executor: ThreadPoolExecutor | None = None
        """made on first use, and again after `close` (an app's lifespan may end and start again)"""

    @classmethod
    def from_env(cls) -> Admission:
        """The limits `serve` was given ($GPU_ADVISOR_DEADLINE_S, $GPU_ADVISOR_MAX_QUEUE), else the
        defaults."""
        deadline_s = _setting(DEADLINE_ENV, float, DEFAULT_DEADLINE_S)
        max_queue = _setting(QUEUE_ENV, int, DEFAULT_MAX_QUEUE)
        if not 0 < deadline_s <= 86_400:
            raise ValueError(f"${DEADLINE_ENV} must be a number of seconds in (0, 86400], not {deadline_s}")
        if max_queue < 1:
            raise ValueError(f"${QUEUE_ENV} must be a whole number of at least 1, not {max_queue}")
        return cls(deadline_s, max_queue)

    def retry_after_s(self) -> int:
        """Seconds until the work in the queue now is likely done (at least 1)."""
        return max(1, ceil(self.in_flight * self._mean_s))

    async def run(self, work: Callable[[], T]) -> T:
        """`work()` in the engine thread within the deadline; `Overloaded` when the queue is full,
        `deadline.DeadlineExceeded` when the answer is not done in time."""
        if self.in_flight >= self.max_queue:
            raise Overloaded(self.in_flight, self.retry_after_s())
        self.in_flight += 1
        context = contextvars.copy_context()
        context.run(deadline.set_deadline, self.deadline_s)
        loop = asyncio.get_running_loop()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpu-advisor-engine")
        future = loop.run_in_executor(self._executor, context.run, self._timed, work)
        # The slot is given back when the work ends, not when the client is answered: an answer
        # abandoned at its deadline still occupies the thread until its next check.
        future.add_done_callback(self._done)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.deadline_s + GRACE_S)
        except TimeoutError:
            raise deadline.DeadlineExceeded(self.deadline_s) from None

    def _timed(self, work: Callable[[], T]) -> T:
        deadline.check()  # waited in the queue past its time: not started at all
        started = time.monotonic()
        try:
            return work()
        finally:
            self._mean_s = 0.9 * self._mean_s + 0.1 * (time.monotonic() - started)

    def _done(self, _: object) -> None:
        self.in_flight -= 1

    def close(self) -> None:
        """Stop the engine thread once its answer in hand is done; queued ones are dropped."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
