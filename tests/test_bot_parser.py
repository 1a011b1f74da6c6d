"""examples/gpu_question.py: a chat question read as a request in the CLI's flag vocabulary, and the
example bot's answer (examples/slack_bot.py) through the service, without Slack installed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from cli.request_input import to_request
from engine.knowledge.paths import PROJECT_ROOT
from engine.recommend import default_advisor
from examples.gpu_question import QuestionError, parse_question
from examples.slack_bot import answer

GPUS = {
    "nvidia-h100-sxm": "NVIDIA H100 SXM5 80GB",
    "nvidia-h100-pcie": "NVIDIA H100 PCIe 80GB",
    "nvidia-rtx-4090": "NVIDIA GeForce RTX 4090",
}


def test_the_example_question() -> None:
    question = parse_question("serve llama 3.1 70b on 2 h100 sxm, budget 20k, rent", GPUS)
    assert question.request == {
        "workload": {"task": "inference", "model": "llama 3.1 70b"},
        "constraints": {
            "budget_usd": 20000,
            "acquisition": "rent",
            "target_hardware": {"gpu": "nvidia-h100-sxm", "count": 2},
        },
    }
    assert question.notes == []
    to_request(question.request)  # a valid request


def test_an_ambiguous_gpu_is_read_as_the_first_id_with_a_note() -> None:
    question = parse_question("serve llama 3.1 70b on 2 h100", GPUS)
    assert question.request["constraints"]["target_hardware"] == {"gpu": "nvidia-h100-pcie", "count": 2}
    assert question.notes == ["read 'h100' as nvidia-h100-pcie (also: nvidia-h100-sxm); name one to be sure"]


@pytest.mark.parametrize(
    ("text", "request_body"),
    [
        (
            "qlora llama-3-1-8b on windows, buy, budget $3,000, cheapest",
            {
                "workload": {"task": "qlora", "model": "llama 3 1 8b"},
                "constraints": {"budget_usd": 3000, "acquisition": "buy", "os": "windows"},
                "objective": "cheapest",
            },
        ),
        (  # the CLI's own flags read the same
            "--model mistral-7b --task inference --budget-usd 5000 --acquisition buy --top-k 2",
            {
                "workload": {"task": "inference", "model": "mistral 7b"},
                "constraints": {"budget_usd": 5000, "acquisition": "buy"},
                "top_k": 2,
            },
        ),
        (
            "fine-tune a 13b model, on-prem, 2x rtx 4090, top 3",
            {
                "workload": {"task": "full_finetune", "params_b": 13},
                "constraints": {
                    "on_prem_only": True,
                    "target_hardware": {"gpu": "nvidia-rtx-4090", "count": 2},
                },
                "top_k": 3,
            },
        ),
        (
            "serve mixtral 8x7b with fp8, max gpus 4, spot, no quantization",
            {
                "workload": {"task": "inference", "model": "mixtral 8x7b", "precision": "fp8"},
                "constraints": {"max_gpus": 4, "interruptible": True, "allow_quantization": False},
            },
        ),
        (
            "lora llama 3 8b, providers aws,lambda, horizon 24, utilization 40, training tokens b 1.5",
            {
                "workload": {"task": "lora", "model": "llama 3 8b", "training_tokens_b": 1.5},
                "constraints": {"providers": ["aws", "lambda"], "horizon_months": 24, "utilization_pct": 40},
            },
        ),
    ],
)
def test_questions_read_as_the_cli_flags_would_set_them(text: str, request_body: dict[str, Any]) -> None:
    assert parse_question(text, GPUS).request == request_body


def test_without_a_task_it_serves_and_says_so() -> None:
    question = parse_question("mistral 7b, budget 5k")
    assert question.request["workload"] == {"task": "inference", "model": "mistral 7b"}
    assert question.notes and "serving" in question.notes[0]


def test_without_a_catalog_a_gpu_is_taken_as_written() -> None:
    question = parse_question("serve mistral 7b on nvidia-rtx-4090")
    assert question.request["constraints"]["target_hardware"] == {"gpu": "nvidia-rtx-4090", "count": 1}


@pytest.mark.parametrize(
    ("text", "message"),
    [("budget 20k, rent", "name a model"), ("serve mistral 7b on 2 b9000", "no GPU called")],
)
def test_what_cannot_be_read_says_what_to_write(text: str, message: str) -> None:
    with pytest.raises(QuestionError, match=message):
        parse_question(text, GPUS)


def test_the_parser_and_the_bot_import_without_slack_bolt() -> None:
    code = (
        "import sys; sys.modules['slack_bolt'] = None\n"  # an import of it would fail
        "import examples.gpu_question, examples.slack_bot\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=True)


@pytest.fixture(scope="module")
def service() -> Iterator[httpx.Client]:
    """An httpx client whose requests the service answers in-process."""
    with TestClient(create_app(advisor=default_advisor())) as app:

        def forward(request: httpx.Request) -> httpx.Response:
            reply = app.request(
                request.method,
                request.url.raw_path.decode(),
                content=request.content,
                headers={"content-type": request.headers.get("content-type", "")},
            )
            return httpx.Response(reply.status_code, content=reply.content, headers=dict(reply.headers))

        yield httpx.Client(transport=httpx.MockTransport(forward))


def test_the_bot_posts_the_slack_answer(service: httpx.Client) -> None:
    gpus = {gpu["id"]: gpu["name"] for gpu in service.get("http://advisor/gpus").json()}
    message = answer(service, "serve mistral 7b on rtx 4090, buy, budget 5k", gpus)
    assert message["response_type"] == "in_channel"
    assert message["blocks"][0]["type"] == "header" and len(message["blocks"]) <= 50


def test_the_bot_says_what_the_service_rejects(service: httpx.Client) -> None:
    message = answer(service, "serve mistral 7b, budget 5k, top 99", {})
    assert message["response_type"] == "ephemeral" and "top_k" in message["text"]
