"""The report's charts drawn to SVG: each distinct set once, and, in the service, outside the worker.

Once: drawing costs most of a report (vl-convert runs Vega in an embedded V8; a 20-option memory
chart takes about 250 ms on 2 cores, building its specification with Vega-Altair 50 ms more), and
equal answers draw equal charts. Drawings are kept by the hash of what they are drawn from (the
answer without its request id, the horizon, the options shown), the least recently used dropped past
`CACHE_BYTES` of SVG.

Outside: vl-convert holds Python's GIL for the whole drawing, so in a worker it stopped every other
thread, the event loop answering `/healthz` among them, for up to 400 ms per chart; and Vega-Altair
brings 90,000 objects (59 MB) that every full garbage collection would walk. So the service draws in
a child process (engine/answer/svg_child.py), waiting on a pipe, which releases the GIL; the worker
never imports either library. The CLI and the tests draw in process (`apart` off): one call, no
child to start.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from typing import Any

from engine.answer.svg_child import LENGTH, draw, write_message
from engine.models.response import RecommendResponse
from engine.planning import deadline

Drawn = list[tuple[str, str | None]]
"""each chart's name and SVG (None: nothing to plot), in the report's order"""

CACHE_BYTES = 8 * 2**20
"""SVG kept per process: the charts of about a hundred reports"""
CHILD_TIMEOUT_S = 30.0
"""the longest a drawing is waited for with no request deadline set"""

log = logging.getLogger("gpu_advisor.charts")


class ChartError(RuntimeError):
    """The charts could not be drawn (a defect of ours: the specifications are built in code)."""


class SvgRenderer:
    """Draws and keeps SVG. Thread-safe: one drawing at a time in the child."""

    def __init__(self, cache_bytes: int = CACHE_BYTES) -> None:
        self.cache_bytes = cache_bytes
        self.apart = False
        self._kept: OrderedDict[str, Drawn] = OrderedDict()
        self._kept_bytes = 0
        self._lock = threading.Lock()
        """guards the kept drawings"""
        self._child_lock = threading.Lock()
        """one drawing at a time in the child"""
        self._child: subprocess.Popen[bytes] | None = None

    def draw_apart(self, start_now: bool = False) -> None:
        """Draw in a child process from now on: started on the first drawing, or with `start_now`
        at once, so that it warms up (about two seconds) while the service starts."""
        with self._child_lock:
            self.apart = True
            if start_now:
                self._running_child()

    def draw(self, answer: RecommendResponse, months: float, shown: int) -> Drawn:
        """The report's charts for `answer` (engine/answer/svg_child.py `draw`)."""
        plotted = answer.model_dump(mode="json")
        payload: dict[str, Any] = {"answer": plotted, "months": months, "shown": shown}
        request_id = plotted.pop("request_id")  # unique to each answer, and not plotted
        key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        plotted["request_id"] = request_id
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        drawn = self._draw_apart(payload) if self.apart else draw(payload)
        with self._lock:
            self._keep(key, drawn)
        return drawn

    def close(self) -> None:
        """Stop the child, if any (a later drawing starts another)."""
        with self._child_lock:
            self._stop_child()

    def _keep(self, key: str, drawn: Drawn) -> None:
        if key in self._kept:
            return
        self._kept[key] = drawn
        self._kept_bytes += _size(drawn)
        while self._kept_bytes > self.cache_bytes and self._kept:
            _, dropped = self._kept.popitem(last=False)
            self._kept_bytes -= _size(dropped)

    def _running_child(self) -> subprocess.Popen[bytes]:
        if self._child is None or self._child.poll() is not None:
            command = [sys.executable, "-m", "engine.answer.svg_child"]
            self._child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self._child

    def _draw_apart(self, payload: dict[str, Any]) -> Drawn:
        """`draw(payload)` in the child, one drawing at a time."""
        with self._child_lock:
            child = self._running_child()
            assert child.stdin is not None and child.stdout is not None
            try:
                write_message(child.stdin, json.dumps(payload).encode())
                answer = _read_within(child.stdout.fileno(), _time_left())
            except (OSError, TimeoutError, deadline.DeadlineExceeded):
                self._stop_child()  # mid-drawing: its next answer would be this one's, so start afresh
                raise
        found = json.loads(answer)
        if isinstance(found, dict):
            raise ChartError(str(found.get("error")))
        return [(str(name), svg) for name, svg in found]

    def _stop_child(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.wait()
            for stream in (self._child.stdin, self._child.stdout):
                if stream is not None:
                    stream.close()
            self._child = None


def _size(drawn: Drawn) -> int:
    return sum(len(svg or "") for _, svg in drawn)


def _time_left() -> float:
    left = deadline.remaining()
    return CHILD_TIMEOUT_S if left is None else left


def _read_within(fd: int, seconds: float) -> bytes:
    """One message from the child's stdout within `seconds` (`DeadlineExceeded` past a request's
    deadline, `TimeoutError` past CHILD_TIMEOUT_S, `OSError` when the child is gone)."""
    head = _read_exactly(fd, LENGTH.size, seconds)
    (size,) = LENGTH.unpack(head)
    return _read_exactly(fd, size, seconds)


def _read_exactly(fd: int, size: int, seconds: float) -> bytes:
    until = time.monotonic() + seconds
    parts: list[bytes] = []
    got = 0
    while got < size:
        left = until - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            if deadline.remaining() is not None:
                raise deadline.DeadlineExceeded()
            raise TimeoutError("the chart renderer did not answer in time")
        chunk = os.read(fd, size - got)
        if not chunk:
            raise OSError("the chart renderer ended")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


RENDERER = SvgRenderer()
"""the process's renderer: its cache is shared by every report drawn here"""
