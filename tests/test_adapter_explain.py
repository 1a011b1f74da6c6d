"""engine/answer/explain.py: the words of each recommendation's `why` and the trace, from a sized plan.

Plans are built by hand from KB entries (kb/gpus, kb/hosts, kb/offers) and round figures, so that
every number the words state can be worked out in the test."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from engine.answer.explain import (
    cost_words,
    host_words,
    money,
    plan_words,
    relevant_steps,
    speed_words,
    trace,
    value_words,
    why,
)
from engine.answer.parts import citation_texts, step_citations
from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest
from engine.planning.candidates import Option
from engine.planning.economics import Costs
from engine.planning.memory import Breakdown, Layout
from engine.planning.performance import Speed
from engine.planning.plan_space import Spec
from engine.planning.planner import Candidate
from engine.planning.workload import resolve
from engine.reasoning.policy import Filter, Policy, Preference, Suggestion
from engine.reasoning.refengine import Firing, Outcome
from engine.recommend import Advisor

GB = 1e9


def costs_of(**fields: Any) -> Costs:
    base: dict[str, Any] = {
        "capex_usd": 0.0,
        "hourly_usd": 0.0,
        "monthly_usd": 0.0,
        "cost_per_1m_tokens_usd": None,
        "gpu_hours": None,
        "run_cost_usd": None,
        "break_even_hours": None,
        "horizon_cost_usd": 0.0,
        "rent_cost_over_horizon_usd": None,
    }
    return Costs(**{**base, **fields})


def candidate(
    option: Option,
    layout: Layout,
    *,
    parallelism: tuple[str, ...] = (),
    speed: Speed | None = None,
    costs: Costs | None = None,
    memory: Breakdown | None = None,
    copies: int = 1,
    spares: int = 0,
    preferred_by: tuple[str, ...] = (),
) -> Candidate:
    return Candidate(
        option=option,
        spec=Spec(layout, "single", parallelism),
        memory=memory or Breakdown(40 * GB, 0.0, 0.0, 0.0, 10 * GB, 8 * GB),
        headroom_pct=27.5,
        speed=speed or Speed(100.0, 100.0),
        copies=copies,
        costs=costs or costs_of(),
        plan_attrs={"vram_per_gpu_gb": 80.0},
        preference=0.0,
        preferred_by=preferred_by,
        spares=spares,
    )


@pytest.fixture(scope="module")
def rented(kb: KB) -> Option:
    offer = kb.offers["aws-p5-48xlarge"]
    return Option(
        gpu=kb.gpus["nvidia-h100-sxm"],
        count=8,
        nodes=1,
        acquisition="rent",
        pricing="on_demand",
        price_kind="on_demand",
        offer=offer,
        hourly_rent_usd=55.04,
    )


def test_money_rounds_to_dollars_from_100_and_to_cents_below() -> None:
    assert money(1234.56) == "$1,235"
    assert money(100.0) == "$100"
    assert money(99.994) == "$99.99"
    assert money(0.5) == "$0.50"


def test_plan_words_name_the_task_precision_parallelism_degree_and_checkpointing(rented: Option) -> None:
    layout = Layout("full_finetune", "bf16", tp=4, dp=2, checkpointing=True)
    words = plan_words(candidate(rented, layout, parallelism=("tensor", "zero-3")))
    assert words == "fully fine-tuning in bf16 with tensor + zero-3 (degree 4), activation checkpointing on"
    assert plan_words(candidate(rented, Layout("qlora", "nf4"))) == "QLoRA fine-tuning in nf4"
    # data parallelism alone has no tensor degree to state
    assert plan_words(candidate(rented, Layout("pretrain", "bf16", dp=8), parallelism=("ddp",))) == (
        "pretraining in bf16 with ddp"
    )


def test_speed_words_count_every_copy(rented: Option) -> None:
    serving = candidate(rented, Layout("inference", "bf16"), speed=Speed(42.0, 336.0), copies=3)
    # 336 tokens/s per copy x 3 copies = 1,008 in all; 42 per sequence
    assert speed_words(serving) == "about 42 tokens/s per sequence (1,008 in all)"
    run = Speed(1000.0, 8000.0, None, 12.34)
    training = candidate(rented, Layout("pretrain", "bf16", dp=8), speed=run, copies=2)
    assert speed_words(training) == "about 16,000 training tokens/s, 12.3 h for the run"


def test_cost_words_for_a_purchase_a_rented_run_rented_serving_and_owned_hardware(
    bought: Option, rented: Option
) -> None:
    layout = Layout("inference", "bf16")
    purchase = costs_of(capex_usd=250_000.0, break_even_hours=10_416.7, horizon_cost_usd=263_553.6)
    assert cost_words(candidate(bought, layout, costs=purchase)) == (
        "$250,000 up front, cheaper than renting after 10,417 h of use; $263,554 over the horizon"
    )
    # a rented run pays hourly x hours: $55.04/h x 5 h = $275.20
    run = costs_of(hourly_usd=55.04, horizon_cost_usd=275.2, run_hours=5.0, monthly_usd=1.0)
    assert cost_words(candidate(rented, layout, costs=run)) == "$55.04/h; $275 for the run (5.0 h)"
    serving = costs_of(hourly_usd=55.04, monthly_usd=55.04 * 730 * 0.5, horizon_cost_usd=723_225.6)
    assert cost_words(candidate(rented, layout, costs=serving)) == (
        "$55.04/h, $20,090/month at the stated use; $723,226 over the horizon"
    )
    owned = replace(bought, acquisition="owned")
    power = costs_of(hourly_usd=0.672, horizon_cost_usd=12.0)
    assert cost_words(candidate(owned, layout, costs=power)) == "power only, $0.67/h; $12.00 over the horizon"


def test_host_words_state_the_hosts_share_of_the_capex_or_the_power_supply_to_add(
    bought: Option, rented: Option
) -> None:
    layout = Layout("inference", "bf16")
    # $50,000 host of $250,000 capex (8 x $25,000 + $50,000) = 20%
    assert host_words(candidate(bought, layout)) == (
        "Platform: 8-GPU HGX H100/H200 server (Supermicro SYS-821GE-TNHR / Dell PowerEdge XE9680 class), "
        "~$50,000 without GPUs, 20% of the capex."
    )
    two = replace(bought, count=16, nodes=2)  # 2 x $50,000 of $500,000 = 20%, each
    assert "Platform: 2 x 8-GPU HGX" in host_words(candidate(two, layout))
    assert "~$50,000 each without GPUs, 20% of the capex." in host_words(candidate(two, layout))
    cards = replace(bought, count=2, host=None, host_unit_usd=0.0, own_host=True)
    # 2 x 700 W (kb: H100 SXM tdp_w) more for the user's power supply; (1,400 + 250) / 0.85 = 1,941 W,
    # a 1,950 W supply (sizing/power.required_psu_watts)
    assert host_words(candidate(cards, layout)) == (
        "Platform: the cards go into a machine you own (free PCIe x16 slots), "
        "whose power supply must carry 1,400 W more (a 1,950 W supply in all)."
    )
    assert host_words(candidate(rented, layout)) == ""


def test_value_words_per_1000_of_capex_or_per_dollar_an_hour(bought: Option, rented: Option) -> None:
    layout = Layout("inference", "bf16")
    capex = candidate(bought, layout, costs=costs_of(capex_usd=250_000.0))
    # 8 x 3,350 GB/s = 26,800 GB/s per $250,000: 107 GB/s per $1,000
    assert (
        value_words(capex, "bandwidth_per_dollar")
        == "Value: 107 GB/s of memory bandwidth per $1,000 of capex."
    )
    hourly = candidate(rented, layout, costs=costs_of(hourly_usd=55.04))
    # 8 x 989.4 dense BF16 TFLOPS = 7,915.2 per $55.04/h: 144 per $/h
    assert value_words(hourly, "compute_per_dollar") == "Value: 144 dense TFLOPS per $/h."
    assert value_words(hourly, None) is None
    assert value_words(candidate(rented, layout, costs=costs_of()), "compute_per_dollar") is None  # no price


def test_why_states_memory_offload_ram_and_spares(rented: Option) -> None:
    offload = Breakdown(6 * GB, 0.0, 0.0, 4 * GB, 0.0, 1.3 * GB, host=42 * GB)
    layout = Layout("full_finetune", "bf16", dp=8, zero=3, offload=True)
    policy = Policy({}, (), (), (), (), {})
    text = why(candidate(rented, layout, memory=offload), policy, ["A rule's reason."])
    # 6 + 4 + 1.3 = 11.3 GB of the 80 GB per GPU; ZeRO-Offload: 42 GB per GPU x 8 GPUs a node = 336 GB
    assert "Needs 11.3 GB of 80 GB per GPU (28% free)" in text
    assert "CPU offload keeps 336 GB per node in host RAM" in text
    assert text.endswith("A rule's reason.")
    split = Layout("inference", "bf16", tp=8)
    spare = why(candidate(rented, split, copies=3, spares=1), policy, [])
    assert (
        "3 copies of this 8-GPU option on separate nodes: 2 carry the serving demand and 1 is a spare"
        in spare
    )
    fleet = why(candidate(rented, split, copies=2), policy, [])
    assert "2 copies of this 8-GPU option meet the serving demand." in fleet and "CPU offload" not in fleet
    # Each copy of eight GPUs serving as replicas holds eight copies of the model: 2 x 8 in all.
    replicas = why(candidate(rented, Layout("inference", "bf16", dp=8), copies=2), policy, [])
    assert (
        "2 copies of this 8-GPU option (16 replicas of the model in all) meet the serving demand." in replicas
    )
    single = replace(rented, count=1, offer=None)
    assert "3 copies meet the serving demand." in why(
        candidate(single, Layout("inference", "bf16"), copies=3), policy, []
    )


def test_relevant_steps_are_filters_used_suggestions_preferences_and_read_facts(rented: Option) -> None:
    policy = Policy(
        facts={},
        filters=(Filter("needs-memory", 4, True, {}, ""),),
        preferences=(Preference("likes-nvlink", 6, {}, 1.0, ""),),
        suggestions=(
            Suggestion("use-lora", 2, "method", "lora", ""),
            Suggestion("use-fp8", 3, "precision", "fp8", ""),  # this plan is bf16: not relevant
            Suggestion("spot-ok", 5, "pricing", "on_demand", ""),
        ),
        notices=(),
        steps={"likes-nvlink": 6},
    )
    outcome = Outcome(
        facts={},
        firings=(
            Firing(1, "size-tier", {}, {"size_tier": "large"}, ()),  # derives a fact the planner reads
            Firing(7, "just-a-note", {}, {"unrelated.fact": 1}, ()),
        ),
    )
    plan = candidate(rented, Layout("lora", "bf16"), preferred_by=("likes-nvlink",))
    assert relevant_steps(plan, policy, outcome) == [1, 2, 4, 5, 6]


def test_trace_carries_each_firings_rule_title_messages_and_citations(advisor: Advisor) -> None:
    adv = advisor
    request = RecommendRequest.model_validate({"workload": {"task": "inference", "model": "llama-3-1-8b"}})
    outcome = adv.engine.run(adv.facts(request, resolve(request, adv.kb)))
    steps = trace(outcome, adv.rules_by_id, step_citations(outcome, citation_texts(adv.rules)))
    assert [s.step for s in steps] == [f.step for f in outcome.firings] and steps
    by_id = {rule.id: rule for rule in adv.rules}
    for step, firing in zip(steps, outcome.firings, strict=True):
        rule = by_id[firing.rule]
        assert step.title == rule.title
        assert step.message == " ".join(firing.messages)
        assert step.derived == dict(firing.derived)
        assert step.citations == [f"{c.source} <{c.url}>" if c.url else c.source for c in rule.citations]
