"""bench/calibrate.py without a GPU: run specs, the KB-to-Hugging-Face mapping, the figures' arithmetic,
the document and the command line up to the point where torch is needed.

The measuring itself needs a CUDA GPU and is not run here; where the run loop is tested, torch and the
measurements are stand-ins, so what is checked is the bookkeeping around them (a failure is recorded and
the next run goes on)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from bench import calibrate
from bench.calibrate import (
    DEFAULT_RUNS,
    EXTENDED_RUNS,
    Deadline,
    Failure,
    ForwardProfile,
    RunSpec,
    RunSpecError,
    RunTimeout,
    UnsupportedModel,
    build_document,
    check_models_exist,
    decode_result,
    document_json,
    encode_result,
    expert_parameter_targets,
    hf_config,
    hf_config_from_kb,
    load_kb_model,
    lora_targets,
    main,
    method_text,
    parse_run_spec,
    resolve_runs,
    select_runs,
    training_result,
    write_document,
)
from engine.models.calibration import CalibrationFile

PROJECT = Path(__file__).resolve().parents[1]
KB = PROJECT / "kb"
EXAMPLE = PROJECT / "data" / "calibration" / "h200-2026-11-26.json"
HF_FIXTURES = PROJECT / "tests" / "fixtures" / "hf_config"


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return data


# Run specs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "qwen3-8b:lora:b4:s2048:ckpt",
            RunSpec("qwen3-8b", "lora", batch=4, seq=2048, checkpointing=True, lora_rank=16),
        ),
        (
            "llama-3-2-1b:full_finetune:ckpt:ga4:s8192:b2",
            RunSpec(
                "llama-3-2-1b",
                "full_finetune",
                batch=2,
                seq=8192,
                checkpointing=True,
                gradient_accumulation=4,
            ),
        ),
        ("qwen3-0-6b:full:s512", RunSpec("qwen3-0-6b", "full_finetune", batch=1, seq=512)),
        ("qwen3-8b:lora:s2048:r64", RunSpec("qwen3-8b", "lora", seq=2048, lora_rank=64)),
        (
            "qwen3-8b:decode",
            RunSpec("qwen3-8b", "inference", batch=1, engine="hf-eager", prompt=128, new_tokens=128),
        ),
        (
            "qwen3-8b:inference:n256:hf-static-compile:b32",
            RunSpec(
                "qwen3-8b", "inference", batch=32, engine="hf-static-compile", prompt=128, new_tokens=256
            ),
        ),
        (
            "qwen3-30b-a3b:decode:static:p2048:n64",
            RunSpec("qwen3-30b-a3b", "inference", engine="hf-static-compile", prompt=2048, new_tokens=64),
        ),
    ],
)
def test_a_run_spec_parses_to_its_fields(text: str, expected: RunSpec) -> None:
    assert parse_run_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("qwen3-8b:lora:b4:s2048:ckpt", "qwen3-8b:lora:b4:s2048:r16:ckpt"),
        ("llama-3-2-1b:full_finetune:ckpt:ga4:s8192:b2", "llama-3-2-1b:full:b2:s8192:ga4:ckpt"),
        ("qwen3-8b:inference:n256:hf-static-compile:b32", "qwen3-8b:decode:static:b32:p128:n256"),
        ("qwen3-8b:decode", "qwen3-8b:decode:eager:b1:p128:n128"),
        ("bge-m3:encode:s512:b64", "bge-m3:encode:b64:s512"),
    ],
)
def test_the_canonical_name_spells_every_value_out(text: str, canonical: str) -> None:
    assert parse_run_spec(text).name == canonical


@pytest.mark.parametrize("spec", DEFAULT_RUNS + EXTENDED_RUNS, ids=lambda spec: spec.name)
def test_the_canonical_name_parses_back_to_the_same_run(spec: RunSpec) -> None:
    assert parse_run_spec(spec.name) == spec


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("qwen3-8b", "expected MODEL:METHOD"),
        ("qwen3-8b::lora:s2048", "expected MODEL:METHOD"),
        ("qwen3-8b:train:b1:s1", "method 'train' is not one of full, lora, decode, encode"),
        ("bge-m3:encode:b64", "needs a sequence length"),
        ("bge-m3:encode:s512:ckpt", "'ckpt' (checkpointing) does not apply to encode"),
        ("bge-m3:encode:s512:n8", "'n8' (new tokens) does not apply to encode"),
        ("bge-m3:encode:s512:r8", "'r8' (LoRA rank) does not apply to encode"),
        ("Qwen/Qwen3-8B:lora:s2048", "is not a KB model id"),
        ("qwen3-8b:lora:b4", "needs a sequence length"),
        ("qwen3-8b:full:b8", "needs a sequence length"),
        ("qwen3-8b:lora:s2048:x4", "unknown option 'x4'"),
        ("qwen3-8b:lora:s2048:batch4", "unknown option 'batch4'"),
        ("qwen3-8b:lora:b4:b8:s2048", "batch given twice (b4, b8)"),
        ("qwen3-8b:decode:eager:static", "engine given twice"),
        ("qwen3-8b:full:s2048:r16", "'r16' (LoRA rank) does not apply to full_finetune"),
        ("qwen3-8b:full:s2048:static", "'static' (engine) does not apply to full_finetune"),
        ("qwen3-8b:lora:s2048:n128", "'n128' (new tokens) does not apply to lora"),
        ("qwen3-8b:decode:s2048", "'s2048' (sequence length) does not apply to inference"),
        ("qwen3-8b:decode:ckpt", "'ckpt' (checkpointing) does not apply to inference"),
        ("qwen3-8b:decode:ga2", "does not apply to inference"),
        ("qwen3-8b:full:b0:s2048", "counts are between 1 and 1,000,000"),
        ("qwen3-8b:decode:n2000000", "counts are between 1 and 1,000,000"),
    ],
)
def test_a_bad_run_spec_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(RunSpecError) as refused:
        parse_run_spec(text)
    assert says in str(refused.value)
    assert repr(text) in str(refused.value)


def test_a_run_spec_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="needs a sequence length"):
        parse_run_spec("qwen3-8b:lora")


def test_a_run_built_directly_is_held_to_the_same_rules() -> None:
    with pytest.raises(RunSpecError, match="needs a sequence length"):
        RunSpec("qwen3-8b", "full_finetune")
    with pytest.raises(RunSpecError, match="LoRA rank goes with method lora"):
        RunSpec("qwen3-8b", "full_finetune", seq=2048, lora_rank=16)
    with pytest.raises(RunSpecError, match="decode run needs an engine"):
        RunSpec("qwen3-8b", "inference")
    with pytest.raises(RunSpecError, match="encode run takes only a batch and a sequence length"):
        RunSpec("bge-m3", "encode", seq=512, checkpointing=True)


def test_an_encoder_is_built_as_bert_with_the_kbs_shapes() -> None:
    """bge-m3's published config.json (XLMRobertaModel): 24 layers, hidden 1024, 16 heads, intermediate
    4096, vocabulary 250,002, 8,194 positions, one token type; built as BERT, whose shapes are the same."""
    built = hf_config("bge-m3", KB)
    assert built.model_type == "bert"
    assert built.kwargs == {
        "vocab_size": 250002,
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "max_position_embeddings": 8194,
        "type_vocab_size": 1,
        "hidden_act": "gelu",
    }


def test_an_encode_result_is_tokens_over_the_median_pass() -> None:
    """bge-m3, 64 x 512 tokens on an H100 (data/calibration/h100-2026-11-26.json): 46.65 ms a pass."""
    result = encode_result(
        parse_run_spec("bge-m3:encode:b64:s512"),
        params=567_754_752,
        weights_bytes=1_135_509_504,
        pass_times_s=[0.05, 0.04665, 0.04665, 0.047, 0.046],
        peak_allocated_bytes=1_875_000_000,
        peak_reserved_bytes=2_286_000_000,
    )
    assert result["method"] == "encode"
    assert result["pass_ms"] == 46.65
    assert result["tokens_per_s"] == pytest.approx(64 * 512 / 0.04665, abs=0.1)
    assert result["weights_gb"] == 1.136


def test_run_lists_and_specs_resolve_in_order_each_run_once() -> None:
    runs = resolve_runs(["qwen3-8b:lora:b4:s2048:ckpt", "default", "extended", "all"])
    names = [spec.name for spec in runs]
    assert names[0] == "qwen3-8b:lora:b4:s2048:r16:ckpt"
    assert len(names) == len(set(names)) == 19
    assert names[1:] == [spec.name for spec in DEFAULT_RUNS + EXTENDED_RUNS if spec.name != names[0]]


def test_an_unknown_list_name_is_refused_as_a_run_spec() -> None:
    with pytest.raises(RunSpecError, match="expected MODEL:METHOD"):
        resolve_runs(["defaults"])


def test_only_keeps_runs_by_model_by_pattern_and_by_any_spelling_of_a_spec() -> None:
    runs = list(DEFAULT_RUNS)
    assert [s.name for s in select_runs(runs, ["qwen3-0-6b"])] == ["qwen3-0-6b:full:b8:s2048"]
    assert [s.name for s in select_runs(runs, ["qwen3-8b:decode:static:*"])] == [
        "qwen3-8b:decode:static:b1:p128:n256",
        "qwen3-8b:decode:static:b32:p128:n256",
    ]
    assert [s.name for s in select_runs(runs, ["qwen3-8b:lora:b4:s2048:ckpt", "qwen3-0-6b"])] == [
        "qwen3-0-6b:full:b8:s2048",
        "qwen3-8b:lora:b4:s2048:r16:ckpt",
    ]
    assert select_runs(runs, []) == runs


def test_only_matching_nothing_is_an_error_listing_the_runs() -> None:
    with pytest.raises(RunSpecError, match=r"--only llama-3-1-8b matches none of the runs: qwen3-0-6b:full"):
        select_runs(list(DEFAULT_RUNS), ["llama-3-1-8b"])


def test_every_model_of_the_run_lists_is_in_the_kb() -> None:
    check_models_exist(DEFAULT_RUNS + EXTENDED_RUNS, KB)
    for model in {spec.model for spec in DEFAULT_RUNS + EXTENDED_RUNS}:
        assert (KB / "models" / f"{model}.yaml").is_file()


def test_a_model_not_in_the_kb_is_named_with_near_misses() -> None:
    with pytest.raises(RunSpecError, match=r"qwen3-9b \(did you mean qwen3-5-9b, qwen3-8b"):
        check_models_exist([parse_run_spec("qwen3-9b:decode")], KB)


# The run lists


def workload(run: dict[str, Any]) -> tuple[Any, ...]:
    """What a run measured, without what it found: the fields a RunSpec decides."""
    keys = ("model", "method", "batch", "seq", "checkpointing", "gradient_accumulation", "lora_rank")
    return tuple(run.get(key) for key in (*keys, "engine", "prompt", "new_tokens"))


def spec_workload(spec: RunSpec) -> tuple[Any, ...]:
    if spec.training:
        as_run = {
            "model": spec.model,
            "method": spec.method,
            "batch": spec.batch,
            "seq": spec.seq,
            "checkpointing": spec.checkpointing,
            "gradient_accumulation": spec.gradient_accumulation,
            "lora_rank": spec.lora_rank,
        }
    else:
        as_run = {
            "model": spec.model,
            "method": spec.method,
            "batch": spec.batch,
            "engine": spec.engine,
            "prompt": spec.prompt,
            "new_tokens": spec.new_tokens,
        }
    return workload(as_run)


def test_the_default_runs_are_the_example_files_eleven_workloads_in_order(example: dict[str, Any]) -> None:
    assert len(example["runs"]) == 11
    assert [spec_workload(spec) for spec in DEFAULT_RUNS] == [workload(run) for run in example["runs"]]


def test_the_80gb_list_is_the_h100_files_runs_in_order() -> None:
    """data/calibration/h100-2026-11-26.json was measured with these runs (in three sittings): the
    runs it holds, in order, then those it records as failed."""
    from engine.planning.calibration import load

    measured = load(KB.parent / "data" / "calibration" / "h100-2026-11-26.json")
    specs = calibrate.RUN_LISTS["80gb"]
    done = len(measured.runs)
    assert len(specs) == done + len(measured.failures) == 46
    assert [(s.model, s.method, s.batch) for s in specs[:done]] == [
        (run.model, run.method, run.batch) for run in measured.runs
    ]
    assert [f.run for f in measured.failures] == [s.name for s in specs[done:]]


def test_the_eager_hosts_list_is_the_two_files_of_2026_11_27() -> None:
    """The runs of h200-2026-11-27.json and -b.json, two H200 machines measured with this list (each a
    part of it): every run in them is in the list, and every run of the list is in one of them."""
    from engine.planning.calibration import load

    folder = KB.parent / "data" / "calibration"
    measured = [
        run for name in ("h200-2026-11-27.json", "h200-2026-11-27-b.json") for run in load(folder / name).runs
    ]

    def workload(run: Any) -> tuple[object, ...]:
        return (run.model, run.batch, run.prompt, run.new_tokens, run.engine)

    listed = {
        (s.model, s.batch, s.prompt, s.new_tokens, s.engine) for s in calibrate.RUN_LISTS["eager-hosts"]
    }
    assert {workload(run) for run in measured} == listed


def test_the_extended_runs_add_the_shapes_asked_for() -> None:
    names = {spec.name for spec in EXTENDED_RUNS}
    assert not names & {spec.name for spec in DEFAULT_RUNS}
    llama_full = [s for s in EXTENDED_RUNS if s.model.startswith("llama") and s.method == "full_finetune"]
    assert [s.seq for s in llama_full if s.checkpointing] == [4096, 8192]
    assert any(s.method == "lora" and s.seq == 8192 for s in EXTENDED_RUNS)
    moe_decode = [s for s in EXTENDED_RUNS if s.model == "qwen3-30b-a3b" and s.method == "inference"]
    assert sorted(s.batch for s in moe_decode) == [1, 8]
    static = [s for s in EXTENDED_RUNS if s.engine == "hf-static-compile"]
    assert sorted(s.batch for s in static) == [1, 32]
    assert all(hf_config(s.model, KB).model_type in {"llama", "qwen3_moe"} for s in EXTENDED_RUNS)


def test_the_families_list_measures_the_new_families_most_telling_first() -> None:
    """About ten shapes for one H200: Gemma 3 1B's full fine-tune without checkpointing first (its
    logits dominate), every model buildable from its KB entry, LoRA only where adapters reach every
    projection (no experts), and the decodes asked for: Gemma 2 9B and Phi-4 at b1/p128/n64 and
    b8/p1024/n32, and a mixture of experts at batch 1 and 8."""
    runs = calibrate.RUN_LISTS["families"]
    assert runs == calibrate.FAMILY_RUNS and 10 <= len(runs) <= 14
    assert runs[0] == parse_run_spec("gemma-3-1b:full:b8:s2048")
    check_models_exist(runs, KB)
    assert not {spec.name for spec in runs} & {
        spec.name for name, specs in calibrate.RUN_LISTS.items() if name != "families" for spec in specs
    }
    for spec in runs:
        config = hf_config(spec.model, KB)
        assert config.model_type not in {"qwen3", "qwen2", "llama", "mistral", "qwen3_moe", "mixtral"}
        if spec.method == "lora":
            assert lora_targets(spec.model, config)
    decodes = {(s.model, s.batch, s.prompt, s.new_tokens) for s in runs if s.method == "inference"}
    for model in ("gemma-2-9b", "phi-4"):
        assert {(model, 1, 128, 64), (model, 8, 1024, 32)} <= decodes
    assert {b for m, b, _, _ in decodes if m == "gpt-oss-20b"} == {1, 8}
    assert all(s.engine in (None, "hf-eager") for s in runs)


def test_the_breadth_list_measures_what_no_other_list_does_and_fits_one_h200() -> None:
    """data/calibration/h200-2026-11-27-f.json: 23 runs, each buildable from its KB entry and measured
    by no other list; a mixture of eight wide experts first, whose bf16 weights (93 GB) fit a 141 GB
    H200 and no 80 GB card."""
    runs = calibrate.RUN_LISTS["breadth"]
    assert runs == calibrate.BREADTH_RUNS and len(runs) == 23
    assert [(s.model, s.batch) for s in runs[:2]] == [("mixtral-8x7b", 1), ("mixtral-8x7b", 8)]
    check_models_exist(runs, KB)
    others = {spec.name for name, specs in calibrate.RUN_LISTS.items() if name != "breadth" for spec in specs}
    assert not {spec.name for spec in runs} & others
    for spec in runs:
        config = hf_config(spec.model, KB)  # raises UnsupportedModel for a family it cannot build
        if spec.method == "lora":
            assert lora_targets(spec.model, config)
    assert {s.method for s in runs} == {"full_finetune", "lora", "inference", "encode"}
    assert max(s.seq or 0 for s in runs) == 32768
    assert any(s.gradient_accumulation > 1 for s in runs)


# KB to Hugging Face config

KB_TO_HF = {
    "n_layers": "num_hidden_layers",
    "hidden_size": "hidden_size",
    "n_heads": "num_attention_heads",
    "n_kv_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "intermediate_size": "intermediate_size",
    "vocab_size": "vocab_size",
    "max_position_embeddings": "max_position_embeddings",
    "tie_word_embeddings": "tie_word_embeddings",
    "attention_bias": "attention_bias",
}


@pytest.mark.parametrize("model", ["qwen3-0-6b", "qwen3-8b"])
def test_a_dense_qwen3_maps_every_kb_shape_to_its_transformers_name(model: str) -> None:
    arch = load_kb_model(model, KB)["architecture"]
    config = hf_config(model, KB)
    assert config.model_type == "qwen3"
    for kb_key, hf_key in KB_TO_HF.items():
        assert config.kwargs[hf_key] == arch[kb_key], kb_key
    assert config.kwargs["hidden_act"] == "silu"
    assert config.kwargs["use_sliding_window"] is False
    assert not any("expert" in key for key in config.kwargs)


def test_the_qwen3_shapes_are_the_kbs_own_numbers() -> None:
    small, large = hf_config("qwen3-0-6b", KB).kwargs, hf_config("qwen3-8b", KB).kwargs
    assert (small["num_hidden_layers"], small["hidden_size"], small["head_dim"]) == (28, 1024, 128)
    assert small["tie_word_embeddings"] is True
    assert (large["num_hidden_layers"], large["intermediate_size"], large["num_key_value_heads"]) == (
        36,
        12288,
        8,
    )
    assert large["tie_word_embeddings"] is False
    assert small["vocab_size"] == large["vocab_size"] == 151936


@pytest.mark.parametrize("model", ["qwen3-8b", "qwen3-30b-a3b"])
def test_the_mapping_agrees_with_the_published_config_json(model: str) -> None:
    published = json.loads((HF_FIXTURES / f"{model}.json").read_text(encoding="utf-8"))
    config = hf_config(model, KB)
    assert config.model_type == published["model_type"]
    assert {key: published.get(key, "(absent)") for key in config.kwargs} == config.kwargs


def test_an_moe_qwen3_is_built_as_qwen3_moe_with_its_experts() -> None:
    config = hf_config("qwen3-30b-a3b", KB)
    assert config.model_type == "qwen3_moe"
    assert (config.kwargs["num_experts"], config.kwargs["num_experts_per_tok"]) == (128, 8)
    assert config.kwargs["moe_intermediate_size"] == 768
    assert (
        config.kwargs["head_dim"]
        == 128
        != config.kwargs["hidden_size"] // config.kwargs["num_attention_heads"]
    )


def test_a_llama_has_no_qk_norm_and_keeps_its_own_head_dim() -> None:
    config = hf_config("llama-3-2-1b", KB)
    assert config.model_type == "llama"
    assert (config.kwargs["head_dim"], config.kwargs["tie_word_embeddings"]) == (64, True)
    assert config.kwargs["mlp_bias"] is False
    assert hf_config("llama-3-1-8b", KB).kwargs["vocab_size"] == 128256


def test_a_mistral_without_a_window_is_not_given_transformers_default_window() -> None:
    assert hf_config("mistral-nemo-12b", KB).kwargs["sliding_window"] is None
    assert hf_config("mistral-7b", KB).kwargs["sliding_window"] == 4096


def test_qwen2_5_is_built_without_head_dim_because_qwen2_derives_it() -> None:
    config = hf_config("qwen2-5-7b", KB)
    assert config.model_type == "qwen2"
    assert "head_dim" not in config.kwargs


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("gpt2-xl", "gpt2-xl: family 'gpt-2' is not supported by bench.calibrate"),
        (
            "deepseek-v3",
            "deepseek-v3: family 'deepseek-v3' is not supported by bench.calibrate for mixture-of-experts",
        ),
        ("modernbert-base", "modernbert-base (encoder, built as bert): position_embedding 'rope'"),
        ("mistral-small-3-1", "mistral-small-3-1 (mistral-small, built as mistral): a vision encoder"),
        ("resnet-50", "resnet-50: "),
    ],
)
def test_a_model_this_harness_cannot_build_is_an_error_naming_it(model: str, says: str) -> None:
    with pytest.raises(UnsupportedModel) as refused:
        hf_config(model, KB)
    assert says in str(refused.value)


def qwen3_8b_with(**changes: Any) -> dict[str, Any]:
    entry = load_kb_model("qwen3-8b", KB)
    entry["architecture"] = {**entry["architecture"], **changes}
    return entry


@pytest.mark.parametrize(
    ("family", "changes", "says"),
    [
        ("llama-3", {}, "qk_norm true: llama differs"),
        ("qwen3", {"qk_norm": False}, "qk_norm false: qwen3 differs"),
        ("qwen3", {"sliding_window": 4096}, "a sliding window, which qwen3 is not built with"),
        ("qwen3", {"mlp": "dense"}, "mlp 'dense'"),
        ("qwen3", {"kv_lora_rank": 512}, "multi-head latent attention"),
        ("qwen3", {"n_experts": 64, "experts_per_token": 4}, "an MoE without moe_intermediate_size"),
        ("qwen2.5", {"qk_norm": False}, "qwen2 has q, k, v biases"),
        (
            "mistral",
            {"qk_norm": False, "attention_bias": True},
            "attention biases, which mistral does not have",
        ),
    ],
)
def test_a_kb_feature_the_model_type_cannot_express_is_refused(
    family: str, changes: dict[str, Any], says: str
) -> None:
    entry = {**qwen3_8b_with(**changes), "family": family}
    with pytest.raises(UnsupportedModel) as refused:
        hf_config_from_kb(entry)
    assert str(refused.value).startswith(f"qwen3-8b ({family}, built as ")
    assert says in str(refused.value)


def test_a_missing_shape_is_named() -> None:
    entry = load_kb_model("qwen3-8b", KB)
    del entry["architecture"]["head_dim"]
    with pytest.raises(UnsupportedModel, match="the architecture lacks head_dim"):
        hf_config_from_kb(entry)


# KB to Hugging Face config: Gemma, Phi, SmolLM3, gpt-oss, DeepSeek-V2

NEW_FAMILIES = {
    "gemma-2-2b": "gemma2",
    "gemma-2-9b": "gemma2",
    "gemma-2-27b": "gemma2",
    "gemma-3-1b": "gemma3_text",
    "phi-3-mini": "phi3",
    "phi-4-mini": "phi3",
    "phi-4": "phi3",
    "smollm3-3b": "smollm3",
    "gpt-oss-20b": "gpt_oss",
    "gpt-oss-120b": "gpt_oss",
    "deepseek-v2-lite": "deepseek_v2",
}


def count_params(model_type: str, kw: dict[str, Any]) -> int:
    """The parameters transformers 5.17 builds from these kwargs, module by module (the figures agree
    with `sum(p.numel())` of each model built on the meta device): embeddings (and an untied head), the
    final norm, and per layer the attention, its norms and the MLP or experts."""
    h, heads, kv = kw["hidden_size"], kw["num_attention_heads"], kw["num_key_value_heads"]
    head = kw.get("head_dim", h // heads)
    q, k, inter = heads * head, kv * head, kw["intermediate_size"]
    attention = 2 * h * q + 2 * h * k + (q + 2 * k + h if kw.get("attention_bias") else 0)
    norms = (4 if model_type in {"gemma2", "gemma3_text"} else 2) * h
    norms += 2 * head if model_type == "gemma3_text" else 0
    mlp = 3 * h * inter + (2 * inter + h if kw.get("mlp_bias") else 0)
    layers = kw["num_hidden_layers"] * (attention + norms + mlp)
    if model_type == "gpt_oss":
        experts = kw["num_local_experts"]
        expert = 3 * h * inter + 2 * inter + h
        layers = kw["num_hidden_layers"] * (attention + heads + norms + experts * (expert + h + 1))
    if model_type == "deepseek_v2":
        rope, nope, v, rank = (
            kw[key] for key in ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "kv_lora_rank")
        )
        latent = (
            h * heads * (nope + rope) + h * (rank + rope) + rank + rank * heads * (nope + v) + heads * v * h
        )
        width, routed = kw["moe_intermediate_size"], kw["n_routed_experts"]
        moe = routed * h + routed * 3 * h * width + 3 * h * width * kw["n_shared_experts"]
        dense = kw["first_k_dense_replace"]
        layers = kw["num_hidden_layers"] * (latent + norms) + dense * mlp
        layers += (kw["num_hidden_layers"] - dense) * moe
    embeddings = kw["vocab_size"] * h * (1 if kw["tie_word_embeddings"] else 2)
    return embeddings + h + layers


@pytest.mark.parametrize(("model", "model_type"), NEW_FAMILIES.items())
def test_a_new_family_is_built_with_exactly_the_parameters_the_model_has(model: str, model_type: str) -> None:
    """The KB's exact count where it has one. gpt-oss and DeepSeek-V2-Lite have only a rounded published
    figure (20.9B, 116.8B, 15.7B); their exact counts here are those of the models built on the meta
    device (transformers 5.17). DeepSeek-V2-Lite's equals the advisor's own module count; gpt-oss's is
    2,304 (20b) and 6,912 (120b) above it: each layer's attention sinks (one per head) and router biases,
    which the KB notes leave out."""
    entry = load_kb_model(model, KB)
    config = hf_config(model, KB)
    assert config.model_type == model_type
    counted = count_params(model_type, config.kwargs)
    exact = {
        "gpt-oss-20b": 20_914_757_184,
        "gpt-oss-120b": 116_829_156_672,
        "deepseek-v2-lite": 15_706_484_224,
    }
    assert counted == entry.get("params_count", exact.get(model))
    assert round(counted / 1e9, 1) == round(entry["params_b"], 1)


@pytest.mark.parametrize("model", NEW_FAMILIES)
def test_a_new_family_maps_every_kb_shape_to_its_transformers_name(model: str) -> None:
    arch = load_kb_model(model, KB)["architecture"]
    kwargs = hf_config(model, KB).kwargs
    for kb_key, hf_key in KB_TO_HF.items():
        if hf_key in kwargs:
            assert kwargs[hf_key] == arch.get(kb_key, False), kb_key
    assert kwargs["num_hidden_layers"] == arch["n_layers"]
    assert kwargs["num_key_value_heads"] == arch["n_kv_heads"]


def test_gemma_2_is_built_with_geglu_and_a_window_on_every_other_layer() -> None:
    kwargs = hf_config("gemma-2-2b", KB).kwargs
    assert kwargs == {
        "vocab_size": 256000,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "hidden_activation": "gelu_pytorch_tanh",
        "head_dim": 256,
        "attention_bias": False,
        "sliding_window": 4096,
        "layer_types": ["sliding_attention", "full_attention"] * 13,
    }


def test_gemma_2_agrees_with_the_published_config_json() -> None:
    """Every kwarg the published gemma-2-9b-it config.json holds has its value; the layer types it leaves
    to Gemma2Config (a window on layers 0, 2, 4...) are written out, and the head is tied by default."""
    published = json.loads((HF_FIXTURES / "gemma-2-9b-it.json").read_text(encoding="utf-8"))
    config = hf_config("gemma-2-9b", KB)
    assert config.model_type == published["model_type"]
    written_out = {"layer_types", "tie_word_embeddings"}
    assert {key: published[key] for key in config.kwargs.keys() - written_out} == {
        key: value for key, value in config.kwargs.items() if key not in written_out
    }
    local = config.kwargs["layer_types"].count("sliding_attention")
    assert local == load_kb_model("gemma-2-9b", KB)["architecture"]["sliding_window_layers"] == 21
    assert config.kwargs["layer_types"][0] == "sliding_attention"


def test_gemma_3_1b_has_five_local_layers_to_a_global_one_and_qk_norm() -> None:
    arch = load_kb_model("gemma-3-1b", KB)["architecture"]
    config = hf_config("gemma-3-1b", KB)
    assert config.model_type == "gemma3_text"
    types = config.kwargs["layer_types"]
    assert [i for i, t in enumerate(types) if t == "full_attention"] == [5, 11, 17, 23]
    assert types.count("sliding_attention") == arch["sliding_window_layers"] == 22
    assert (config.kwargs["sliding_window"], config.kwargs["vocab_size"]) == (512, 262144)
    assert config.kwargs["hidden_activation"] == "gelu_pytorch_tanh"
    assert "hidden_act" not in config.kwargs


@pytest.mark.parametrize(("model", "extra"), [("gemma-3-4b", 419_816_304), ("gemma-3-12b", 421_290_864)])
def test_a_gemma_3_with_a_vision_encoder_is_refused_naming_it(model: str, extra: int) -> None:
    """The language model could be built (gemma3_text), but a run named for the model would then
    measure without the vision tower the KB counts in it and a plan holds in memory."""
    with pytest.raises(UnsupportedModel) as refused:
        hf_config(model, KB)
    says = str(refused.value)
    assert says.startswith(f"{model} (gemma-3, built as gemma3_text): a vision encoder and projector")
    assert f"{extra:,} parameters" in says


@pytest.mark.parametrize("model", ["phi-3-mini", "phi-4-mini", "phi-4"])
def test_phi_is_built_as_phi3_without_head_dim_or_biases(model: str) -> None:
    """Phi3Config has no head_dim (the model takes hidden / heads, which the KB's head_dim equals) and
    no bias switch; no window is set, as the KB records none."""
    arch = load_kb_model(model, KB)["architecture"]
    kwargs = hf_config(model, KB).kwargs
    assert not {"head_dim", "attention_bias", "mlp_bias", "layer_types"} & kwargs.keys()
    assert kwargs["hidden_size"] // kwargs["num_attention_heads"] == arch["head_dim"]
    assert kwargs["sliding_window"] is None
    assert kwargs["hidden_act"] == "silu"


def test_phi_4_mini_rotates_part_of_each_head_only_where_the_kb_says_so() -> None:
    """No KB field holds Phi-4-mini's partial_rotary_factor (0.75) yet; no shape depends on it."""
    assert "partial_rotary_factor" not in hf_config("phi-4-mini", KB).kwargs
    entry = load_kb_model("phi-4-mini", KB)
    entry["architecture"]["partial_rotary_factor"] = 0.75
    assert hf_config_from_kb(entry).kwargs["partial_rotary_factor"] == 0.75


def test_smollm3_is_built_without_a_window_and_derives_its_head_dim() -> None:
    kwargs = hf_config("smollm3-3b", KB).kwargs
    assert kwargs["use_sliding_window"] is False
    assert "head_dim" not in kwargs
    assert (kwargs["attention_bias"], kwargs["mlp_bias"], kwargs["tie_word_embeddings"]) == (
        False,
        False,
        True,
    )


def test_gpt_oss_is_built_with_its_experts_biases_and_alternating_window() -> None:
    kwargs = hf_config("gpt-oss-20b", KB).kwargs
    assert (kwargs["num_local_experts"], kwargs["num_experts_per_tok"]) == (32, 4)
    assert (kwargs["head_dim"], kwargs["attention_bias"], kwargs["sliding_window"]) == (64, True, 128)
    assert kwargs["layer_types"] == ["sliding_attention", "full_attention"] * 12


def test_deepseek_v2_lite_is_built_with_latent_attention_shared_experts_and_a_dense_first_layer() -> None:
    kwargs = hf_config("deepseek-v2-lite", KB).kwargs
    assert {
        key: kwargs[key] for key in ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim")
    } == {
        "kv_lora_rank": 512,
        "q_lora_rank": None,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
    }
    assert (kwargs["n_routed_experts"], kwargs["n_shared_experts"], kwargs["num_experts_per_tok"]) == (
        64,
        2,
        6,
    )
    assert (kwargs["moe_intermediate_size"], kwargs["first_k_dense_replace"]) == (1408, 1)
    assert "head_dim" not in kwargs  # DeepseekV2Config sets it from the rotary part


def entry_with(model: str, **changes: Any) -> dict[str, Any]:
    entry = load_kb_model(model, KB)
    entry["architecture"] = {**entry["architecture"], **changes}
    return entry


@pytest.mark.parametrize(
    ("model", "changes", "says"),
    [
        (
            "gemma-2-2b",
            {"sliding_window_layers": 26},
            "gemma2 has one global layer in every 2 and a window on the others (13 of 26)",
        ),
        (
            "gemma-2-2b",
            {"sliding_window": None, "sliding_window_layers": None},
            "sliding_window None on every layer",
        ),
        ("gemma-2-2b", {"norms_per_layer": 2}, "norms_per_layer other than 4"),
        ("gemma-2-2b", {"mlp_bias": True}, "MLP biases, which gemma2 does not have"),
        ("gemma-3-1b", {"qk_norm": False}, "qk_norm false: gemma3_text differs"),
        ("gemma-3-1b", {"sliding_window_layers": 13}, "(22 of 26)"),
        ("phi-4", {"head_dim": 96}, "phi3 needs head_dim x heads = hidden"),
        ("phi-4", {"attention_bias": True}, "attention biases, which phi3 does not have"),
        ("phi-4", {"sliding_window_layers": 20, "sliding_window": 2047}, "a window on some layers only"),
        ("smollm3-3b", {"sliding_window": 4096}, "a sliding window, which smollm3 is not built with"),
        ("gpt-oss-20b", {"mlp_bias": False}, "gpt_oss's experts and router have biases"),
        ("gpt-oss-20b", {"moe_intermediate_size": 1440}, "gpt_oss's experts are intermediate_size wide"),
        ("deepseek-v2-lite", {"kv_lora_rank": None}, "deepseek_v2 has multi-head latent attention"),
        ("deepseek-v2-lite", {"attention_bias": True}, "attention biases, which deepseek_v2 does not have"),
        ("deepseek-v2-lite", {"moe_intermediate_size": None}, "an MoE without moe_intermediate_size"),
    ],
)
def test_a_new_familys_feature_the_model_type_cannot_express_is_refused(
    model: str, changes: dict[str, Any], says: str
) -> None:
    with pytest.raises(UnsupportedModel) as refused:
        hf_config_from_kb(entry_with(model, **changes))
    assert str(refused.value).startswith(f"{model} (")
    assert says in str(refused.value)


def test_shared_experts_and_dense_layers_are_still_refused_outside_deepseek() -> None:
    entry = {**qwen3_8b_with(n_experts=64, experts_per_token=4, moe_intermediate_size=768), "family": "qwen3"}
    for changes, says in (({"n_shared_experts": 2}, "shared experts"), ({"moe_layers": 30}, "moe_layers")):
        with pytest.raises(UnsupportedModel, match=says):
            hf_config_from_kb({**entry, "architecture": {**entry["architecture"], **changes}})


def test_lora_adapts_phis_fused_projections_and_is_refused_on_latent_attention() -> None:
    assert lora_targets("phi-4", hf_config("phi-4", KB)) == (
        "qkv_proj",
        "o_proj",
        "gate_up_proj",
        "down_proj",
    )
    assert lora_targets("gemma-2-9b", hf_config("gemma-2-9b", KB)) == calibrate.LORA_TARGETS
    for model in ("gpt-oss-20b", "qwen3-30b-a3b", "mixtral-8x7b"):
        assert lora_targets(model, hf_config(model, KB)) == calibrate.LORA_TARGETS
    with pytest.raises(UnsupportedModel, match=r"deepseek-v2-lite .*LoRA on latent attention"):
        lora_targets("deepseek-v2-lite", hf_config("deepseek-v2-lite", KB))


def test_the_experts_3d_weights_are_adapted_through_target_parameters() -> None:
    """transformers 5 keeps an MoE layer's experts as 3-D parameters (experts x out x in), which peft's
    target_modules do not reach; each is named from its layer on, once, for `target_parameters`. The
    router (2-D), the biases (gpt-oss's gate_up_proj_bias, 2-D) and a dense model's weights are not."""
    qwen3_moe = [
        ("model.embed_tokens.weight", 2),
        *[(f"model.layers.{i}.self_attn.q_proj.weight", 2) for i in range(2)],
        *[(f"model.layers.{i}.mlp.gate.weight", 2) for i in range(2)],
        *[(f"model.layers.{i}.mlp.experts.{n}", 3) for i in range(2) for n in ("gate_up_proj", "down_proj")],
        ("model.layers.1.mlp.experts.gate_up_proj_bias", 2),
        ("lm_head.weight", 2),
    ]
    assert expert_parameter_targets(qwen3_moe) == ("mlp.experts.gate_up_proj", "mlp.experts.down_proj")
    dense = [("model.layers.0.mlp.gate_proj.weight", 2), ("model.layers.0.mlp.down_proj.weight", 2)]
    assert expert_parameter_targets(dense) == ()


def test_the_moe_lora_list_adapts_experts_no_other_list_measures() -> None:
    """LoRA on three mixtures of experts, each buildable and adapted on attention and experts, none
    measured by another list, each within an H200's 141 GB as the advisor sizes it."""
    runs = calibrate.RUN_LISTS["moe-lora"]
    assert runs == calibrate.MOE_LORA_RUNS and {s.method for s in runs} == {"lora"}
    check_models_exist(runs, KB)
    others = {
        spec.name for name, specs in calibrate.RUN_LISTS.items() if name != "moe-lora" for spec in specs
    }
    assert not {spec.name for spec in runs} & others
    assert {spec.model for spec in runs} == {"qwen3-30b-a3b", "gpt-oss-20b", "mixtral-8x7b"}
    for spec in runs:
        config = hf_config(spec.model, KB)
        assert config.model_type in {"qwen3_moe", "gpt_oss", "mixtral"}
        assert lora_targets(spec.model, config) == calibrate.LORA_TARGETS


def test_gpt_oss_alone_is_built_with_eager_attention() -> None:
    """transformers 5.17's GptOss refuses SDPA (its attention sinks); every other type here has it."""
    assert calibrate.attention_implementation("gpt_oss") == "eager"
    others = {hf_config(model, KB).model_type for model in NEW_FAMILIES} - {"gpt_oss"}
    assert {calibrate.attention_implementation(t) for t in others} == {"sdpa"}


def test_the_method_text_says_what_differs_for_the_new_families() -> None:
    runs = [{"model": "gemma-2-9b", "method": "lora"}, {"model": "gpt-oss-20b", "method": "inference"}]
    runs.append({"model": "phi-4", "method": "lora"})
    types = {"gemma-2-9b": "gemma2", "gpt-oss-20b": "gpt_oss", "phi-4": "phi3"}
    text = " ".join(method_text(runs, types, {}).split())
    assert "SDPA attention (eager for gpt_oss: no SDPA path)" in text
    assert "does not apply Gemma 2's attention-logit soft-capping" in text
    assert "LoRA adapts qkv_proj, o_proj, gate_up_proj, down_proj" in text
    plain = " ".join(method_text([runs[0]], {"gemma-2-9b": "qwen3"}, {}).split())
    assert "SDPA attention)" in plain and "soft-capping" not in plain


# Figures


def example_run(example: dict[str, Any], **where: Any) -> dict[str, Any]:
    found = [run for run in example["runs"] if all(run.get(k) == v for k, v in where.items())]
    assert len(found) == 1, where
    return dict(found[0])


def test_a_training_result_reproduces_the_example_files_figures(example: dict[str, Any]) -> None:
    run = example_run(example, method="lora", batch=1)
    spec = parse_run_spec("qwen3-8b:lora:b1:s2048")
    result = training_result(
        spec,
        params=run["params"],
        trainable_params=run["trainable_params"],
        weights_bytes=int(run["weights_gb"] * 1e9),
        step_times_s=[0.5, run["step_s"], run["step_s"], 0.1, run["step_s"]],
        peak_allocated_bytes=int(run["peak_allocated_gb"] * 1e9),
        peak_reserved_bytes=int(run["peak_reserved_gb"] * 1e9),
    )
    # The file's tokens/s came from the unrounded step time (0.2281 s is rounded): 2048 / 0.2281 = 8978.5.
    assert result.pop("tokens_per_s") == pytest.approx(run.pop("tokens_per_s"), rel=1e-4)
    assert result == run


def test_a_full_finetune_result_leaves_out_lora_fields(example: dict[str, Any]) -> None:
    run = example_run(example, model="qwen3-0-6b")
    result = training_result(
        parse_run_spec("qwen3-0-6b:full:b8:s2048"),
        params=run["params"],
        trainable_params=run["params"],
        weights_bytes=int(run["weights_gb"] * 1e9),
        step_times_s=[run["step_s"]] * 5,
        peak_allocated_bytes=int(run["peak_allocated_gb"] * 1e9),
        peak_reserved_bytes=int(run["peak_reserved_gb"] * 1e9),
    )
    assert "trainable_params" not in result and "lora_rank" not in result
    assert result["mfu_6PD_vs_989"] == run["mfu_6PD_vs_989"] == 0.161
    assert result["tokens_per_s"] == pytest.approx(run["tokens_per_s"], rel=1e-3)


def test_a_utilisation_above_the_h100s_peak_is_kept() -> None:
    """mfu_6PD_vs_989 divides by the H100/H200 peak: a faster GPU (a B200) may pass 1, and says so."""
    result = training_result(
        parse_run_spec("qwen3-8b:full:b8:s2048"),
        params=10**12,
        trainable_params=10**12,
        weights_bytes=4 * 10**12,
        step_times_s=[1.0],
        peak_allocated_bytes=5 * 10**12,
        peak_reserved_bytes=5 * 10**12,
    )
    assert result["mfu_6PD_vs_989"] > 1
    assert {"step_s", "tokens_per_s", "peak_allocated_gb"} <= set(result)


@pytest.mark.parametrize("batch", [1, 32])
def test_a_decode_result_reproduces_the_example_files_figures(example: dict[str, Any], batch: int) -> None:
    run = example_run(example, engine="hf-eager", batch=batch)
    prefill = 0.25
    # a generate of n new tokens is the prompt's forward pass and n - 1 decode steps
    full = prefill + run["decode_ms_per_step"] / 1000 * (run["new_tokens"] - 1)
    result = decode_result(
        parse_run_spec(f"qwen3-8b:decode:eager:b{batch}:p128:n128"),
        weights_bytes=int(run["weights_gb"] * 1e9),
        full_times_s=[full + 1.0, full, full - 0.0],
        prefill_times_s=[prefill, prefill, 9.0],
        warm0_s=run["warm0_s"],
        warm1_s=None,
        peak_allocated_bytes=int(run["peak_allocated_gb"] * 1e9),
    )
    # the example file predates the prefill and generate figures: the median one-token and n-token
    # generates, in milliseconds
    assert result.pop("prefill_ms") == 250.0
    assert result.pop("generate_ms") == pytest.approx(full * 1000, abs=0.001)
    assert result == run


def test_a_static_decode_keeps_both_warm_up_times(example: dict[str, Any]) -> None:
    run = example_run(example, engine="hf-static-compile", batch=32)
    prefill = 0.2
    result = decode_result(
        parse_run_spec("qwen3-8b:decode:static:b32:p128:n256"),
        weights_bytes=int(run["weights_gb"] * 1e9),
        full_times_s=[prefill + run["decode_ms_per_step"] / 1000 * 255] * 3,
        prefill_times_s=[prefill] * 3,
        warm0_s=run["warm0_s"],
        warm1_s=run["warm1_s"],
        peak_allocated_bytes=int(run["peak_allocated_gb"] * 1e9),
    )
    assert result.pop("prefill_ms") == 200.0
    assert result.pop("generate_ms") > 200.0
    assert result == run


def test_a_decode_step_is_the_difference_over_the_steps_between_the_two_generates() -> None:
    """16 new tokens are one prompt pass and 15 steps: 1.0 s more than the prompt's 0.5 s is 66.7 ms a
    step (transformers' generate, one forward pass a new token)."""
    result = decode_result(
        parse_run_spec("qwen3-30b-a3b:decode:eager:b4:p1024:n16"),
        weights_bytes=61 * 10**9,
        full_times_s=[1.5] * 3,
        prefill_times_s=[0.5] * 3,
        warm0_s=2.0,
        warm1_s=None,
        peak_allocated_bytes=62 * 10**9,
        experts_implementation="grouped_mm",
        forward=ForwardProfile(kernels=4438, gpu_busy_s=0.0147, wall_s=0.0921),
    )
    assert result["decode_ms_per_step"] == pytest.approx(1000 / 15, abs=0.001)
    assert result["aggregate_tokens_per_s"] == 60.0
    assert (result["generate_ms"], result["prefill_ms"]) == (1500.0, 500.0)
    assert result["experts_implementation"] == "grouped_mm"
    assert (result["forward_kernels"], result["forward_gpu_busy_ms"], result["forward_ms"]) == (
        4438,
        14.7,
        92.1,
    )


def test_a_decode_of_one_new_token_is_refused_for_it_has_no_step() -> None:
    with pytest.raises(RunSpecError, match="at least 2 new tokens"):
        parse_run_spec("qwen3-8b:decode:n1")


def test_a_decode_no_slower_than_its_prefill_is_a_failed_run_not_a_negative_figure() -> None:
    with pytest.raises(ValueError, match="no decode time to report"):
        decode_result(
            parse_run_spec("qwen3-8b:decode"),
            weights_bytes=16 * 10**9,
            full_times_s=[1.0],
            prefill_times_s=[1.0],
            warm0_s=1.0,
            warm1_s=None,
            peak_allocated_bytes=17 * 10**9,
        )


def test_the_soft_timeout_trips_only_past_its_limit() -> None:
    Deadline(None, start=time.perf_counter() - 10**6).check("anywhere")
    Deadline(60.0).check("at once")
    with pytest.raises(RunTimeout, match=r"over --timeout-per-run 5 s \(before step 3\)"):
        Deadline(5.0, start=time.perf_counter() - 6).check("before step 3")


# The document


def test_the_example_files_parts_build_a_valid_document_equal_to_it(example: dict[str, Any]) -> None:
    document = build_document(
        device=example["device"],
        stack=example["stack"],
        runs=example["runs"],
        method=example["method"],
        measured_on=date.fromisoformat(example["date"]),
        elapsed_s=example["elapsed_s"],
    )
    assert document == CalibrationFile.model_validate(example)
    assert CalibrationFile.model_validate_json(document_json(document)) == document


def test_a_document_without_runs_is_not_valid(example: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        build_document(
            device=example["device"], stack=example["stack"], runs=[], method="m", measured_on=date.today()
        )


def test_a_run_with_an_unknown_field_is_not_valid(example: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        build_document(
            device=example["device"],
            stack=example["stack"],
            runs=[{**example["runs"][0], "flops": 1.0}],
            method="m",
            measured_on=date.today(),
        )


def test_the_method_text_says_how_each_kind_of_figure_was_taken(example: dict[str, Any]) -> None:
    types = {"qwen3-0-6b": "qwen3", "qwen3-1-7b": "qwen3", "qwen3-8b": "qwen3"}
    text = method_text(example["runs"], types, example["device"])
    assert text.startswith("- Models: qwen3-0-6b, qwen3-1-7b, qwen3-8b, each built from its KB architecture")
    for words in (
        'AutoConfig.for_model("qwen3", ...)',
        "fused `torch.optim.AdamW`",
        "2 warm-up steps then the median of 5",
        "alpha 2r",
        'cache_implementation="static"',
        "(generate time - prefill time) / (new tokens - 1)",
        "an 8192^3 bf16 matmul ran at 788 TFLOP/s",
        "4.27 TB/s counting bytes read and written",
    ):
        assert words in " ".join(text.split()), words
    assert all(len(line) <= 102 for line in text.splitlines())
    decode_only = method_text([r for r in example["runs"] if r["method"] == "inference"], types, {})
    assert "full_finetune" not in decode_only and "mfu_6PD_vs_989" not in decode_only
    assert "matmul" not in decode_only


def test_a_file_is_written_once_and_only_forced_over(example: dict[str, Any], tmp_path: Path) -> None:
    document = CalibrationFile.model_validate(example)
    out = tmp_path / "calibration" / "new.json"
    write_document(document, out, force=False)
    assert CalibrationFile.model_validate_json(out.read_text(encoding="utf-8")) == document
    out.write_text("kept", encoding="utf-8")
    with pytest.raises(FileExistsError):
        write_document(document, out, force=False)
    assert out.read_text(encoding="utf-8") == "kept"
    write_document(document, out, force=True)
    assert CalibrationFile.model_validate_json(out.read_text(encoding="utf-8")) == document
    assert sorted(p.name for p in out.parent.iterdir()) == ["new.json"]


# The run loop and the command line, with stand-ins for torch and the measurements


class FakeTorch:
    """Just what the run loop and main touch: freeing memory and asking for a GPU."""

    def __init__(self, free_fails_after: int | None = None) -> None:
        self.frees = 0
        self.free_fails_after = free_fails_after
        self._dynamo = SimpleNamespace(reset=lambda: None)
        self.cuda = SimpleNamespace(
            is_available=lambda: True, synchronize=self._synchronize, empty_cache=lambda: None
        )

    def _synchronize(self) -> None:
        self.frees += 1
        if self.free_fails_after is not None and self.frees > self.free_fails_after:
            raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore")


def fake_training(spec: RunSpec, entry: dict[str, Any], hf: Any, deadline: Deadline) -> dict[str, Any]:
    if spec.batch == 8:
        raise RuntimeError("CUDA out of memory. Tried to allocate 9.28 GiB\nsecond line")
    return {"model": spec.model, "method": spec.method, "measured": True}


def test_a_failed_run_is_recorded_and_the_next_runs_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTorch()
    monkeypatch.setattr(calibrate, "_import", lambda name: fake)
    monkeypatch.setattr(calibrate, "measure_training", fake_training)
    runs = resolve_runs(["qwen3-0-6b:full:b8:s2048", "gpt2-xl:full:s2048", "qwen3-1-7b:full:b4:s2048"])
    measured, failures, types = calibrate.measure_runs(runs, KB, None)
    assert measured == [{"model": "qwen3-1-7b", "method": "full_finetune", "measured": True}]
    assert failures == [
        Failure("qwen3-0-6b:full:b8:s2048", "RuntimeError: CUDA out of memory. Tried to allocate 9.28 GiB"),
        Failure(
            "gpt2-xl:full:b1:s2048",
            "UnsupportedModel: gpt2-xl: family 'gpt-2' is not supported by bench.calibrate; "
            "supported families: gemma-2, gemma-3, llama-2, llama-3, mistral, mistral-nemo, mistral-small, "
            "phi-3, phi-4, qwen2.5, qwen3, smollm2, smollm3, tinyllama",
        ),
    ]
    assert types == {"qwen3-1-7b": "qwen3"}
    assert fake.frees == len(runs)


def test_ctrl_c_keeps_what_was_measured_and_records_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(spec: RunSpec, *args: Any) -> dict[str, Any]:
        if spec.model == "qwen3-1-7b":
            raise KeyboardInterrupt
        return {"model": spec.model}

    monkeypatch.setattr(calibrate, "_import", lambda name: FakeTorch())
    monkeypatch.setattr(calibrate, "measure_training", interrupted)
    measured, failures, _ = calibrate.measure_runs(list(DEFAULT_RUNS[:4]), KB, None)
    assert measured == [{"model": "qwen3-0-6b"}]
    assert failures == [
        Failure("qwen3-1-7b:full:b4:s2048", "interrupted"),
        Failure("qwen3-1-7b:full:b4:s2048:ckpt", "not run: interrupted"),
        Failure("qwen3-1-7b:full:b8:s2048", "not run: interrupted"),
    ]


def test_a_gpu_that_cannot_be_freed_stops_the_runs_left(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibrate, "_import", lambda name: FakeTorch(free_fails_after=0))
    monkeypatch.setattr(calibrate, "measure_training", fake_training)
    measured, failures, _ = calibrate.measure_runs(list(DEFAULT_RUNS[1:4]), KB, None)
    assert len(measured) == 1
    assert [f.run for f in failures] == ["qwen3-1-7b:full:b4:s2048:ckpt", "qwen3-1-7b:full:b8:s2048"]
    assert failures[0].error == (
        "not run: the GPU was unusable after qwen3-1-7b:full:b4:s2048 "
        "(RuntimeError: CUDA error: an illegal memory access was encountered)"
    )


def test_main_writes_a_valid_file_and_prints_the_failures(
    example: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    measured = [example_run(example, model="qwen3-0-6b")]
    failures = [Failure("qwen3-8b:lora:b4:s2048:r16", "RuntimeError: CUDA out of memory.")]
    monkeypatch.setattr(calibrate, "_import", lambda name: FakeTorch())
    monkeypatch.setattr(calibrate, "measure_device", lambda gpu: {**example["device"], "gpu": gpu})
    monkeypatch.setattr(calibrate, "stack_versions", lambda: example["stack"])
    out = tmp_path / "h100.json"
    in_progress = tmp_path / "h100.json.inprogress"
    kept_while_measuring: list[CalibrationFile] = []

    def fake_runs(runs: Any, kb: Any, timeout: Any, after_each: Any) -> Any:
        after_each(measured, failures, {"qwen3-0-6b": "qwen3"})
        # what was measured so far is on disk, valid, before the harness ends
        kept_while_measuring.append(CalibrationFile.model_validate_json(in_progress.read_text("utf-8")))
        return measured, failures, {"qwen3-0-6b": "qwen3"}

    monkeypatch.setattr(calibrate, "measure_runs", fake_runs)
    status = main(["--gpu", "nvidia-h100-sxm", "--out", str(out), "--runs", "qwen3-0-6b:full:b8:s2048"])
    assert status == 1
    assert len(kept_while_measuring[0].runs) == 1
    assert not in_progress.exists()
    written = CalibrationFile.model_validate_json(out.read_text(encoding="utf-8"))
    assert written.device.gpu == "nvidia-h100-sxm"
    assert written.date == date.today()
    assert [run.model_dump(exclude_none=True) for run in written.runs] == measured
    # the run that ran out of memory is kept in the file, with its error
    assert [(f.run, f.error) for f in written.failures] == [
        ("qwen3-8b:lora:b4:s2048:r16", "RuntimeError: CUDA out of memory.")
    ]
    printed = capsys.readouterr().out
    assert "failures (1):\n  qwen3-8b:lora:b4:s2048:r16: RuntimeError: CUDA out of memory." in printed


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--gpu", "nvidia-h100-sxm"], "--out and --gpu are required"),
        (["--gpu", "nvidia-h100-sxn", "--out", "{out}"], "(did you mean nvidia-h100-sxm"),
        (["--gpu", "nvidia-h100-sxm", "--out", "{existing}"], "exists; pass --force to write over it"),
        (
            ["--gpu", "nvidia-h100-sxm", "--out", "{out}", "--runs", "qwen3-8b:lora"],
            "needs a sequence length",
        ),
        (["--gpu", "nvidia-h100-sxm", "--out", "{out}", "--only", "gemma-2-9b"], "matches none of the runs"),
        (
            ["--gpu", "nvidia-h100-sxm", "--out", "{out}", "--timeout-per-run", "0"],
            "must be a positive number",
        ),
        (["--runs", "qwen3-80b:decode", "--list"], "qwen3-80b"),
    ],
)
def test_main_refuses_bad_arguments_before_touching_a_gpu(
    argv: list[str],
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_gpu(name: str) -> Any:
        raise AssertionError(f"imported {name}")

    monkeypatch.setattr(calibrate, "_import", no_gpu)
    existing = tmp_path / "existing.json"
    existing.write_text("{}", encoding="utf-8")
    args = [a.format(out=tmp_path / "new.json", existing=existing) for a in argv]
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert says in capsys.readouterr().err
    assert existing.read_text(encoding="utf-8") == "{}"
    assert not (tmp_path / "new.json").exists()


def test_the_module_imports_lists_and_refuses_to_measure_without_torch(tmp_path: Path) -> None:
    """In a fresh interpreter where torch, transformers and peft cannot be imported at all."""
    out = tmp_path / "never.json"
    code = f"""
import sys

class NoGpuStack:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {{"torch", "transformers", "peft"}}:
            raise ImportError(f"{{name}} is not installed here")
        return None

sys.meta_path.insert(0, NoGpuStack())
import bench.calibrate as calibrate
assert calibrate.main(["--runs", "all", "--list"]) == 0
assert calibrate.main(["--gpu", "nvidia-h200-sxm", "--out", {str(out)!r}]) == 2
assert not {{"torch", "transformers", "peft"}} & set(sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [spec.name for spec in DEFAULT_RUNS + EXTENDED_RUNS]
    assert "measuring needs torch and transformers" in done.stderr
    assert not out.exists()
