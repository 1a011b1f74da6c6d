"""What `workload.hf_config` must hold for the sizing to read it (engine/planning/hf_config.py), as
JSON Schema, so that a client generating requests from the OpenAPI document (or a tester) knows it.

The rules, each stated the way the reader applies it:

- the layers, width, heads and vocabulary are integers, on the config itself or, when it gives no
  `num_hidden_layers`, on its `text_config` (a vision-language model's language model; transformers'
  `Gemma3Config.text_config`, `Qwen2_5_VLConfig.text_config`);
- a mixture of experts (the first expert count given, of num_local_experts, num_experts and
  n_routed_experts, at least 2) gives `num_experts_per_tok`;
- multi-head latent attention (`kv_lora_rank`, DeepSeek-V2/V3) gives the three head widths it splits
  into.

`required` alone admits a null (JSON Schema 2020-12, Validation Sec. 6.5.3, counts a present key),
so each needed key is also typed integer; a `{"type": "null"}` property is met by a null or an absent
key (Sec. 10.3.2.1 applies `properties` only to the keys present). Conditions use `if`/`then`
(Core Sec. 10.2.2). What relates two values (heads a multiple of the KV heads, experts per token at
most the experts, at most 100T parameters) no JSON Schema keyword can state: the field description
says it, and a body that breaks it is a 422 naming `hf_config`.
"""

from __future__ import annotations

from pydantic.config import JsonDict

SIZES = ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size")
"""the sizes no config can do without"""
EXPERT_COUNTS = ("num_local_experts", "num_experts", "n_routed_experts")
"""the names transformers' configs give the experts (Mixtral and gpt-oss, Qwen MoE, DeepSeek), in the
order the reader looks for them"""
LATENT_ATTENTION = ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
"""what DeepSeek's multi-head latent attention splits a head into"""


def _integer(minimum: int | None = None) -> JsonDict:
    return {"type": "integer"} if minimum is None else {"type": "integer", "minimum": minimum}


def keys(
    given: tuple[str, ...] = (),
    absent: tuple[str, ...] = (),
    *,
    minimum: int | None = None,
    **nested: JsonDict,
) -> JsonDict:
    """Each of `given` present and an integer (at least `minimum`), each of `absent` absent or null,
    each of `nested` present and matching its schema."""
    properties: dict[str, JsonDict] = {name: {"type": "null"} for name in absent}
    properties.update({name: _integer(minimum) for name in given})
    properties.update(nested)
    return {"required": [*given, *nested], "properties": dict(properties)}


def mixture_of_experts() -> list[JsonDict]:
    """An MoE names its experts per token: one `if`/`then` per expert count, each applying when the
    counts before it are absent (the reader takes the first one given)."""
    return [
        {
            "if": keys((name,), EXPERT_COUNTS[:i], minimum=2),
            "then": keys(("num_experts_per_tok",)),
        }
        for i, name in enumerate(EXPERT_COUNTS)
    ]


def latent_attention() -> JsonDict:
    return {"if": keys(("kv_lora_rank",)), "then": keys(LATENT_ATTENTION)}


def sizable() -> JsonDict:
    """One level of a config (the config, or its text_config) that the sizing can read."""
    return {"type": "object", **keys(SIZES), "allOf": [*mixture_of_experts(), latent_attention()]}


def hf_config_schema() -> JsonDict:
    """The config's sizes, on itself or, without num_hidden_layers, on its text_config."""
    return {"anyOf": [sizable(), keys(absent=("num_hidden_layers",), text_config=sizable())]}
