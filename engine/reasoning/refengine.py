"""The pure-Python reference engine: forward chaining over named facts, the semantics every rule
engine here must reproduce (it is the test oracle for the durable-rules adapter, and a fallback).

A rule fires at most once per request, when its `when` holds over the facts known so far; firing
asserts its `derive` facts, which may let further rules fire. Rules are tried highest priority
first (then by id), but since derived facts are never changed and negation only reads input facts,
*which* rules fire and what they derive does not depend on that order (see engine/models/rule.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from engine.models.rule import AllOf, AnyOf, Condition, Rule, Scalar, When, facts_in

Facts = Mapping[str, Scalar]


class RuleConflict(Exception):
    """Two rules derive different values for one fact: the rule set is inconsistent."""


@dataclass(frozen=True)
class Firing:
    """One rule firing, as the trace shows it."""

    step: int
    rule: str
    matched: Mapping[str, Scalar]
    derived: Mapping[str, Scalar]
    messages: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    facts: Facts
    """input and derived facts at the end"""
    firings: tuple[Firing, ...]

    @property
    def fired(self) -> frozenset[str]:
        return frozenset(firing.rule for firing in self.firings)


def _equal(a: Scalar, b: Scalar) -> bool:
    # True == 1 in Python; a fact that is a bool only equals a bool.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _number(value: Scalar) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def condition_holds(condition: Condition, facts: Facts) -> bool:
    """One condition over the facts. An absent fact fails every operator but `exists: false`."""
    op, operand = condition.operator, condition.operand
    if condition.fact not in facts:
        return op == "exists" and operand is False
    if op == "exists":
        return bool(operand)
    return compare(op, facts[condition.fact], operand)


def compare(op: str, value: Scalar, operand: Any) -> bool:
    """`value <op> operand` for the comparison operators (not `exists`); numbers only order numbers."""
    if op == "eq":
        return _equal(value, operand)
    if op == "ne":
        return not _equal(value, operand)
    if op == "in":
        return any(_equal(value, item) for item in operand)
    if op == "not_in":
        return not any(_equal(value, item) for item in operand)
    if not _number(value):
        return False
    number, bound = float(value), float(operand)
    return {"lt": number < bound, "lte": number <= bound, "gt": number > bound, "gte": number >= bound}[op]


def holds(when: When, facts: Facts) -> bool:
    if isinstance(when, Condition):
        return condition_holds(when, facts)
    if isinstance(when, AllOf):
        return all(holds(child, facts) for child in when.all)
    if isinstance(when, AnyOf):
        return any(holds(child, facts) for child in when.any)
    return not holds(when.not_, facts)


def render(message: str, facts: Facts) -> str:
    """Fill `{fact.name}` placeholders with the facts' values."""
    return re.sub(r"\{([a-z][a-z0-9_.]*)\}", lambda m: _text(facts.get(m.group(1), m.group(0))), message)


def _text(value: object) -> str:
    """A fact as a reader writes it: 3000.0 as 3,000, 0.5 as 0.5, 15000 as 15,000."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.6g}" if abs(value) < 1000 else f"{value:,.1f}"


def fire(rule: Rule, known: dict[str, Scalar], step: int) -> Firing:
    """Apply one firing of `rule`: add its derived facts to `known` (RuleConflict if one contradicts a
    known fact) and return the trace record. Shared by every engine, so their effects are identical."""
    matched = {name: known[name] for name, _ in facts_in(rule.when) if name in known}
    derived: dict[str, Scalar] = {}
    for action in rule.then:
        if action.derive is None:
            continue
        name, value = action.derive.fact, action.derive.value
        if name in known and not _equal(known[name], value):
            raise RuleConflict(f"rule {rule.id} derives {name}={value!r}, but it is already {known[name]!r}")
        if name not in known:
            known[name] = derived[name] = value
    messages = tuple(render(action.message, known) for action in rule.then)
    return Firing(step, rule.id, MappingProxyType(matched), MappingProxyType(derived), messages)


class ReferenceEngine:
    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(sorted(rules, key=lambda rule: (-rule.priority, rule.id)))

    def run(self, facts: Facts) -> Outcome:
        """Fire rules until none is left whose `when` holds; raise RuleConflict on contradictions."""
        known: dict[str, Scalar] = dict(facts)
        fired: set[str] = set()
        firings: list[Firing] = []
        while True:
            rule = next((r for r in self.rules if r.id not in fired and holds(r.when, known)), None)
            if rule is None:
                return Outcome(MappingProxyType(known), tuple(firings))
            fired.add(rule.id)
            firings.append(fire(rule, known, len(firings) + 1))

    def close(self) -> None:
        """Nothing to free: the reference engine holds only Python objects."""
