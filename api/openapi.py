"""The OpenAPI document: generated from the pydantic models, then told the KB's ids and the links
between operations.

The request models accept any well-formed id; which ids exist depends on the KB being served. The
document lists them as enums, so a client (or a schema-driven tester) knows that an id outside the
list is a 422, and the document changes with the KB it describes (rebuilt on reload).

Links (OpenAPI 3.1, "Link Object") say which answer's ids another operation takes, e.g. that an id from
`GET /gpus` is one `GET /gpus/{gpu_id}` knows: a client can follow them, and a stateful tester chains
calls along them instead of guessing ids.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from engine.maintenance import KB

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

COMPARE_EXAMPLES: dict[str, dict[str, Any]] = {
    "why-not-a-4090": {
        "summary": "Serve a 70B model in fp16: one RTX 4090, or H100s?",
        "value": {
            "request": {
                "workload": {
                    "task": "inference",
                    "model": "llama-2-70b",
                    "precision": "fp16",
                    "batch_size": 1,
                    "seq_len": 4096,
                }
            },
            "choices": [
                {"gpu": "nvidia-rtx-4090", "count": 1},
                {"gpu": "nvidia-h100-sxm", "count": 2},
                {"gpu": "nvidia-h100-sxm", "count": 4, "acquisition": "rent"},
            ],
        },
    },
    "buy-or-rent": {
        "summary": "QLoRA of an 8B model: buy a used RTX 3090, or rent an A100?",
        "value": {
            "request": {
                "workload": {"task": "qlora", "model": "llama-3-1-8b", "batch_size": 2, "seq_len": 2048},
                "objective": "cheapest",
            },
            "choices": [
                {"gpu": "nvidia-rtx-3090", "count": 1, "acquisition": "buy"},
                {"gpu": "nvidia-a100-sxm-80gb", "count": 1, "acquisition": "rent"},
            ],
        },
    },
}


def _link(operation_id: str, parameter: str, expression: str, description: str) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "parameters": {parameter: expression},
        "description": description,
    }


LINKS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    # (path, method) of an operation: the links of its 200 response, by name
    ("/gpus", "get"): {
        "GpuDetail": _link("get_gpu", "gpu_id", "$response.body#/0/id", "the first GPU in full"),
        "GpuOffers": _link("list_offers", "gpu", "$response.body#/0/id", "the first GPU's offers"),
    },
    ("/gpus/{gpu_id}", "get"): {
        "GpuOffers": _link("list_offers", "gpu", "$response.body#/id", "this GPU's offers"),
    },
    ("/providers", "get"): {
        "ProviderOffers": _link(
            "list_offers", "provider", "$response.body#/0/id", "the first provider's offers"
        ),
    },
    ("/offers", "get"): {
        "OfferGpu": _link("get_gpu", "gpu_id", "$response.body#/0/gpu", "the GPU of the first offer"),
    },
    ("/hosts", "get"): {
        "HostDetail": _link("get_host", "host_id", "$response.body#/0/id", "the first host in full"),
    },
    ("/models", "get"): {
        "ModelDetail": _link("get_model", "model_id", "$response.body#/0/id", "the first model in full"),
    },
    ("/rules", "get"): {
        "RuleDetail": _link("get_rule", "rule_id", "$response.body#/0/id", "the first rule in full"),
    },
    ("/compare", "post"): {
        "ComparedGpu": _link("get_gpu", "gpu_id", "$response.body#/choices/0/gpu", "the first choice's GPU"),
    },
    ("/recommend", "post"): {
        "RecommendedGpu": _link(
            "get_gpu", "gpu_id", "$response.body#/recommendations/0/gpu", "the best option's GPU"
        ),
        "FirstRuleFired": _link(
            "get_rule", "rule_id", "$response.body#/trace/0/rule", "the first rule fired"
        ),
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
    # the models the advisor sizes: a convolutional network, named, is a 422 (engine/planning/workload.py)
    _enum(schemas.get("Workload", {}), "model", sorted(m.id for m in kb.models.values() if m.sized))
    _enum(schemas.get("HardwareCount", {}), "gpu", sorted(kb.gpus))
    _enum(schemas.get("OwnedHardware", {}), "gpu", sorted(kb.gpus))
    _enum(schemas.get("Choice", {}), "gpu", sorted(kb.gpus))
    _enum(schemas.get("Constraints", {}), "providers", sorted(kb.providers))
    for (path, method), links in LINKS.items():
        document["paths"][path][method]["responses"]["200"]["links"] = links
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
