"""Request-body size limit, as pure ASGI middleware: a declared Content-Length over the limit is
refused before the body is read, and a streamed (chunked) body as soon as it passes the limit.
(Starlette's own limiter answers a declared oversize in plain text; clients here expect JSON.)"""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def too_large(max_bytes: int) -> str:
    return f"request body is larger than {max_bytes} bytes ({max_bytes // 1024} KB)"


class BodyTooLarge(HTTPException):
    """Raised from `receive` once the streamed body passes the limit. An HTTPException, so the
    framework answers it as a 413 even where it wraps errors met while reading the body."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, too_large(max_bytes))


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared == -1:
            await _reply(send, 400, "Content-Length must be a non-negative integer")
            return
        if declared is not None and declared > self.max_bytes:
            await _reply(send, 413, too_large(self.max_bytes))
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, limited_receive, send)


def _content_length(scope: Scope) -> int | None:
    """The declared body length; None when absent, -1 when it is not a valid number."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else -1
    return None


async def _reply(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
