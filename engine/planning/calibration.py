"""The sizing held against a GPU's measurements: for each measured run, the same workload planned on
the same GPU, and how far the prediction stands from the measurement.

A measured training step is one optimizer step without gradient accumulation (the gradients are freed
before the forward), so it is sized with `gradients_resident=False`; a planned job accumulates and is
sized with them. Memory is compared without the CUDA context, which `max_memory_allocated` leaves out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from engine.knowledge.kb import KB
from engine.knowledge.snapshot import Unreadable, read_file
from engine.models.calibration import CalibrationFile, DecodeRun, EncodeRun, TrainingRun
from engine.models.request import RecommendRequest
from engine.planning.memory import INFERENCE_CONTEXT_BYTES, Layout, per_gpu
from engine.planning.performance import Links, Speed, inference_speed, training_speed
from engine.planning.workload import resolve
from engine.sizing.serving_engines import profile
from engine.sizing.units import GB

TRAINING_MEMORY_BAND = (0.95, 1.25)
"""predicted / measured peak memory of a training step: never under by more than 5% (a "fits" must be
safe), at most 25% over"""
TRAINING_SPEED_BAND = (0.75, 1.25)
"""predicted / measured training tokens/s"""
SERVING_MEMORY_BAND = (0.95, 1.35)
"""predicted / measured peak memory while serving (weights, KV cache, workspace); decode tokens/s are
held to the band of the engine that ran them (engine/sizing/serving_engines.py)"""

ENCODE_SPEED_BAND = (0.65, 1.35)
"""predicted / measured tokens an encoder reads per second: the embedding servers' efficiency
(ENCODER_EFFICIENCY) is one published figure, so its band is as wide as the serving engines'"""

SINGLE_GPU = Links(gpu_to_gpu=1.0, inter_node=1.0, host=1.0)
"""one GPU: no link is crossed"""


@dataclass(frozen=True)
class Comparison:
    """One measured figure and what the sizing predicts for it."""

    source: str
    """the calibration file's name"""
    run: str
    """the run in words: model, method, batch x sequence, checkpointing"""
    quantity: str
    """training memory | training tokens/s | serving memory | decode tokens/s"""
    unit: str
    measured: float
    predicted: float
    band: tuple[float, float]

    @property
    def ratio(self) -> float:
        return self.predicted / self.measured

    @property
    def within(self) -> bool:
        low, high = self.band
        return low <= self.ratio <= high


DRIVER_NAMES = {
    "NVIDIA H200": "nvidia-h200-sxm",
    "NVIDIA H200 NVL": "nvidia-h200-nvl",
    "NVIDIA H100 80GB HBM3": "nvidia-h100-sxm",
    "NVIDIA H100 PCIe": "nvidia-h100-pcie",
    "NVIDIA H100 NVL": "nvidia-h100-nvl",
    "NVIDIA A100-SXM4-80GB": "nvidia-a100-sxm-80gb",
    "NVIDIA A100-SXM4-40GB": "nvidia-a100-sxm-40gb",
    "NVIDIA A100 80GB PCIe": "nvidia-a100-pcie-80gb",
    "NVIDIA A100-PCIE-40GB": "nvidia-a100-pcie-40gb",
    "NVIDIA L40S": "nvidia-l40s",
    "NVIDIA L40": "nvidia-l40",
    "NVIDIA GeForce RTX 4090": "nvidia-rtx-4090",
    "NVIDIA B200": "nvidia-b200",
}
"""`torch.cuda.get_device_name()` as drivers report it, to the KB's GPU ids"""


REQUIRED_KEYS = frozenset({"model", "method"})
SIZED_METHODS = frozenset({"full_finetune", "lora", "inference", "encode"})
"""the run kinds the schema reads (TrainingRun, DecodeRun, EncodeRun)"""


def from_measurement_script(raw: dict[str, object], file_date: str) -> dict[str, object]:
    """A file as the first measurement script wrote it (the device a name, runs with `name` and
    `static_compiled`, the date only in the file's name) in this schema's form; other documents are
    returned as they are."""
    device = raw.get("device")
    if not isinstance(device, str):
        return raw
    runs = []
    unread = []
    for item in raw.get("runs", []):  # type: ignore[attr-defined]
        run = dict(item)
        if run.get("method") not in SIZED_METHODS:
            # a kind of run this schema has no figures for (yet): kept, in words, not compared
            unread.append(
                {"run": str(run.get("name")), "error": f"not compared: run kind {run.get('method')!r}"}
            )
            continue
        run["model"] = run.pop("name", None)
        if run.get("method") == "inference":
            run["engine"] = "hf-static-compile" if run.pop("static_compiled", False) else "hf-eager"
        elif run.get("method") == "lora":
            run.setdefault("lora_rank", 16)
        # figures that script added beside those this schema reads (it names them all, so a typo in a
        # figure it reads is still an error)
        schemas: dict[str, type[DecodeRun | EncodeRun]] = {"inference": DecodeRun, "encode": EncodeRun}
        schema: type[DecodeRun | EncodeRun | TrainingRun] = schemas.get(str(run.get("method")), TrainingRun)
        known = schema.model_fields
        runs.append({key: value for key, value in run.items() if key in known or key in REQUIRED_KEYS})
    return {
        "device": {
            "name": device,
            "gpu": DRIVER_NAMES.get(device, device.lower().replace(" ", "-")),
            "memory_total_gb": raw.get("mem_total_gb"),
            "bf16_matmul_tflops": raw.get("bf16_matmul_tflops"),
            "copy_tb_s_read_plus_write": raw.get("copy_tb_s_read_plus_write"),
        },
        "date": raw.get("date") or file_date,
        "stack": {
            "torch": raw.get("torch"),
            "transformers": raw.get("transformers"),
            "peft": raw.get("peft"),
        },
        "method": "as the measurement script's README describes (LoRA rank 16 where the file gives none)",
        "runs": runs,
        "failures": unread,
        "elapsed_s": raw.get("elapsed_s"),
    }


def load(path: Path) -> CalibrationFile:
    """A calibration file, validated (ValueError naming the file and the field when it is not)."""
    content = read_file(path)  # a regular file under the size cap: a FIFO in data/ must not hang `kb docs`
    if isinstance(content, Unreadable):
        raise ValueError(f"{path.name}: {content.reason}")
    try:
        raw = json.loads(content.decode("utf-8"))
        # files are named <device>-YYYY-MM-DD.json
        document = from_measurement_script(raw, path.stem[-10:]) if isinstance(raw, dict) else raw
        return CalibrationFile.model_validate(document)
    except (ValueError, OSError) as exc:
        raise ValueError(f"{path.name}: {exc}") from None


def files(root: Path) -> list[Path]:
    """Every calibration file under `root`, in name order."""
    return sorted(root.glob("*.json"))


def describe(run: TrainingRun | DecodeRun | EncodeRun) -> str:
    if isinstance(run, EncodeRun):
        return f"{run.model} encode, batch {run.batch} x {run.seq}"
    if isinstance(run, TrainingRun):
        extra = ", checkpointing" if run.checkpointing else ""
        if run.gradient_accumulation > 1:
            extra += f", accumulating {run.gradient_accumulation} micro-batches"
        rank = f" r{run.lora_rank}" if run.lora_rank else ""
        return f"{run.model} {run.method}{rank}, batch {run.batch} x {run.seq}{extra}"
    return f"{run.model} decode ({run.engine}), batch {run.batch}, {run.prompt} + {run.new_tokens} tokens"


def training_request(run: TrainingRun) -> RecommendRequest:
    """The request that describes a measured training run."""
    workload: dict[str, object] = {
        "task": run.method,
        "model": run.model,
        "batch_size": run.batch,
        "seq_len": run.seq,
        "gradient_checkpointing": run.checkpointing,
        "precision": "bf16",
    }
    if run.lora_rank is not None:
        workload["lora_rank"] = run.lora_rank
    return RecommendRequest.model_validate({"workload": workload})


def compare_training(kb: KB, gpu_id: str, run: TrainingRun, source: str) -> list[Comparison]:
    job = resolve(training_request(run), kb)
    layout = Layout(method=run.method, precision="bf16", checkpointing=run.checkpointing)
    memory = per_gpu(job, layout, gradients_resident=run.gradient_accumulation > 1)
    speed = training_speed(
        job, kb.gpus[gpu_id], layout, SINGLE_GPU, memory=memory, micro_steps=run.gradient_accumulation
    )
    return _figures(
        source,
        describe(run),
        (
            "training memory",
            "GB",
            run.peak_allocated_gb,
            (memory.total - memory.overhead) / GB,
            TRAINING_MEMORY_BAND,
        ),
        (
            "training tokens/s",
            "tokens/s",
            run.tokens_per_s,
            None if speed is None else speed.aggregate_tokens_per_s,
            TRAINING_SPEED_BAND,
        ),
    )


Figure = tuple[str, str, float, float | None, tuple[float, float]]
"""quantity, unit, measured, predicted (None: the GPU has no figure to predict from), band"""


def _figures(source: str, run: str, *figures: Figure) -> list[Comparison]:
    return [
        Comparison(source, run, quantity, unit, measured, predicted, band)
        for quantity, unit, measured, predicted, band in figures
        if predicted is not None
    ]


def decode_request(run: DecodeRun) -> RecommendRequest:
    """The request that describes a measured generation: its batch, prompt, output and engine."""
    return RecommendRequest.model_validate(
        {
            "workload": {
                "task": "inference",
                "model": run.model,
                "batch_size": run.batch,
                "precision": "bf16",
                "serving": {
                    "avg_input_tokens": run.prompt,
                    "avg_output_tokens": run.new_tokens,
                    "engine": run.engine,
                },
            }
        }
    )


def _served(
    kb: KB, gpu_id: str, request: RecommendRequest, measured_gb: float | None
) -> tuple[Figure, Speed | None]:
    """A measured serving run sized on its GPU: its memory figure (not predicted when the run did not
    measure it) and its predicted speed."""
    job = resolve(request, kb)
    layout = Layout(method="inference", precision="bf16")
    predicted = (per_gpu(job, layout).total - INFERENCE_CONTEXT_BYTES) / GB
    memory: Figure = (
        "serving memory",
        "GB",
        measured_gb or 0.0,
        None if measured_gb is None else predicted,
        SERVING_MEMORY_BAND,
    )
    return memory, inference_speed(job, kb.gpus[gpu_id], layout, SINGLE_GPU)


def compare_decode(kb: KB, gpu_id: str, run: DecodeRun, source: str) -> list[Comparison]:
    memory, speed = _served(kb, gpu_id, decode_request(run), run.peak_allocated_gb)
    return _figures(
        source,
        describe(run),
        memory,
        (
            "decode tokens/s per sequence",
            "tokens/s",
            run.tokens_per_s_per_seq,
            None if speed is None else speed.tokens_per_s,
            profile(run.engine).band,
        ),
        (
            "prefill tokens/s",
            "tokens/s",
            run.batch * run.prompt / (run.prefill_ms / 1000) if run.prefill_ms else 0.0,
            None if speed is None or not run.prefill_ms else speed.prefill_tokens_per_s,
            profile(run.engine).band,
        ),
    )


def encode_request(run: EncodeRun, *, decoder: bool = False) -> RecommendRequest:
    """The request that describes a measured encoder pass: its batch of inputs, each `seq` tokens. A
    decoder embedding model's pass is a Hugging Face eager forward (bench/calibrate.py), so it is
    sized for that engine; an encoder's speed does not depend on the engine named."""
    serving: dict[str, object] = {"avg_input_tokens": run.seq}
    if decoder:
        serving["engine"] = "hf-eager"
    return RecommendRequest.model_validate(
        {
            "workload": {
                "task": "inference",
                "model": run.model,
                "batch_size": run.batch,
                "precision": "bf16",
                "serving": serving,
            }
        }
    )


def compare_encode(kb: KB, gpu_id: str, run: EncodeRun, source: str) -> list[Comparison]:
    model = kb.models.get(run.model)
    request = encode_request(run, decoder=model is not None and model.kind == "decoder")
    memory, speed = _served(kb, gpu_id, request, run.peak_allocated_gb)
    return _figures(
        source,
        describe(run),
        memory,
        (
            "encode tokens/s",
            "tokens/s",
            run.tokens_per_s,
            None if speed is None else speed.aggregate_tokens_per_s,
            ENCODE_SPEED_BAND,
        ),
    )


def comparisons(kb: KB, path: Path) -> list[Comparison]:
    """Every measured figure of one file beside its prediction."""
    measured = load(path)
    gpu = measured.device.gpu
    if gpu not in kb.gpus:
        raise ValueError(f"{path.name}: device.gpu {gpu!r} is not a KB GPU id")
    found: list[Comparison] = []
    for run in measured.runs:
        if isinstance(run, TrainingRun):
            found.extend(compare_training(kb, gpu, run, path.name))
        elif isinstance(run, EncodeRun):
            found.extend(compare_encode(kb, gpu, run, path.name))
        else:
            found.extend(compare_decode(kb, gpu, run, path.name))
    return found
