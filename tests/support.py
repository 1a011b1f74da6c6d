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


# DeepSeek-V3 (arXiv 2412.19437, Sec. 4.2; config.json of deepseek-ai/DeepSeek-V3): 61 layers, the first 3
# dense (MLP 18432) and 58 MoE (256 routed experts of 2048, 1 shared, top-8); multi-head latent attention
# with 128 heads (q/k head 128 + 64 rope, value head 128), latent ranks 512 (KV) and 1536 (Q).
DEEPSEEK_V3 = TransformerShape(
    n_layers=61,
    hidden_size=7168,
    n_heads=128,
    n_kv_heads=128,
    head_dim=192,
    intermediate_size=18432,
    vocab_size=129280,
    n_experts=256,
    experts_per_token=8,
    moe_intermediate_size=2048,
    n_shared_experts=1,
    moe_layers=58,
    kv_lora_rank=512,
    q_lora_rank=1536,
    qk_rope_head_dim=64,
    v_head_dim=128,
)
