"""docs/rules.md is generated from the rule files and kept current; `kb new-rule` scaffolds a rule."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
import yaml

from cli.main import main
from engine.knowledge import paths
from engine.maintenance import rules_document
from engine.models.rule import Rule
from engine.reasoning.ruledocs import condition_text, new_rule_path, scaffold
from engine.reasoning.rules import read_rules


def test_rules_md_is_current() -> None:
    text, problems = rules_document(paths.rules_dir())
    assert not problems
    current = (paths.PROJECT_ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == text, "docs/rules.md is stale: run `gpu-advisor kb docs`"


def test_rules_md_lists_every_rule_with_its_sources() -> None:
    text, _ = rules_document(paths.rules_dir())
    assert text is not None and text.startswith("<!-- Generated")
    for rule in read_rules(paths.rules_dir()).rules:
        assert f"### `{rule.id}`" in text
        assert rule.citations[0].source in text


def test_condition_text_reads_as_a_sentence() -> None:
    rule = Rule.model_validate(
        {
            "id": "r",
            "title": "t",
            "status": "stable",
            "priority": 1,
            "rationale": "r",
            "citations": [{"source": "s", "accessed": "2026-11-22"}],
            "when": {
                "all": [
                    {"fact": "workload.task", "in": ["lora", "qlora"]},
                    {"not": {"fact": "constraints.os", "eq": "macos"}},
                ]
            },
            "then": [{"warn": {}, "message": "m"}],
            "tests": [
                {"name": "a", "given": {"workload.task": "lora"}, "expect": {"fires": True}},
                {"name": "b", "given": {"workload.task": "inference"}, "expect": {"fires": False}},
            ],
        }
    )
    assert condition_text(rule.when) == "`workload.task` in [lora, qlora] and (not `constraints.os` eq macos)"


def test_scaffold_is_refused_until_its_placeholders_are_rewritten(tmp_path: Path) -> None:
    """The scaffold is a schema-valid rule, but kb lint names every placeholder left in it; rewritten,
    it loads clean and its own cases run."""
    path = new_rule_path(tmp_path, "serving", "my-new-rule")
    path.parent.mkdir()
    text = scaffold("serving", "my-new-rule", date(2026, 11, 23))
    path.write_text(text, encoding="utf-8")
    ruleset = read_rules(tmp_path)
    assert [rule.id for rule in ruleset.rules] == ["my-new-rule"]
    assert {p.check for p in ruleset.problems} == {"placeholder"}
    flagged = {p.message.split("`")[1] for p in ruleset.problems}
    assert flagged == {"title", "rationale", "citations.0.source", "caveats.0", "then.0.message"}
    assert main(["kb", "test", "--rules", str(tmp_path)]) == 1
    rule = yaml.safe_load(text)
    rule["title"] = "Large models need a datacenter GPU"
    rule["rationale"] = "Seventy billion parameters do not fit a consumer card."
    rule["citations"][0]["source"] = "Transformer Math 101, Inference"
    rule["caveats"] = ["Quantized to 4 bits it may fit two cards."]
    rule["then"][0]["message"] = "A {workload.params_b}B model: plan for datacenter GPUs."
    rewritten = yaml.safe_dump(rule, sort_keys=False)
    path.write_text(rewritten, encoding="utf-8")
    assert not read_rules(tmp_path).problems
    assert main(["kb", "test", "--rules", str(tmp_path)]) == 0


@pytest.mark.parametrize(
    ("category", "rule_id", "message"),
    [
        ("Serving", "x", "--category"),
        ("serving", "bad_id", "--id"),
        ("serving", "keep-memory-headroom", "exists"),
    ],
)
def test_new_rule_refuses_bad_names_and_existing_ids(category: str, rule_id: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        new_rule_path(paths.rules_dir(), category, rule_id)


def test_new_rule_command_writes_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["kb", "new-rule", "--category", "serving", "--id", "fleet-rule", "--rules", str(tmp_path)]
    assert main(args) == 0
    assert (tmp_path / "serving" / "fleet-rule.yaml").is_file()
    assert main(args) == 2
    assert "exists" in capsys.readouterr().err


def test_docs_check_fails_when_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the rules document alone: the calibration page is drawn anew by each call (13 s) and has its own
    # staleness test (tests/test_calibration.py)
    monkeypatch.setattr("cli.main.calibration_documents", lambda folder: {})
    stale = tmp_path / "rules.md"
    stale.write_text("old\n", encoding="utf-8")
    assert main(["kb", "docs", "--out", str(stale), "--check"]) == 1
    assert main(["kb", "docs", "--out", str(stale)]) == 0
    assert main(["kb", "docs", "--out", str(stale), "--check"]) == 0
