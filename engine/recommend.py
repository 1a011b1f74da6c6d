"""The one entry point: `recommend(request) -> response`, per docs/api-contract.md.

request -> facts -> forward chaining over the rules -> policy (filters, preferences, suggestions)
-> hardware options from the graph -> a sized plan per option -> ranking -> response with the trace.
Each step is a layer's (docs/architecture.md); the `Advisor` holds what they share and calls them in
that order: all planning first (engine/planning/findings.py), then the answer layer's words.

This module is the faces' (api/, cli/) way in for answering: the Advisor, the errors a request can
raise, the request's time budget, and the answer's chat formats and chart renderer; the KB's keeping
is engine/maintenance.py's (tests/test_layers.py holds the faces to these two).
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import date
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from engine.answer.chat.markdown import compare_markdown, markdown
from engine.answer.compare import compared
from engine.answer.compare import summary as compare_summary
from engine.answer.explain import outranked_words, trace
from engine.answer.lean import lean, lean_compare, lean_json
from engine.answer.parts import (
    assumptions,
    citation_texts,
    price_dates,
    price_warnings,
    recommendation,
    rejected,
    step_citations,
    warnings,
)
from engine.answer.relaxation import relaxation_of
from engine.answer.report import report_html
from engine.answer.summary import desktop_assumption, one_sequence_words, summary
from engine.answer.svg_render import RENDERER
from engine.answer.target import fit_on, target_warning
from engine.knowledge.cache import CheckedKB
from engine.knowledge.graph import KBGraph
from engine.knowledge.kb import KB
from engine.models.compare import CompareRequest, CompareResponse
from engine.models.request import MAX_TOP_K, ExistingHost, OwnedHardware, RecommendRequest
from engine.models.response import RecommendResponse, Requirements
from engine.models.rule import Rule, Scalar, facts_in
from engine.planning import deadline
from engine.planning.candidates import Context, context_for, latest_prices
from engine.planning.deadline import DeadlineExceeded
from engine.planning.findings import Found, Needs, find, find_choices
from engine.planning.named_gpus import comparison_with_gpu_ids, with_gpu_ids
from engine.planning.plan_fit import SizingCache
from engine.planning.planner import Planner
from engine.planning.ranking import Ranked, measure
from engine.planning.requirements import hardware_facts, sizing_facts
from engine.planning.search import Searcher
from engine.planning.workload import InvalidRequest, Job, UnknownReference, resolve
from engine.reasoning.engines import RuleEngine, make_engine
from engine.reasoning.facts import request_facts
from engine.reasoning.policy import Policy, policy_from
from engine.reasoning.refengine import Outcome
from engine.reasoning.ruledocs import rule_detail, rule_summary

__all__ = [
    "RENDERER",
    "Advisor",
    "DeadlineExceeded",
    "InvalidRequest",
    "UnknownReference",
    "compare_markdown",
    "compare_slack_message",
    "deadline",
    "default_advisor",
    "lean",
    "lean_compare",
    "lean_json",
    "load_advisor",
    "markdown",
    "recommend",
    "rule_detail",
    "rule_summary",
    "slack_message",
]
from engine.sizing.power import required_psu_watts


def slack_message(response: RecommendResponse) -> dict[str, Any]:
    """The answer as a Slack message (engine/answer/chat/slack.py), which imports the Slack SDK on
    first use: about 50 ms that a command line answer or a service that never speaks Slack would
    otherwise pay at start-up."""
    from engine.answer.chat import slack

    return slack.slack_message(response)


def compare_slack_message(response: CompareResponse) -> dict[str, Any]:
    """A comparison as a Slack message, as `slack_message`."""
    from engine.answer.chat import slack

    return slack.compare_slack_message(response)


def with_owned_choices(body: CompareRequest) -> RecommendRequest:
    """The comparison's request with its owned choices among the hardware the user owns: the rules
    then weigh them as `/recommend` weighs `existing_hardware` (rule owned-hardware-comes-first), so
    the two rank the same owned cards alike. Cards the request lists already are not counted twice."""
    constraints = body.request.constraints
    listed = {item.gpu for item in constraints.existing_hardware}
    owned = [
        OwnedHardware(gpu=c.gpu, count=c.count)
        for c in body.choices
        if c.acquisition == "owned" and c.gpu not in listed
    ]
    if not owned:
        return body.request
    held = constraints.model_copy(update={"existing_hardware": [*constraints.existing_hardware, *owned]})
    return body.request.model_copy(update={"constraints": held})


class Reasoned(NamedTuple):
    """A request through the rules: what planning any hardware for it starts from."""

    job: Job
    outcome: Outcome
    policy: Policy
    planner: Planner
    ctx: Context


class Planned(NamedTuple):
    """A request reasoned and planned: all the answer describes."""

    reasoned: Reasoned
    found: Found

    def shown(self, count: int) -> Planned:
        """The same plans with only the first `count` options shown."""
        return Planned(self.reasoned, self.found.shown(count))


class Advisor:
    """A loaded KB and rule set, ready to answer requests. Thread-safe: the KB and rules never change,
    and the option caches only gain entries computed from them (a race computes one twice)."""

    def __init__(
        self,
        kb: KB,
        rules: Sequence[Rule],
        rules_root: Path | None = None,
        engine: RuleEngine | None = None,
        *,
        checked: CheckedKB | None = None,
        clock: Callable[[], date] = date.today,
    ):
        """An advisor over `kb` and `rules`; `checked` says what identifies them when they were read
        and checked (engine/reasoning/checked.py), which is how the service builds one; `clock` gives
        today, for the age of the prices an answer uses."""
        self.kb = kb
        self.rules = tuple(rules)
        self.rules_root = rules_root
        self.rules_by_id = {rule.id: rule for rule in self.rules}
        self.rule_citations = citation_texts(self.rules)
        self.target_fit_rules = frozenset(
            rule.id for rule in self.rules if any(fact == TARGET_FITS for fact, _ in facts_in(rule.when))
        )
        """rules that read the pre-sizing verdict on the target (`hardware.target_fits`)"""
        self.categories = dict(checked.categories) if checked else {}
        self.graph = KBGraph(kb)
        self.engine = engine or make_engine(self.rules)
        self.checked = checked
        self.key = checked.key if checked else None
        """the cache key of what this advisor was built from (None when built from objects)"""
        self.version = checked.version if checked else kb.version
        self.prices_as_of = max((o.as_of for o in kb.offers.values()), default=None)
        self._clock = clock
        self.rent_rates = _cheapest_rates(self.graph)
        self.searcher = Searcher(self.graph, measure)
        self.sizing_cache = SizingCache()
        """each workload's sizing, for the requests that ask about it again (engine/planning/plan_fit.py)"""
        self.buy_prices = _new_prices(kb)

    @property
    def clock(self) -> Callable[[], date]:
        """Today, for the age of the prices an answer uses; set once, when the advisor is made."""
        return self._clock

    def on_day(self, clock: Callable[[], date]) -> Advisor:
        """The same advisor reading another clock (a fixed day, for recorded answers): a shallow copy
        sharing the KB, the rule engine and the option caches, none of which depend on the day."""
        other = copy.copy(self)
        other._clock = clock
        return other

    def warm(self) -> None:
        """Build the option lists of the commonest contexts (each OS, spot allowed or not, nothing
        owned or named) now, so the first request of each does not pay for them (tens of ms)."""
        for os_name in ("linux", "windows", "macos"):
            for spot in (False, True):
                ctx = Context(
                    os=os_name, vendors=None, providers=None, spot=spot, owned=(), extra_counts=frozenset()
                )
                self.searcher.grouped_options(ctx, None)

    @classmethod
    def of(cls, checked: CheckedKB, rules_root: Path | None) -> Advisor:
        return cls(checked.kb, checked.rules, rules_root, checked=checked)

    def close(self) -> None:
        """Free what the rule engine holds outside Python (durable's ruleset) once this advisor is
        replaced. Requests still running on it are answered by an equivalent engine."""
        self.engine.close()

    def open_sessions(self) -> int:
        """Rule-engine sessions open now (durable keeps one per request in flight; the reference none)."""
        live = getattr(self.engine, "live_sessions", None)
        return int(live()) if callable(live) else 0

    # --- the pipeline --------------------------------------------------------------------------

    def reasoned(self, request: RecommendRequest) -> Reasoned:
        """The request as a job, through the rules, to a planner and the hardware context."""
        job = resolve(request, self.kb)
        facts = self.facts(request, job)
        outcome = self.engine.run(facts)
        policy = policy_from(outcome, self.rules)
        planner = self.planner(job, policy, request)
        return Reasoned(
            job,
            outcome,
            policy,
            planner,
            context_for(
                request,
                spot="spot" in policy.suggested("pricing"),
                your_computer=policy.facts.get("plan.your_computer") is True,
            ),
        )

    def recommend(self, request: RecommendRequest) -> RecommendResponse:
        """The answer to `request`. When nothing bought fits the budget because each purchase includes
        a machine to hold the cards, and the request says nothing of a machine of the user's, the
        answer is the cards alone for a desktop the user is assumed to have, with that assumption and
        the power supply it needs stated (rather than infeasible)."""
        (answer,) = self.answers(request, (request.top_k,))
        return answer

    def answers(self, request: RecommendRequest, shown: Sequence[int]) -> list[RecommendResponse]:
        """The answer to `request`, planned once and described with each count of options in `shown`
        (at most `request.top_k`): a report states the answer as asked and plots more options."""
        request = with_gpu_ids(request, self.kb)
        planned = self.planned(request)
        top = planned.found.top
        if not top or not top[0].candidate.as_asked:  # retried as an engineer would (`retries`)
            for retried, stated in retries(self.kb, request, planned.found.needs.requirements, bool(top)):
                assumed = self.planned(retried, seek_way_out=False)
                first = assumed.found.top[:1]
                if first and (not top or first[0].candidate.as_asked):
                    return [stated(self.described(retried, assumed.shown(k))) for k in shown]
        return [self.described(request, planned.shown(k)) for k in shown]

    def answer(self, request: RecommendRequest) -> RecommendResponse:
        """The answer to `request` as it is stated."""
        request = with_gpu_ids(request, self.kb)
        return self.described(request, self.planned(request))

    def planned(self, request: RecommendRequest, *, seek_way_out: bool = True) -> Planned:
        """`request` through the rules and planned: everything the answer states, before any words."""
        reasoned = self.reasoned(request)
        found = find(self.searcher, reasoned.planner, reasoned.ctx, request, seek_way_out=seek_way_out)
        self.sizing_cache.settle(reasoned.planner.sizing)
        return Planned(reasoned, found)

    def described(self, request: RecommendRequest, planned: Planned) -> RecommendResponse:
        """The planned answer to `request` in words: the answer layer's part, which plans nothing."""
        (job, outcome, policy, _, _), found = planned
        top, target, search, way_out = found.top, found.target, found.search, found.way_out
        precision = found.needs.precision
        relaxation = None if way_out is None else relaxation_of(way_out, self.rules, request.objective)
        cited = step_citations(outcome, self.rule_citations)
        target_fit = None if target is None else fit_on(job, target)
        # a rule that judged the target from one GPU's share before sizing is overruled once the
        # target is planned: the planned need is warned instead, if it does not fit (`target_warning`)
        overruled = self.target_fit_rules if target_fit is not None else frozenset()
        oldest = min((d for _, d in price_dates(top)), default=None)
        best_on_target = None if target is None else target.best
        providers = self.kb.providers
        return RecommendResponse(
            **self._envelope(
                planned.reasoned,
                top,
                found.needs,
                cited,
                request.constraints.max_price_age_days,
                overruled=overruled,
                first=target_warning(target_fit),
            ),
            oldest_price_as_of=oldest.isoformat() if oldest else None,
            feasible=bool(top),
            summary=summary(
                job,
                top,
                relaxation,
                search.rejections,
                best_on_target,
                precision if target is None or best_on_target is None else target.precision,
                policy.role("budget"),
                None if way_out is None else way_out.candidate,
                found.owned,
                found.owned_instead,
                None if target_fit is None or best_on_target is not None else target_fit.why,
                None if target is None or not target.fit.kept else target.fit.kept[0],
            ),
            recommendations=[
                recommendation(i + 1, r, policy, outcome, job, cited, providers, first_words(found, i))
                for i, r in enumerate(top)
            ],
            rejected=rejected(search.rejections, search.candidates),
            target_fit=target_fit,
            relaxation=relaxation,
        )

    def report(self, request: RecommendRequest) -> str:
        """The procurement report (engine/answer/report.py): the answer to `request` as it is, its
        cost-time chart plotting every option the ranking keeps (up to MAX_TOP_K), those beyond the
        `top_k` first listed on the page as plotted."""
        wide_request = request.model_copy(update={"top_k": MAX_TOP_K})  # `answers` reads GPU names
        answer, wide = self.answers(wide_request, (request.top_k, MAX_TOP_K))
        return report_html(request, answer, self.rules_by_id, plotted=wide.recommendations)

    def compare(self, body: CompareRequest) -> CompareResponse:
        """Each hardware choice of `body` planned for its request, side by side: the rules run once,
        then each choice is planned as target hardware is (engine/planning/on_hardware.py)."""
        body = comparison_with_gpu_ids(body, self.kb)
        try:
            reasoned = self.reasoned(with_owned_choices(body))
        except InvalidRequest as exc:  # its field is under `request` in this body
            raise type(exc)(("request", *exc.loc), str(exc)) from None
        found = find_choices(self.searcher, reasoned.planner, reasoned.ctx, body.choices)
        self.sizing_cache.settle(reasoned.planner.sizing)
        job, outcome, policy = reasoned.job, reasoned.outcome, reasoned.policy
        cited = step_citations(outcome, self.rule_citations)
        answers = compared(self.kb, found.judged, found.ranked, policy, outcome, job, cited)
        best = next(iter(found.ranked), None)
        return CompareResponse(
            **self._envelope(
                reasoned,
                list(found.ranked.values()),
                found.needs,
                cited,
                body.request.constraints.max_price_age_days,
            ),
            summary=compare_summary(job, answers, best),
            best=best,
            choices=answers,
        )

    def _envelope(
        self,
        reasoned: Reasoned,
        top: Sequence[Ranked],
        needs: Needs,
        cited: Mapping[int, tuple[str, ...]],
        max_price_age_days: int,
        *,
        overruled: frozenset[str] = frozenset(),
        first: str | None = None,
    ) -> dict[str, Any]:
        """What every answer carries beside its own findings: its id, what it was computed from
        (the KB version, the prices' date), the workload's requirements as planned, the rules'
        trace, warnings (`parts.warnings`, and the age of the prices used) and the assumptions."""
        job, outcome, policy = reasoned.job, reasoned.outcome, reasoned.policy
        prices = price_warnings(top, self.clock(), max_price_age_days, self.kb.providers, job.horizon_hours)
        return {
            "request_id": uuid.uuid4().hex,
            "kb_version": self.version,
            "prices_as_of": self.prices_as_of.isoformat() if self.prices_as_of else "unknown",
            "requirements": needs.requirements,
            "trace": trace(outcome, self.rules_by_id, cited),
            "warnings": warnings(job, policy, top, overruled=overruled, first=first) + prices,
            "assumptions": assumptions(job, policy, needs.workload_assumptions, top),
        }

    def facts(self, request: RecommendRequest, job: Job) -> dict[str, Scalar]:
        """The facts the rules start from (`job_facts` over this advisor's KB)."""
        return job_facts(request, job, self.kb)

    def planner(self, job: Job, policy: Policy, request: RecommendRequest) -> Planner:
        rates, prices, cache = self.rent_rates, self.buy_prices, self.sizing_cache
        return Planner(job, policy, request, rent_rates=rates, buy_prices=prices, sizing_cache=cache)


TARGET_FITS = "hardware.target_fits"


def job_facts(request: RecommendRequest, job: Job, kb: KB) -> dict[str, Scalar]:
    """The facts the rules start from: the request's, the job as resolved, the sizing and the
    hardware facts read before any option is planned."""
    facts = request_facts(request)
    facts["workload.params_b"] = round(job.params / 1e9, 4)
    if job.model is not None:
        facts["workload.model"] = job.model  # the KB id, whatever name the request used
    if job.native_precision is not None:
        facts["workload.native_precision"] = job.native_precision
    if job.qat_precision is not None:
        facts["workload.qat_precision"] = job.qat_precision
    if job.fp16_overflows:
        facts["workload.fp16_overflows"] = True
    facts["workload.kind"] = job.kind  # decoder, or encoder (bidirectional attention)
    facts["workload.generates"] = not job.reads_only  # false: an encoder or embedding model, no decode
    if job.is_moe:
        facts["workload.active_params_b"] = round(job.active_params / 1e9, 4)
    sizing = sizing_facts(job, kb)
    facts.update(sizing)
    facts.update(hardware_facts(request, kb, float(sizing["sizing.task_gb"]), job))
    return facts


def first_words(found: Found, index: int) -> str:
    """Why the option at `index` ranks above a faster, cheaper one that follows it ("" when none does)."""
    beaten = found.outranked.get(index)
    return "" if beaten is None else outranked_words(*beaten, shown=len(found.top))


def with_an_assumed_desktop(request: RecommendRequest) -> RecommendRequest:
    """`request` for the cards alone, for a desktop of the user's with one free x16 slot."""
    c = request.constraints
    return request.model_copy(update={"constraints": c.model_copy(update={"existing_host": ExistingHost()})})


def on_an_assumed_desktop(kb: KB, request: RecommendRequest, assumed: RecommendResponse) -> RecommendResponse:
    """The `assumed` answer (the cards alone, for a desktop of the user's) with that assumption stated,
    and the power supply the best card needs."""
    best = assumed.recommendations[0]
    psu = required_psu_watts(kb.gpus[best.gpu].tdp_w or 0, best.gpu_count)
    words = desktop_assumption(best.gpu_name, psu, request.constraints.budget_usd)
    return assumed.model_copy(
        update={
            "summary": f"{assumed.summary} {words}",
            "assumptions": {**assumed.assumptions, "existing_desktop": words},
        }
    )


Restate = Callable[[RecommendResponse], RecommendResponse]
"""states in a retried answer the change the retry made to the request"""


def retries(
    kb: KB, request: RecommendRequest, needs: Requirements, planned: bool
) -> Iterator[tuple[RecommendRequest, Restate]]:
    """The requests an answer with no plan, or (`planned`) only plans that change the method, is
    retried as, in order, each with what states its change; `needs` the whole job's, as asked: the
    cards alone for a desktop the user is assumed to have; a training step of one sequence a GPU with
    a fused loss; both. A retry is shown only when it has plans (its way out, when it has none, would
    be thrown away) and, where the answer changed the method, only when it keeps it. A desktop is
    assumed only where nothing was planned: it answers a budget, not a method."""
    desktop = not planned and may_assume_a_desktop(request)
    if desktop:
        yield with_an_assumed_desktop(request), partial(on_an_assumed_desktop, kb, request)
    if may_step_one_sequence(request, needs):
        one = with_one_sequence(request)
        yield one, partial(on_one_sequence, request)
        if desktop:
            both = with_an_assumed_desktop(one)

            def stated(answer: RecommendResponse) -> RecommendResponse:
                return on_an_assumed_desktop(kb, request, on_one_sequence(request, answer))

            yield both, stated


ACTIVATIONS_WORTH_A_RETRY = 0.2
"""the share of the job's memory its activations and logits take, below which stepping one sequence a
micro-step with a fused loss cannot make an infeasible request run: a 405B full fine-tune's states are
6.5 TB and its activations a sliver, where LoRA of an 8B model at 4 x 8,192 tokens is 88% activations"""


def may_step_one_sequence(request: RecommendRequest, needs: Requirements) -> bool:
    """Whether an infeasible training request may be retried at one sequence a micro-step with a fused
    loss: it trains, steps more than one sequence at once or holds its whole logits (and can fuse
    them), and its activations are a share of its memory that the change could bring within a GPU."""
    w, memory = request.workload, needs.memory
    return (
        w.task != "inference"
        and (w.batch_size > 1 or not (w.fused_loss or not can_fuse_the_loss(request)))
        and memory.activations_gb >= ACTIVATIONS_WORTH_A_RETRY * memory.total_gb
    )


def can_fuse_the_loss(request: RecommendRequest) -> bool:
    """Whether the hardware a request can be planned on runs a fused linear cross-entropy: not a Mac's
    GPUs (`memory.FUSED_LOSS_PLATFORMS`)."""
    return request.constraints.os != "macos"


def with_one_sequence(request: RecommendRequest) -> RecommendRequest:
    """`request` stepping one sequence a micro-step, with a fused linear cross-entropy loss where the
    hardware runs one."""
    w = request.workload
    fused = w.fused_loss or can_fuse_the_loss(request)
    return request.model_copy(
        update={"workload": w.model_copy(update={"batch_size": 1, "fused_loss": fused})}
    )


def on_one_sequence(request: RecommendRequest, assumed: RecommendResponse) -> RecommendResponse:
    """The `assumed` answer (one sequence a micro-step, a fused loss) with that change stated: what the
    request asked could not be held, and how the plans hold it."""
    w = request.workload
    words = one_sequence_words(w.batch_size, w.fused_loss or not can_fuse_the_loss(request))
    return assumed.model_copy(
        update={
            "summary": f"{assumed.summary} {words}",
            "assumptions": {**assumed.assumptions, "micro_step": words},
        }
    )


def may_assume_a_desktop(request: RecommendRequest) -> bool:
    """Whether an infeasible answer may be retried with the cards alone, for a desktop the user is
    assumed to own: cards are bought, a budget is stated, no machine of the user's is described, and
    the user is not on a Mac (which takes no cards)."""
    c = request.constraints
    return (
        c.acquisition != "rent"
        and c.budget_usd is not None
        and c.host_slots == 0
        and c.os != "macos"
        and c.gpu_count is None
    )


def _new_prices(kb: KB) -> dict[str, float]:
    """The latest new price of each GPU that has one."""
    return {
        gpu.id: price.price_usd
        for gpu in kb.gpus.values()
        if (price := latest_prices(gpu.prices).get("new")) is not None
    }


def _cheapest_rates(graph: KBGraph) -> dict[str, float]:
    rates: dict[str, float] = {}
    for offer in graph.kb.offers.values():
        if offer.on_demand_usd_per_hour is None:
            continue
        rate = offer.on_demand_usd_per_hour / offer.gpu_count
        if offer.gpu not in rates or rate < rates[offer.gpu]:
            rates[offer.gpu] = rate
    return rates


def load_advisor(kb_root: Path, rules_root: Path, data_root: Path | None, today: date) -> Advisor:
    """An advisor over the KB and rules at these roots when every lint check passes, else `KBInvalid`
    listing the problems of both (the service starts, and reloads, only on a clean KB)."""
    from engine.reasoning.checked import read_checked

    return Advisor.of(read_checked(kb_root, rules_root, data_root, today), rules_root)


_default: Advisor | None = None
_lock = threading.Lock()


def default_advisor() -> Advisor:
    """The advisor over the configured kb/ and rules/, loaded and checked once."""
    global _default
    with _lock:
        if _default is None:
            from engine.knowledge.paths import data_dir, kb_dir, rules_dir

            _default = load_advisor(kb_dir(), rules_dir(), data_dir(), date.today())
        return _default


def recommend(request: RecommendRequest) -> RecommendResponse:
    """Ranked, traced recommendations for one request, over the configured KB and rules."""
    return default_advisor().recommend(request)
