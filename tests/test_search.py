"""The search's shortcuts give the answers a full search gives: price groups sized once by their
cheapest option, several nodes only where one node cannot run the job, and the infeasibility
relaxation planned cheapest first."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from engine.candidates import context_for
from engine.kb import KB
from engine.models.request import RecommendRequest
from engine.planner import Candidate
from engine.policy import policy_from
from engine.recommend import Advisor, identity_key
from engine.workload import resolve
from tests.golden_support import advisor, golden_request, recorded


def with_dearer_copies(kb: KB, copies: int) -> KB:
    """The KB with every offer present `copies` more times, each copy 10% dearer per step."""
    offers = dict(kb.offers)
    for n in range(1, copies + 1):
        for offer in kb.offers.values():
            rates = {
                name: None if rate is None else rate * (1 + 0.1 * n)
                for name, rate in (
                    ("on_demand_usd_per_hour", offer.on_demand_usd_per_hour),
                    ("spot_usd_per_hour", offer.spot_usd_per_hour),
                )
            }
            offers[f"{offer.id}-dearer-{n}"] = offer.model_copy(
                update={"id": f"{offer.id}-dearer-{n}", **rates}
            )
    return dataclasses.replace(kb, offers=MappingProxyType(offers))


@pytest.mark.parametrize(
    "name",
    [
        "serve-70b-fleet-1000-rpm",
        "train-13b-full",
        "low-utilization-rents",
        "interruptible-training-uses-spot",
    ],
)
def test_dearer_offers_of_the_same_hardware_change_nothing(name: str) -> None:
    """Only the cheapest offer of a price group can rank, so adding dearer ones must not move the
    answer (the search no longer even sizes them)."""
    base = advisor()
    bigger = Advisor(with_dearer_copies(base.kb, 3), base.rules, base.rules_root)
    request = golden_request(name)
    assert recorded(bigger.recommend(request)) == recorded(base.recommend(request))


def test_one_node_first_several_only_when_needed() -> None:
    small = advisor().recommend(
        RecommendRequest.model_validate(
            {"workload": {"task": "lora", "model": "llama-3-1-8b"}, "constraints": {"acquisition": "rent"}}
        )
    )
    assert small.feasible and all(r.nodes == 1 for r in small.recommendations)
    # Pretraining Llama 3.1 405B (405.85B parameters, Meta model card) with ZeRO-3 and no offload
    # keeps 16 bytes per parameter on GPUs, 6.5 TB: no 8-GPU node holds it, so every option spans nodes.
    big = advisor().recommend(
        RecommendRequest.model_validate(
            {
                "workload": {"task": "pretrain", "model": "llama-3-1-405b"},
                "constraints": {"acquisition": "rent", "parallelism": ["zero-3"]},
            }
        )
    )
    assert big.feasible and all(r.nodes > 1 for r in big.recommendations)


@pytest.mark.parametrize("name", ["budget-too-small"])
def test_the_relaxation_finds_what_an_exhaustive_search_finds(name: str) -> None:
    base = advisor()
    request = golden_request(name)
    response = base.recommend(request)
    assert response.relaxation is not None
    job = resolve(request, base.kb)
    outcome = base.engine.run(base.facts(request, job))
    policy = policy_from(outcome, base.rules)
    planner = base.planner(job, policy, request)
    ctx = context_for(request, spot="spot" in policy.suggested("pricing"))
    every = base.options(ctx, request.constraints.gpu_count)
    relaxed = base.search_options(planner.without(response.relaxation.rule), every).candidates
    cheapest: Candidate = min(relaxed, key=lambda c: (c.costs.horizon_cost_usd, identity_key(c)))
    assert cheapest.option.gpu.name in response.relaxation.message
