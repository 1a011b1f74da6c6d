"""The floor under the service's HTTP cost: uvicorn serving a bare ASGI app, no framework and no
middleware. `/healthz` answers the same small JSON body as the service's (bench/http_cost.py weighs it
beside the service's own `/healthz`: the difference is FastAPI's and the service's middleware), and
`/v2/recommend` does an answer's least HTTP work, with the engine's answer recorded
(bench/recorded.py): it reads and validates the body, hands the lookup to one engine thread as the
service does (api/admission.py) and writes version 2's JSON."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from starlette.types import Receive, Scope, Send

from bench.recorded import recorded_answers
from engine.models.request import RecommendRequest
from engine.recommend import default_advisor, lean_json

BODY = b'{"status":"ok"}'
ANSWERS = recorded_answers(default_advisor())
ENGINE = ThreadPoolExecutor(1, thread_name_prefix="engine")


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = BODY if scope["path"] == "/healthz" else await _answer(receive)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _answer(receive: Receive) -> bytes:
    """The recorded answer to the request body, as version-2 JSON, looked up on the engine thread."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    request = RecommendRequest.model_validate_json(b"".join(chunks))

    def answered() -> bytes:  # the service's engine thread looks the answer up and writes it
        return lean_json(ANSWERS[request.model_dump_json()]).encode()

    return await asyncio.get_running_loop().run_in_executor(ENGINE, answered)
