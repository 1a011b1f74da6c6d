"""`gpu-advisor mcp` (api/mcp_server.py) driven as a chat agent drives it: the MCP SDK's own client,
over stdio (one server for the whole module) and over streamable HTTP. Answers are held to what the
Advisor answers in-process; bad input to a tool error naming the field a 422 names."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from api.errors import INTERNAL_ERROR
from api.mcp_server import AdvisorTool, respond
from cli.main import EXIT_PROBLEMS, EXIT_UNAVAILABLE, main
from engine.knowledge.paths import PROJECT_ROOT
from engine.models.compare import CompareRequest
from engine.models.request import RecommendRequest
from engine.models.tools import ModelCatalog, ModelQuery
from engine.recommend import Advisor, compare_markdown, lean, lean_compare, markdown, rule_detail

TOOLS = {"recommend", "compare", "explain_rule", "list_models"}
REQUEST: dict[str, Any] = {"workload": {"task": "inference", "model": "llama-3.1-8b"}}
COMPARE: dict[str, Any] = {"request": REQUEST, "choices": [{"gpu": "nvidia-rtx-4090"}, {"gpu": "nvidia-l4"}]}
RULE = "keep-memory-headroom"
TIMEOUT_S = 60.0
"""the longest a call may take before the test fails rather than hangs"""


def server_env() -> dict[str, str]:
    """What the server process needs of this session's environment (the SDK starts it with a minimal
    one): the test cache of the checked KB, which the `advisor` fixture has filled."""
    return {"GPU_ADVISOR_CACHE": os.environ["GPU_ADVISOR_CACHE"]}


@dataclass(frozen=True)
class Agent:
    """A connected MCP client, called from synchronous tests through a portal into its event loop."""

    portal: BlockingPortal
    client: Client

    def tools(self) -> list[types.Tool]:
        return self.portal.call(self.client.list_tools).tools

    def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        result: types.CallToolResult = self.portal.call(self.client.call_tool, tool, arguments)
        return result


@pytest.fixture(scope="module")
def agent(advisor: Advisor) -> Iterator[Agent]:
    """One stdio server for the module, started as an MCP client starts it. (`advisor` first, so the
    server finds the checked KB in the cache rather than checking it again.)"""
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "cli.main", "mcp"], cwd=PROJECT_ROOT, env=server_env()
    )
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(server, read_timeout_seconds=TIMEOUT_S)) as client,
    ):
        yield Agent(portal, client)


def text_of(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


def without_id(answer: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in answer.items() if key != "request_id"}


def test_the_server_offers_the_four_tools_each_with_its_schemas(agent: Agent) -> None:
    tools = agent.tools()
    assert {tool.name for tool in tools} == TOOLS and len(tools) == len(TOOLS)
    for tool in tools:
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
    recommend = next(tool for tool in tools if tool.name == "recommend")
    assert recommend.input_schema == RecommendRequest.model_json_schema()


def test_recommend_answers_as_the_advisor_does(agent: Agent, advisor: Advisor) -> None:
    result = agent.call("recommend", REQUEST)
    expected = advisor.recommend(RecommendRequest.model_validate(REQUEST))
    assert not result.is_error
    assert without_id(result.structured_content) == without_id(lean(expected).model_dump(mode="json"))
    heading = markdown(expected).splitlines()[0]
    assert heading.startswith("# ") and text_of(result).splitlines()[0] == heading


def test_compare_answers_as_the_advisor_does(agent: Agent, advisor: Advisor) -> None:
    result = agent.call("compare", COMPARE)
    expected = advisor.compare(CompareRequest.model_validate(COMPARE))
    assert not result.is_error
    answer = result.structured_content
    assert [choice["gpu"] for choice in answer["choices"]] == ["nvidia-rtx-4090", "nvidia-l4"]
    assert without_id(answer) == without_id(lean_compare(expected).model_dump(mode="json"))
    assert text_of(result).splitlines()[0] == compare_markdown(expected).splitlines()[0]


def test_explain_rule_gives_the_rule_as_get_rules_does(agent: Agent, advisor: Advisor) -> None:
    result = agent.call("explain_rule", {"rule_id": RULE})
    detail = rule_detail(advisor.rules_by_id[RULE], advisor.categories[RULE])
    assert not result.is_error
    assert result.structured_content == detail.model_dump(mode="json")
    text = text_of(result)
    assert text.startswith(f"{RULE}: {detail.title}")
    assert detail.rationale in text and all(citation in text for citation in detail.citations)


def test_list_models_lists_the_kb_models(agent: Agent, advisor: Advisor) -> None:
    result = agent.call("list_models", {})
    assert not result.is_error
    models = result.structured_content["models"]
    assert [model["id"] for model in models] == sorted(advisor.kb.models)
    llama = next(model for model in models if model["id"] == "llama-3-1-8b")
    assert llama["params_b"] == advisor.kb.models["llama-3-1-8b"].params_b and llama["aliases"]
    assert all(f"- {model['id']}: " in text_of(result) for model in models)


def test_list_models_filters_by_a_text_in_any_name(agent: Agent, advisor: Advisor) -> None:
    models = agent.call("list_models", {"contains": "LLAMA"}).structured_content["models"]
    assert models and {model["id"] for model in models} == {
        model.id
        for model in advisor.kb.models.values()
        if any("llama" in name.lower() for name in (model.id, model.name, *model.aliases))
    }


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("recommend", {"workload": {"task": "inference", "model": "no-such-model"}}, "workload.model"),
        ("recommend", {**REQUEST, "top_k": 0}, "top_k"),
        ("recommend", {"workload": {"task": "inference", "params_b": 8}, "budget": 1}, "budget"),
        ("recommend", {}, "workload"),
        ("compare", {**COMPARE, "choices": [{"gpu": "no-such-gpu"}, {"gpu": "nvidia-l4"}]}, "choices.0.gpu"),
        ("compare", {**COMPARE, "request": {"workload": {"task": "qlora"}}}, "request.workload"),
        ("compare", {"request": REQUEST, "choices": [{"gpu": "nvidia-l4"}]}, "choices"),
        ("explain_rule", {"rule_id": "no-such-rule"}, "no-such-rule"),
        ("explain_rule", {}, "rule_id"),
        ("list_models", {"contains": 3}, "contains"),
    ],
)
def test_bad_input_is_a_tool_error_naming_the_field(
    agent: Agent, tool: str, arguments: dict[str, Any], named: str
) -> None:
    result = agent.call(tool, arguments)
    assert result.is_error and result.structured_content is None
    assert named in text_of(result)
    assert not agent.call("list_models", {}).is_error  # and the server answers on


def test_an_unknown_tool_is_a_protocol_error(agent: Agent) -> None:
    with pytest.raises(MCPError):
        agent.call("no_such_tool", {})
    assert not agent.call("list_models", {}).is_error


def test_a_fault_in_a_tool_is_a_tool_error_and_logged(
    advisor: Advisor, caplog: pytest.LogCaptureFixture
) -> None:
    def faulty(advisor: Advisor, query: ModelQuery) -> types.CallToolResult:
        raise RuntimeError("a fault")

    tool = AdvisorTool("faulty", "fails", ModelQuery, ModelCatalog, faulty)
    result = respond(tool, advisor, {})
    assert result.is_error and text_of(result) == INTERNAL_ERROR and "a fault" not in text_of(result)
    assert [record.exc_info is not None for record in caplog.records] == [True]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def listening(port: int, server: subprocess.Popen[bytes], within_s: float) -> None:
    """Wait until the server accepts connections on `port`, failing if it exits or takes too long."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"the MCP server did not listen on {port} within {within_s:g} s")


def test_streamable_http_lists_the_same_tools(advisor: Advisor) -> None:
    port = free_port()
    command = [sys.executable, "-m", "cli.main", "mcp", "--transport", "http", "--port", str(port)]
    env = {**os.environ, **server_env()}
    with subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stderr=subprocess.PIPE) as server:
        try:
            listening(port, server, TIMEOUT_S)

            async def tools() -> set[str]:
                async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=TIMEOUT_S) as client:
                    return {tool.name for tool in (await client.list_tools()).tools}

            assert anyio.run(tools) == TOOLS
        finally:
            server.terminate()
            server.wait(timeout=TIMEOUT_S)


def test_mcp_refuses_an_invalid_kb_saying_why_on_stderr(
    kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
    assert main(["mcp", "--kb", str(kb_copy)]) == EXIT_PROBLEMS
    captured = capsys.readouterr()
    assert captured.out == ""  # over stdio, stdout is the protocol's
    assert "kb/gpus/nvidia-h100-sxm.yaml:1: missing-field:" in captured.err
    assert "not starting" in captured.err


def test_mcp_over_http_says_in_one_line_that_a_port_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["mcp", "--transport", "http", "--port", str(port)]) == EXIT_UNAVAILABLE
    err = capsys.readouterr().err
    assert err == f"gpu-advisor: not starting: cannot listen on 127.0.0.1:{port}: address already in use\n"
