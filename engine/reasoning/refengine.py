"""The pure-Python reference engine: forward chaining over named facts, the semantics every rule
engine here must reproduce (it is the test oracle for the durable-rules adapter, and a fallback).

A rule fires at most once per request, when its `when` holds over the facts known so far; firing
asserts its `derive` facts, which may let further rules fire. Rules are tried highest priority
first (then by id), but since derived facts are never changed and negation only reads input facts,
*which* rules fire and what they derive does not depend on that order (see engine/models/rule.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from engine.models.rule import Rule, Scalar, facts_in
from engine.reasoning.conditions import Facts, equal, holds, render


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


def fire(rule: Rule, known: dict[str, Scalar], step: int, reads: tuple[str, ...]) -> Firing:
    """Apply one firing of `rule`: add its derived facts to `known` (RuleConflict if one contradicts a
    known fact) and return the trace record. Shared by every engine, so their effects are identical.
    `reads` is `reads_of(rule)`, which an engine works out once per rule rather than per firing."""
    matched = {name: known[name] for name in reads if name in known}
    derived: dict[str, Scalar] = {}
    for action in rule.then:
        if action.derive is None:
            continue
        name, value = action.derive.fact, action.derive.value
        if name in known and not equal(known[name], value):
            raise RuleConflict(f"rule {rule.id} derives {name}={value!r}, but it is already {known[name]!r}")
        if name not in known:
            known[name] = derived[name] = value
    messages = tuple(render(action.message, known) for action in rule.then)
    return Firing(step, rule.id, MappingProxyType(matched), MappingProxyType(derived), messages)


def reads_of(rule: Rule) -> tuple[str, ...]:
    """The facts a rule's `when` reads, in the order a trace step lists them as matched."""
    return tuple(name for name, _ in facts_in(rule.when))


class ReferenceEngine:
    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(sorted(rules, key=lambda rule: (-rule.priority, rule.id)))
        self._reads = {rule.id: reads_of(rule) for rule in self.rules}

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
            firings.append(fire(rule, known, len(firings) + 1, self._reads[rule.id]))

    def close(self) -> None:
        """Nothing to free: the reference engine holds only Python objects."""
