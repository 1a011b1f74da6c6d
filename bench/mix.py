"""The request mix every benchmark runs: the 16 canonical requests of tests/golden plus six more,
covering inference, training, LoRA/QLoRA, serving, privacy, macOS, budgets and infeasible asks."""

from __future__ import annotations

import json
from typing import Any

from engine.knowledge.paths import PROJECT_ROOT

GOLDEN = PROJECT_ROOT / "tests" / "golden"

EXTRA: dict[str, dict[str, Any]] = {
    "chat-7b-under-2000": {
        "workload": {"task": "inference", "model": "mistral-7b"},
        "constraints": {"acquisition": "buy", "budget_usd": 2000},
    },
    "qlora-70b-rent": {
        "workload": {"task": "qlora", "model": "llama-3-1-70b", "batch_size": 1, "seq_len": 2048},
        "constraints": {"acquisition": "rent"},
        "objective": "cheapest",
    },
    "pretrain-1b-tokens": {
        "workload": {"task": "pretrain", "params_b": 1.3, "training_tokens_b": 26, "batch_size": 16},
        "constraints": {"acquisition": "any"},
        "objective": "fastest",
    },
    "mixtral-serving-sla": {
        "workload": {
            "task": "inference",
            "model": "mixtral-8x7b",
            "batch_size": 16,
            "serving": {"requests_per_min": 300, "avg_input_tokens": 800, "avg_output_tokens": 300},
        },
        "constraints": {"availability_target_pct": 99.9, "acquisition": "rent"},
    },
    "macos-lora-13b": {
        "workload": {"task": "lora", "model": "llama-2-13b", "batch_size": 2},
        "constraints": {"os": "macos", "acquisition": "buy"},
    },
    "infeasible-405b-on-one-consumer-card": {
        "workload": {"task": "full_finetune", "model": "llama-3-1-405b"},
        "constraints": {
            "acquisition": "buy",
            "max_gpus": 1,
            "vendors": ["nvidia"],
            "allow_quantization": False,
        },
    },
}


def requests() -> dict[str, dict[str, Any]]:
    """name -> request body, in a fixed order."""
    mix = {
        path.name.removesuffix(".request.json"): json.loads(path.read_text())
        for path in sorted(GOLDEN.glob("*.request.json"))
    }
    mix.update(EXTRA)
    return mix
