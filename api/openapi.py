"""The OpenAPI document: generated from the pydantic models, then told the KB's ids.

The request models accept any well-formed id; which ids exist depends on the KB being served. The
document lists them as enums, so a client (or a schema-driven tester) knows that an id outside the
list is a 422, and the document changes with the KB it describes (rebuilt on reload).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from engine.kb import KB

RECOMMEND_EXAMPLES: dict[str, dict[str, Any]] = {
    "chat-7b": {
        "summary": "Serve a 7B chat model to one user at a time",
        "value": {
            "workload": {"task": "inference", "model": "mistral-7b", "batch_size": 1, "seq_len": 4096},
            "constraints": {"acquisition": "buy", "budget_usd": 5000},
        },
    },
    "serve-70b-fleet": {
        "summary": "A 70B model at 1,000 requests per minute, rented",
        "value": {
            "workload": {
                "task": "inference",
                "model": "llama-2-70b",
                "precision": "fp16",
                "batch_size": 8,
                "serving": {"requests_per_min": 1000, "avg_input_tokens": 500, "avg_output_tokens": 200},
            },
            "constraints": {"acquisition": "rent", "availability_target_pct": 99.9},
        },
    },
    "qlora-on-a-budget": {
        "summary": "QLoRA fine-tune of an 8B model, bought, under $3,000",
        "value": {
            "workload": {"task": "qlora", "model": "llama-3-1-8b", "batch_size": 2, "seq_len": 2048},
            "constraints": {"acquisition": "buy", "budget_usd": 3000, "os": "windows"},
            "objective": "cheapest",
        },
    },
    "will-it-fit": {
        "summary": "Will a full fine-tune of a 3B model fit on my RTX 3090?",
        "value": {
            "workload": {"task": "full_finetune", "params_b": 3, "batch_size": 1, "seq_len": 512},
            "constraints": {"target_hardware": {"gpu": "nvidia-rtx-3090", "count": 1}},
        },
    },
    "private-data": {
        "summary": "LoRA on data that may not leave the building, used 90% of the time",
        "value": {
            "workload": {
                "task": "lora",
                "params_b": 13,
                "training_tokens_b": 0.5,
                "batch_size": 4,
                "seq_len": 2048,
            },
            "constraints": {"on_prem_only": True, "utilization_pct": 90, "horizon_months": 36},
        },
    },
}


def kb_aware_openapi(app: FastAPI, kb: KB) -> dict[str, Any]:
    """The app's OpenAPI document with the KB's model, GPU and provider ids as enums."""
    document = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
        tags=app.openapi_tags,
    )
    schemas = document.get("components", {}).get("schemas", {})
    _enum(schemas.get("Workload", {}), "model", sorted(kb.models))
    _enum(schemas.get("HardwareCount", {}), "gpu", sorted(kb.gpus))
    _enum(schemas.get("Constraints", {}), "providers", sorted(kb.providers))
    return document


def _enum(schema: dict[str, Any], field: str, ids: list[str]) -> None:
    """Add `enum: ids` to the string branch of `field`, wherever the schema nests it."""
    prop = schema.get("properties", {}).get(field)
    if prop is None:
        return
    for node in _string_nodes(prop):
        node["enum"] = ids


def _string_nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    if node.get("type") == "string":
        return [node]
    found: list[dict[str, Any]] = []
    for key in ("anyOf", "oneOf"):
        for child in node.get(key, []):
            found += _string_nodes(child)
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        found += _string_nodes(node["items"])
    return found
