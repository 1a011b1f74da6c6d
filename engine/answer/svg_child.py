"""The report's charts drawn from an answer: here, in the CLI and the tests; in the service, in a
child process running this module (engine/answer/svg_render.py says why).

A drawing is asked as JSON, `{"answer": <RecommendResponse>, "months": M, "shown": N}`, and answered
as JSON, `[[name, svg or null], ...]` in the report's order, or `{"error": reason}`. Between the
service and its child each message is a 4-byte big-endian length and that many bytes of UTF-8. The
child imports the charts (Vega-Altair, vl-convert) and the response model, not the engine.

    python -m engine.answer.svg_child
"""

from __future__ import annotations

import json
import struct
import sys
from typing import IO, Any

LENGTH = struct.Struct(">I")


def draw(payload: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Each chart of the report for `payload` by name, as an SVG element (None: nothing to plot)."""
    from engine.answer.charts import report_specs, svg
    from engine.models.response import RecommendResponse

    answer = RecommendResponse.model_validate(payload["answer"])
    specs = report_specs(answer, float(payload["months"]), int(payload["shown"]))
    return [(name, None if spec is None else svg(spec)) for name, spec in specs]


def read_message(stream: IO[bytes]) -> bytes | None:
    """One message, or None at the end of the stream."""
    head = stream.read(LENGTH.size)
    if len(head) < LENGTH.size:
        return None
    (size,) = LENGTH.unpack(head)
    body = stream.read(size)
    return body if len(body) == size else None


def write_message(stream: IO[bytes], body: bytes) -> None:
    stream.write(LENGTH.pack(len(body)) + body)
    stream.flush()


def main() -> None:
    # Warm first (the imports, then V8 and Vega on the first drawing: about a second), so the first
    # report after the service starts does not wait for it.
    from engine.answer.charts import svg

    svg({"data": {"values": [{"x": 1}]}, "mark": "point", "encoding": {"x": {"field": "x"}}})
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while (message := read_message(source)) is not None:
        try:
            drawn: Any = draw(json.loads(message))
        except Exception as exc:  # a drawing that fails is answered, not fatal to the renderer
            drawn = {"error": f"{type(exc).__name__}: {exc}"}
        write_message(sink, json.dumps(drawn).encode("utf-8"))


if __name__ == "__main__":
    main()
