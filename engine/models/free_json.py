"""Free-form JSON in a request (an hf_config key the sizing does not read, its quantization_config),
bounded in depth and size so that a value nested hundreds of levels deep is a 422 naming its key,
not a recursion error in whatever later walks it (a serializer, a report, an error's echo).

JSON itself sets no limit (RFC 8259, Sec. 9: "An implementation may set limits on the maximum depth
of nesting"), nor can JSON Schema state one (draft 2020-12 has no depth keyword), so the limits are
stated in the field descriptions and checked here, without recursion.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field

MAX_JSON_DEPTH = 32
"""How many arrays and objects deep a free-form value may nest. Hugging Face config.json files nest 3
or 4 (text_config, then rope_scaling or quantization_config); pydantic's serializer gives up at a few
hundred levels, Python's json module at about a thousand."""
MAX_JSON_VALUES = 10_000
"""How many values (each scalar, array and object counts one) a free-form value may hold: the
id2label and label2id maps of an ImageNet-1k classifier's config.json hold about 2,000."""


def json_extent(value: Any, *, max_depth: int, max_values: int) -> tuple[int, int]:
    """(depth, values) of a parsed JSON value: depth 0 for a scalar, 1 for `[]` or `{}`, one more per
    level of nesting; values counts every scalar, array and object. Walks with a stack, not recursion,
    and stops as soon as either count passes its limit, so a hostile value costs at most
    `max_values` steps."""
    deepest, seen = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack and deepest <= max_depth and seen <= max_values:
        node, depth = stack.pop()
        seen += 1
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest, seen


def bounded(value: Any) -> Any:
    """`value`, when within MAX_JSON_DEPTH and MAX_JSON_VALUES; else ValueError saying which."""
    depth, values = json_extent(value, max_depth=MAX_JSON_DEPTH, max_values=MAX_JSON_VALUES)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(
            f"nested more than {MAX_JSON_DEPTH} levels deep (a config.json nests 3 or 4): leave this key out"
        )
    if values > MAX_JSON_VALUES:
        raise ValueError(f"holds more than {MAX_JSON_VALUES:,} values: leave this key out")
    return value


LIMITS = f"at most {MAX_JSON_DEPTH} levels deep and {MAX_JSON_VALUES:,} values"
FreeJson = Annotated[Any, AfterValidator(bounded), Field(description=f"any JSON, {LIMITS}")]
"""Any JSON value, within the limits above."""
