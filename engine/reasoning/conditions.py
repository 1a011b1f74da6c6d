"""What a rule's condition means over named facts, and how a message names them: the semantics the
reference engine defines, the durable-rules adapter reproduces (tests/test_chaining.py) and the
policy applies to the hardware options' attributes.

An absent fact fails every operator but `exists: false`; a bool equals only a bool (Python's
`True == 1` does not carry over); numbers only order numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.models.rule import AllOf, AnyOf, Condition, Scalar, When

Facts = Mapping[str, Scalar]


def equal(a: Scalar, b: Scalar) -> bool:
    """`a == b` as conditions read it: a bool equals only a bool."""
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
        return equal(value, operand)
    if op == "ne":
        return not equal(value, operand)
    if op == "in":
        return any(equal(value, item) for item in operand)
    if op == "not_in":
        return not any(equal(value, item) for item in operand)
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


_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_.]*)\}")


_COUNTED = re.compile(r"\b(\d[\d,]*(?:\.\d+)?)((?: [a-z]+)? )([A-Za-z]+)\(s\)")
"""a count, at most one word, and a noun written `noun(s)` in a rule's message ("{n} GPU(s)")"""


def render(message: str, facts: Facts) -> str:
    """Fill `{fact.name}` placeholders with the facts' values; a noun written `noun(s)` after a count
    takes the count's number ("1 GPU", "834 sequences")."""
    if "{" not in message:  # most messages have none
        return message
    filled = _PLACEHOLDER.sub(lambda m: _text(facts.get(m.group(1), m.group(0))), message)
    return _COUNTED.sub(_counted, filled) if "(s)" in filled else filled


def _counted(match: re.Match[str]) -> str:
    count, between, noun = match.groups()
    return f"{count}{between}{noun}{'' if count == '1' else 's'}"


def _text(value: object) -> str:
    """A fact as a reader writes it: 3000.0 as 3,000, 0.5 as 0.5, 15000 as 15,000."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.6g}" if abs(value) < 1000 else f"{value:,.1f}"
