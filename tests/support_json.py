"""Helpers shared by the tests of free-form JSON in a request (engine/models/free_json.py)."""

from __future__ import annotations

from typing import Any

SMALL_CONFIG = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 1000}
"""an hf_config with the sizes the sizing needs and nothing else"""


def nested(depth: int) -> Any:
    """`depth` objects, one inside the other, around a 1: {"a": {"a": ... 1}}."""
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value
