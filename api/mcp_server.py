"""The MCP face: the advisor's answers as tools a chat agent calls (`gpu-advisor mcp`), over stdio or
streamable HTTP, served by the official MCP Python SDK's low-level server.

Four tools, each one call of the Advisor or the KB it holds, and of the answer's formats
(engine/recommend.py): `recommend`, `compare`, `explain_rule`, `list_models`. The low-level server
rather than the SDK's MCPServer because a tool's input here is the HTTP body itself: RecommendRequest
and CompareRequest validate it, so a bad field is named by the same `loc` a 422 gives, and the input
schema is the one the OpenAPI document shows (MCPServer builds both from a function's parameters).

What a tool answers follows the MCP specification, 2025-11-25:
- an answer is the JSON the HTTP route returns in API version 2 (`POST /v2/recommend`, `/v2/compare`:
  each source once, cited by id, half of version 1's bytes in an agent's context), as
  `structuredContent`, which a client checks against the tool's `outputSchema`; its text content is
  the answer's Markdown rather than that JSON again
  (the spec's SHOULD, for clients that read only text), because a chat shows the Markdown and a model
  reading `content` gets the answer in words, not 20 KB of figures twice
  (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#structured-content);
- input the advisor cannot read (a bad field, an id the KB lacks) is a tool execution error,
  `isError: true` with each field named, which the model reads and corrects (SEP-1303); an unknown
  tool is a protocol error
  (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#error-handling).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from api.errors import INTERNAL_ERROR, MAX_ERRORS, MESSAGE_CHARS
from engine.models.compare import CompareRequest
from engine.models.lean import CompareResponseV2, RecommendResponseV2
from engine.models.request import RecommendRequest
from engine.models.service import RuleDetail
from engine.models.tools import ModelCatalog, ModelQuery, ModelSummary, RuleQuestion
from engine.recommend import (
    Advisor,
    InvalidRequest,
    UnknownReference,
    compare_markdown,
    lean,
    lean_compare,
    markdown,
    rule_detail,
)

log = logging.getLogger("gpu_advisor.mcp")

NAME = "gpu-advisor"
HTTP_PATH = "/mcp"
"""where `--transport http` serves the protocol (the SDK's default path)"""
INSTRUCTIONS = (
    "gpu-advisor answers 'what hardware should we run this ML workload on?' from first principles "
    "(model size, task, precision, budget, privacy, OS), says why and cites its sources. Call recommend "
    "for ranked options, compare to judge GPUs the user names ('why not X?'), explain_rule for a rule "
    "an answer's trace names, and list_models for the model ids workload.model takes."
)

Body = TypeVar("Body", bound=BaseModel)


@dataclass(frozen=True)
class AdvisorTool(Generic[Body]):
    """One tool: what an agent is shown (its name, what it is for, its input and output schemas) and
    what answers it, given the validated input."""

    name: str
    description: str
    takes: type[Body]
    gives: type[BaseModel]
    answer: Callable[[Advisor, Body], types.CallToolResult]

    def listed(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=self.takes.model_json_schema(),
            output_schema=self.gives.model_json_schema(mode="serialization"),
            # each tool only reads the KB it was started over: safe to call, and to call again
            annotations=types.ToolAnnotations(
                read_only_hint=True, idempotent_hint=True, open_world_hint=False
            ),
        )


def _recommend(advisor: Advisor, request: RecommendRequest) -> types.CallToolResult:
    answer = advisor.recommend(request)
    return _answered(lean(answer), markdown(answer))


def _compare(advisor: Advisor, body: CompareRequest) -> types.CallToolResult:
    answer = advisor.compare(body)
    return _answered(lean_compare(answer), compare_markdown(answer))


def _explain_rule(advisor: Advisor, question: RuleQuestion) -> types.CallToolResult:
    rule = advisor.rules_by_id.get(question.rule_id)
    if rule is None:
        raise UnknownReference(("rule_id",), _unknown_rule(question.rule_id, advisor.rules_by_id.keys()))
    detail = rule_detail(rule, advisor.categories.get(rule.id, "uncategorized"))
    return _answered(detail, _rule_text(detail))


def _list_models(advisor: Advisor, query: ModelQuery) -> types.CallToolResult:
    wanted = (query.contains or "").casefold()
    models = [
        ModelSummary.of(model)
        for _, model in sorted(advisor.kb.models.items())
        if any(wanted in name.casefold() for name in (model.id, model.name, *model.aliases))
    ]
    return _answered(ModelCatalog(models=models), _models_text(models, query.contains))


TOOLS: dict[str, AdvisorTool[Any]] = {
    tool.name: tool
    for tool in (
        AdvisorTool(
            "recommend",
            "Recommend hardware for an ML workload: which GPU, how many, bought or rented from whom, at "
            "what cost, ranked and explained with the rules and sources behind it. The input is the body "
            "of gpu-advisor's POST /recommend; workload.task and workload.model (or params_b) suffice.",
            RecommendRequest,
            RecommendResponseV2,
            _recommend,
        ),
        AdvisorTool(
            "compare",
            "Judge two to four hardware choices the user names for one workload, side by side ('why "
            "not X?'): whether the job fits each, a verdict in words and the best plan on it. The input "
            "is the body of POST /compare: the recommend input as `request`, and the `choices`.",
            CompareRequest,
            CompareResponseV2,
            _compare,
        ),
        AdvisorTool(
            "explain_rule",
            "Explain one of the advisor's rules: what it decides, when it applies, what it does, why it "
            "holds and its sources. Rule ids are in an answer's trace[].rule and rejected[].rule.",
            RuleQuestion,
            RuleDetail,
            _explain_rule,
        ),
        AdvisorTool(
            "list_models",
            "List the models the knowledge base knows, with the ids and other names workload.model "
            "takes and their parameter counts; optionally only those whose names contain a text.",
            ModelQuery,
            ModelCatalog,
            _list_models,
        ),
    )
}


def respond(tool: AdvisorTool[Any], advisor: Advisor, arguments: dict[str, Any]) -> types.CallToolResult:
    """The tool's answer to `arguments`, or a tool error naming what is wrong: never an exception, so
    a bad call cannot end the server."""
    try:
        body = tool.takes.model_validate(arguments)
    except ValidationError as exc:
        return _refused([(error["loc"], error["msg"]) for error in exc.errors()])
    try:
        return tool.answer(advisor, body)
    except InvalidRequest as exc:  # UnknownReference too: an id the KB lacks
        return _refused([(exc.loc, str(exc))])
    except Exception:  # the last line of defence: the agent is told, the fault is logged
        log.exception("tool %s failed", tool.name)
        return _error_result(INTERNAL_ERROR)


def server_for(advisor: Advisor) -> Server[Any]:
    """The MCP server over `advisor`, for any transport."""
    listed = types.ListToolsResult(tools=[tool.listed() for tool in TOOLS.values()])
    # One answer at a time, in a thread: the event loop stays free for the protocol (pings,
    # cancellations), and answers, which are CPU-bound, are not slowed by interleaving (api/routes.py).
    engine_thread = anyio.CapacityLimiter(1)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}: tools/list lists the tools")
        return await anyio.to_thread.run_sync(
            respond, tool, advisor, params.arguments or {}, limiter=engine_thread
        )

    return Server(
        NAME,
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_stdio(advisor: Advisor) -> None:
    """Answer one client over standard input and output until it closes them."""
    server = server_for(advisor)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


def serve_http(advisor: Advisor, host: str, port: int) -> None:
    """Answer clients over streamable HTTP at http://`host`:`port`/mcp until interrupted. The SDK
    refuses requests whose Host or Origin is not local when `host` is (DNS rebinding)."""
    import uvicorn

    app = server_for(advisor).streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    uvicorn.run(app, host=host, port=port)


def _answered(answer: BaseModel, text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=answer.model_dump(mode="json")
    )


def _refused(errors: Sequence[tuple[Sequence[int | str], str]]) -> types.CallToolResult:
    """A tool error listing each field refused as `loc: message`, the `loc` as a 422 gives it
    without its leading "body" (the input is the body), bounded as a 422 is (api/errors.py)."""
    lines = [
        f"- {'.'.join(str(part) for part in loc) or '(the input as a whole)'}: {message}"[:MESSAGE_CHARS]
        for loc, message in errors[:MAX_ERRORS]
    ]
    if len(errors) > MAX_ERRORS:
        lines.append(f"- {len(errors) - MAX_ERRORS} more errors not listed; fix these first")
    return _error_result("\n".join(["The input was not answered; fix these fields and call again:", *lines]))


def _error_result(text: str) -> types.CallToolResult:
    # a key the client sent may hold a lone surrogate, which UTF-8 cannot carry: sent as its escape
    safe = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return types.CallToolResult(content=[types.TextContent(text=safe)], is_error=True)


def _unknown_rule(rule_id: str, known: Iterable[str]) -> str:
    closest = difflib.get_close_matches(rule_id, list(known), n=3)
    hint = f"did you mean {', '.join(closest)}? " if closest else ""
    return (
        f"unknown rule id {rule_id!r}: {hint}An answer names the rules behind it in trace[].rule and "
        "rejected[].rule; GET /rules on the HTTP service, or docs/rules.md, lists every rule id"
    )


def _rule_text(detail: RuleDetail) -> str:
    sources = [f"- {citation}" for citation in detail.citations]
    return "\n".join([f"{detail.id}: {detail.title}", "", detail.rationale, "", "Sources:", *sources])


def _models_text(models: Sequence[ModelSummary], contains: str | None) -> str:
    if not models:
        return (
            f"No model's name contains {contains!r}: call list_models without `contains` for all of "
            "them, or give the workload's size as workload.params_b instead of workload.model."
        )
    lines = [f"- {model.id}: {model.name}, {model.params_b:g}B parameters" for model in models]
    return "\n".join([f"{len(models)} models (workload.model takes the id or another name):", *lines])


def _version() -> str:
    try:
        return metadata.version("gpu-advisor")
    except metadata.PackageNotFoundError:
        return "0+unknown"
