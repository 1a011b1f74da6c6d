"""Input checks shared by the sizing functions.

Every public sizing function validates its arguments with these helpers, so invalid input (negative, zero
where zero is meaningless, NaN, infinity, a bool or a string where a number is expected, an unknown
enumeration value) raises ``ValueError`` with a message that names the offending argument. A formula
the planner runs hundreds of times per request is written once, under :func:`checked`: the public
function checks its arguments by name, then runs the formula, and ``.unchecked`` is the formula alone,
for the planner's hot path, whose inputs are validated KB and request values checked once.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Collection, Mapping
from typing import Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
Check = Callable[..., object]
"""an argument's check, `check(name, value) -> value`, or, under a name that is no parameter, a check
of a value derived from several, `check(arguments)` (a product that may overflow)"""

__all__ = [
    "Checked",
    "check_choice",
    "check_fraction",
    "check_non_negative",
    "check_non_negative_int",
    "check_positive",
    "check_positive_int",
    "checked",
]


_INF = math.inf


def _number(name: str, value: object) -> float:
    kind = type(value)  # the common cases first: this runs on every sizing call (hot path)
    if kind is float and math.isfinite(value):  # type: ignore[arg-type]
        return value  # type: ignore[return-value]
    if kind is int:
        return float(value)  # type: ignore[arg-type]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return number


def check_positive(name: str, value: object) -> float:
    """``value`` as a float; ``ValueError`` unless it is a finite number > 0."""
    # Fast path for the common valid case (hot: every sizing call). NaN fails both comparisons and
    # infinity the upper bound, so only a finite positive float returns here; the rest is checked below.
    if type(value) is float and 0.0 < value < _INF:
        return value
    number = _number(name, value)
    if number <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return number


def check_non_negative(name: str, value: object) -> float:
    """``value`` as a float; ``ValueError`` unless it is a finite number >= 0."""
    if type(value) is float and 0.0 <= value < _INF:  # fast path, as in check_positive
        return value
    number = _number(name, value)
    if number < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return number


def check_fraction(name: str, value: object, *, allow_zero: bool = False) -> float:
    """``value`` as a float; ``ValueError`` unless it lies in (0, 1] (or [0, 1] with ``allow_zero``)."""
    if type(value) is float and 0.0 < value <= 1.0:  # fast path: in range either way
        return value
    number = _number(name, value)
    low_ok = number >= 0 if allow_zero else number > 0
    if not low_ok or number > 1:
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return number


def check_positive_int(name: str, value: object) -> int:
    """``value`` unchanged; ``ValueError`` unless it is an int >= 1 (bools are rejected)."""
    if type(value) is int and value >= 1:  # fast path (type() is int excludes bool and subclasses)
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return value


def check_non_negative_int(name: str, value: object) -> int:
    """``value`` unchanged; ``ValueError`` unless it is an int >= 0 (bools are rejected)."""
    if type(value) is int and value >= 0:  # fast path, as in check_positive_int
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return value


def check_choice(name: str, value: object, choices: Collection[str]) -> str:
    """``value`` unchanged; ``ValueError`` unless it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value


class Checked(Generic[P, R]):
    """A formula whose arguments are checked, in the order the checks are given, before it runs;
    ``unchecked`` is the formula alone. One signature and one set of defaults serve both."""

    def __init__(self, formula: Callable[P, R], checks: Mapping[str, Check]) -> None:
        self.unchecked = formula
        self.checks = dict(checks)
        self.signature = inspect.signature(formula)
        functools.update_wrapper(self, formula)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        for name, check in self.checks.items():
            if name in values:
                values[name] = check(name, values[name])
            else:
                check(values)
        return self.unchecked(*bound.args, **bound.kwargs)


def checked(**checks: Check) -> Callable[[Callable[P, R]], Checked[P, R]]:
    """The decorated formula as a :class:`Checked`: each named argument passed through its check
    (a ``ValueError`` naming it when it fails), in the order given here."""

    def wrap(formula: Callable[P, R]) -> Checked[P, R]:
        return Checked(formula, checks)

    return wrap
