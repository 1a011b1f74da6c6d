"""An example Slack bot: the slash command `/gpu` asks a local gpu-advisor service and posts its answer
as Block Kit (`POST /recommend?format=slack`).

    /gpu serve llama 3.1 70b on 2 h100, budget 20k, rent

The question is read by examples/gpu_question.py (the CLI's flag vocabulary; no Slack needed to
import or test it). slack_bolt is not one of gpu-advisor's dependencies; install it beside them:

    .venv/bin/pip install slack-bolt
    .venv/bin/gpu-advisor serve --port 8000 &
    SLACK_BOT_TOKEN=xoxb-... SLACK_APP_TOKEN=xapp-... GPU_ADVISOR_URL=http://127.0.0.1:8000 \\
        .venv/bin/python -m examples.slack_bot

It connects in Socket Mode (no public URL needed): create a Slack app with Socket Mode on, an app-level
token with `connections:write` (SLACK_APP_TOKEN), the bot scope `commands`, and a slash command `/gpu`.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from examples.gpu_question import QuestionError, parse_question

SERVICE = os.environ.get("GPU_ADVISOR_URL", "http://127.0.0.1:8000")
TIMEOUT_S = 30


def gpu_names(client: httpx.Client) -> dict[str, str]:
    """The service's GPU ids and names, to read the GPU a question names."""
    return {gpu["id"]: gpu["name"] for gpu in client.get(f"{SERVICE}/gpus").raise_for_status().json()}


def answer(client: httpx.Client, question: str, gpus: dict[str, str]) -> dict[str, Any]:
    """The Slack message answering `question`: the service's Block Kit answer, or what went wrong."""
    try:
        parsed = parse_question(question, gpus)
    except QuestionError as exc:
        return {"response_type": "ephemeral", "text": f"Sorry: {exc}"}
    reply = client.post(f"{SERVICE}/recommend", params={"format": "slack"}, json=parsed.request)
    if reply.status_code == 422:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'][1:])}: {error['msg']}"
            for error in reply.json()["detail"]
        )
        return {"response_type": "ephemeral", "text": f"I read that as {parsed.request}, but: {problems}"}
    message: dict[str, Any] = reply.raise_for_status().json()
    if parsed.notes:
        notes = {"type": "mrkdwn", "text": "Read as asked, with notes: " + "; ".join(parsed.notes)}
        message["blocks"].insert(1, {"type": "context", "elements": [notes]})
        message["blocks"] = message["blocks"][:50]  # Slack's limit per message
    return {"response_type": "in_channel", **message}


def main() -> None:
    from slack_bolt import Ack, App, Respond  # only the running bot needs Slack
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    app = App(token=os.environ["SLACK_BOT_TOKEN"])
    client = httpx.Client(timeout=TIMEOUT_S)
    gpus = gpu_names(client)

    @app.command("/gpu")
    def gpu(ack: Ack, command: dict[str, Any], respond: Respond) -> None:
        ack()  # within Slack's 3 seconds; the answer follows through the response URL
        respond(**answer(client, command.get("text", ""), gpus))

    SocketModeHandler(app, os.environ["SLACK_APP_TOKEN"]).start()


if __name__ == "__main__":
    main()
