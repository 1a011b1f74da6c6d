"""Rule-file schema: the only place the shape of a `rules/<category>/<id>.yaml` file is defined.

A rule reads *facts* (named scalar values) and acts through a closed vocabulary; nothing in a rule
file is ever executed. Facts come in two kinds:

- input facts, known before any rule fires: the request flattened under `workload.`, `constraints.`
  and `request.` (e.g. `workload.params_b`, `constraints.os`), the workload's sizing under `sizing.`
  and the hardware the request names under `hardware.` (docs/rule-facts.md);
- derived facts, asserted by rules with `derive` (e.g. `size_tier`, `plan.tp_degree`). A derived
  fact is set once and never changed, so conditions on derived facts only ever become true.

Negation (`not`, `exists: false`) may only look at input facts: that keeps every rule's firing
independent of the order rules fire in (and avoids durable-rules' late-negation bug).
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, StrictBool, StrictInt, StrictStr, Tag, model_validator

from engine.models.attributes import ATTRIBUTE_NAMES
from engine.models.kb import Name, Strict, Text, Url

FactName = Annotated[
    str,
    Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$", max_length=80, description="dotted lowercase"),
]
FiniteFloat = Annotated[float, Field(strict=True, allow_inf_nan=False)]
Number = StrictInt | FiniteFloat
Scalar = StrictBool | StrictInt | FiniteFloat | StrictStr
INPUT_NAMESPACES = ("workload.", "constraints.", "request.", "sizing.", "hardware.")
"""Facts known before any rule fires: the request, its sizing and the hardware it names
(docs/rule-facts.md)."""
RESERVED_FACTS = ("sid", "id", "_g", "type")
"""Field names the durable-rules adapter uses itself (docs/durable-rules.md §3, bug 4)."""


def is_input_fact(name: str) -> bool:
    return name.startswith(INPUT_NAMESPACES)


# --- Conditions ------------------------------------------------------------------------------

COMPARISONS = ("eq", "ne", "lt", "lte", "gt", "gte", "in", "not_in", "exists")


class Comparisons(Strict):
    """The value tests shared by rule conditions and candidate filters."""

    eq: Scalar | None = None
    ne: Scalar | None = None
    lt: Number | None = None
    lte: Number | None = None
    gt: Number | None = None
    gte: Number | None = None
    in_: list[Scalar] | None = Field(None, alias="in", min_length=1)
    not_in: list[Scalar] | None = Field(None, min_length=1)


class Condition(Comparisons):
    """One test on one fact; exactly one operator. An absent fact fails every test but
    `exists: false` (and so `ne` and `not_in` also need the fact to exist)."""

    fact: FactName
    exists: StrictBool | None = None

    @model_validator(mode="after")
    def _one_operator(self) -> Condition:
        used = [op for op in COMPARISONS if getattr(self, "in_" if op == "in" else op) is not None]
        if len(used) != 1:
            raise ValueError(
                f"a condition has exactly one operator of {', '.join(COMPARISONS)}; got {used or 'none'}"
            )
        return self

    @model_validator(mode="after")
    def _operands_durable_reads(self) -> Condition:
        operand = self.operand
        for value in operand if isinstance(operand, list) else [operand]:
            if isinstance(value, float) and "e" in repr(value):
                raise ValueError(
                    f"{value!r}: a decimal operand must lie between 0.0001 and 1e16 in size, or be 0 "
                    "(durable-rules' C core misreads a number written with an exponent, "
                    "docs/durable-rules.md §3, bug 12)"
                )
        return self

    @property
    def operator(self) -> str:
        return next(op for op in COMPARISONS if getattr(self, "in_" if op == "in" else op) is not None)

    @property
    def operand(self) -> Any:
        return getattr(self, "in_" if self.operator == "in" else self.operator)


class AllOf(Strict):
    all: list[When] = Field(min_length=1, max_length=12)


class AnyOf(Strict):
    any: list[When] = Field(min_length=1, max_length=12)


class Not(Strict):
    not_: When = Field(alias="not")


def _when_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in ("fact", "all", "any", "not"):
            if key in value:
                return key
    elif isinstance(value, Condition | AllOf | AnyOf | Not):
        return {Condition: "fact", AllOf: "all", AnyOf: "any", Not: "not"}[type(value)]
    return None


When = Annotated[
    Annotated[Condition, Tag("fact")]
    | Annotated[AllOf, Tag("all")]
    | Annotated[AnyOf, Tag("any")]
    | Annotated[Not, Tag("not")],
    Discriminator(
        _when_tag,
        custom_error_type="when",
        custom_error_message=(
            "a condition is {fact: ..., <op>: ...} or a group {all: [...]}, {any: [...]} or {not: ...}"
        ),
    ),
]


for _group in (AllOf, AnyOf, Not):
    _group.model_rebuild()


def facts_in(when: When) -> list[tuple[str, bool]]:
    """(fact name, under negation) for every fact a condition tree reads."""
    found: list[tuple[str, bool]] = []

    def walk(node: When, negated: bool) -> None:
        if isinstance(node, Condition):
            found.append((node.fact, negated or node.exists is False))
        elif isinstance(node, AllOf):
            for child in node.all:
                walk(child, negated)
        elif isinstance(node, AnyOf):
            for child in node.any:
                walk(child, negated)
        else:
            walk(node.not_, not negated)

    walk(when, False)
    return found


# --- Actions ---------------------------------------------------------------------------------

if TYPE_CHECKING:
    CandidateAttribute = str
else:
    # the names of engine/models/attributes.py, the one registry (a Literal, so the rule schema lists them)
    CandidateAttribute = Literal[ATTRIBUTE_NAMES]
"""What `require` / `exclude` / `prefer` may filter candidates on (docs/rule-facts.md)."""


CandidateFilter = Annotated[dict[CandidateAttribute, Scalar | Comparisons], Field(min_length=1)]


class Derive(Strict):
    fact: FactName
    value: Scalar


class Filter(Strict):
    where: CandidateFilter


class Prefer(Strict):
    where: CandidateFilter
    weight: Annotated[float, Field(ge=-1, le=1, allow_inf_nan=False)] = Field(
        description="score added to matching candidates (negative: disfavour)"
    )


class Suggest(Strict):
    kind: Literal["method", "precision", "parallelism", "strategy", "acquisition", "pricing", "os_path"]
    value: Scalar


class Warn(Strict):
    severity: Literal["info", "warning"] = "warning"


VERBS = ("derive", "require", "exclude", "prefer", "suggest", "warn")


class Action(Strict):
    """One step of a rule's `then`: exactly one verb, and the message the trace shows. A message
    may name facts in braces, e.g. "a {workload.params_b}B model", filled in when it fires."""

    derive: Derive | None = None
    require: Filter | None = None
    exclude: Filter | None = None
    prefer: Prefer | None = None
    suggest: Suggest | None = None
    warn: Warn | None = None
    message: Text

    @model_validator(mode="after")
    def _one_verb(self) -> Action:
        used = [verb for verb in VERBS if getattr(self, verb) is not None]
        if len(used) != 1:
            raise ValueError(f"an action has exactly one of {', '.join(VERBS)}; got {used or 'none'}")
        return self

    @property
    def verb(self) -> str:
        return next(verb for verb in VERBS if getattr(self, verb) is not None)

    def message_facts(self) -> list[str]:
        return re.findall(r"\{([a-z][a-z0-9_.]*)\}", self.message)


# --- The rule --------------------------------------------------------------------------------


class Citation(Strict):
    source: Name = Field(description="a guide's title and section, a paper, or a page title")
    url: Url | None = None
    accessed: date


class Expect(Strict):
    fires: StrictBool
    derives: dict[FactName, Scalar] = Field(default_factory=dict)


class RuleTest(Strict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$", max_length=80)]
    given: dict[FactName, Scalar] = Field(description="facts the case starts from (input or derived)")
    expect: Expect


RuleRole = Literal["budget", "deadline"]
"""What the recommender finds a rule for, beyond applying its actions: the way out of an infeasible
request lifts the `deadline` rule last (more time is the dearest way out) and the `budget` rule with
it, and an infeasible answer names the `budget` rule's reason beside the one whose lifting helps."""


class Rule(Strict):
    id: Annotated[str, Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$", max_length=96)]
    title: Name
    status: Literal["experimental", "stable", "deprecated"]
    role: RuleRole | None = Field(
        None,
        description="what the recommender finds this rule for: `budget` (the hard spending filter) or "
        "`deadline` (the training run's time limit); at most one rule holds each role",
    )
    replaced_by: Annotated[str, Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")] | None = None
    priority: Annotated[int, Field(ge=0, le=100)] = Field(
        description="scheduling only; answers never depend on it"
    )
    rationale: Annotated[str, Field(min_length=1, max_length=400)]
    citations: list[Citation] = Field(min_length=1)
    caveats: list[Text] = Field(default_factory=list)
    when: When
    then: list[Action] = Field(min_length=1)
    tests: list[RuleTest] = Field(min_length=2)

    @model_validator(mode="after")
    def _consistent(self) -> Rule:
        for name, negated in facts_in(self.when):
            if negated and not is_input_fact(name):
                raise ValueError(
                    f"`{name}` is derived: negation (not, exists: false) may only read input facts"
                )
        for action in self.then:
            if action.derive is not None and is_input_fact(action.derive.fact):
                raise ValueError(f"`{action.derive.fact}` is an input fact: rules derive other names")
        readable = {name for name, negated in facts_in(self.when) if not negated}
        for action in self.then:
            unknown = [name for name in action.message_facts() if name not in readable]
            if unknown:
                raise ValueError(f"message names {unknown}, which `when` does not read (so may be unset)")
        if self.status == "deprecated" and self.replaced_by is None:
            raise ValueError("a deprecated rule names its `replaced_by`")
        outcomes = {test.expect.fires for test in self.tests}
        if outcomes != {True, False}:
            raise ValueError("tests need at least one case that fires and one that does not")
        names = [test.name for test in self.tests]
        if len(names) != len(set(names)):
            raise ValueError("test names must be unique within a rule")
        return self
