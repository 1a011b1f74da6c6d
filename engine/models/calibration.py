"""Calibration files: what one GPU measured, how, and with which software (`data/calibration/*.json`).

One file per device and date. Each run is one workload the advisor sizes (a KB model, a method, a batch
and sequence, checkpointing or not), with the peak memory and the speed the GPU gave. The sizing is
held against every run by tests/test_calibration.py; `bench/calibrate.py` writes new files.
Units are in the field names (`_gb` = 1e9 bytes, `_s` = seconds).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import Field, model_validator

from engine.models.kb import Strict
from engine.models.request import ServingEngine

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, le=1_000_000)]
ParamCount = Annotated[int, Field(ge=1, le=10**14)]
Words = Annotated[str, Field(min_length=1, max_length=4000)]
KbId = Annotated[str, Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$", max_length=96)]

DecodeEngine = ServingEngine
"""How decoding ran: Hugging Face `generate` eager with the dynamic cache, or with the static cache under
torch.compile and CUDA graphs; or a serving engine."""


class Device(Strict):
    """The GPU the file was measured on."""

    name: Words = Field(description="as the driver reports it, e.g. 'NVIDIA H200'")
    gpu: KbId = Field(description="the KB id of that GPU, e.g. nvidia-h200-sxm")
    memory_total_gb: Positive = Field(description="memory the driver reports, 1e9 bytes")
    driver: str | None = Field(None, max_length=40)
    bf16_matmul_tflops: Positive | None = Field(None, description="an 8192^3 bf16 matmul, TFLOP/s")
    copy_tb_s_read_plus_write: Positive | None = Field(
        None, description="a device-to-device copy, bytes read plus written, TB/s"
    )


class Stack(Strict):
    """Software versions the figures were taken with."""

    torch: Words
    transformers: Words
    peft: str | None = Field(None, max_length=40)
    cuda: str | None = Field(None, max_length=40)


class TrainingRun(Strict):
    """One training step measured: full fine-tuning (fp32 weights under bf16 autocast, fused AdamW) or
    LoRA (bf16 base, fp32 adapters, AdamW over the adapters)."""

    model: KbId = Field(description="the KB model whose published config built the network")
    method: Literal["full_finetune", "lora"]
    batch: Count
    seq: Count
    checkpointing: bool
    gradient_accumulation: Count = Field(
        1, description="micro-batches per optimizer step; 1: gradients are freed before each forward"
    )
    lora_rank: Count | None = None
    params: ParamCount | None = Field(None, description="parameters of the network built, adapters included")
    trainable_params: ParamCount | None = None
    weights_gb: Positive | None = None
    step_s: Positive
    tokens_per_s: Positive
    peak_allocated_gb: Positive = Field(description="torch.cuda.max_memory_allocated less the base, 1e9 B")
    peak_reserved_gb: Positive | None = None
    mfu_6PD_vs_989: Positive | None = Field(None, description="6 x params x tokens/s / 989 TFLOP/s")

    @model_validator(mode="after")
    def _lora_rank(self) -> TrainingRun:
        if self.method == "lora" and self.lora_rank is None:
            raise ValueError("a lora run needs lora_rank")
        return self


class DecodeRun(Strict):
    """Greedy generation measured: a prompt, then `new_tokens` decode steps for `batch` sequences."""

    model: KbId
    method: Literal["inference"]
    engine: DecodeEngine
    batch: Count
    prompt: Count
    new_tokens: Count
    weights_gb: Positive | None = None
    decode_ms_per_step: Positive = Field(
        description="(generate_ms - prefill_ms) / (new_tokens - 1): one forward pass a new token"
    )
    generate_ms: Positive | None = Field(None, description="the median generate of new_tokens, milliseconds")
    prefill_ms: Positive | None = Field(
        None, description="a generate of one new token: the batch's prompts read (prefill), milliseconds"
    )
    tokens_per_s_per_seq: Positive
    aggregate_tokens_per_s: Positive
    peak_allocated_gb: Positive
    peak_reserved_gb: Positive | None = None
    warm0_s: Positive | None = None
    warm1_s: Positive | None = None
    experts_implementation: str | None = Field(
        None, max_length=40, description="an MoE model's experts kernel, as transformers chose it"
    )
    forward_kernels: Count | None = Field(
        None, description="CUDA kernels one eager decode forward launches (torch.profiler)"
    )
    forward_gpu_busy_ms: Positive | None = Field(None, description="those kernels' durations summed, ms")
    forward_ms: Positive | None = Field(None, description="that forward's wall time, synchronised, ms")


class EncodeRun(Strict):
    """An encoder's forward pass measured (an embedding service's work): `batch` sequences of `seq`
    tokens read at once, nothing generated."""

    model: KbId
    method: Literal["encode"]
    batch: Count
    seq: Count
    params: ParamCount | None = None
    weights_gb: Positive | None = None
    pass_ms: Positive | None = Field(None, description="one forward pass over the batch, milliseconds")
    tokens_per_s: Positive = Field(description="batch x seq / pass")
    peak_allocated_gb: Positive | None = Field(
        None, description="torch.cuda.max_memory_allocated less the base, 1e9 B (None: speed only)"
    )
    peak_reserved_gb: Positive | None = None


Run = Annotated[TrainingRun | DecodeRun | EncodeRun, Field(discriminator="method")]


class Failure(Strict):
    """A run the harness could not measure, and why (an out-of-memory is itself a finding)."""

    run: Words
    error: Words


class CalibrationFile(Strict):
    """Every measurement of one device on one date."""

    device: Device
    date: date
    stack: Stack
    method: str = Field(
        min_length=1,
        max_length=8000,
        description="how each figure was taken, in words (and any correction since)",
    )
    runs: Annotated[list[Run], Field(min_length=1)]
    failures: list[Failure] = Field(default_factory=list, description="runs that could not be measured")
    elapsed_s: Positive | None = None
