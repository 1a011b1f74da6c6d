"""Models whose activations overflow fp16 get no fp16 plan on a GPU (rules/precision/
no-fp16-for-models-that-overflow-it.yaml): Gemma 3 gives NaN in float16 (Hugging Face transformers issue
36822) and Unsloth forces gemma3 and gpt_oss out of it (unsloth_zoo FORCE_FLOAT32)."""

from __future__ import annotations

from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest
from engine.recommend import Advisor

CHEAPEST_TEN = {"objective": "cheapest", "top_k": 10}
TRANSFORMERS = {"engine": "hf-eager"}
"""served with Transformers, which runs on Volta in fp16 (vLLM's releases no longer do:
rules/libraries/vllm-needs-turing.yaml)"""


def _answer(advisor: Advisor, model: str) -> tuple[list[tuple[str, str]], list[str]]:
    body = {"workload": {"task": "inference", "model": model, "serving": TRANSFORMERS}, **CHEAPEST_TEN}
    answer = advisor.recommend(RecommendRequest.model_validate(body))
    plans = [(r.gpu, r.precision) for r in answer.recommendations]
    return plans, [step.rule for step in answer.trace]


def test_the_kb_flags_gemma_3_and_gpt_oss(kb: KB) -> None:
    flagged = sorted(m.id for m in kb.models.values() if m.fp16_overflows)
    assert flagged == [
        "gemma-3-12b",
        "gemma-3-1b",
        "gemma-3-27b",
        "gemma-3-4b",
        "gpt-oss-120b",
        "gpt-oss-20b",
    ]


def test_a_cheap_gemma_3_answer_has_no_fp16_gpu_where_qwen3s_has(advisor: Advisor, kb: KB) -> None:
    """The cheapest ten plans for a small model include a V100 in fp16 (no bf16 on Volta); for Gemma 3
    1B, of the same size class, the V100 is gone and a CPU in fp16 (which computes in fp32) stays."""
    qwen, qwen_rules = _answer(advisor, "qwen3-1-7b")
    gemma, gemma_rules = _answer(advisor, "gemma-3-1b")
    assert any(precision == "fp16" and "v100" in gpu for gpu, precision in qwen)
    assert "no-fp16-for-models-that-overflow-it" not in qwen_rules
    assert "no-fp16-for-models-that-overflow-it" in gemma_rules
    without_bf16 = {gpu for gpu, _ in gemma if "bf16" not in kb.gpus[gpu].native_precisions}
    assert all(kb.gpus[gpu].gpu_class == "cpu" for gpu in without_bf16)
    assert ("cpu-x86-64gb", "fp16") in gemma


# google/gemma-3-1b-it config.json (kb/models/gemma-3-1b.yaml's values)
GEMMA_3_1B_CONFIG = {
    "model_type": "gemma3_text",
    "hidden_size": 1152,
    "intermediate_size": 6912,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 256,
    "num_hidden_layers": 26,
    "vocab_size": 262144,
    "max_position_embeddings": 32768,
    "sliding_window": 512,
    "rms_norm_eps": 1e-06,
    "torch_dtype": "bfloat16",
}


def test_a_config_of_a_model_type_that_overflows_fp16_is_flagged_as_the_kb_entry_is(advisor: Advisor) -> None:
    """A request that gives Gemma 3 1B by its config.json, not its KB id, is held to the same rule."""
    body = {"workload": {"task": "inference", "hf_config": GEMMA_3_1B_CONFIG}, **CHEAPEST_TEN}
    answer = advisor.recommend(RecommendRequest.model_validate(body))
    assert "no-fp16-for-models-that-overflow-it" in [step.rule for step in answer.trace]
    assert all(r.precision != "fp16" or r.gpu.startswith("cpu") for r in answer.recommendations)
