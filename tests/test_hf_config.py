"""`workload.hf_config`: a Hugging Face config.json sizes a model the KB does not know. Round trips:
the configs of KB models, written as their config.json gives them, size exactly as the KB's own
architecture does; and the bad ones are 422s naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs in the lock

from engine.knowledge.kb import KB
from engine.models.request import HfConfig, RecommendRequest
from engine.planning.hf_config import from_hf_config, sized_config
from engine.recommend import Advisor
from engine.sizing import (
    active_params,
    kv_cache_bytes_per_token,
    model_kv_cache_bytes,
    shape_from_architecture,
    total_params,
)

# config.json of meta-llama/Llama-3.1-8B (the keys the sizing reads, as published; kb/models/llama-3-1-8b.yaml
# cites it), with keys the sizing ignores left in
LLAMA_3_1_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "rope_type": "llama3"},
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
}
# mistralai/Mixtral-8x7B-v0.1 (kb/models/mixtral-8x7b.yaml)
MIXTRAL_8X7B: dict[str, Any] = {
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "rms_norm_eps": 1e-05,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
    "torch_dtype": "bfloat16",
}
# google/gemma-2-9b (kb/models/gemma-2-9b.yaml): explicit head_dim, a window on every other layer
GEMMA_2_9B: dict[str, Any] = {
    "model_type": "gemma2",
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "num_attention_heads": 16,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "head_dim": 256,
    "rms_norm_eps": 1e-06,
    "max_position_embeddings": 8192,
    "sliding_window": 4096,
    "final_logit_softcapping": 30.0,
    "vocab_size": 256000,
    "torch_dtype": "float32",
}


@pytest.mark.parametrize(
    ("config", "model_id"),
    [(LLAMA_3_1_8B, "llama-3-1-8b"), (MIXTRAL_8X7B, "mixtral-8x7b"), (GEMMA_2_9B, "gemma-2-9b")],
)
def test_a_kb_models_config_sizes_as_the_kb_does(kb: KB, config: dict[str, Any], model_id: str) -> None:
    found = from_hf_config(HfConfig.model_validate(config))
    shape = shape_from_architecture(found.architecture, kind=found.kind)
    model = kb.models[model_id]
    assert model.architecture is not None
    expected = shape_from_architecture(model.architecture.model_dump(), kind=model.kind)
    assert total_params(shape) == total_params(expected) == model.params_count
    assert kv_cache_bytes_per_token(shape) == kv_cache_bytes_per_token(expected)
    assert shape.windowed_layers == expected.windowed_layers
    assert shape.final_logit_softcapping == expected.final_logit_softcapping


def test_the_keys_used_are_listed_and_the_rest_ignored(advisor: Advisor) -> None:
    request = RecommendRequest.model_validate({"workload": {"task": "inference", "hf_config": LLAMA_3_1_8B}})
    answer = advisor.recommend(request)
    assert answer.requirements.architecture_source == "hf-config"
    assert answer.requirements.params_b == pytest.approx(8.03, abs=0.005)
    used = str(answer.assumptions["hf_config.used"])
    assert "num_key_value_heads" in used and "rope_theta" not in used and "architectures" not in used


def test_a_vision_language_config_is_read_from_its_text_config() -> None:
    nested = {
        "model_type": "gemma3",
        "text_config": {**GEMMA_2_9B, "model_type": "gemma2"},
        "vision_config": {},
    }
    found = from_hf_config(HfConfig.model_validate(nested))
    assert found.architecture["n_layers"] == 42
    assert all(key.startswith("text_config.") for key in found.used)


def test_moe_and_latent_attention_keys() -> None:
    """DeepSeek-V3's config keys (deepseek-ai/DeepSeek-V3 config.json): 671B total, 37B active."""
    config = {
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "num_attention_heads": 128,
        "num_hidden_layers": 61,
        "num_key_value_heads": 128,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "first_k_dense_replace": 3,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "rms_norm_eps": 1e-06,
        "max_position_embeddings": 163840,
        "tie_word_embeddings": False,
        "vocab_size": 129280,
        "quantization_config": {"quant_method": "fp8"},
    }
    found = from_hf_config(HfConfig.model_validate(config))
    shape = shape_from_architecture(found.architecture)
    assert total_params(shape) == pytest.approx(671e9, rel=0.02)
    assert kv_cache_bytes_per_token(shape) == 61 * 576 * 2
    assert found.native_precision == "fp8"


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"hf_config": {"hidden_size": 4096}}, "num_hidden_layers"),
        ({"hf_config": {**LLAMA_3_1_8B, "num_key_value_heads": 7}}, "multiple"),
        ({"hf_config": {**MIXTRAL_8X7B, "num_experts_per_tok": None}}, "num_experts_per_tok"),
        ({"hf_config": LLAMA_3_1_8B, "model": "llama-3-1-8b"}, "not both"),
        ({"hf_config": {**LLAMA_3_1_8B, "num_hidden_layers": -1}}, "greater than"),
    ],
)
def test_a_bad_config_is_a_422_naming_hf_config(
    client: TestClient, workload: dict[str, Any], message: str
) -> None:
    response = client.post("/recommend", json={"workload": {"task": "inference", **workload}})
    assert response.status_code == 422, response.text
    errors = response.json()["detail"]
    assert any(e["loc"][:3] == ["body", "workload", "hf_config"] and message in e["msg"] for e in errors), (
        errors
    )


FIXTURES = Path(__file__).parent / "fixtures" / "hf_config"
# each real config.json (tests/fixtures/hf_config/SOURCES.md cites where it was copied from) and the KB
# model it describes
REAL_CONFIGS = {
    "qwen3-8b.json": "qwen3-8b",
    "qwen3-30b-a3b.json": "qwen3-30b-a3b",
    "gemma-2-9b-it.json": "gemma-2-9b",
    "mistral-nemo-base-2407.json": "mistral-nemo-12b",
}


@pytest.mark.parametrize(("file", "model_id"), sorted(REAL_CONFIGS.items()))
def test_a_real_config_round_trips_to_its_kb_model(
    advisor: Advisor, kb: KB, file: str, model_id: str
) -> None:
    """The pasted config.json sizes the model exactly as its KB entry does: the same parameter count
    (the card's, kb/models/<id>.yaml params_count), KV cache per token and windowed layers; and an
    answer from the config alone reads the same model size."""
    config = json.loads((FIXTURES / file).read_text(encoding="utf-8"))
    found = from_hf_config(HfConfig.model_validate(config))
    shape = shape_from_architecture(found.architecture, kind=found.kind)
    model = kb.models[model_id]
    assert model.architecture is not None
    expected = shape_from_architecture(model.architecture.model_dump(), kind=model.kind)
    assert total_params(shape) == model.params_count
    assert active_params(shape) == active_params(expected)
    assert kv_cache_bytes_per_token(shape) == kv_cache_bytes_per_token(expected)
    assert shape.windowed_layers == expected.windowed_layers
    assert found.native_precision == model.native_precision
    answer = advisor.recommend(
        RecommendRequest.model_validate({"workload": {"task": "inference", "hf_config": config}})
    )
    assert answer.requirements.params_b == pytest.approx(model.params_count / 1e9, abs=1e-4)
    assert answer.requirements.architecture_source == "hf-config"


def test_a_stated_count_keeps_the_configs_share_of_active_parameters(advisor: Advisor) -> None:
    """Qwen3-30B-A3B's config with params_b 30: a token still uses the config's share, 3,353,032,704 of
    30,532,122,624 parameters (the counts its shapes give; the card says 3.3B of 30.5B)."""
    config = json.loads((FIXTURES / "qwen3-30b-a3b.json").read_text(encoding="utf-8"))
    body = {"workload": {"task": "inference", "hf_config": config, "params_b": 30.0}}
    answer = advisor.recommend(RecommendRequest.model_validate(body))
    assert answer.requirements.params_b == pytest.approx(30.0)
    assert answer.requirements.active_params_b == pytest.approx(
        30.0 * 3_353_032_704 / 30_532_122_624, rel=1e-3
    )


def test_a_stated_count_beside_a_dense_config_is_all_active(client: TestClient) -> None:
    """A dense config's active share is 1: the request's count is used as it stands (scaling it by
    active / total in floating point once made it exceed itself, a 422 that Schemathesis found)."""
    config = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128}
    body = {
        "workload": {
            "task": "lora",
            "hf_config": {**config, "vocab_size": 1000},
            "params_b": 41170.137656293635,
        }
    }
    response = client.post("/recommend", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["requirements"]["active_params_b"] is None  # dense: no separate active count


# config.json of meta-llama/Llama-2-7b-hf (kb/models/llama-2-7b.yaml cites it) and of
# google-bert/bert-base-uncased (kb/models/bert-base.yaml), the keys the sizing reads
LLAMA_2_7B: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "max_position_embeddings": 4096,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
    "vocab_size": 32000,
}
BERT_BASE: dict[str, Any] = {
    "model_type": "bert",
    "hidden_size": 768,
    "intermediate_size": 3072,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "type_vocab_size": 2,
    "vocab_size": 30522,
}


def _without(config: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in config.items() if key not in keys}


@pytest.mark.parametrize(
    ("config", "left_out", "model_id", "assumed"),
    [
        # Llama's gated MLP: 8/3 x 4096 rounded up to a multiple of 256 is Llama 2 7B's own 11,008
        (LLAMA_2_7B, ("intermediate_size",), "llama-2-7b", ["intermediate_size absent: 11008"]),
        # BERT's two-matrix MLP, 4 x 768; its learned position table, BertConfig's 512 rows
        (
            BERT_BASE,
            ("intermediate_size", "max_position_embeddings"),
            "bert-base",
            ["intermediate_size absent: 3072", "max_position_embeddings absent: 512"],
        ),
    ],
)
def test_a_config_without_its_mlp_width_or_positions_is_sized_with_a_stated_assumption(
    client: TestClient,
    kb: KB,
    config: dict[str, Any],
    left_out: tuple[str, ...],
    model_id: str,
    assumed: list[str],
) -> None:
    """A key a config.json leaves out is taken as the model family's convention and said so in
    `assumptions`; for these two models the convention is their own size, so the count is exact."""
    partial = _without(config, *left_out)
    assert sized_config(HfConfig.model_validate(partial)).params == kb.models[model_id].params_count
    response = client.post("/recommend", json={"workload": {"task": "inference", "hf_config": partial}})
    assert response.status_code == 200, response.text
    assumptions = response.json()["assumptions"]
    notes = [str(value) for key, value in assumptions.items() if key.startswith("hf_config.assumed")]
    for text in assumed:
        assert any(note.startswith(text) for note in notes), notes


MOE = {**LLAMA_2_7B, "num_local_experts": 8, "num_experts_per_tok": 2}
MLA = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
# hf_configs and whether the server takes them: each is valid by the OpenAPI document exactly when it is
DOCUMENT_AND_SERVER = [
    ("a config", LLAMA_2_7B, True),
    ("no MLP width", _without(LLAMA_2_7B, "intermediate_size"), True),
    ("a needed size null", {**LLAMA_2_7B, "vocab_size": None}, False),
    ("a needed size absent", _without(LLAMA_2_7B, "num_attention_heads"), False),
    ("a size as a string", {**LLAMA_2_7B, "hidden_size": "4096"}, False),
    ("a size written 4096.0", {**LLAMA_2_7B, "hidden_size": 4096.0}, True),
    ("its text_config", {"model_type": "llava", "text_config": LLAMA_2_7B}, True),
    ("an empty text_config", {"model_type": "llava", "text_config": {}}, False),
    ("layers null, text_config read", {"num_hidden_layers": None, "text_config": LLAMA_2_7B}, True),
    ("layers given, the rest in text_config", {"num_hidden_layers": 32, "text_config": LLAMA_2_7B}, False),
    ("a complete config beside an unread text_config", {**LLAMA_2_7B, "text_config": {}}, True),
    ("an MoE", MOE, True),
    ("an MoE without experts per token", _without(MOE, "num_experts_per_tok"), False),
    ("Qwen's expert count without experts per token", {**LLAMA_2_7B, "num_experts": 8}, False),
    ("one local expert first: dense", {**LLAMA_2_7B, "num_local_experts": 1, "num_experts": 8}, True),
    ("DeepSeek's routed experts without experts per token", {**LLAMA_2_7B, "n_routed_experts": 8}, False),
    ("latent attention", {**LLAMA_2_7B, **MLA}, True),
    ("latent attention without v_head_dim", _without({**LLAMA_2_7B, **MLA}, "v_head_dim"), False),
    (
        "an MoE in text_config without experts per token",
        {"text_config": _without(MOE, "num_experts_per_tok")},
        False,
    ),
]


@pytest.mark.parametrize(
    ("config", "accepted"),
    [(config, accepted) for _, config, accepted in DOCUMENT_AND_SERVER],
    ids=[case for case, _, _ in DOCUMENT_AND_SERVER],
)
def test_the_openapi_document_states_what_an_hf_config_needs(
    client: TestClient, config: dict[str, Any], accepted: bool
) -> None:
    """A client that checks its body against the published JSON Schema (draft 2020-12) learns what the
    server will say: valid there is a 200 here, invalid there a 422 naming hf_config."""
    document = client.get("/openapi.json").json()
    validator = Draft202012Validator({**document, "$ref": "#/components/schemas/RecommendRequest"})
    body = {"workload": {"task": "inference", "hf_config": config}}
    assert validator.is_valid(body) is accepted
    response = client.post("/recommend", json=body)
    assert response.status_code == (200 if accepted else 422), response.text
    if not accepted:
        assert all(
            error["loc"][:3] == ["body", "workload", "hf_config"] for error in response.json()["detail"]
        )


# The text config of a Qwen3.5-class mixture of experts with Gated DeltaNet layers, as mlx-lm's qwen3_5
# model builds it (TextModelArgs for model_type qwen3_5_moe_text): 40 layers, every 4th full attention.
HYBRID_TEXT_CONFIG: dict[str, Any] = {
    "model_type": "qwen3_5_moe_text",
    "hidden_size": 2048,
    "num_hidden_layers": 40,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "linear_num_value_heads": 32,
    "linear_num_key_heads": 16,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "rms_norm_eps": 1e-6,
    "vocab_size": 248320,
    "num_experts": 256,
    "num_experts_per_tok": 8,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "full_attention_interval": 4,
    "max_position_embeddings": 262144,
}
GDN_STATE_BF16 = 32 * 128 * 128 * 2 + (2 * 16 * 128 + 32 * 128) * 3 * 2
"""vLLM's MambaStateShapeCalculator.gated_delta_net_state_shape: a temporal state of (value heads,
value dim, key dim) and a conv state of (k dim x k heads x 2 + v dim x v heads, kernel - 1): 548,864
values, 1,097,728 bytes a layer in bf16"""


@pytest.mark.parametrize(
    "layers_given",
    [{"full_attention_interval": 4}, {"layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 10}],
)
def test_a_hybrid_configs_linear_attention_layers_keep_a_state_not_a_kv_cache(
    layers_given: dict[str, Any],
) -> None:
    """A Gated DeltaNet layer keeps a fixed state per sequence and no keys or values: 30 of the 40
    layers, so the KV cache a token is 10 full layers' 2 x 2 x 256 x 2 bytes, a quarter of what sizing
    every layer as attention gave, and the state is vLLM's shape whatever the context."""
    config = {k: v for k, v in HYBRID_TEXT_CONFIG.items() if k != "full_attention_interval"} | layers_given
    shape = sized_config(HfConfig.model_validate({"text_config": config, "model_type": "qwen3_5_moe"})).shape
    assert (shape.state_layers, shape.attention_layers) == (30, 10)
    assert shape.state_bytes_per_layer == GDN_STATE_BF16 == 1_097_728
    assert kv_cache_bytes_per_token(shape) == 10 * 2 * 2 * 256 * 2
    context = 262_144
    assert model_kv_cache_bytes(shape, context, 2) == 2 * (
        10 * 2 * 2 * 256 * 2 * context + 30 * GDN_STATE_BF16
    )
    # the state kept in float32, as Qwen3.5's configs ask (mamba_ssm_dtype)
    fp32 = sized_config(HfConfig.model_validate({**config, "mamba_ssm_dtype": "float32"})).shape
    assert fp32.state_bytes_per_layer == GDN_STATE_BF16 + 32 * 128 * 128 * 2
    # without linear_conv_kernel_dim, the kernel of 4 these models use
    unstated = {k: v for k, v in config.items() if k != "linear_conv_kernel_dim"}
    assert sized_config(HfConfig.model_validate(unstated)).shape.state_bytes_per_layer == GDN_STATE_BF16


def test_a_hybrid_configs_long_prompt_service_is_sized_on_its_attention_layers(advisor: Advisor) -> None:
    """30 requests a minute of 20,000-token prompts: the KV cache is the 10 attention layers' keys and
    values plus the 30 layers' states for each sequence in flight, not 40 layers of keys and values."""
    serving = {"requests_per_min": 30, "avg_input_tokens": 20000, "avg_output_tokens": 500}
    body = {"workload": {"task": "inference", "hf_config": HYBRID_TEXT_CONFIG, "serving": serving}}
    answer = advisor.recommend(RecommendRequest.model_validate(body))
    in_flight = answer.assumptions["batch_size"]
    context = answer.assumptions["context_tokens"]
    assert isinstance(in_flight, float) and isinstance(context, float)
    per_sequence = 10 * 2 * 2 * 256 * 2 * context + 30 * GDN_STATE_BF16
    assert answer.requirements.memory.kv_cache_gb == pytest.approx(in_flight * per_sequence / 1e9, abs=0.002)
    used = str(answer.assumptions["hf_config.used"])
    assert "full_attention_interval" in used and "linear_num_value_heads" in used


def test_a_hybrid_config_without_its_state_sizes_says_so() -> None:
    config = {k: v for k, v in HYBRID_TEXT_CONFIG.items() if not k.startswith("linear_")}
    sized = sized_config(HfConfig.model_validate(config))
    assert (sized.shape.state_layers, sized.shape.state_bytes_per_layer) == (30, 0)
    assert any("30 linear-attention layers keep no KV cache" in note for note in sized.read.notes)


# NVIDIA Nemotron-H-class config (nemotron_h): M a Mamba-2 block, E a mixture of experts, * attention
NEMOTRON_H_CONFIG: dict[str, Any] = {
    "model_type": "nemotron_h",
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "num_hidden_layers": 52,
    "hidden_size": 2688,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "intermediate_size": 1856,
    "vocab_size": 131072,
    "mamba_num_heads": 64,
    "mamba_head_dim": 64,
    "ssm_state_size": 128,
}


def test_a_config_with_layers_the_sizing_cannot_size_is_answered_with_a_warning(advisor: Advisor) -> None:
    """A Mamba hybrid (Nemotron-H's pattern: 6 attention layers of 52) is sized as if every layer
    attended, so the answer says its KV cache is an upper bound and the Mamba state is not sized; a
    Gated DeltaNet hybrid, which is sized, gets no such warning."""
    body = {"workload": {"task": "inference", "hf_config": NEMOTRON_H_CONFIG}}
    answer = advisor.recommend(RecommendRequest.model_validate(body))
    said = [w for w in answer.warnings if w.startswith("hf_config describes layers other than attention")]
    assert len(said) == 1 and "hybrid_override_pattern" in said[0] and "upper bound" in said[0]
    sized = {"workload": {"task": "inference", "hf_config": HYBRID_TEXT_CONFIG}}
    answer = advisor.recommend(RecommendRequest.model_validate(sized))
    assert not [w for w in answer.warnings if "layers other than attention" in w]


# Qwen3-Next-80B-A3B's config.json as NVIDIA's Megatron-Bridge tests copy it (cited in
# kb/models/qwen3-next-80b-a3b.yaml): the keys the sizing reads
QWEN3_NEXT_CONFIG: dict[str, Any] = {
    "model_type": "qwen3_next",
    "decoder_sparse_step": 1,
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_size": 2048,
    "intermediate_size": 5120,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_value_head_dim": 128,
    "max_position_embeddings": 262144,
    "mlp_only_layers": [],
    "moe_intermediate_size": 512,
    "num_attention_heads": 16,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "num_hidden_layers": 48,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
}


def test_qwen3_next_by_name_and_by_its_config_keeps_the_same_cache(advisor: Advisor, kb: KB) -> None:
    """Qwen3-Next-80B-A3B named (its Hugging Face repo id) and pasted: 36 Gated DeltaNet layers of 48 with
    1,097,728 bytes of state a sequence each, and 12 attention layers' 2 x 2 x 256 x 2 bytes a token; a
    30-request-a-minute service of 20,000-token prompts holds the same cache either way."""
    model = kb.model_named("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert model is not None and model.architecture is not None
    named = shape_from_architecture(model.architecture.model_dump(), kind=model.kind)
    pasted = sized_config(HfConfig.model_validate(QWEN3_NEXT_CONFIG)).shape
    for shape in (named, pasted):
        assert (shape.state_layers, shape.attention_layers) == (36, 12)
        assert shape.state_bytes_per_layer == GDN_STATE_BF16
        assert kv_cache_bytes_per_token(shape) == 12 * 2 * 2 * 256 * 2
    serving = {"requests_per_min": 30, "avg_input_tokens": 20000, "avg_output_tokens": 500}
    caches = [
        advisor.recommend(
            RecommendRequest.model_validate({"workload": {"task": "inference", **given, "serving": serving}})
        ).requirements.memory.kv_cache_gb
        for given in ({"model": "Qwen/Qwen3-Next-80B-A3B-Instruct"}, {"hf_config": QWEN3_NEXT_CONFIG})
    ]
    assert caches[0] == caches[1]


# Qwen3.5-27B's text config as NVIDIA's Megatron-Bridge tests copy it (cited in kb/models/qwen3-5-27b.yaml)
QWEN3_5_27B_TEXT_CONFIG: dict[str, Any] = {
    "model_type": "qwen3_5_text",
    "attn_output_gate": True,
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 48,
    "linear_value_head_dim": 128,
    "max_position_embeddings": 262144,
    "num_attention_heads": 24,
    "num_hidden_layers": 64,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": False,
    "vocab_size": 248320,
}


def test_a_gated_deltanet_hybrid_counts_its_own_parameters(kb: KB) -> None:
    """Qwen3.5-27B's language model is 26,895,998,464 parameters summed from its weight shapes (MaxText
    hf_shape.py, kb/models/qwen3-5-27b.yaml): 48 Gated DeltaNet layers of 115,876,064 token-mixer weights
    (transformers' Qwen3NextGatedDeltaNet: in_proj_qkvz, in_proj_ba, conv1d, A_log, dt_bias, norm,
    out_proj) and 16 attention layers whose q_proj carries an output gate. Counting the hybrid's layers as
    plain attention gave 24.35B, 9.5% short, and its weights' memory with it. Named or pasted, the same."""
    model = kb.model_named("Qwen/Qwen3.5-27B")
    assert model is not None and model.architecture is not None
    named = shape_from_architecture(model.architecture.model_dump(), kind=model.kind)
    pasted = sized_config(HfConfig.model_validate({"text_config": QWEN3_5_27B_TEXT_CONFIG})).shape
    for shape in (named, pasted):
        assert shape.state_params_per_layer == 115_876_064
        assert total_params(shape) == 26_895_998_464
    next_named = kb.model_named("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert next_named is not None and next_named.architecture is not None
    next_shape = shape_from_architecture(next_named.architecture.model_dump(), kind=next_named.kind)
    # Qwen3-Next's config has no attn_output_gate: its model_type says its attention is gated
    assert next_shape.attention_output_gate
    assert sized_config(HfConfig.model_validate(QWEN3_NEXT_CONFIG)).shape.attention_output_gate


# Qwen3.5's vision tower as its configs give it (the 35B-A3B's and 27B's, kb/models/qwen3-5-*.yaml)
QWEN3_5_VISION: dict[str, Any] = {
    "depth": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 16,
    "temporal_patch_size": 2,
    "spatial_merge_size": 2,
    "num_position_embeddings": 2304,
    "deepstack_visual_indexes": [],
}


def test_a_vision_language_configs_image_encoder_is_counted(kb: KB) -> None:
    """A pasted Qwen3.5 config.json holds its vision tower beside the language model: 446,571,248
    parameters with a merger to 2,048 wide (the 35B-A3B's, summed from its weight shapes in the KB file),
    460,730,096 to the 27B's 5,120. The memory counts them; decode and the FLOPs per token do not (one
    pass per image). A vision config the sizing does not know is said to be left out."""
    moe = kb.models["qwen3-5-35b-a3b"]
    assert moe.architecture is not None and moe.architecture.extra_params_count == 446_571_248
    pasted = {
        "model_type": "qwen3_5",
        "text_config": QWEN3_5_27B_TEXT_CONFIG,
        "vision_config": {**QWEN3_5_VISION, "out_hidden_size": 5120},
    }
    sized = sized_config(HfConfig.model_validate(pasted))
    assert sized.params == 26_895_998_464 + 460_730_096
    assert sized.active_params == 26_895_998_464
    assert "vision_config" in sized.read.used
    assert any("image encoder's 0.46B parameters" in note for note in sized.read.notes)
    assert not sized.read.cautions
    with pytest.raises(ValueError, match="vision_config: depth"):
        sized_config(
            HfConfig.model_validate(
                {**pasted, "vision_config": {**QWEN3_5_VISION, "depth": 0, "out_hidden_size": 5120}}
            )
        )
    other = {**pasted, "model_type": "gemma3"}
    unknown = sized_config(HfConfig.model_validate(other))
    assert unknown.params == 26_895_998_464
    assert any(
        "vision_config whose image encoder the sizing does not count" in c for c in unknown.read.cautions
    )
