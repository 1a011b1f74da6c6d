"""Helpers shared by the sizing tests: the KB model catalog as plain data and as shapes."""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from engine.knowledge.paths import PROJECT_ROOT
from engine.sizing import TransformerShape, shape_from_architecture

MODELS = PROJECT_ROOT / "kb" / "models"


@cache
def kb_models() -> tuple[dict[str, Any], ...]:
    """Every kb/models/*.yaml as loaded by yaml.safe_load, in id order."""
    return tuple(yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(MODELS.glob("*.yaml")))


def shape_of(model: dict[str, Any]) -> TransformerShape:
    return shape_from_architecture(model["architecture"], kind=model["kind"])


def model_shape(model_id: str) -> TransformerShape:
    """The TransformerShape of one KB model."""
    return shape_of(next(m for m in kb_models() if m["id"] == model_id))
