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
    hf_config,
    hf_config_from_kb,
    load_kb_model,
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
    with pytest.raises(RunSpecError, match=r"qwen3-9b \(did you mean qwen3-8b"):
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
        ("gemma-2-9b", "gemma-2-9b: family 'gemma-2' is not supported by bench.calibrate"),
        (
            "gpt-oss-20b",
            "gpt-oss-20b: family 'gpt-oss' is not supported by bench.calibrate for mixture-of-experts",
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
    runs = resolve_runs(["qwen3-0-6b:full:b8:s2048", "gemma-2-9b:full:s2048", "qwen3-1-7b:full:b4:s2048"])
    measured, failures, types = calibrate.measure_runs(runs, KB, None)
    assert measured == [{"model": "qwen3-1-7b", "method": "full_finetune", "measured": True}]
    assert failures == [
        Failure("qwen3-0-6b:full:b8:s2048", "RuntimeError: CUDA out of memory. Tried to allocate 9.28 GiB"),
        Failure(
            "gemma-2-9b:full:b1:s2048",
            "UnsupportedModel: gemma-2-9b: family 'gemma-2' is not supported by bench.calibrate; "
            "supported families: llama-2, llama-3, mistral, mistral-nemo, mistral-small, qwen2.5, qwen3, "
            "smollm2, tinyllama",
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
