"""Rules: every rule's own cases, the strict schema, the reference engine's semantics, the loader."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from cli.main import main
from engine.knowledge.paths import PROJECT_ROOT
from engine.models.rule import Rule
from engine.reasoning.engines import ENGINE_NAMES, make_engine
from engine.reasoning.refengine import ReferenceEngine, RuleConflict
from engine.reasoning.rules import read_rules, run_rule_cases

RULES = read_rules(PROJECT_ROOT / "rules")
CASES = [(rule, case) for rule in RULES.rules for case in rule.tests]


def test_embedded_rules_load_without_problems() -> None:
    assert RULES.problems == ()
    assert RULES.rules


ENGINES = {name: make_engine(RULES.rules, name) for name in ENGINE_NAMES}


@pytest.mark.parametrize("engine", ENGINE_NAMES)
@pytest.mark.parametrize(("rule", "case"), CASES, ids=[f"{r.id}::{c.name}" for r, c in CASES])
def test_rule_case(rule: Rule, case: Any, engine: str) -> None:
    (result,) = [r for r in run_rule_cases([rule], ENGINES[engine]) if r.case == case.name]
    assert result.passed, result.detail


def rule(rule_id: str = "r", **overrides: Any) -> dict[str, Any]:
    """A valid rule as plain data, with fields replaced by `overrides`."""
    data: dict[str, Any] = {
        "id": rule_id,
        "title": "A rule",
        "status": "stable",
        "priority": 50,
        "rationale": "Because.",
        "citations": [{"source": "a seed", "accessed": "2026-11-22"}],
        "when": {"fact": "workload.params_b", "gte": 70},
        "then": [{"derive": {"fact": "size_tier", "value": "70b+"}, "message": "big"}],
        "tests": [
            {"name": "big", "given": {"workload.params_b": 70}, "expect": {"fires": True}},
            {"name": "small", "given": {"workload.params_b": 7}, "expect": {"fires": False}},
        ],
    }
    data.update(overrides)
    return data


def test_a_valid_rule_validates() -> None:
    assert Rule.model_validate(rule()).then[0].verb == "derive"


def rejections(change: dict[str, Any]) -> list[ErrorDetails]:
    with pytest.raises(ValidationError) as raised:
        Rule.model_validate(rule(**change))
    return raised.value.errors()


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"when": {"fact": "workload.params_b", "gt": 1, "lt": 9}}, "exactly one operator"),
        ({"when": {"fact": "workload.params_b"}}, "exactly one operator"),
        ({"when": {"facts": "x"}}, "a condition is {fact: ..., <op>: ...}"),
        ({"when": {"not": {"fact": "size_tier", "eq": "x"}}}, "negation"),
        ({"when": {"fact": "size_tier", "exists": False}}, "negation"),
        ({"then": [{"derive": {"fact": "workload.task", "value": "x"}, "message": "m"}]}, "input fact"),
        (
            {"then": [{"warn": {}, "suggest": {"kind": "method", "value": "qlora"}, "message": "m"}]},
            "exactly one",
        ),
        ({"then": [{"warn": {}, "message": "a {constraints.os} user"}]}, "does not read"),
        ({"status": "deprecated"}, "replaced_by"),
        ({"tests": [{"name": "a", "given": {}, "expect": {"fires": True}}] * 2}, "one that does not"),
    ],
)
def test_schema_rejects_with_the_rule_models_own_message(change: dict[str, Any], fragment: str) -> None:
    assert any(fragment in error["msg"] for error in rejections(change))


# What pydantic itself enforces is asserted by the error's `type`, its machine-readable identifier
# (pydantic docs, "Error Handling"), and the field, not by `msg`, which pydantic words for people.
@pytest.mark.parametrize(
    ("change", "error_type", "field"),
    [
        ({"priorty": 5}, "extra_forbidden", "priorty"),
        ({"priority": 101}, "less_than_equal", "priority"),
        ({"then": [{"exclude": {"where": {"colour": "red"}}, "message": "m"}]}, "literal_error", "colour"),
        ({"citations": []}, "too_short", "citations"),
        ({"id": "Bad_Id"}, "string_pattern_mismatch", "id"),
        ({"when": {"fact": "workload.params_b", "eq": float("nan")}}, "finite_number", "eq"),
        ({"when": {"fact": "workload.params_b", "gt": float("inf")}}, "finite_number", "gt"),
    ],
)
def test_schema_rejects_what_its_constraints_forbid(
    change: dict[str, Any], error_type: str, field: str
) -> None:
    errors = rejections(change)
    assert any(error["type"] == error_type and field in error["loc"] for error in errors), errors


def make(rule_id: str, when: dict[str, Any], derives: dict[str, Any], priority: int = 50) -> Rule:
    then = [{"derive": {"fact": k, "value": v}, "message": "m"} for k, v in derives.items()]
    return Rule.model_validate(rule(rule_id, when=when, then=then, priority=priority))


CHAIN = [
    make("tier", {"fact": "workload.params_b", "gte": 70}, {"size_tier": "70b+"}, priority=10),
    make("multi", {"fact": "size_tier", "eq": "70b+"}, {"plan.multi_gpu": True}, priority=90),
    make(
        "nvlink",
        {"all": [{"fact": "plan.multi_gpu", "eq": True}, {"fact": "workload.task", "eq": "pretrain"}]},
        {"plan.link": "nvlink"},
        priority=50,
    ),
    make(
        "local",
        {
            "any": [
                {"fact": "constraints.os", "eq": "macos"},
                {"fact": "constraints.on_prem_only", "eq": True},
            ]
        },
        {"plan.local": True},
    ),
    make("cloud", {"not": {"fact": "constraints.on_prem_only", "eq": True}}, {"plan.cloud_ok": True}),
]
REQUEST = {"workload.params_b": 70.6, "workload.task": "pretrain", "constraints.os": "linux"}


def test_forward_chaining_follows_derived_facts_whatever_the_priorities() -> None:
    outcome = ReferenceEngine(CHAIN).run(REQUEST)
    assert outcome.facts["plan.link"] == "nvlink"
    order = [f.rule for f in outcome.firings]
    assert order.index("tier") < order.index("multi") < order.index("nvlink")
    assert outcome.fired == {"tier", "multi", "nvlink", "cloud"}
    nvlink = next(f for f in outcome.firings if f.rule == "nvlink")
    assert dict(nvlink.matched) == {"plan.multi_gpu": True, "workload.task": "pretrain"}
    assert dict(nvlink.derived) == {"plan.link": "nvlink"}


def test_what_fires_does_not_depend_on_priorities() -> None:
    expected = ReferenceEngine(CHAIN).run(REQUEST)
    shuffle = random.Random(7)
    for _ in range(20):
        rules = [
            Rule.model_validate({**r.model_dump(by_alias=True), "priority": shuffle.randint(0, 100)})
            for r in CHAIN
        ]
        outcome = ReferenceEngine(rules).run(REQUEST)
        assert outcome.fired == expected.fired
        assert dict(outcome.facts) == dict(expected.facts)


def test_contradicting_derivations_are_an_error() -> None:
    rules = [
        make("a", {"fact": "workload.params_b", "gte": 1}, {"tier": "x"}),
        make("b", {"fact": "workload.params_b", "gte": 1}, {"tier": "y"}),
    ]
    with pytest.raises(RuleConflict, match="tier"):
        ReferenceEngine(rules).run({"workload.params_b": 7})


@pytest.mark.parametrize(
    ("condition", "facts", "holds"),
    [
        ({"fact": "constraints.on_prem_only", "eq": True}, {"constraints.on_prem_only": 1}, False),
        ({"fact": "workload.batch_size", "eq": 1}, {"workload.batch_size": True}, False),
        ({"fact": "workload.params_b", "eq": 7}, {"workload.params_b": 7.0}, True),
        ({"fact": "constraints.os", "ne": "linux"}, {}, False),
        ({"fact": "constraints.os", "exists": False}, {}, True),
        ({"fact": "workload.params_b", "gt": 7}, {"workload.params_b": "70"}, False),
        ({"fact": "constraints.os", "in": ["linux", "windows"]}, {"constraints.os": "windows"}, True),
        ({"fact": "constraints.os", "not_in": ["linux"]}, {"constraints.os": "macos"}, True),
    ],
)
def test_condition_semantics(condition: dict[str, Any], facts: dict[str, Any], holds: bool) -> None:
    probe = make("probe", condition, {"probe.hit": True})
    assert ("probe" in ReferenceEngine([probe]).run(facts).fired) is holds


def test_messages_fill_in_the_facts_they_read() -> None:
    firings = ReferenceEngine(RULES.rules).run({"constraints.os": "windows"}).firings
    wsl = next(f for f in firings if f.rule == "windows-runs-cuda-through-wsl2")
    assert "On windows, run CUDA tooling under WSL2" in wsl.messages[0]


def test_a_counted_noun_takes_the_counts_number() -> None:
    """Messages write `{count} GPU(s)`; the reader sees "1 GPU" and "4 GPUs", a word between allowed."""
    firings = ReferenceEngine(RULES.rules).run({"constraints.max_gpus": 1}).firings
    cap = next(f for f in firings if f.rule == "max-gpus-cap")
    assert "at most 1 GPU." in cap.messages[0] and "(s)" not in cap.messages[0]
    fleet = {
        "workload.task": "inference",
        "sizing.kv_to_weights_pct": 149,
        "sizing.batch_size": 256,
        "sizing.in_flight_at_floor": 834,
        "sizing.batch_from_traffic": True,
        "sizing.context_tokens": 2500,
        "sizing.precision": "bf16",
    }
    firings = ReferenceEngine(RULES.rules).run(fleet).firings
    kv = next(f for f in firings if f.rule == "kv-cache-of-a-fleet-at-its-floor")
    assert "keeps 834 sequences of 2,500 tokens in flight" in kv.messages[0]
    providers = ReferenceEngine(RULES.rules).run({"constraints.providers.count": 3}).firings
    allowed = next(f for f in providers if f.rule == "provider-allow-list")
    assert "the 3 allowed providers." in allowed.messages[0]


def write(root: Path, relative: str, data: dict[str, Any] | str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def test_loader_reports_problems_with_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "rules"
    write(root, "size/good.yaml", rule("good"))
    write(root, "size/typo.yaml", rule("typo", priorty=3))
    write(root, "size/renamed.yaml", rule("good"))
    write(root, "size/notes.txt", "hello")
    write(root, "loose.yaml", rule("loose"))
    found = {(p.path, p.check) for p in read_rules(root).problems}
    assert ("rules/size/typo.yaml", "unknown-key") in found
    assert ("rules/size/renamed.yaml", "id-stem") in found
    assert ("rules/size/renamed.yaml", "duplicate-id") in found
    assert ("rules/size/notes.txt", "file-name") in found
    assert ("rules/loose.yaml", "layout") in found
    typo = next(p for p in read_rules(root).problems if p.check == "unknown-key")
    lines = (root / "size/typo.yaml").read_text().splitlines()
    assert typo.line == lines.index("priorty: 3") + 1


def test_kb_lint_and_kb_test_cover_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "rules"
    failing = rule("wrong")
    failing["tests"][1]["given"] = {"workload.params_b": 700}  # 'small' now fires
    write(root, "size/wrong.yaml", failing)
    assert main(["kb", "test", "--rules", str(root)]) == 1
    assert "FAIL wrong::small: expected it not to fire" in capsys.readouterr().out
    write(root, "size/broken.yaml", "id: broken\n")
    assert main(["kb", "lint", "--rules", str(root)]) == 1
    assert "rules/size/broken.yaml:1: missing-field:" in capsys.readouterr().out


def test_a_role_is_held_by_one_rule(tmp_path: Path) -> None:
    root = tmp_path / "rules"
    write(root, "size/first.yaml", rule("first", role="budget"))
    write(root, "size/second.yaml", rule("second", role="budget"))
    found = [(p.path, p.check) for p in read_rules(root).problems]
    assert found == [("rules/size/second.yaml", "role")]


def test_the_way_out_finds_its_rules_by_role_not_by_file_name(tmp_path: Path) -> None:
    """Renaming the rules that hold the budget and deadline roles changes no answer but their names:
    a 405B pretraining on a $1,000 budget still names the budget and the time it takes at best."""
    import shutil
    from datetime import date

    from engine.knowledge.paths import data_dir, kb_dir
    from engine.models.request import RecommendRequest
    from engine.recommend import default_advisor, load_advisor

    renamed = {
        "budget-is-a-hard-filter": "spend-within-the-budget",
        "training-finishes-by-the-deadline": "finish-in-time",
    }
    root = tmp_path / "rules"
    shutil.copytree(PROJECT_ROOT / "rules", root)
    for old, new in renamed.items():
        path = root / "constraints" / f"{old}.yaml"
        path.rename(path.with_name(f"{new}.yaml")).write_text(
            path.with_name(f"{new}.yaml").read_text().replace(f"id: {old}", f"id: {new}")
        )
    request = RecommendRequest.model_validate(
        {
            "workload": {"task": "pretrain", "params_b": 405},
            "constraints": {"acquisition": "buy", "budget_usd": 1000},
        }
    )
    before = default_advisor().recommend(request)
    after = load_advisor(kb_dir(), root, data_dir(), date.today()).recommend(request)
    assert before.relaxation is not None and after.relaxation is not None
    assert after.relaxation.rule == renamed[before.relaxation.rule]
    message = before.relaxation.message
    for old, new in renamed.items():
        message = message.replace(old, new)
    assert after.relaxation.message == message
    assert after.summary.replace(after.relaxation.message, "") == before.summary.replace(
        before.relaxation.message, ""
    )
