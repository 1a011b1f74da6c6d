"""Load `rules/<category>/<id>.yaml` into validated rules, and run each rule's own test cases.

Reading never raises on bad input: every problem becomes a `Problem` with the file and line, as for
the knowledge base: the same `Tree` (regular files inside rules/ only, each under a size cap), the
same safe YAML reader, the same schema-problem mapping and the same refusal of control characters in
text (a rule's title and messages reach Markdown, Slack, HTML and terminals).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from engine.knowledge.documents import ReadError, read_yaml_mapping
from engine.knowledge.kb import schema_problems
from engine.knowledge.paths import display_path
from engine.knowledge.placeholders import placeholder_problems
from engine.knowledge.problems import Problem
from engine.knowledge.snapshot import Tree
from engine.knowledge.text import text_findings
from engine.models.rule import Rule
from engine.reasoning.engines import RuleEngine
from engine.reasoning.refengine import RuleConflict


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    problems: tuple[Problem, ...]


def read_rules(source: Path | Tree) -> RuleSet:
    """Every rule under `source` (one folder level of categories; a folder, or one already read into
    memory), and every problem found."""
    tree = source if isinstance(source, Tree) else Tree.read(source)
    root = tree.root
    anchor = root.parent
    problems: list[Problem] = []
    rules: dict[str, tuple[Rule, str]] = {}
    if not tree.is_dir(root):
        problem = Problem(display_path(root, anchor), 0, "layout", "rules folder not found", "create rules/")
        return RuleSet((), (problem,))
    for path in _rule_files(tree, anchor, problems):
        display = display_path(path, anchor)
        document = read_yaml_mapping(path, display, tree)
        if isinstance(document, ReadError):
            problems.append(Problem(display, document.line, document.check, document.message, document.fix))
            continue
        problems.extend(placeholder_problems(document))
        try:
            rule = Rule.model_validate(document.data)
        except ValidationError as exc:
            problems.extend(schema_problems(exc, document, Rule))
            continue
        problems.extend(
            Problem(display, document.line_of(loc), check, message, fix)
            for loc, message, check, fix in text_findings(rule)
        )
        line = document.line_of(("id",))
        if rule.id != path.stem:
            problems.append(
                Problem(
                    display,
                    line,
                    "id-stem",
                    f"id {rule.id!r} does not match the file name",
                    f"set `id: {path.stem}` or rename the file",
                )
            )
        if rule.id in rules:
            problems.append(
                Problem(
                    display,
                    line,
                    "duplicate-id",
                    f"id {rule.id!r} is already used by {rules[rule.id][1]}",
                    "give each rule its own id",
                )
            )
            continue
        rules[rule.id] = (rule, display)
    problems.extend(_cross_problems(rules))
    ordered = tuple(rule for _, (rule, _) in sorted(rules.items()))
    return RuleSet(ordered, tuple(sorted(problems)))


def _cross_problems(rules: Mapping[str, tuple[Rule, str]]) -> Iterator[Problem]:
    """What no single rule file shows: a role held twice, a `replaced_by` naming no rule."""
    holders: dict[str, str] = {}
    for rule, display in rules.values():
        if rule.role is not None and rule.role in holders:
            yield Problem(
                display,
                0,
                "role",
                f"role {rule.role!r} is already held by rule {holders[rule.role]!r}",
                "give each role to one rule",
            )
        elif rule.role is not None:
            holders[rule.role] = rule.id
        if rule.replaced_by is not None and rule.replaced_by not in rules:
            yield Problem(
                display,
                0,
                "reference",
                f"replaced_by names unknown rule {rule.replaced_by!r}",
                "name an existing rule id",
            )


def _rule_files(tree: Tree, anchor: Path, problems: list[Problem]) -> Iterator[Path]:
    for category in tree.iterdir(tree.root):
        if category.name.startswith(".") or category.name == "README.md":
            continue
        if not tree.is_dir(category):
            problems.append(
                Problem(
                    display_path(category, anchor),
                    0,
                    "layout",
                    "rules live in category folders",
                    "move it to rules/<category>/",
                )
            )
            continue
        for path in tree.iterdir(category):
            if path.suffix == ".yaml" and tree.is_file(path):
                yield path
            elif not path.name.startswith("."):
                problems.append(
                    Problem(
                        display_path(path, anchor),
                        0,
                        "file-name",
                        "only .yaml files are read in a rules category",
                        f"rename it to {path.stem}.yaml or remove it",
                    )
                )


@dataclass(frozen=True)
class CaseResult:
    rule: str
    case: str
    passed: bool
    detail: str


def run_rule_cases(rules: Sequence[Rule], engine: RuleEngine) -> list[CaseResult]:
    """Each rule's `tests`: run the whole rule set from `given` and check whether the rule fired and
    what was derived."""
    results = []
    for rule in rules:
        for case in rule.tests:
            try:
                outcome = engine.run(case.given)
            except RuleConflict as exc:
                results.append(CaseResult(rule.id, case.name, False, str(exc)))
                continue
            fired = rule.id in outcome.fired
            wrong = {
                name: outcome.facts.get(name)
                for name, value in case.expect.derives.items()
                if outcome.facts.get(name) != value
            }
            if fired != case.expect.fires:
                detail = f"expected it {'to fire' if case.expect.fires else 'not to fire'}"
            elif wrong:
                detail = f"derived {wrong}, expected {case.expect.derives}"
            else:
                detail = "ok"
            results.append(CaseResult(rule.id, case.name, detail == "ok", detail))
    return results
