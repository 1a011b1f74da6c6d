"""Every prediction held against every GPU measurement in data/calibration: the same workload (model,
method, batch, sequence, checkpointing, precision) sized on the same GPU must land within the band its
quantity states (engine/planning/calibration.py): training memory -5% / +25% (a "fits" must never
OOM), training tokens/s within 25%, serving memory -5% / +35%, decode tokens/s within the band of the
engine that ran it (engine/sizing/serving_engines.py).

The measurements' method is in each file (data/calibration/h200-2026-11-26.json: one H200, PyTorch
2.11, transformers 5.17, peft 0.21, Qwen3 0.6B/1.7B/8B from their published configs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.knowledge import paths
from engine.knowledge.kb import KB
from engine.models.calibration import CalibrationFile
from engine.models.request import RecommendRequest
from engine.planning import calibration
from engine.planning.calibration import Comparison, comparisons, load
from engine.planning.memory import Layout, per_gpu, reported_bytes
from engine.planning.workload import resolve

CALIBRATION = paths.data_dir() / "calibration"
FILES = calibration.files(CALIBRATION)


def _all(kb: KB) -> list[Comparison]:
    return [c for path in FILES for c in comparisons(kb, path)]


def test_there_are_measurements() -> None:
    assert FILES, "data/calibration holds no measurement file"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_file_validates_against_the_schema(path: Path) -> None:
    measured = load(path)
    assert measured.runs
    assert measured.stack.torch and measured.method


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_prediction_lands_in_its_band(kb: KB, path: Path) -> None:
    outside = [
        f"{c.run}: {c.quantity} predicted {c.predicted:.4g} against {c.measured:.4g} {c.unit} "
        f"(x{c.ratio:.3f}, band x{c.band[0]}-x{c.band[1]})"
        for c in comparisons(kb, path)
        if not c.within
    ]
    assert not outside, "\n".join(outside)


def test_every_run_is_compared_for_memory_and_speed(kb: KB) -> None:
    found = _all(kb)
    runs = [run for path in FILES for run in load(path).runs]
    training = sum(1 for run in runs if run.method in ("full_finetune", "lora"))
    decode = sum(1 for run in runs if run.method == "inference")
    encode = sum(1 for run in runs if run.method == "encode")
    count = {q: sum(1 for c in found if c.quantity == q) for q in {c.quantity for c in found}}
    assert count["training memory"] == count["training tokens/s"] == training > 0
    assert count["decode tokens/s per sequence"] == decode > 0
    assert count["encode tokens/s"] == encode > 0
    assert count["serving memory"] == decode + encode


def test_the_logits_decide_small_models_memory(kb: KB) -> None:
    """Qwen3-0.6B, batch 8 x 2,048: the issue's 36.8 GB prediction left out the loss's fp32 logits and
    their gradient (8 x 2,048 x 151,936 values); the measured 81.1 GB is matched within 5%."""
    (memory, _speed) = [
        c
        for c in _all(kb)
        if c.run == "qwen3-0-6b full_finetune, batch 8 x 2048" and c.source == "h200-2026-11-26.json"
    ][:2]
    assert memory.measured == pytest.approx(81.057)
    assert memory.predicted == pytest.approx(81.057, rel=0.05)


def test_a_fits_verdict_is_never_below_the_measured_peak_by_more_than_five_percent(kb: KB) -> None:
    worst = min(c.ratio for c in _all(kb) if c.quantity == "training memory")
    assert worst >= 0.95


def test_a_file_in_the_first_scripts_format_is_read(tmp_path: Path) -> None:
    """The first measurement script wrote the device as a name and the run as `name`: such a file
    validates as the same measurements."""
    ours = load(CALIBRATION / "h200-2026-11-26.json")
    raw = {
        "device": "NVIDIA H200",
        "torch": ours.stack.torch,
        "transformers": ours.stack.transformers,
        "mem_total_gb": 150.11,
        "runs": [
            {
                "name": "qwen3-1-7b",
                "method": "full_finetune",
                "batch": 4,
                "seq": 2048,
                "checkpointing": True,
                "step_s": 0.39,
                "tokens_per_s": 20998.8,
                "peak_allocated_gb": 40.745,
            },
            {
                "name": "qwen3-8b",
                "method": "inference",
                "batch": 1,
                "prompt": 128,
                "new_tokens": 128,
                "static_compiled": False,
                "decode_ms_per_step": 58.37,
                "tokens_per_s_per_seq": 17.1,
                "aggregate_tokens_per_s": 17.1,
                "peak_allocated_gb": 16.443,
            },
        ],
    }
    path = tmp_path / "h200-2026-12-01.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    read = load(path)
    assert read.device.gpu == "nvidia-h200-sxm"
    assert str(read.date) == "2026-12-01"
    assert [r.model for r in read.runs] == ["qwen3-1-7b", "qwen3-8b"]
    assert read.runs[1].engine == "hf-eager"  # type: ignore[union-attr]


def test_a_broken_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "h100-2026-12-01.json"
    path.write_text(json.dumps({"device": {"name": "x"}, "runs": []}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"h100-2026-12-01\.json"):
        load(path)


def test_an_unknown_gpu_is_an_error_naming_it(kb: KB, tmp_path: Path) -> None:
    document = json.loads((CALIBRATION / "h200-2026-11-26.json").read_text(encoding="utf-8"))
    document["device"]["gpu"] = "nvidia-h300"
    CalibrationFile.model_validate(document)
    path = tmp_path / "h300-2026-12-01.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match="nvidia-h300"):
        comparisons(kb, path)


def test_docs_calibration_is_current() -> None:
    from engine.maintenance import calibration_documents

    docs = paths.PROJECT_ROOT / "docs"
    for path, wanted in calibration_documents(docs).items():
        assert path.read_text(encoding="utf-8") == wanted, f"{path.name} is stale: run `gpu-advisor kb docs`"


def test_docs_calibration_shows_the_table_and_the_chart() -> None:
    text = (paths.PROJECT_ROOT / "docs" / "calibration.md").read_text(encoding="utf-8")
    assert text.startswith("<!-- Generated")
    assert (
        "| h200-2026-11-26.json | qwen3-0-6b full_finetune, batch 8 x 2048 | training memory | 81.1 GB |"
        in text
    )
    assert "](images/calibration.svg)" in text
    assert (
        (paths.PROJECT_ROOT / "docs" / "images" / "calibration.svg")
        .read_text(encoding="utf-8")
        .startswith("<svg")
    )


def test_a_first_script_file_with_figures_this_schema_does_not_read_still_loads(tmp_path: Path) -> None:
    ours = json.loads((CALIBRATION / "h200-2026-11-26.json").read_text(encoding="utf-8"))
    # the same runs as the first script wrote them, each with a figure a later script might add
    runs = []
    for run in ours["runs"]:
        run = {("name" if key == "model" else key): value for key, value in run.items()}
        if "engine" in run:
            run["static_compiled"] = run.pop("engine") == "hf-static-compile"
        runs.append({**run, "allocator_segments": 12})
    raw = {"device": "NVIDIA H200", "mem_total_gb": 150.11, "torch": "2.11.0+cu130", "transformers": "5.17.0"}
    raw["runs"] = runs
    sized = len(runs)
    runs.append({"name": "bge-m3", "method": "rerank", "batch": 64, "seq": 512, "tokens_per_s": 1e5})
    path = tmp_path / "h200-2026-12-02.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    read = load(path)
    assert len(read.runs) == sized
    # a run kind the schema has no figures for is kept in words, not dropped silently
    assert [(f.run, f.error) for f in read.failures] == [("bge-m3", "not compared: run kind 'rerank'")]


def test_an_encode_run_with_its_speed_alone_is_compared_on_speed(kb: KB, tmp_path: Path) -> None:
    """A measurement script that records an encoder's tokens/s but not its memory (bge-m3, 64 x 512
    tokens on an H100: 702,380 tokens/s, data/calibration/h100-2026-11-26.json) is held to its speed."""
    raw = {
        "device": "NVIDIA H100 80GB HBM3",
        "mem_total_gb": 85.02,
        "torch": "2.11.0",
        "transformers": "5.17.0",
    }
    raw["runs"] = [{"name": "bge-m3", "method": "encode", "batch": 64, "seq": 512, "tokens_per_s": 702380.0}]
    path = tmp_path / "h100-2026-12-04.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    (speed,) = comparisons(kb, path)
    assert speed.quantity == "encode tokens/s" and speed.measured == 702380.0
    assert speed.within


def test_a_measured_prefill_is_compared_with_the_engines_prefill(kb: KB, tmp_path: Path) -> None:
    """A decode run that records its one-token generate (`prefill_ms`) is held to the prefill figure
    too: Hugging Face eager launches 36 Qwen3 layers' kernels at 0.9 ms x 1.22 (QK-norm) each for a
    128-token prompt, then its weights stream at the H200's 4.8 TB/s: 15.1 GB, less its untied input
    table, a lookup
    (engine/sizing/serving_engines.py, HF_EAGER_LAYER_DISPATCH_S)."""
    document = json.loads((CALIBRATION / "h200-2026-11-26.json").read_text(encoding="utf-8"))
    eager = next(r for r in document["runs"] if r.get("engine") == "hf-eager" and r["batch"] == 1)
    document["runs"] = [{**eager, "prefill_ms": 48.7}]  # the H100 machine read 128 tokens in 48.7 ms
    path = tmp_path / "h200-2026-12-03.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    (prefill,) = [c for c in comparisons(kb, path) if c.quantity == "prefill tokens/s"]
    assert prefill.measured == pytest.approx(128 / 0.0487)
    streamed = (8_190_735_360 - 151_936 * 4096) * 2 / 4.8e12
    assert prefill.predicted == pytest.approx(128 / (36 * 0.9e-3 * 1.22 + streamed), rel=1e-4)
    assert prefill.within


def test_the_page_lists_the_runs_a_file_records_but_does_not_compare() -> None:
    from engine.answer.calibration_doc import calibration_markdown

    text = calibration_markdown(
        [], [("h100-2026-12-01.json", "qwen3-8b:lora:b4:s8192", "CUDA out of memory")]
    )
    assert "- h100-2026-12-01.json: qwen3-8b:lora:b4:s8192: CUDA out of memory" in text
    assert "Runs recorded but not compared" not in calibration_markdown([])


def test_a_run_that_ran_out_of_memory_is_one_the_advisor_would_not_plan(kb: KB) -> None:
    """h100-2026-11-26.json: Qwen3-0.6B fully fine-tuned at 8 x 2,048 tokens ran out of memory on the
    H100 (it peaked at 81.1 GB on the H200). The advisor sizes it above what a plan may fill on that
    GPU: the 85.5 GB the driver reports less the 5% kept free (rule keep-memory-headroom)."""
    from bench.calibrate import parse_run_spec

    out_of_memory = [
        (load(path).device.gpu, failure.run)
        for path in FILES
        for failure in load(path).failures
        if "out of memory" in failure.error
    ]
    assert out_of_memory
    for gpu_id, run in out_of_memory:
        spec = parse_run_spec(run)
        assert spec.training and spec.seq is not None
        workload: dict[str, object] = {
            "task": spec.method,
            "model": spec.model,
            "batch_size": spec.batch,
            "seq_len": spec.seq,
            "gradient_checkpointing": spec.checkpointing,
            "precision": "bf16",
        }
        job = resolve(RecommendRequest.model_validate({"workload": workload}), kb)
        layout = Layout(method=spec.method, precision="bf16", checkpointing=spec.checkpointing)
        predicted = per_gpu(job, layout, gradients_resident=spec.gradient_accumulation > 1).total
        reported = reported_bytes(kb.gpus[gpu_id])
        assert predicted > reported - max(1e9, 0.05 * reported), (run, predicted / 1e9)
