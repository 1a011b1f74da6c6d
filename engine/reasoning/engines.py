"""Choosing the rule engine: durable-rules by default, the pure-Python reference engine by
configuration (`GPU_ADVISOR_ENGINE=reference`), e.g. where durable cannot be built or imported."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal, Protocol

from engine.models.rule import Rule
from engine.reasoning.conditions import Facts
from engine.reasoning.refengine import Outcome, ReferenceEngine

EngineName = Literal["durable", "reference"]
ENGINE_NAMES: tuple[EngineName, ...] = ("durable", "reference")


class EngineConfigError(ValueError):
    """The configured engine name is not one of ENGINE_NAMES."""


class RuleEngine(Protocol):
    def run(self, facts: Facts) -> Outcome: ...

    def close(self) -> None:
        """Free what the engine holds outside Python; `run` must still answer afterwards."""


def configured_engine_name() -> EngineName:
    """$GPU_ADVISOR_ENGINE, else durable; an unknown name is an EngineConfigError listing the choices."""
    name = os.environ.get("GPU_ADVISOR_ENGINE", "durable")
    for known in ENGINE_NAMES:
        if name == known:
            return known
    raise EngineConfigError(f"GPU_ADVISOR_ENGINE={name!r}: choose one of {', '.join(ENGINE_NAMES)}")


def make_engine(rules: Sequence[Rule], name: EngineName | None = None) -> RuleEngine:
    """An engine over `rules`: both give identical outcomes (tests/test_chaining.py)."""
    chosen = name or configured_engine_name()
    if chosen == "reference":
        return ReferenceEngine(rules)
    from engine.reasoning.chaining import DurableEngine  # imported only when chosen: the C extension

    return DurableEngine(rules)
