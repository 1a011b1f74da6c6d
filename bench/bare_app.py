"""The floor under the service's HTTP cost: uvicorn serving a bare ASGI app that answers `/healthz`
with the same small JSON body, no framework and no middleware (bench/http_cost.py measures it beside
the service's own `/healthz`; the difference is FastAPI's and the service's middleware)."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

BODY = b'{"status":"ok"}'


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})
