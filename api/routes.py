"""Thin HTTP routes: validate, look up or call the engine, return the response model. No logic here.

Every route is `async def`. The lookups answer on the event loop at once; the answers the engine
computes (`/recommend`, `/compare`, `/report`) run in the worker's one engine thread behind a bounded
queue with a deadline (api/admission.py), so the loop stays free for `/healthz` and for refusing
excess work. (Starlette's own thread pool, for sync routes, is not used: 40 threads interleaving
CPU-bound answers would make each slower and bound nothing; on 2 cores `/recommend` answered about
20% fewer requests/s that way.) The service scales with worker processes (`serve --workers`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Body, Depends, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse

from api import metrics
from api.admission import Admission
from api.media import BODY_ERRORS, JsonBodyRoute
from api.openapi import COMPARE_EXAMPLES, RECOMMEND_EXAMPLES
from engine.models.chat import AnswerFormat, SlackMessage
from engine.models.compare import CompareRequest, CompareResponse
from engine.models.kb import Gpu, Host, Model, Offer, Provider
from engine.models.lean import CompareResponseV2, RecommendResponseV2
from engine.models.request import RecommendRequest
from engine.models.response import RecommendResponse
from engine.models.service import RuleDetail, RuleSummary
from engine.models.views import ErrorDetail, GpuSummary, Health, Ready, Version
from engine.recommend import (
    Advisor,
    compare_markdown,
    compare_slack_message,
    lean_json,
    markdown,
    rule_detail,
    rule_summary,
    slack_message,
)

# Operation ids are the route functions' names: stable, and what the OpenAPI links refer to.
router = APIRouter(route_class=JsonBodyRoute, generate_unique_id_function=lambda route: route.name)
T = TypeVar("T")

NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorDetail, "description": "unknown id"}}
BUSY: dict[int | str, dict[str, Any]] = {
    503: {
        "model": ErrorDetail,
        "description": "the worker's queue is full or the answer passed the time limit; `Retry-After` says "
        "when to try again",
    }
}
REQUEST_ERRORS: dict[int | str, dict[str, Any]] = {
    **BODY_ERRORS,
    413: {"model": ErrorDetail, "description": "request body over 64 KB"},
    422: {"description": "a field is invalid or names an id the KB lacks; `detail[].loc` names it"},
    **BUSY,
}
"""what a route taking a RecommendRequest body answers when the body is wrong"""


async def current_advisor(request: Request) -> Advisor:
    """The advisor in service (replaced as a whole by a reload, never changed in place). The request
    keeps its KB version, which its response's X-KB-Version header states (api/metrics.py): the KB
    that produced the answer, even when a reload switches KBs before the answer is sent."""
    advisor: Advisor = request.app.state.advisor
    request.state.kb_version = advisor.version
    return advisor


CurrentAdvisor = Annotated[Advisor, Depends(current_advisor)]


async def engine_queue(request: Request) -> Admission:
    """The worker's engine thread and the bound in front of it."""
    admission: Admission = request.app.state.admission
    return admission


EngineQueue = Annotated[Admission, Depends(engine_queue)]


FORMAT_DESCRIPTION = (
    "json (the default): the answer's JSON body; slack: a Slack Block Kit message (`text` and "
    "`blocks`); markdown: the answer as Markdown (text/markdown)"
)
Format = Annotated[AnswerFormat, Query(alias="format", description=FORMAT_DESCRIPTION)]
RecommendBody = Annotated[RecommendRequest, Body(openapi_examples=RECOMMEND_EXAMPLES)]
CompareBody = Annotated[CompareRequest, Body(openapi_examples=COMPARE_EXAMPLES)]
COMPARE_ERRORS: dict[int | str, dict[str, Any]] = {
    **BODY_ERRORS,
    413: {"model": ErrorDetail, "description": "request body over 64 KB"},
    422: {
        "description": "a field is invalid (fewer than 2 or more than 4 choices, a count below 1) or "
        "names an id the KB lacks; `detail[].loc` names it"
    },
    **BUSY,
}


def _answer_responses(what: str, errors: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    return {
        200: {
            "description": f"{what}: JSON by default; a Slack Block Kit message with `format=slack`; "
            "Markdown with `format=markdown`",
            "content": {"text/markdown": {"schema": {"type": "string"}}},
        },
        **errors,
    }


def _in_format(
    answer_format: AnswerFormat,
    version: int,
    found: RecommendResponse | CompareResponse,
    as_slack: Callable[[], dict[str, Any]],
    as_markdown: Callable[[], str],
) -> Response:
    """The answer in the format asked. The engine built the response model, so it is valid: it is
    serialized straight to JSON (in the API version asked) rather than validated again and encoded
    through the json module."""
    if answer_format == "slack":
        return JSONResponse(as_slack())
    if answer_format == "markdown":
        return Response(content=as_markdown(), media_type="text/markdown")
    body = found.model_dump_json() if version == 1 else lean_json(found)
    return Response(content=body, media_type="application/json")


ENGINE_CPU = "engine-cpu"
"""the Server-Timing metric (https://www.w3.org/TR/server-timing/) giving the CPU milliseconds the
engine spent on the answer, the rest of the process's being HTTP's (bench/http_cost.py weighs them)"""
ENCODE_CPU = "encode-cpu"
"""the Server-Timing metric giving the CPU milliseconds spent writing the answer in the format asked:
the part of HTTP's share that grows with the answer's size"""


def _recommended(
    advisor: Advisor, body: RecommendRequest, answer_format: AnswerFormat, version: int
) -> Response:
    began = time.thread_time()  # the engine thread's CPU, whatever else the process runs meanwhile
    found = advisor.recommend(body)
    answered = time.thread_time()
    metrics.engine_seconds(answered - began)
    response = _in_format(
        answer_format,
        version,
        found,
        lambda: slack_message(found),
        lambda: markdown(found),
    )
    engine_ms, encode_ms = (answered - began) * 1000, (time.thread_time() - answered) * 1000
    response.headers["Server-Timing"] = f"{ENGINE_CPU};dur={engine_ms:.3f}, {ENCODE_CPU};dur={encode_ms:.3f}"
    return response


def _compared(advisor: Advisor, body: CompareRequest, answer_format: AnswerFormat, version: int) -> Response:
    found = advisor.compare(body)
    return _in_format(
        answer_format,
        version,
        found,
        lambda: compare_slack_message(found),
        lambda: compare_markdown(found),
    )


RECOMMEND_DOC = """Ranked hardware recommendations for one workload, each with its memory per GPU, speed,
cost and a traced justification. A request no option can satisfy is a 200 with `feasible: false`, the
reason in `summary`, and in `relaxation` the constraint whose relaxing helps."""
COMPARE_DOC = """Two to four hardware choices for one request, side by side ("why not X?"): for each,
whether the job fits, a verdict in words, and the best plan on it with the figures of a recommendation
(memory per GPU, tokens/s, cost, plan). A choice nothing runs on is judged, not an error."""
VERSION_2_DOC = """In API version 2: each source's text once, in `sources`, which the recommendations
and trace steps cite by id (about half the bytes of version 1; docs/api-contract.md "Version 2")."""


def _answer_route(body_type: object, answer: Callable[..., Response], api_version: int) -> Callable[..., Any]:
    """A route taking a `body_type` body and answering it with `answer` on the engine's queue."""

    async def route(body: Any, request: Request, answer_format: Format = "json") -> Response:
        # The advisor and the engine queue are read here rather than through `Depends`: FastAPI's
        # dependency solving costs an answer more CPU than the two lookups (bench/http_cost.py).
        advisor, queue = await current_advisor(request), await engine_queue(request)
        return await queue.run(lambda: answer(advisor, body, answer_format, api_version))

    route.__annotations__ = {**route.__annotations__, "body": body_type}  # what FastAPI validates
    return route


# Each answering route in both API versions: the same request, errors and formats; version 2's JSON
# cites sources by id. Version 1 keeps its paths and operation ids for the clients written against it.
for prefix, api_version, recommended, compared in (
    ("", 1, RecommendResponse, CompareResponse),
    ("/v2", 2, RecommendResponseV2, CompareResponseV2),
):
    suffix, extra = ("", "") if api_version == 1 else ("_v2", f"\n\n{VERSION_2_DOC}")
    for path, body_type, answer, model, what, errors, doc in (
        ("recommend", RecommendBody, _recommended, recommended, "the answer", REQUEST_ERRORS, RECOMMEND_DOC),
        ("compare", CompareBody, _compared, compared, "the comparison", COMPARE_ERRORS, COMPARE_DOC),
    ):
        router.add_api_route(
            f"{prefix}/{path}",
            _answer_route(body_type, answer, api_version),
            methods=["POST"],
            name=f"{path}{suffix}",
            description=doc + extra,
            response_model=model | SlackMessage,
            responses=_answer_responses(what, errors),
            tags=["recommend"],
        )


@router.get("/metrics", include_in_schema=False)
def metrics_page() -> Response:
    """Prometheus's text format: requests, latency, answer phases, the KB served and its oldest price,
    reloads (api/metrics.py). Left out of the OpenAPI document: it is for the scraper, not the client."""
    body, content_type = metrics.exposition()
    return Response(content=body, media_type=content_type)


@router.get("/healthz", response_model=Health, tags=["service"])
async def healthz(advisor: CurrentAdvisor) -> Health:
    """Liveness: the service is up with a validated knowledge base and rule set."""
    return Health(status="ok", kb_version=advisor.version, open_rule_sessions=advisor.open_sessions())


@router.get("/readyz", response_model=Ready, tags=["service"])
async def readyz(advisor: CurrentAdvisor) -> Ready:
    """Readiness: this worker has its knowledge base loaded and its rules compiled, so a load balancer
    may send it answers. Like /healthz it is answered on the event loop, never behind the answers."""
    return Ready(status="ready", kb_version=advisor.version, rules=len(advisor.rules))


@router.get("/version", response_model=Version, tags=["service"])
async def version(request: Request, advisor: CurrentAdvisor) -> Version:
    """Service version, knowledge-base version and the date of the newest prices."""
    return Version(
        version=request.app.version,
        kb_version=advisor.version,
        prices_as_of=advisor.prices_as_of.isoformat() if advisor.prices_as_of else None,
    )


@router.get("/gpus", response_model=list[GpuSummary], tags=["knowledge base"])
async def list_gpus(advisor: CurrentAdvisor) -> list[GpuSummary]:
    """Every accelerator in the knowledge base, in id order."""
    return [GpuSummary.of(gpu) for gpu in advisor.kb.gpus.values()]


@router.get("/gpus/{gpu_id}", response_model=Gpu, responses=NOT_FOUND, tags=["knowledge base"])
async def get_gpu(gpu_id: str, advisor: CurrentAdvisor) -> Gpu:
    """One accelerator with every KB field and its sources."""
    return _found(advisor.kb.gpus, gpu_id, "gpu")


@router.get("/hosts", response_model=list[Host], tags=["knowledge base"])
async def list_hosts(advisor: CurrentAdvisor) -> list[Host]:
    """The systems bought GPUs go into (workstations, PCIe and HGX/OAM servers), priced without GPUs,
    with the GPU form factors and slots they take, their power and sources."""
    return list(advisor.kb.hosts.values())


@router.get("/hosts/{host_id}", response_model=Host, responses=NOT_FOUND, tags=["knowledge base"])
async def get_host(host_id: str, advisor: CurrentAdvisor) -> Host:
    """One host system."""
    return _found(advisor.kb.hosts, host_id, "host")


@router.get("/providers", response_model=list[Provider], tags=["knowledge base"])
async def list_providers(advisor: CurrentAdvisor) -> list[Provider]:
    """Every cloud provider: kind, spot availability, billing, and sources."""
    return list(advisor.kb.providers.values())


@router.get("/offers", response_model=list[Offer], responses=NOT_FOUND, tags=["knowledge base"])
async def list_offers(
    advisor: CurrentAdvisor,
    gpu: Annotated[str | None, Query(description="only the offers of this KB gpu id", max_length=96)] = None,
    provider: Annotated[
        str | None, Query(description="only the offers of this KB provider id", max_length=96)
    ] = None,
) -> list[Offer]:
    """Priced cloud offers (hourly prices with their `as_of` date), optionally for one GPU or provider."""
    if gpu is not None:
        _found(advisor.kb.gpus, gpu, "gpu")
    if provider is not None:
        _found(advisor.kb.providers, provider, "provider")
    return [
        offer
        for offer in advisor.kb.offers.values()
        if (gpu is None or offer.gpu == gpu) and (provider is None or offer.provider == provider)
    ]


@router.get("/models", response_model=list[Model], tags=["knowledge base"])
async def list_models(advisor: CurrentAdvisor) -> list[Model]:
    """The model catalog: published parameter counts and architectures, with sources."""
    return list(advisor.kb.models.values())


@router.get("/models/{model_id}", response_model=Model, responses=NOT_FOUND, tags=["knowledge base"])
async def get_model(model_id: str, advisor: CurrentAdvisor) -> Model:
    """One model of the catalog."""
    return _found(advisor.kb.models, model_id, "model")


@router.get("/rules", response_model=list[RuleSummary], tags=["rules"])
async def list_rules(advisor: CurrentAdvisor) -> list[RuleSummary]:
    """Every rule's metadata: id, title, category, status, rationale and citations, in id order."""
    return [
        rule_summary(rule, advisor.categories.get(rule.id, "uncategorized"))
        for rule in sorted(advisor.rules, key=lambda r: r.id)
    ]


@router.get("/rules/{rule_id}", response_model=RuleDetail, responses=NOT_FOUND, tags=["rules"])
async def get_rule(rule_id: str, advisor: CurrentAdvisor) -> RuleDetail:
    """One rule: its metadata, its condition in words, and what it does when it fires."""
    rule = _found(advisor.rules_by_id, rule_id, "rule")
    return rule_detail(rule, advisor.categories.get(rule.id, "uncategorized"))


def _found(table: Mapping[str, T], key: str, kind: str) -> T:
    found = table.get(key)
    if found is None:
        raise HTTPException(
            status_code=404, detail=f"unknown {kind} id {key!r}: GET /{kind}s lists the known ids"
        )
    return found


@router.post(
    "/report",
    response_class=Response,
    responses={
        200: {
            "content": {"text/html": {"schema": {"type": "string"}}},
            "description": "the report, one HTML page",
        },
        **REQUEST_ERRORS,
    },
    tags=["recommend"],
)
async def report(
    body: Annotated[RecommendRequest, Body(openapi_examples=RECOMMEND_EXAMPLES)],
    advisor: CurrentAdvisor,
    queue: EngineQueue,
    report_format: Annotated[
        Literal["html"],
        Query(alias="format", description="html, the only form of the report (any other value is a 422)"),
    ] = "html",
) -> Response:
    """The answer to the same request as `POST /recommend`, as a procurement report: one self-contained
    HTML page (charts inline, no scripts, no network) with the decision, its runners-up, a cost-time,
    a buy-vs-rent and a memory chart, the rule trace with sources, the options ruled out, the
    assumptions and the price dates. It prints to PDF from a browser."""
    return await queue.run(
        lambda: Response(content=advisor.report(body), media_type="text/html; charset=utf-8")
    )
