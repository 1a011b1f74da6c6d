"""What the fired rules ask of the candidates: hard filters, score preferences, suggestions, warnings.

The rule engine says which rules fired; this module reads their actions (docs/rule-facts.md) into a
`Policy` the planner and the ranking apply. Nothing here depends on firing order: filters and
preferences are sets, suggestions are tried in a fixed order.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from engine.models.attributes import PLAN_ATTRIBUTES
from engine.models.rule import CandidateAttribute, Comparisons, Rule, Scalar
from engine.reasoning.conditions import Facts, compare, render
from engine.reasoning.refengine import Outcome

Where = Mapping[CandidateAttribute, Scalar | Comparisons]
Test = tuple[str, "Callable[[Scalar], bool]"]
"""One compiled comparison of a `where`: (attribute, predicate on its value)."""
SourcedTest = tuple[str, "Callable[[Scalar], bool]", bool]
"""A `Test` and whether its attribute is a plan's (PLAN_ATTRIBUTES) rather than the option's: the
planner tests hundreds of plans per request, so where each attribute lives is settled once."""
OPERATORS = ("eq", "ne", "lt", "lte", "gt", "gte", "in", "not_in")


@dataclass(frozen=True)
class Filter:
    rule: str
    step: int
    keep_matching: bool
    """require: keep candidates that match; exclude: drop them"""
    where: Where
    message: str
    tests: tuple[Test, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # compiled once: filters run on every option of a request
        object.__setattr__(self, "tests", compiled_where(self.where))

    @property
    def per_plan(self) -> bool:
        return any(name in PLAN_ATTRIBUTES for name in self.where)

    def rejects(self, attrs: Mapping[str, Scalar]) -> bool:
        return passes(self.tests, attrs) != self.keep_matching

    def rejects_plan(self, plan: Mapping[str, Scalar], option: Mapping[str, Scalar]) -> bool:
        """`rejects` over a plan's attributes (PLAN_ATTRIBUTES) and its option's, kept apart."""
        return passes_plan(self.tests, plan, option) != self.keep_matching


@dataclass(frozen=True)
class Preference:
    rule: str
    step: int
    where: Where
    weight: float
    message: str
    tests: tuple[Test, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tests", compiled_where(self.where))

    def holds_for_plan(self, plan: Mapping[str, Scalar], option: Mapping[str, Scalar]) -> bool:
        return passes_plan(self.tests, plan, option)


@dataclass(frozen=True)
class Suggestion:
    rule: str
    step: int
    kind: str
    value: Scalar
    message: str


@dataclass(frozen=True)
class Notice:
    rule: str
    step: int
    severity: str
    message: str


@dataclass(frozen=True)
class Policy:
    facts: Facts
    filters: tuple[Filter, ...]
    preferences: tuple[Preference, ...]
    suggestions: tuple[Suggestion, ...]
    notices: tuple[Notice, ...]
    steps: Mapping[str, int]
    """rule id -> its step in the trace"""
    roles: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """role (`budget`, `deadline`: models/rule.RuleRole) -> the id of the rule that holds it"""

    def role(self, name: str) -> str | None:
        """The id of the rule holding the role `name`, if any rule does."""
        return self.roles.get(name)

    def suggested(self, kind: str) -> dict[Scalar, Suggestion]:
        found: dict[Scalar, Suggestion] = {}
        for suggestion in self.suggestions:
            if suggestion.kind == kind:
                found.setdefault(suggestion.value, suggestion)
        return found

    def without(self, rule: str) -> Policy:
        """The same policy with one rule's filters lifted (to find what an infeasible request needs)."""
        kept = tuple(f for f in self.filters if f.rule != rule)
        return Policy(
            self.facts, kept, self.preferences, self.suggestions, self.notices, self.steps, self.roles
        )


COMPILED_WHERES = 4096
"""the most `where`s whose tests are kept (a rule set has about a hundred)"""
_compiled: dict[int, tuple[Where, tuple[Test, ...]]] = {}


def compiled_where(where: Where) -> tuple[Test, ...]:
    """`compile_where`, once per `where` object: a rule's filters are made anew for each request
    that fires it, from the rule's own `where`, which lives as long as the rules. Keeping the
    `where` beside its tests keeps its id from being reused while the entry stands; the tests being
    the same objects request after request is what lets a searcher cache verdicts by them."""
    held = _compiled.get(id(where))
    if held is not None and held[0] is where:
        return held[1]
    tests = compile_where(where)
    if len(_compiled) >= COMPILED_WHERES:
        _compiled.clear()  # rule sets replaced many times over: start again
    _compiled[id(where)] = (where, tests)
    return tests


def compile_where(where: Where) -> tuple[Test, ...]:
    """A `where` as flat (attribute, predicate) tests, in the order written: each predicate is
    `compare` specialised to its operator and operand, since filters run on every option."""
    tests: list[Test] = []
    for name, test in where.items():
        if isinstance(test, Comparisons):
            for op in OPERATORS:
                operand = getattr(test, "in_" if op == "in" else op)
                if operand is not None:
                    tests.append((name, _predicate(op, operand)))
        else:
            tests.append((name, _predicate("eq", test)))
    return tuple(tests)


def _predicate(op: str, operand: Any) -> Callable[[Scalar], bool]:
    """`lambda value: compare(op, value, operand)`, faster where the operand's type allows."""
    if op == "eq" and isinstance(operand, bool):
        return lambda value: value is operand  # a bool equals only the same bool
    if op == "eq" and isinstance(operand, str):
        return lambda value: value == operand  # a str never equals a number or a bool
    if op in ("in", "not_in") and all(isinstance(item, str) for item in operand):
        members = frozenset(operand)
        if op == "in":
            return lambda value: isinstance(value, str) and value in members
        return lambda value: not (isinstance(value, str) and value in members)
    if op in _ORDERINGS and _is_number(operand):
        # `compare` on a plain int or float value is this float comparison; anything else
        # (a bool, a str, a number subclass) still goes through `compare`.
        order, bound = _ORDERINGS[op], float(operand)
        return lambda value: (
            order(float(value), bound) if type(value) in _PLAIN_NUMBERS else compare(op, value, operand)
        )
    return lambda value: compare(op, value, operand)


_ORDERINGS: dict[str, Callable[[float, float], bool]] = {
    "lt": operator.lt,
    "lte": operator.le,
    "gt": operator.gt,
    "gte": operator.ge,
}
_PLAIN_NUMBERS = frozenset({int, float})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def passes(tests: tuple[Test, ...], attrs: Mapping[str, Scalar]) -> bool:
    """Every attribute listed matches (a value means `eq`); a missing attribute matches nothing."""
    for name, holds in tests:
        value = attrs.get(name, _MISSING)
        if value is _MISSING or not holds(value):  # type: ignore[arg-type]
            return False
    return True


def passes_plan(tests: tuple[Test, ...], plan: Mapping[str, Scalar], option: Mapping[str, Scalar]) -> bool:
    """`passes` where plan attributes are read from `plan` and the rest from `option` (no merged
    copy per plan: this runs for every plan of every option)."""
    for name, holds in tests:
        value = (plan if name in PLAN_ATTRIBUTES else option).get(name, _MISSING)
        if value is _MISSING or not holds(value):  # type: ignore[arg-type]
            return False
    return True


def residual(tests: tuple[Test, ...], known: Mapping[str, Scalar]) -> tuple[SourcedTest, ...] | None:
    """The tests left once those on the `known` attributes are applied: None when one of those fails
    (the `where` cannot match whatever the other attributes are), else the tests on the others. A
    planner resolves each filter and preference once per plan spec this way, since most read a spec's
    method, precision or strategy; the conjunction holds iff the known part and the rest both hold."""
    rest: list[SourcedTest] = []
    for name, holds in tests:
        if name in known:
            if not holds(known[name]):
                return None
        else:
            rest.append((name, holds, name in PLAN_ATTRIBUTES))
    return tuple(rest)


def passes_residual(
    tests: tuple[SourcedTest, ...], plan: Mapping[str, Scalar], option: Mapping[str, Scalar]
) -> bool:
    """`passes_plan` over tests that say which mapping their attribute is in."""
    for name, holds, on_plan in tests:
        value = (plan if on_plan else option).get(name, _MISSING)
        if value is _MISSING or not holds(value):  # type: ignore[arg-type]
            return False
    return True


_MISSING = object()


def policy_from(outcome: Outcome, rules: Sequence[Rule]) -> Policy:
    by_id = {rule.id: rule for rule in rules}
    filters: list[Filter] = []
    preferences: list[Preference] = []
    suggestions: list[Suggestion] = []
    notices: list[Notice] = []
    steps: dict[str, int] = {}
    for firing in outcome.firings:
        rule = by_id[firing.rule]
        steps[rule.id] = firing.step
        for action, message in zip(rule.then, firing.messages, strict=True):
            text = message or render(action.message, outcome.facts)
            if action.require is not None:
                filters.append(Filter(rule.id, firing.step, True, action.require.where, text))
            elif action.exclude is not None:
                filters.append(Filter(rule.id, firing.step, False, action.exclude.where, text))
            elif action.prefer is not None:
                preferences.append(
                    Preference(rule.id, firing.step, action.prefer.where, action.prefer.weight, text)
                )
            elif action.suggest is not None:
                suggestions.append(
                    Suggestion(rule.id, firing.step, action.suggest.kind, action.suggest.value, text)
                )
            elif action.warn is not None:
                notices.append(Notice(rule.id, firing.step, action.warn.severity, text))
    return Policy(
        outcome.facts,
        tuple(filters),
        tuple(preferences),
        tuple(suggestions),
        tuple(notices),
        MappingProxyType(steps),
        MappingProxyType({rule.role: rule.id for rule in rules if rule.role is not None}),
    )
