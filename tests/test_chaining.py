"""The durable-rules adapter against the reference engine: identical firings, facts and errors on
random rule sets and requests; no session left behind; threads give the serial answers."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from cli.main import main
from engine.knowledge.paths import PROJECT_ROOT
from engine.models.rule import Rule
from engine.reasoning.chaining import DurableEngine, distinct_hash_sids, fnv1a_32
from engine.reasoning.engines import make_engine
from engine.reasoning.refengine import Outcome, ReferenceEngine, RuleConflict
from engine.reasoning.rules import read_rules

INPUTS: dict[str, list[Any]] = {
    "workload.a": [0, 1, 2.5, 7, 70, 1e-10, 2.5e-7, 1e20],
    "workload.b": [1, 3, 8.0],
    "constraints.c": ["x", "y", "z"],
    "constraints.d": [True, False],
}
DERIVED: dict[str, list[Any]] = {"d.p": ["u", "v"], "d.q": ["u", "v"], "d.t": [True, False], "d.n": [1, 2]}


def _operands(values: list[Any]) -> list[Any]:
    """The values a rule may compare with (a rule refuses a decimal Python writes with an exponent)."""
    return [v for v in values if not (isinstance(v, float) and "e" in repr(v))]


def _leaf(rng: random.Random, facts: dict[str, list[Any]]) -> dict[str, Any]:
    fact = rng.choice(sorted(facts))
    values = _operands(facts[fact])
    numeric = not isinstance(values[0], bool | str)
    ops = ["eq", "ne", "in", "not_in", "exists"] + (["lt", "lte", "gt", "gte"] if numeric else [])
    op = rng.choice(ops)
    if op in ("in", "not_in"):
        return {"fact": fact, op: rng.sample(values, rng.randint(1, len(values)))}
    if op == "exists":
        return {"fact": fact, "exists": True}
    return {"fact": fact, op: rng.choice(values)}


def _when(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    roll = rng.random()
    if depth >= 2 or roll < 0.45:
        return _leaf(rng, {**INPUTS, **DERIVED})
    if roll < 0.6:  # negation may only read input facts
        return rng.choice(
            [{"not": _leaf(rng, INPUTS)}, {"fact": rng.choice(sorted(INPUTS)), "exists": False}]
        )
    group = "all" if roll < 0.8 else "any"
    return {group: [_when(rng, depth + 1) for _ in range(rng.randint(1, 3))]}


def random_rules(rng: random.Random) -> list[Rule]:
    rules = []
    for i in range(rng.randint(1, 8)):
        then = [
            {"derive": {"fact": fact, "value": rng.choice(DERIVED[fact])}, "message": "m"}
            for fact in rng.sample(sorted(DERIVED), rng.randint(1, 2))
        ]
        rules.append(
            Rule.model_validate(
                {
                    "id": f"r{i}",
                    "title": "t",
                    "status": "stable",
                    "priority": rng.randint(0, 100),
                    "rationale": "r",
                    "citations": [{"source": "s", "accessed": "2026-11-22"}],
                    "when": _when(rng),
                    "then": then,
                    "tests": [
                        {"name": "a", "given": {}, "expect": {"fires": True}},
                        {"name": "b", "given": {}, "expect": {"fires": False}},
                    ],
                }
            )
        )
    return rules


def random_request(rng: random.Random) -> dict[str, Any]:
    return {fact: rng.choice(values) for fact, values in INPUTS.items() if rng.random() < 0.8}


def outcome_or_error(engine: ReferenceEngine | DurableEngine, facts: dict[str, Any]) -> Any:
    try:
        outcome: Outcome = engine.run(facts)
    except RuleConflict:
        return "conflict"
    return ([(f.rule, dict(f.matched), dict(f.derived)) for f in outcome.firings], dict(outcome.facts))


@pytest.mark.parametrize("seed", range(60))
def test_durable_matches_the_reference_on_random_rule_sets(seed: int) -> None:
    rng = random.Random(seed)
    rules = random_rules(rng)
    reference, durable = ReferenceEngine(rules), DurableEngine(rules)
    for _ in range(15):
        facts = random_request(rng)
        assert outcome_or_error(durable, facts) == outcome_or_error(reference, facts), facts
        assert durable.live_sessions() == 0


def _rule(rule_id: str, when: dict[str, Any]) -> Rule:
    return Rule.model_validate(
        {
            "id": rule_id,
            "title": "t",
            "status": "stable",
            "priority": 50,
            "rationale": "r",
            "citations": [{"source": "s", "accessed": "2026-11-28"}],
            "when": when,
            "then": [{"warn": {"severity": "info"}, "message": "m"}],
            "tests": [
                {"name": "a", "given": {}, "expect": {"fires": True}},
                {"name": "b", "given": {}, "expect": {"fires": False}},
            ],
        }
    )


@pytest.mark.parametrize("value", [1e-10, 2.5e-7, 1e-05, 1e16, 1e20, -3e-9])
def test_a_fact_python_writes_with_an_exponent_is_read(value: float) -> None:
    """docs/durable-rules.md §3, bug 12: durable's core misread "1e-05" (json.dumps of 0.00001), and the
    fact matched no pattern: a deadline of 1e-05 hours went unenforced (a 166-hour run was "feasible")."""
    rules = [
        _rule("known", {"fact": "workload.a", "exists": True}),
        _rule("small", {"fact": "workload.a", "lt": 0.001}),
        _rule("large", {"fact": "workload.a", "gt": 1000}),
    ]
    durable, reference = DurableEngine(rules), ReferenceEngine(rules)
    facts = {"workload.a": value}
    fired = [f.rule for f in durable.run(facts).firings]
    assert "known" in fired
    assert ("small" in fired) == (value < 0.001) and ("large" in fired) == (value > 1000)
    assert outcome_or_error(durable, facts) == outcome_or_error(reference, facts)


def test_a_rule_refuses_an_operand_the_core_would_misread() -> None:
    with pytest.raises(ValueError, match=r"between 0\.0001 and 1e16"):
        _rule("tiny", {"fact": "workload.a", "lt": 1e-05})


def test_embedded_rules_agree_on_every_case() -> None:
    rules = read_rules(PROJECT_ROOT / "rules").rules
    reference, durable = ReferenceEngine(rules), DurableEngine(rules)
    for rule in rules:
        for case in rule.tests:
            assert outcome_or_error(durable, case.given) == outcome_or_error(reference, case.given)


def test_sessions_are_released_when_a_rule_set_contradicts_itself() -> None:
    rng = random.Random(1)
    conflicting = [
        r
        for r in (random_rules(rng) for _ in range(200))
        if outcome_or_error(ReferenceEngine(r), {"workload.a": 7, "constraints.c": "x"}) == "conflict"
    ]
    assert conflicting
    durable = DurableEngine(conflicting[0])
    for _ in range(3):
        with pytest.raises(RuleConflict):
            durable.run({"workload.a": 7, "constraints.c": "x"})
        assert durable.live_sessions() == 0


def test_threads_get_the_serial_answers() -> None:
    rng = random.Random(99)
    rules = random_rules(rng)
    durable = DurableEngine(rules)
    requests = [random_request(rng) for _ in range(40)]
    serial = [outcome_or_error(durable, facts) for facts in requests]
    results: dict[int, list[Any]] = {}

    def worker(n: int) -> None:
        results[n] = [outcome_or_error(durable, facts) for facts in requests]

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result == serial for result in results.values())
    assert durable.live_sessions() == 0


def test_session_ids_have_distinct_hashes() -> None:
    sids = distinct_hash_sids(64)
    assert len({fnv1a_32(sid) for sid in sids}) == 64
    # docs/durable-rules.md §3, bug 5: these two sids collide under FNV-1a, durable's hash, and
    # would share a session
    assert fnv1a_32("req-991307") == fnv1a_32("req-1971740")


def test_the_engine_is_chosen_by_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = read_rules(PROJECT_ROOT / "rules").rules
    assert isinstance(make_engine(rules), DurableEngine)
    monkeypatch.setenv("GPU_ADVISOR_ENGINE", "reference")
    assert isinstance(make_engine(rules), ReferenceEngine)
    monkeypatch.setenv("GPU_ADVISOR_ENGINE", "drools")
    with pytest.raises(ValueError, match="durable, reference"):
        make_engine(rules)
    assert main(["kb", "test"]) == 2  # a usage error with the choices, not an internal error
