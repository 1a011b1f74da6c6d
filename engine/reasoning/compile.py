"""Rules → durable-rules JSON rulesets (pure data; nothing executes).

Each rule's `when` is brought to disjunctive normal form; every conjunction becomes one durable rule
`<rule id>#<n>` whose patterns each match one fact `{type: fact, name, value, kind}`. The adapter
(engine/reasoning/chaining.py) fires a rule once, whichever conjunction matched first.

The workarounds of docs/durable-rules.md §3 that apply to this fact model:
- no cross-fact comparisons are ever generated, so the join-guard and nested-group bugs (1, 2)
  cannot arise; the `sid`/`id`/`_g` names are never used in conditions (4);
- a rule with a negated literal waits for the `__ready__` fact, so its `$not` is evaluated after
  every input fact is in (8); negation only reads input facts (schema);
- `pri = 100 - priority` (7), rules defined in (-priority, id) order;
- `__begin__` fires in every session (3) and `__sink__` absorbs facts no rule reads (9);
- a fact's `kind` (bool | num | str) is matched with its value: durable alone treats true as 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import Any

from engine.models.rule import AllOf, AnyOf, Condition, Rule, Scalar, When

BEGIN, SINK, READY = "__begin__", "__sink__", "__ready__"
Literal = tuple[Condition, bool]
"""A condition and whether it is negated."""


def fact_kind(value: Scalar) -> str:
    if isinstance(value, bool):
        return "bool"
    return "num" if isinstance(value, int | float) else "str"


def as_fact(name: str, value: Scalar) -> dict[str, Any]:
    return {"type": "fact", "name": name, "value": value, "kind": fact_kind(value)}


def dnf(when: When, negated: bool = False) -> list[list[Literal]]:
    """`when` as a list of conjunctions of (possibly negated) conditions (De Morgan for `not`)."""
    if isinstance(when, Condition):
        if when.operator == "exists":
            # exists: true is a name-only pattern; exists: false is that pattern negated.
            return [[(when, negated == bool(when.operand))]]
        return [[(when, negated)]]
    if isinstance(when, AllOf | AnyOf):
        children = [dnf(child, negated) for child in (when.all if isinstance(when, AllOf) else when.any)]
        conjunctive = isinstance(when, AllOf) != negated
        if conjunctive:
            return [[lit for part in combo for lit in part] for combo in product(*children)]
        return [conj for child in children for conj in child]
    return dnf(when.not_, not negated)


def _equals(value: Scalar) -> dict[str, Any]:
    return {"$and": [{"kind": fact_kind(value)}, {"value": value}]}


def _differs(value: Scalar) -> dict[str, Any]:
    return {"$or": [{"$neq": {"kind": fact_kind(value)}}, {"$neq": {"value": value}}]}


def _value_tests(condition: Condition) -> list[dict[str, Any]]:
    op, operand = condition.operator, condition.operand
    if op == "exists":
        return []
    if op == "eq":
        return [_equals(operand)]
    if op == "ne":
        return [_differs(operand)]
    if op == "in":
        return [{"$or": [_equals(item) for item in operand]}]
    if op == "not_in":
        return [{"$and": [_differs(item) for item in operand]}]
    durable_op = {"lt": "$lt", "lte": "$lte", "gt": "$gt", "gte": "$gte"}[op]
    return [{"kind": "num"}, {durable_op: {"value": operand}}]


def _negated_value_tests(condition: Condition) -> list[dict[str, Any]] | None:
    """Tests a fact must pass for `condition` to be false *given the fact exists*; None if it always
    holds for an existing fact (exists: true), which makes the negation unsatisfiable."""
    op, operand = condition.operator, condition.operand
    if op == "exists":
        return None
    if op == "eq":
        return [_differs(operand)]
    if op == "ne":
        return [_equals(operand)]
    if op == "in":
        return [_differs(item) for item in operand]
    if op == "not_in":
        return [{"$or": [_equals(item) for item in operand]}]
    complement = {"lt": "$gte", "lte": "$gt", "gt": "$lte", "gte": "$lt"}[op]
    return [{"$or": [{"$neq": {"kind": "num"}}, {complement: {"value": operand}}]}]


def _pattern(name: str, tests: list[dict[str, Any]]) -> dict[str, Any]:
    # Plain tests first, nested groups last (docs/durable-rules.md §3, bug 2).
    plain = [t for t in tests if not any(key in ("$or", "$and") for key in t)]
    groups = [t for t in tests if t not in plain]
    return {"$and": [{"type": "fact"}, {"name": name}, *plain, *groups]}


def _conjunction_patterns(conjunction: list[Literal]) -> list[dict[str, Any]] | None:
    """One pattern per fact the conjunction reads (durable never binds one fact to two patterns of
    a rule, and its `$not` ignores facts bound in the same activation). None if unsatisfiable."""
    by_fact: dict[str, list[Literal]] = {}
    for literal in conjunction:
        by_fact.setdefault(literal[0].fact, []).append(literal)
    patterns: list[dict[str, Any]] = []
    for n, (name, literals) in enumerate(sorted(by_fact.items())):
        positive = [c for c, negated in literals if not negated]
        negative = [c for c, negated in literals if negated]
        if positive:
            tests = [t for c in positive for t in _value_tests(c)]
            for condition in negative:
                complement = _negated_value_tests(condition)
                if complement is None:
                    return None  # "F exists" and "F does not exist"
                tests += complement
            patterns.append({f"m{n}": _pattern(name, tests)})
        else:
            patterns += [{f"n{n}_{i}$not": _pattern(name, _value_tests(c))} for i, c in enumerate(negative)]
    return patterns


def compile_rules(rules: Sequence[Rule]) -> tuple[dict[str, Any], dict[str, Rule]]:
    """(durable ruleset, durable rule name → Rule). Pass a deep copy to durable: it mutates it."""
    ruleset: dict[str, Any] = {
        BEGIN: {"all": [{"m": {"type": BEGIN}}], "pri": 0, "run": BEGIN},
        SINK: {"all": [{"a": {"$ex": {"type": 1}}}, {"b": {"type": "__never__"}}], "run": SINK},
    }
    owners: dict[str, Rule] = {}
    for rule in sorted(rules, key=lambda r: (-r.priority, r.id)):
        for n, conjunction in enumerate(dnf(rule.when)):
            compiled = _conjunction_patterns(conjunction)
            if compiled is None:
                continue
            patterns: list[dict[str, Any]] = []
            if any(key.endswith("$not") for pattern in compiled for key in pattern):
                patterns.append({"r": {"type": READY}})
            patterns += compiled
            name = f"{rule.id}#{n}"
            ruleset[name] = {"all": patterns, "pri": 100 - rule.priority, "run": name}
            owners[name] = rule
    return ruleset, owners
