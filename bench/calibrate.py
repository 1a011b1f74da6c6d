"""GPU calibration harness: measures the workloads the advisor sizes and writes a calibration file.

    python -m bench.calibrate --gpu nvidia-h200-sxm --out data/calibration/h200-2026-12-01.json
    python -m bench.calibrate --gpu nvidia-h100-sxm --out data/calibration/h100-x.json --runs default extended
    python -m bench.calibrate --gpu nvidia-h100-sxm --out x.json --runs qwen3-8b:lora:b4:s2048:ckpt
    python -m bench.calibrate --runs all --list        # prints the runs chosen; needs no GPU

The file written validates against `engine.models.calibration.CalibrationFile` (it is checked before it is
written) and is never written over unless `--force` is given. Measuring needs a CUDA GPU with torch,
transformers and peft; nothing is downloaded: every network is built from its KB entry
(`kb/models/<id>.yaml`, the published config.json values) with random weights, so the figures are those
of the real shapes without the real checkpoint. How each figure is taken is written into the file's
`method` text (`method_text`), following data/calibration/h200-2026-11-26.json.

Everything but the measuring itself (run specs, the KB-to-config mapping, the figures' arithmetic, the
document) imports and runs without torch, so it is tested on machines without a GPU.

Run specs
---------
`--runs` takes run specs and list names. A list name is `default` (the 11 runs of
data/calibration/h200-2026-11-26.json), `extended` (new shapes: `EXTENDED_RUNS`), `all` (both) or
`80gb` (the 46 runs of data/calibration/h100-2026-11-26.json, for one 80 GB GPU: about 10 minutes),
`h200` (the 29 runs of data/calibration/h200-2026-11-26-b.json, for one 141 GB GPU: about 5 minutes) or
`h200-second` (the 22 runs of h200-2026-11-26-c.json: about 3 minutes) or `eager-hosts` (the 7 eager
decodes of h200-2026-11-27.json and -b.json: about 2 minutes) or `families` (13 runs of Gemma 2 and 3,
Phi-3 and Phi-4, SmolLM3, gpt-oss and DeepSeek-V2, for one 141 GB GPU: `FAMILY_RUNS`) or `breadth` (23 runs
of Mixtral, Qwen2.5, Llama 2, TinyLlama, Mistral Small, Gemma 2 27B and four encoders, with accumulation and
32,768-token LoRA, for one 141 GB GPU: `BREADTH_RUNS`).
A run spec is `MODEL:METHOD[:OPTION]...`, fields separated by colons, options in any order, each at
most once:

    MODEL            a KB model id (kb/models/<id>.yaml), e.g. qwen3-8b
    METHOD           full (or full_finetune) | lora | decode (or inference) | encode
    bN               batch, sequences per micro-batch (default 1)
    sN               tokens per sequence: training and encode, required
    gaN              micro-batches per optimizer step: training (default 1)
    ckpt             activation checkpointing: training
    rN               LoRA rank (default 16; alpha is 2r): lora
    eager | static   decode engine, hf-eager (default) or hf-static-compile (hf-eager and
                     hf-static-compile are accepted too): decode
    pN               prompt tokens: decode (default 128)
    nN               new tokens generated: decode (default 128)

For example `qwen3-8b:lora:b4:s2048:ckpt`, `llama-3-2-1b:full:b2:s8192:ckpt`,
`qwen3-8b:decode:static:b32:n256`, `bge-m3:encode:b64:s512` (an encoder's forward pass: what an
embedding service computes). Every run has a canonical spec (`RunSpec.name`: method spelled
short, every value written out, e.g. `qwen3-8b:lora:b4:s2048:r16:ckpt`), which `--list` prints and
which names the run in progress lines and in the failures list.

`--only NAME` (repeatable) keeps the runs NAME matches: a run spec (compared in canonical form), a
model id, or a shell-style pattern over canonical specs (`'qwen3-8b:decode:*'`).

Each run is measured on its own, memory freed between runs. A run that fails (out of memory, a family
this harness cannot build, over `--timeout-per-run`) goes into a failures list printed at the end and
is not written into `runs`; the others go on. After each run the file so far is written beside `--out`
as `<out>.inprogress` (replaced run by run, removed once `--out` is written), so a harness killed from
outside keeps what it measured. The exit status is 0 when every run was measured, 1 when
some failed (the file holds the rest), 2 when nothing was written.
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import gc
import importlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml

from engine.knowledge import paths
from engine.models.calibration import CalibrationFile, DecodeRun, EncodeRun, TrainingRun

Method = Literal["full_finetune", "lora", "inference", "encode"]
Engine = Literal["hf-eager", "hf-static-compile"]

GB = 1e9
MFU_PEAK_FLOPS = 989e12
"""The denominator of `mfu_6PD_vs_989`: H100/H200 SXM dense bf16, TFLOP/s as the KB gives it."""

TRAIN_WARMUP_STEPS = 2
TRAIN_TIMED_STEPS = 5
ENCODE_WARMUP_PASSES = 3
ENCODE_TIMED_PASSES = 10
DECODE_REPEATS = 3
"""Timed `generate` calls of each length (full, prefill-only) after the warm-up calls; the median is kept."""

DEFAULT_LORA_RANK = 16
DEFAULT_PROMPT = 128
DEFAULT_NEW_TOKENS = 128
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

MATMUL_N = 8192
COPY_BYTES = 1 << 30

_KB_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_COUNT_MAX = 1_000_000
_METHODS: dict[str, Method] = {
    "full": "full_finetune",
    "full_finetune": "full_finetune",
    "lora": "lora",
    "decode": "inference",
    "inference": "inference",
    "encode": "encode",
}
_METHOD_SHORT: dict[Method, str] = {
    "full_finetune": "full",
    "lora": "lora",
    "inference": "decode",
    "encode": "encode",
}
_ENGINES: dict[str, Engine] = {
    "eager": "hf-eager",
    "hf-eager": "hf-eager",
    "static": "hf-static-compile",
    "hf-static-compile": "hf-static-compile",
}
_ENGINE_SHORT: dict[Engine, str] = {"hf-eager": "eager", "hf-static-compile": "static"}
_NUMBERED = re.compile(r"^(ga|b|s|r|p|n)([0-9]+)$")
_OPTION_WORDS = {"b": "batch", "s": "sequence length", "ga": "gradient accumulation", "r": "LoRA rank"}
_OPTION_WORDS |= {"p": "prompt tokens", "n": "new tokens", "ckpt": "checkpointing", "engine": "engine"}
_TRAINING_ONLY = {"s", "ga", "ckpt"}
_LORA_ONLY = {"r"}
_DECODE_ONLY = {"p", "n", "engine"}
SPEC_SYNTAX = (
    "MODEL:METHOD[:OPTION]... with METHOD full|lora|decode|encode and OPTIONs bN (batch), "
    "sN (sequence: training, encode), "
    "gaN (gradient accumulation), ckpt (checkpointing), rN (LoRA rank), eager|static (decode engine), "
    "pN (prompt), nN (new tokens); e.g. qwen3-8b:lora:b4:s2048:ckpt"
)


class RunSpecError(ValueError):
    """A run spec, list name or `--only` pattern that cannot be used; the message says which and why."""


class UnsupportedModel(ValueError):
    """A KB model this harness cannot build as a Hugging Face causal LM; the message names the model."""


class RunTimeout(RuntimeError):
    """A run went past `--timeout-per-run` (checked between steps and between `generate` calls)."""


@dataclass(frozen=True)
class RunSpec:
    """One workload to measure: a KB model, a method and its shape."""

    model: str
    method: Method
    batch: int = 1
    seq: int | None = None
    checkpointing: bool = False
    gradient_accumulation: int = 1
    lora_rank: int | None = None
    engine: Engine | None = None
    prompt: int | None = None
    new_tokens: int | None = None

    def __post_init__(self) -> None:
        if not _KB_ID.match(self.model):
            raise RunSpecError(f"{self.model!r} is not a KB model id (lowercase words joined by '-')")
        if self.method == "encode":
            if self.seq is None:
                raise RunSpecError(f"{self.model}: an encode run needs a sequence length")
            extras = (self.lora_rank, self.engine, self.prompt, self.new_tokens)
            if (
                any(value is not None for value in extras)
                or self.checkpointing
                or self.gradient_accumulation != 1
            ):
                raise RunSpecError(f"{self.model}: an encode run takes only a batch and a sequence length")
        elif self.training:
            if self.seq is None:
                raise RunSpecError(f"{self.model}: a {self.method} run needs a sequence length")
            if (self.lora_rank is not None) != (self.method == "lora"):
                raise RunSpecError(f"{self.model}: a LoRA rank goes with method lora and only with it")
            if self.engine is not None or self.prompt is not None or self.new_tokens is not None:
                raise RunSpecError(f"{self.model}: engine, prompt and new tokens are for decode runs")
        else:
            if self.engine is None or self.prompt is None or self.new_tokens is None:
                raise RunSpecError(f"{self.model}: a decode run needs an engine, a prompt and new tokens")
            if self.seq is not None or self.checkpointing or self.gradient_accumulation != 1:
                raise RunSpecError(f"{self.model}: sequence, checkpointing and accumulation are for training")
            if self.lora_rank is not None:
                raise RunSpecError(f"{self.model}: a LoRA rank goes with method lora")
            if self.new_tokens < 2:
                # the decode step is the difference between an n-token and a 1-token generate
                raise RunSpecError(
                    f"{self.model}: a decode run generates at least 2 new tokens, not {self.new_tokens}"
                )
        counts = (
            self.batch,
            self.seq,
            self.gradient_accumulation,
            self.lora_rank,
            self.prompt,
            self.new_tokens,
        )
        for value in counts:
            if value is not None and not 1 <= value <= _COUNT_MAX:
                raise RunSpecError(f"{self.model}: counts are between 1 and {_COUNT_MAX:,}, not {value}")

    @property
    def training(self) -> bool:
        return self.method in ("full_finetune", "lora")

    @property
    def name(self) -> str:
        """The canonical spec: `parse_run_spec(spec.name) == spec`."""
        parts = [self.model, _METHOD_SHORT[self.method]]
        if self.method == "encode":
            parts += [f"b{self.batch}", f"s{self.seq}"]
        elif self.training:
            parts += [f"b{self.batch}", f"s{self.seq}"]
            if self.gradient_accumulation != 1:
                parts.append(f"ga{self.gradient_accumulation}")
            if self.lora_rank is not None:
                parts.append(f"r{self.lora_rank}")
            if self.checkpointing:
                parts.append("ckpt")
        else:
            assert self.engine is not None
            parts += [_ENGINE_SHORT[self.engine], f"b{self.batch}", f"p{self.prompt}", f"n{self.new_tokens}"]
        return ":".join(parts)


def parse_run_spec(text: str) -> RunSpec:
    """A run spec (module docstring, `SPEC_SYNTAX`) as a RunSpec; RunSpecError says what is wrong."""
    parts = text.strip().split(":")
    if len(parts) < 2 or not all(parts):
        raise RunSpecError(f"run spec {text!r}: expected {SPEC_SYNTAX}")
    model, method_word, *options = parts
    if not _KB_ID.match(model):
        raise RunSpecError(
            f"run spec {text!r}: {model!r} is not a KB model id (lowercase words joined by '-')"
        )
    method = _METHODS.get(method_word)
    if method is None:
        raise RunSpecError(
            f"run spec {text!r}: method {method_word!r} is not one of full, lora, decode, encode"
        )
    seen: dict[str, str] = {}
    numbers: dict[str, int] = {}
    engine: Engine | None = None
    for option in options:
        numbered = _NUMBERED.match(option)
        if numbered:
            key, number = numbered.group(1), int(numbered.group(2))
            if not 1 <= number <= _COUNT_MAX:
                raise RunSpecError(f"run spec {text!r}: {option!r}: counts are between 1 and {_COUNT_MAX:,}")
            numbers[key] = number
        elif option == "ckpt":
            key = "ckpt"
        elif option in _ENGINES:
            key, engine = "engine", _ENGINES[option]
        else:
            raise RunSpecError(f"run spec {text!r}: unknown option {option!r}; expected {SPEC_SYNTAX}")
        if key in seen:
            raise RunSpecError(f"run spec {text!r}: {_OPTION_WORDS[key]} given twice ({seen[key]}, {option})")
        seen[key] = option
        wrong = (
            (_DECODE_ONLY if method != "inference" else set())
            | (_TRAINING_ONLY - {"s"} if method == "encode" else set())
            | (_TRAINING_ONLY if method == "inference" else set())
            | (_LORA_ONLY if method != "lora" else set())
        )
        if key in wrong:
            raise RunSpecError(
                f"run spec {text!r}: {option!r} ({_OPTION_WORDS[key]}) does not apply to {method}"
            )
    if method == "inference":
        return RunSpec(
            model=model,
            method=method,
            batch=numbers.get("b", 1),
            engine=engine or "hf-eager",
            prompt=numbers.get("p", DEFAULT_PROMPT),
            new_tokens=numbers.get("n", DEFAULT_NEW_TOKENS),
        )
    if "s" not in numbers:
        raise RunSpecError(f"run spec {text!r}: a {method} run needs a sequence length (e.g. s2048)")
    if method == "encode":
        return RunSpec(model=model, method=method, batch=numbers.get("b", 1), seq=numbers["s"])
    return RunSpec(
        model=model,
        method=method,
        batch=numbers.get("b", 1),
        seq=numbers["s"],
        checkpointing="ckpt" in seen,
        gradient_accumulation=numbers.get("ga", 1),
        lora_rank=numbers.get("r", DEFAULT_LORA_RANK) if method == "lora" else None,
    )


def _runs(*specs: str) -> tuple[RunSpec, ...]:
    """A run list from its specs (`parse_run_spec`), in their order."""
    return tuple(parse_run_spec(spec) for spec in specs)


DEFAULT_RUNS = _runs(
    "qwen3-0-6b:full:b8:s2048",
    "qwen3-1-7b:full:b4:s2048",
    "qwen3-1-7b:full:b4:s2048:ckpt",
    "qwen3-1-7b:full:b8:s2048",
    "qwen3-8b:lora:b1:s2048:r16",
    "qwen3-8b:lora:b4:s2048:r16",
    "qwen3-8b:lora:b4:s2048:r16:ckpt",
    "qwen3-8b:decode:eager:b1:p128:n128",
    "qwen3-8b:decode:eager:b32:p128:n128",
    "qwen3-8b:decode:static:b1:p128:n256",
    "qwen3-8b:decode:static:b32:p128:n256",
)
"""The 11 workloads of data/calibration/h200-2026-11-26.json, in its order."""

EXTENDED_RUNS = _runs(
    "llama-3-2-1b:full:b4:s4096:ckpt",
    "llama-3-2-1b:full:b2:s8192:ckpt",
    "llama-3-1-8b:lora:b1:s8192:r16:ckpt",
    "llama-3-1-8b:lora:b1:s8192:r16",
    "qwen3-30b-a3b:decode:eager:b1:p128:n128",
    "qwen3-30b-a3b:decode:eager:b8:p128:n128",
    "llama-3-1-8b:decode:static:b1:p128:n256",
    "llama-3-1-8b:decode:static:b32:p128:n256",
)
"""Shapes the default list lacks: another family (Llama 3), long sequences (4,096 and 8,192 tokens, the
same 16,384 tokens a step for the full fine-tunes, so the attention's share shows), LoRA at 8,192 with and
without checkpointing (without it, scaling the qwen3-8b LoRA runs' memory per token gives about 100 GB, so
an 80 GB card is expected to record it as a failure), a mixture-of-experts decode (Qwen3 30B-A3B, 61 GB of
bf16 weights) and the static-cache compiled decode of a second model."""

GPU_80GB_RUNS = _runs(
    "qwen3-0-6b:full:b4:s2048",
    "qwen3-1-7b:full:b4:s2048",
    "qwen3-1-7b:full:b4:s2048:ckpt",
    "llama-3-2-1b:full:b4:s4096:ckpt",
    "llama-3-2-1b:full:b2:s8192:ckpt",
    "llama-3-1-8b:lora:b1:s8192:r16:ckpt",
    "llama-3-1-8b:lora:b1:s4096:r16",
    "qwen3-8b:lora:b1:s2048:r16",
    "qwen3-8b:lora:b2:s2048:r16",
    "qwen3-8b:lora:b4:s2048:r16:ckpt",
    "bge-m3:encode:b64:s512",
    "bge-m3:encode:b4:s8192",
    "bge-large-en-v1-5:encode:b128:s512",
    "all-minilm-l6-v2:encode:b256:s128",
    "qwen3-8b:decode:eager:b1:p4096:n16",
    "llama-3-1-8b:decode:eager:b8:p2048:n16",
    "qwen3-30b-a3b:decode:eager:b1:p128:n32",
    "qwen3-30b-a3b:decode:eager:b8:p128:n32",
    "qwen3-8b:decode:eager:b32:p128:n64",
    "qwen3-8b:decode:static:b1:p128:n256",
    "qwen3-8b:decode:static:b32:p128:n256",
    "llama-3-1-8b:decode:static:b32:p128:n256",
    "qwen3-0-6b:full:b4:s2048:ga4",
    "qwen3-4b:full:b2:s2048:ckpt",
    "qwen2-5-7b:lora:b2:s2048:r16:ckpt",
    "mistral-7b:lora:b2:s4096:r16:ckpt",
    "smollm2-1-7b:full:b4:s2048:ckpt",
    "llama-3-1-8b:lora:b2:s8192:r16:ckpt",
    "bge-m3:encode:b256:s128",
    "bge-small-en-v1-5:encode:b512:s128",
    "bge-base-en-v1-5:encode:b128:s256",
    "qwen3-8b:decode:eager:b1:p16384:n8",
    "qwen3-30b-a3b:decode:eager:b32:p128:n32",
    "qwen3-4b:lora:b4:s2048:r16",
    "qwen3-14b:lora:b1:s2048:r16:ckpt",
    "llama-3-2-3b:full:b2:s2048:ckpt",
    "qwen3-1-7b:full:b2:s4096",
    "mistral-7b:lora:b4:s2048:r16",
    "llama-3-2-1b:full:b4:s2048",
    "bge-m3:encode:b32:s1024",
    "multilingual-e5-large:encode:b128:s256",
    "qwen3-14b:decode:eager:b4:p2048:n16",
    "qwen2-5-7b:decode:eager:b16:p512:n32",
    "qwen3-0-6b:full:b8:s2048",
    "qwen3-4b:full:b1:s4096:ga2:ckpt",
    "qwen3-8b:decode:static:b8:p1024:n128",
)
"""The 46 workloads of data/calibration/h100-2026-11-26.json, measured first, then those that were not,
sized for one 80 GB GPU (about 10 minutes): six families' training at 2,048 to 8,192 tokens (full, LoRA,
checkpointing, accumulation), encoders at 128 to 8,192 tokens, long prompts' prefill (2,048 to 16,384
tokens), a mixture-of-experts decode at batch 1, 8 and 32, static-cache compiled decode. Two ran out of
memory, as sized to (Qwen3-0.6B at 8 x 2,048 peaked at 81 GB on the H200); one compiled decode passed
the 60 s per-run limit."""

H200_RUNS = _runs(
    "qwen3-4b:full:b4:s2048",
    "qwen3-14b:lora:b4:s2048:r16",
    "qwen3-32b:lora:b1:s2048:r16:ckpt",
    "qwen3-8b:full:b2:s2048:ckpt",
    "qwen3-embedding-0-6b:encode:b64:s512",
    "qwen3-32b:decode:eager:b1:p128:n32",
    "qwen3-30b-a3b:decode:eager:b16:p512:n32",
    "qwen3-4b:full:b8:s2048:ckpt",
    "qwen3-8b:lora:b1:s16384:r16:ckpt",
    "qwen3-0-6b:decode:eager:b1:p128:n64",
    "qwen3-embedding-8b:encode:b16:s1024",
    "qwen3-32b:lora:b1:s4096:r16:ckpt",
    "qwen3-8b:lora:b8:s2048:r16:ckpt",
    "qwen3-1-7b:full:b8:s4096:ckpt",
    "qwen3-32b:decode:eager:b16:p1024:n32",
    "qwen3-8b:decode:eager:b64:p256:n32",
    "qwen3-4b:decode:eager:b16:p512:n32",
    "bge-m3:encode:b128:s512",
    "qwen3-0-6b:full:b16:s2048:ckpt",
    "qwen3-1-7b:full:b4:s2048:ga4",
    "qwen3-8b:lora:b4:s2048:r64",
    "llama-3-1-8b:lora:b2:s4096:r16",
    "qwen3-14b:lora:b2:s2048:r16:ckpt",
    "qwen3-8b:decode:eager:b1:p32768:n8",
    "qwen3-1-7b:decode:eager:b8:p1024:n32",
    "all-minilm-l6-v2:encode:b1024:s128",
    "bge-base-en-v1-5:encode:b256:s512",
    "qwen3-0-6b:full:b4:s2048",
    "llama-3-2-1b:full:b4:s4096:ckpt",
)
"""Shapes for one H200 (141 GB), most telling first: the larger Qwen3 models the 80 GB list cannot hold
(Qwen3-4B full fine-tuning without checkpointing, Qwen3-8B full with it, 14B and 32B LoRA, 32B decode),
sizes close to the card's memory (the fits a buyer relies on), decoder embedding models (Qwen3-Embedding
0.6B and 8B, a forward pass without the head), LoRA at 16,384 tokens, 32,768-token prefill, decode at
batch 64, and three shapes of the H100 file again, so the two GPUs compare on one workload."""

H200_SECOND_RUNS = _runs(
    "qwen3-embedding-0-6b:encode:b64:s512",
    "qwen3-embedding-8b:encode:b16:s1024",
    "qwen3-0-6b:decode:eager:b1:p128:n64",
    "qwen3-embedding-0-6b:encode:b256:s128",
    "qwen3-embedding-8b:encode:b4:s4096",
    "qwen3-14b:decode:eager:b1:p128:n32",
    "qwen3-1-7b:decode:eager:b1:p2048:n16",
    "qwen3-4b:decode:eager:b4:p2048:n16",
    "llama-3-2-3b:decode:eager:b8:p1024:n16",
    "smollm2-1-7b:decode:eager:b16:p512:n16",
    "mistral-7b:decode:eager:b2:p4096:n16",
    "bge-small-en-v1-5:encode:b256:s512",
    "bge-large-en-v1-5:encode:b32:s512",
    "roberta-large:encode:b64:s512",
    "multilingual-e5-large:encode:b16:s512",
    "qwen3-14b:lora:b4:s2048:r16:ckpt",
    "qwen2-5-14b:lora:b2:s2048:r16",
    "qwen3-4b:lora:b8:s2048:r16:ckpt",
    "qwen3-1-7b:full:b16:s2048:ckpt",
    "llama-3-2-3b:full:b4:s4096:ckpt",
    "qwen3-32b:lora:b2:s2048:r16:ckpt",
    "qwen2-5-3b:full:b4:s2048",
)
"""The 22 workloads of data/calibration/h200-2026-11-26-c.json: the three runs of the `h200` list that the
mended harness measured again first (the Qwen3-Embedding encodes without a KV cache, Qwen3-0.6B's decode
without its construction's peak), then shapes held out from the fit of the first sitting: five more
families' eager decode and prefill, four more encoders, 14B and 32B LoRA, full fine-tuning at 3B."""

EAGER_HOST_RUNS = _runs(
    "qwen3-8b:decode:eager:b1:p128:n64",
    "llama-3-1-8b:decode:eager:b4:p128:n64",
    "qwen3-30b-a3b:decode:eager:b4:p1024:n64",
    "llama-3-1-8b:decode:eager:b1:p128:n64",
    "qwen3-30b-a3b:decode:eager:b32:p128:n64",
    "qwen3-30b-a3b:decode:eager:b1:p128:n64",
    "llama-3-1-8b:decode:eager:b4:p4096:n64",
)
"""Eager decode as the host sets it (data/calibration/h200-2026-11-27.json and -b.json, two H200
machines the same morning: about 2 minutes): a mixture-of-experts model at batch 1, 4 and 32 beside dense
Qwen3 and Llama at batch 1 and 4, each with a profiled decode forward (its kernels and the GPU's busy
time). Run it on two machines, or twice an hour apart, to see the host's spread."""

FAMILY_RUNS = _runs(
    "gemma-3-1b:full:b8:s2048",
    "gemma-2-2b:full:b4:s2048:ckpt",
    "phi-4-mini:full:b4:s2048:ckpt",
    "phi-4:lora:b2:s2048:r16:ckpt",
    "gemma-2-9b:lora:b2:s2048:r16:ckpt",
    "gemma-2-9b:decode:eager:b1:p128:n64",
    "gemma-2-9b:decode:eager:b8:p1024:n32",
    "phi-4:decode:eager:b1:p128:n64",
    "phi-4:decode:eager:b8:p1024:n32",
    "gpt-oss-20b:decode:eager:b1:p128:n64",
    "gpt-oss-20b:decode:eager:b8:p1024:n32",
    "deepseek-v2-lite:decode:eager:b1:p128:n64",
    "smollm3-3b:full:b4:s2048:ckpt",
)
"""Families the other lists lack, for one H200 (141 GB; about 4 minutes), most telling first:
Gemma 3 1B fully fine-tuned at 8 x 2,048 tokens without checkpointing (its 262,144-token vocabulary makes
the fp32 logits and their gradient most of the memory), Gemma 2 2B full with checkpointing (the final-logit
soft-capping adds logits-sized tensors), Phi-4-mini full (fused q/k/v and gate/up, a 200,064-token
vocabulary), LoRA on Phi-4 (14.7B, adapters on the fused projections) and on Gemma 2 9B, eager decode of
Gemma 2 9B (a window on every other layer) and Phi-4 at batch 1 and 8, then mixtures of experts: gpt-oss-20b
(eager attention and a 128-token window on every other layer; at 8 x 1,024 the prefill's scores are
materialised) and DeepSeek-V2-Lite (latent attention, shared experts), and SmolLM3 3B full with
checkpointing. Measured on one H200 in 231 s (data/calibration/h200-2026-11-27-c.json): Gemma 3 1B peaked
at 128.6 GB, the others at most 74 GB."""

BREADTH_RUNS = _runs(
    "mixtral-8x7b:decode:b1:n32",
    "mixtral-8x7b:decode:b8:n32",
    "qwen2-5-0-5b:full:b8:s2048",
    "tinyllama-1-1b:full:b8:s2048:ckpt",
    "llama-2-7b:lora:b4:s4096:ckpt",
    "mistral-small-3:lora:b1:s4096:ckpt",
    "gemma-2-27b:lora:b1:s2048:ckpt",
    "qwen3-1-7b:full:b2:s2048:ga4",
    "qwen3-4b:full:b2:s8192:ckpt",
    "llama-2-7b:decode:b16:p512:n64",
    "qwen3-14b:decode:b8:p2048:n32",
    "bert-large:encode:b64:s512",
    "distilbert-base:encode:b512:s128",
    "all-mpnet-base-v2:encode:b256:s384",
    "roberta-base:encode:b256:s256",
    "llama-3-2-3b:lora:b8:s2048",
    "qwen3-0-6b:lora:b16:s1024",
    "qwen2-5-1-5b:full:b4:s4096:ckpt",
    "llama-2-13b:lora:b2:s2048",
    "mistral-small-3:decode:b4:p1024:n32",
    "qwen2-5-0-5b:decode:b64",
    "qwen2-5-32b:lora:b1:s4096:ckpt",
    "qwen3-8b:lora:b1:s32768:ckpt",
)
"""Models and shapes no other list measures, for one H200 (141 GB; about 5 minutes): a mixture of
eight wide experts (Mixtral 8x7B, 93 GB in bf16) at batch 1 and 8; full fine-tuning of narrow models
with large vocabularies (Qwen2.5 0.5B and 1.5B, TinyLlama) and with gradient accumulation; LoRA from 3B to
32B (Llama 2 7B and 13B, Mistral Small 24B, Gemma 2 27B, Qwen2.5 32B) and at 32,768 tokens; decodes
after long prompts (Qwen3-14B at 8 x 2,048) and of a model with full multi-head attention (Llama 2 7B);
and four more encoders. Measured on one H200 in 277 s (data/calibration/h200-2026-11-27-f.json)."""

MOE_LORA_RUNS = _runs(
    "qwen3-30b-a3b:lora:b1:s2048:r16:ckpt",
    "qwen3-30b-a3b:lora:b4:s2048:r16:ckpt",
    "gpt-oss-20b:lora:b2:s2048:r16:ckpt",
    "gpt-oss-20b:lora:b1:s2048:r16",
    "mixtral-8x7b:lora:b1:s2048:r16:ckpt",
)
"""LoRA on mixtures of experts, which no list measures (training speed and memory of an MoE are otherwise
read from its prompts' measured share and published runs: engine/sizing/training_speed.py), for one H200
(141 GB): Qwen3-30B-A3B (128 experts 768 wide, 61 GB of bf16 weights) at batch 1 and 4, gpt-oss-20b (32
experts 2,880 wide) with and without checkpointing, and Mixtral 8x7B (8 experts 14,336 wide, 93 GB). The
experts are adapted through peft's `target_parameters` (`expert_parameter_targets`), whose merged copy of
each layer's expert weights the advisor counts (sizing.peft.merged_expert_bytes): without checkpointing
gpt-oss-20b keeps 40 GB of them, which the run without checkpointing tests."""

RUN_LISTS: dict[str, tuple[RunSpec, ...]] = {
    "default": DEFAULT_RUNS,
    "extended": EXTENDED_RUNS,
    "all": DEFAULT_RUNS + EXTENDED_RUNS,
    "80gb": GPU_80GB_RUNS,
    "h200": H200_RUNS,
    "h200-second": H200_SECOND_RUNS,
    "eager-hosts": EAGER_HOST_RUNS,
    "families": FAMILY_RUNS,
    "breadth": BREADTH_RUNS,
    "moe-lora": MOE_LORA_RUNS,
}


def resolve_runs(items: Iterable[str]) -> list[RunSpec]:
    """`--runs` values (list names and run specs) as runs in the order given, each run once."""
    runs: dict[str, RunSpec] = {}
    for item in items:
        for spec in RUN_LISTS.get(item) or (parse_run_spec(item),):
            runs.setdefault(spec.name, spec)
    return list(runs.values())


def select_runs(runs: Sequence[RunSpec], only: Sequence[str]) -> list[RunSpec]:
    """The runs that one of the `--only` names matches (all runs when none is given)."""
    if not only:
        return list(runs)
    kept: list[RunSpec] = []
    for spec in runs:
        for name in only:
            if name == spec.model or fnmatch.fnmatchcase(spec.name, name):
                kept.append(spec)
                break
            try:
                if parse_run_spec(name).name == spec.name:
                    kept.append(spec)
                    break
            except RunSpecError:
                pass
    if not kept:
        raise RunSpecError(
            f"--only {' '.join(only)} matches none of the runs: {', '.join(s.name for s in runs)}"
        )
    return kept


def check_models_exist(runs: Iterable[RunSpec], kb_root: Path) -> None:
    """RunSpecError naming every model id of `runs` that has no kb/models/<id>.yaml (with near misses)."""
    known = sorted(p.stem for p in (kb_root / "models").glob("*.yaml"))
    missing = sorted({spec.model for spec in runs} - set(known))
    if missing:
        hints = [
            f"{m} (did you mean {', '.join(close)}?)"
            if (close := difflib.get_close_matches(m, known, 3))
            else m
            for m in missing
        ]
        raise RunSpecError(f"no such model in {kb_root / 'models'}: {'; '.join(hints)}")


@dataclass(frozen=True)
class HFConfig:
    """A Hugging Face model type and the `AutoConfig.for_model` keyword arguments of one KB model."""

    model_type: str
    kwargs: dict[str, Any]


FAMILY_MODEL_TYPES: dict[str, str] = {
    "qwen3": "qwen3",
    "qwen2.5": "qwen2",
    "llama-2": "llama",
    "llama-3": "llama",
    "tinyllama": "llama",
    "smollm2": "llama",
    "smollm3": "smollm3",
    "mistral": "mistral",
    "mistral-nemo": "mistral",
    "mistral-small": "mistral",
    "gemma-2": "gemma2",
    "gemma-3": "gemma3_text",
    "phi-3": "phi3",
    "phi-4": "phi3",
}
"""KB family to the Hugging Face model type of its dense models. Gemma 3 is built as its language model
(`gemma3_text`, Gemma3ForCausalLM): the 1B is text-only; the 4B, 12B and 27B hold a vision encoder
(`extra_params_count`), so they are refused rather than measured without it. Phi-4 and Phi-4-mini are
published as `phi3` (fused q/k/v and gate/up projections)."""

FAMILY_MOE_MODEL_TYPES: dict[str, str] = {
    "qwen3": "qwen3_moe",
    "mixtral": "mixtral",
    "gpt-oss": "gpt_oss",
    "deepseek-v2": "deepseek_v2",
}
"""KB family to the Hugging Face model type of its mixture-of-experts models (KB `n_experts` set)."""

_QK_NORM_TYPES = {"qwen3", "qwen3_moe", "gemma3_text"}
_REQUIRED_ARCHITECTURE = (
    "n_layers",
    "hidden_size",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "tie_word_embeddings",
)
_SLIDING_WINDOW_TYPES = {"mistral", "mixtral", "phi3"}
"""Model types whose one `sliding_window` applies to every layer."""
_LAYER_PATTERNS: dict[str, int] = {"gemma2": 2, "gemma3_text": 6, "gpt_oss": 2}
"""Model types with a window on some layers only: every k-th layer (the k-th, 2k-th...) attends to the
whole context, the others to the window, as the config classes lay out `layer_types` by default (Gemma 2
and gpt-oss alternate from a local layer 0; Gemma 3 has five local layers to a global one)."""
_FOUR_NORM_TYPES = {"gemma2", "gemma3_text"}
"""RMSNorms before and after attention and before and after the MLP (KB `norms_per_layer: 4`)."""
_GELU_TYPES = {"gemma2", "gemma3_text"}
"""GeGLU MLPs: the gate goes through tanh-approximated GELU (config `hidden_activation`), not SiLU."""
_HEAD_DIM_DERIVED_TYPES = {"qwen2", "phi3", "smollm3"}
"""Config classes without `head_dim`: the model takes hidden_size / heads, so a KB head_dim must equal it."""
_ATTENTION_BIAS_TYPES = {"qwen3", "qwen3_moe", "llama", "smollm3", "gemma2", "gemma3_text", "gpt_oss"}
"""Config classes whose `attention_bias` puts a bias on all of q, k, v and o."""
_NO_ATTENTION_BIAS_TYPES = {"mistral", "mixtral", "phi3", "deepseek_v2"}
"""Model types built without attention biases whatever the config says (DeepSeek-V2's `attention_bias`
would bias the latent and output projections but not the queries)."""
_MLP_BIAS_TYPES = {"llama", "smollm3"}
_NO_MLP_BIAS_TYPES = {
    "mistral",
    "mixtral",
    "qwen3",
    "qwen3_moe",
    "gemma2",
    "gemma3_text",
    "phi3",
    "deepseek_v2",
}
"""Model types built without MLP biases (DeepSeek-V2's routed experts have none whatever `mlp_bias` says)."""
_MLA_TYPES = {"deepseek_v2"}
"""Multi-head latent attention, shared experts and dense first layers (`moe_layers`): DeepSeek-V2."""
ATTENTION_IMPLEMENTATIONS: dict[str, str] = {"gpt_oss": "eager"}
"""The attention each model type is built with where it is not SDPA. transformers 5.17's GptOss has no
SDPA path (`_supports_sdpa = False`: its per-head attention sinks join the softmax), so it runs eager
attention, which materialises the batch x heads x queries x keys scores."""
PHI3_LORA_TARGETS = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")
"""`LORA_TARGETS` as phi3 names them: q, k and v are one fused projection, gate and up another."""


def load_kb_model(model_id: str, kb_root: Path) -> dict[str, Any]:
    """kb/models/<model_id>.yaml as a dict (yaml.safe_load)."""
    path = kb_root / "models" / f"{model_id}.yaml"
    if not path.is_file():
        raise RunSpecError(f"no such model: {model_id} ({path} does not exist)")
    entry = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(entry, dict) or not isinstance(entry.get("architecture"), dict):
        raise UnsupportedModel(f"{model_id}: {path} has no architecture block")
    return entry


ENCODER_MODEL_TYPE = "bert"
"""Every post-LayerNorm encoder with learned positions and a dense GELU MLP (BERT, RoBERTa and
XLM-RoBERTa, BGE, E5, MiniLM) is built as BERT: XLM-RoBERTa differs only in where its positions start,
which the KB's `max_position_embeddings` (8,194 for bge-m3) already counts, so the shapes are the same."""


def hf_encoder_config_from_kb(entry: Mapping[str, Any]) -> HFConfig:
    """The BERT config of a KB encoder (`kind: encoder`): its layers, widths, vocabulary, positions and
    token types. A pre-norm, rotary or gated encoder (ModernBERT, nomic-embed) is an UnsupportedModel."""
    model_id = str(entry.get("id", "?"))
    arch: Mapping[str, Any] = entry["architecture"]
    problems = [
        f"{key} {arch.get(key)!r}: built as BERT, which needs {wanted!r}"
        for key, wanted in (("norm", "layernorm"), ("position_embedding", "learned"), ("mlp", "dense"))
        if arch.get(key) != wanted
    ]
    required = (
        "n_layers",
        "hidden_size",
        "n_heads",
        "intermediate_size",
        "vocab_size",
        "max_position_embeddings",
    )
    missing = [key for key in required if key not in arch]
    if missing:
        problems.append(f"the architecture lacks {', '.join(missing)}")
    elif arch.get("n_kv_heads", arch["n_heads"]) != arch["n_heads"]:
        problems.append("grouped key/value heads, which BERT does not have")
    elif (
        arch.get("head_dim", arch["hidden_size"] // arch["n_heads"]) * arch["n_heads"] != arch["hidden_size"]
    ):
        problems.append("BERT needs head_dim x heads = hidden")
    if problems:
        raise UnsupportedModel(f"{model_id} (encoder, built as {ENCODER_MODEL_TYPE}): {'; '.join(problems)}")
    kwargs: dict[str, Any] = {
        "vocab_size": arch["vocab_size"],
        "hidden_size": arch["hidden_size"],
        "num_hidden_layers": arch["n_layers"],
        "num_attention_heads": arch["n_heads"],
        "intermediate_size": arch["intermediate_size"],
        "max_position_embeddings": arch["max_position_embeddings"],
        "type_vocab_size": int(arch.get("type_vocab_size", 2)),
        "hidden_act": "gelu",
    }
    return HFConfig(model_type=ENCODER_MODEL_TYPE, kwargs=kwargs)


def hf_config_from_kb(entry: Mapping[str, Any]) -> HFConfig:
    """The Hugging Face config of a KB model entry: the KB's shapes under the transformers names.

    Values the KB does not hold (RoPE theta and scaling, norm epsilon, token ids, soft-capping, routing
    details) keep transformers' defaults, which are the published values of the families built here:
    none of them changes a tensor's shape, so none changes the weights' memory. A KB feature the model
    type cannot express (QK-norm on Llama, a vision encoder, latent attention on Qwen3...) is an
    UnsupportedModel error naming the model, not a silently different network. Encoders (`kind:
    encoder`) are built by `hf_encoder_config_from_kb`."""
    if entry.get("kind") == "encoder":
        return hf_encoder_config_from_kb(entry)
    model_id = str(entry.get("id", "?"))
    family = str(entry.get("family", "?"))
    arch: Mapping[str, Any] = entry["architecture"]
    moe = arch.get("n_experts") is not None
    model_type = (FAMILY_MOE_MODEL_TYPES if moe else FAMILY_MODEL_TYPES).get(family)
    if model_type is None:
        supported = ", ".join(sorted(FAMILY_MOE_MODEL_TYPES if moe else FAMILY_MODEL_TYPES))
        kind = "mixture-of-experts " if moe else ""
        scope = f" for {kind}models" if moe else ""
        raise UnsupportedModel(
            f"{model_id}: family {family!r} is not supported by bench.calibrate{scope}; "
            f"supported {kind}families: {supported}"
        )
    problems = _unsupported_features(entry, model_type)
    if problems:
        raise UnsupportedModel(f"{model_id} ({family}, built as {model_type}): {'; '.join(problems)}")
    kwargs = _common_kwargs(arch, model_type) | _window_kwargs(arch, model_type)
    return HFConfig(model_type=model_type, kwargs=kwargs | _moe_kwargs(arch, model_type))


def _common_kwargs(arch: Mapping[str, Any], model_type: str) -> dict[str, Any]:
    """The shapes every decoder has, the MLP's activation and the biases, under `model_type`'s names.
    Config classes that derive head_dim (`_HEAD_DIM_DERIVED_TYPES`) are not given it, nor is DeepSeek-V2,
    whose heads are `qk_nope_head_dim + qk_rope_head_dim` wide (`_moe_kwargs`)."""
    kwargs: dict[str, Any] = {
        "vocab_size": arch["vocab_size"],
        "hidden_size": arch["hidden_size"],
        "intermediate_size": arch["intermediate_size"],
        "num_hidden_layers": arch["n_layers"],
        "num_attention_heads": arch["n_heads"],
        "num_key_value_heads": arch["n_kv_heads"],
        "max_position_embeddings": arch["max_position_embeddings"],
        "tie_word_embeddings": bool(arch["tie_word_embeddings"]),
    }
    if model_type in _GELU_TYPES:
        kwargs["hidden_activation"] = "gelu_pytorch_tanh"
    else:
        kwargs["hidden_act"] = "silu"
    if model_type not in _HEAD_DIM_DERIVED_TYPES | _MLA_TYPES:
        kwargs["head_dim"] = arch["head_dim"]
    if model_type in _ATTENTION_BIAS_TYPES | _MLA_TYPES:
        kwargs["attention_bias"] = bool(arch.get("attention_bias", False))
    if model_type in _MLP_BIAS_TYPES | _MLA_TYPES:
        kwargs["mlp_bias"] = bool(arch.get("mlp_bias", False))
    if model_type == "phi3" and arch.get("partial_rotary_factor") is not None:
        # no KB field yet (Phi-4-mini rotates 96 of its 128 head dimensions); no shape depends on it
        kwargs["partial_rotary_factor"] = float(arch["partial_rotary_factor"])
    return kwargs


def layer_types(n_layers: int, every: int) -> list[str]:
    """transformers' `layer_types` with every `every`-th layer global and the others windowed."""
    return ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(n_layers)]


def _window_kwargs(arch: Mapping[str, Any], model_type: str) -> dict[str, Any]:
    """The attention window as `model_type` takes it: none (Qwen, SmolLM3: `use_sliding_window` off),
    one window on every layer (Mistral, Phi-3), or a window on the layers of `_LAYER_PATTERNS`, whose
    `layer_types` are written out rather than left to a config class's default."""
    if model_type in {"qwen2", "qwen3", "qwen3_moe", "smollm3"}:
        return {"use_sliding_window": False}
    if model_type in _SLIDING_WINDOW_TYPES:
        return {"sliding_window": arch.get("sliding_window")}
    every = _LAYER_PATTERNS.get(model_type)
    if every is not None:
        return {"sliding_window": arch["sliding_window"], "layer_types": layer_types(arch["n_layers"], every)}
    return {}


def _moe_kwargs(arch: Mapping[str, Any], model_type: str) -> dict[str, Any]:
    """The experts (and DeepSeek-V2's latent attention) under `model_type`'s names. DeepSeek-V2's dense
    layers are the first ones (`first_k_dense_replace`: DeepSeek-V2-Lite's layer 0), as in every
    DeepSeek config; the KB gives only how many layers have experts."""
    if model_type == "qwen3_moe":
        return {
            "num_experts": arch["n_experts"],
            "num_experts_per_tok": arch["experts_per_token"],
            "moe_intermediate_size": arch["moe_intermediate_size"],
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
            "norm_topk_prob": True,
        }
    if model_type in {"mixtral", "gpt_oss"}:
        return {"num_local_experts": arch["n_experts"], "num_experts_per_tok": arch["experts_per_token"]}
    if model_type == "deepseek_v2":
        return {
            "n_routed_experts": arch["n_experts"],
            "num_experts_per_tok": arch["experts_per_token"],
            "n_shared_experts": arch.get("n_shared_experts") or 0,
            "moe_intermediate_size": arch["moe_intermediate_size"],
            "first_k_dense_replace": arch["n_layers"] - (arch.get("moe_layers") or arch["n_layers"]),
            "kv_lora_rank": arch["kv_lora_rank"],
            "q_lora_rank": arch.get("q_lora_rank"),
            "qk_rope_head_dim": arch["qk_rope_head_dim"],
            "qk_nope_head_dim": arch["qk_nope_head_dim"],
            "v_head_dim": arch["v_head_dim"],
        }
    return {}


def _unsupported_features(entry: Mapping[str, Any], model_type: str) -> list[str]:
    """What in a KB entry the Hugging Face `model_type` would build differently, in words."""
    arch: Mapping[str, Any] = entry["architecture"]
    problems: list[str] = []

    def need(condition: bool, what: str) -> None:
        if not condition:
            problems.append(what)

    need(entry.get("kind") == "decoder", f"kind {entry.get('kind')!r}: only decoders are built (causal LM)")
    missing = [key for key in _REQUIRED_ARCHITECTURE if key not in arch]
    need(not missing, f"the architecture lacks {', '.join(missing)}")
    need(arch.get("mlp") == "gated", f"mlp {arch.get('mlp')!r}: {model_type} has a gated MLP")
    need(arch.get("norm") == "rmsnorm", f"norm {arch.get('norm')!r}: {model_type} uses RMSNorm")
    need(arch.get("position_embedding") == "rope", f"positions {arch.get('position_embedding')!r}: not RoPE")
    norms = 4 if model_type in _FOUR_NORM_TYPES else 2
    need(
        arch.get("norms_per_layer", 2) == norms,
        f"norms_per_layer other than {norms}: {model_type} has {norms}",
    )
    extra = arch.get("extra_params_count")
    need(
        not extra,
        f"a vision encoder and projector ({extra or 0:,} parameters, extra_params_count), which is not "
        f"built: {model_type} is the language model alone, so a run would measure less than the model holds",
    )
    qk_norm = bool(arch.get("qk_norm", False))
    need(qk_norm == (model_type in _QK_NORM_TYPES), f"qk_norm {str(qk_norm).lower()}: {model_type} differs")
    problems += _window_problems(arch, model_type)
    if not missing:
        problems += _attention_problems(arch, model_type)
    problems += _expert_problems(arch, model_type)
    return problems


def _window_problems(arch: Mapping[str, Any], model_type: str) -> list[str]:
    """Where the KB's window (`sliding_window` on `sliding_window_layers` layers, default all) is not
    the one `model_type` is built with: none, one on every layer, or `_LAYER_PATTERNS`' interleaving."""
    window, local = arch.get("sliding_window"), arch.get("sliding_window_layers")
    every = _LAYER_PATTERNS.get(model_type)
    if every is not None:
        layers = arch.get("n_layers", 0)
        expected = layers - layers // every
        if window is None or local != expected:
            where = "every layer" if local is None else f"{local} layers"
            return [
                f"sliding_window {window} on {where}: {model_type} has one global layer in every {every} "
                f"and a window on the others ({expected} of {layers})"
            ]
        return []
    if local is not None:
        return ["sliding_window_layers (a window on some layers only)"]
    if window is not None and model_type not in _SLIDING_WINDOW_TYPES:
        return [f"a sliding window, which {model_type} is not built with here"]
    return []


def _attention_problems(arch: Mapping[str, Any], model_type: str) -> list[str]:
    """Biases, head widths and latent attention that `model_type` would build otherwise than the KB says."""
    problems: list[str] = []

    def need(condition: bool, what: str) -> None:
        if not condition:
            problems.append(what)

    mla = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    if model_type in _MLA_TYPES:
        need(all(arch.get(key) is not None for key in mla), f"{model_type} has multi-head latent attention")
    else:
        need(all(arch.get(key) is None for key in (*mla, "q_lora_rank")), "multi-head latent attention")
    attention_bias = bool(arch.get("attention_bias", False))
    output_bias = arch.get("attention_output_bias")
    output_bias = attention_bias if output_bias is None else bool(output_bias)
    if model_type == "qwen2":
        need(attention_bias and not output_bias, "qwen2 has q, k, v biases and no output-projection bias")
    else:
        need(
            output_bias == attention_bias, f"{model_type} has an output-projection bias iff q, k, v have one"
        )
    if model_type in _HEAD_DIM_DERIVED_TYPES:
        need(
            arch["head_dim"] * arch["n_heads"] == arch["hidden_size"],
            f"{model_type} needs head_dim x heads = hidden",
        )
    mlp_bias = bool(arch.get("mlp_bias", False))
    if model_type in _NO_MLP_BIAS_TYPES:
        need(not mlp_bias, f"MLP biases, which {model_type} does not have")
    if model_type == "gpt_oss":
        need(mlp_bias, "gpt_oss's experts and router have biases (mlp_bias true)")
    if model_type in _NO_ATTENTION_BIAS_TYPES:
        need(not attention_bias, f"attention biases, which {model_type} does not have")
    return problems


def _expert_problems(arch: Mapping[str, Any], model_type: str) -> list[str]:
    """Mixture-of-experts features `model_type` would build otherwise: expert widths, shared experts,
    dense layers. Only DeepSeek-V2 has shared experts and dense first layers."""
    problems: list[str] = []

    def need(condition: bool, what: str) -> None:
        if not condition:
            problems.append(what)

    deepseek = model_type in _MLA_TYPES
    need(deepseek or not arch.get("n_shared_experts"), "shared experts")
    need(
        deepseek or arch.get("moe_layers") in (None, arch.get("n_layers")),
        "experts on only some layers (moe_layers)",
    )
    if model_type in {"qwen3_moe", "deepseek_v2"}:
        need(arch.get("moe_intermediate_size") is not None, "an MoE without moe_intermediate_size")
    if model_type in {"mixtral", "gpt_oss"}:
        width = arch.get("moe_intermediate_size")
        need(
            width in (None, arch.get("intermediate_size")),
            f"{model_type}'s experts are intermediate_size wide",
        )
    if arch.get("n_experts") is not None:
        need(arch.get("experts_per_token") is not None, "an MoE without experts_per_token")
    return problems


def attention_implementation(model_type: str) -> str:
    """The attention a model type is built with: SDPA, or where it has none `ATTENTION_IMPLEMENTATIONS`."""
    return ATTENTION_IMPLEMENTATIONS.get(model_type, "sdpa")


def lora_targets(model_id: str, hf: HFConfig) -> tuple[str, ...]:
    """The modules a LoRA run adapts: q, k, v, o, gate, up and down as `hf.model_type` names them
    (`PHI3_LORA_TARGETS`). A mixture of experts also adapts each layer's experts, which transformers 5
    keeps as 3-D parameters that `target_modules` does not reach: peft's `target_parameters` does
    (`expert_parameter_targets`). DeepSeek-V2's latent attention names its projections otherwise, so
    LoRA on it is an UnsupportedModel."""
    if hf.model_type in _MLA_TYPES:
        raise UnsupportedModel(
            f"{model_id} (built as {hf.model_type}): LoRA on latent attention, whose projections "
            "(q_a/q_b, kv_a/kv_b) are not the q, k, v and o the advisor sizes adapters on"
        )
    return PHI3_LORA_TARGETS if hf.model_type == "phi3" else LORA_TARGETS


def expert_parameter_targets(named_dims: Iterable[tuple[str, int]]) -> tuple[str, ...]:
    """peft `target_parameters` for a model's experts: each 3-D parameter (experts x out x in, as
    transformers 5 keeps an MoE layer's experts) named from its layer on, once ("mlp.experts.down_proj"
    for "model.layers.3.mlp.experts.down_proj"); empty for a dense model. `named_dims` is
    `(name, p.ndim) for name, p in model.named_parameters()`."""
    found: dict[str, None] = {}
    for name, ndim in named_dims:
        if ndim == 3 and ".layers." in name:
            found.setdefault(name.split(".layers.", 1)[1].split(".", 1)[1], None)
    return tuple(found)


def hf_config(model_id: str, kb_root: Path) -> HFConfig:
    """`hf_config_from_kb` of kb/models/<model_id>.yaml."""
    return hf_config_from_kb(load_kb_model(model_id, kb_root))


def _positive(value: float, digits: int) -> float:
    """`value` rounded to `digits` decimals, or to 3 significant figures where that would give 0."""
    if not value > 0:
        raise ValueError(f"a measured figure came out as {value}, not a positive number")
    rounded = round(value, digits)
    return rounded if rounded > 0 else float(f"{value:.3g}")


def training_result(
    spec: RunSpec,
    *,
    params: int,
    trainable_params: int,
    weights_bytes: int,
    step_times_s: Sequence[float],
    peak_allocated_bytes: int,
    peak_reserved_bytes: int,
) -> dict[str, Any]:
    """One training run's figures, as `TrainingRun` fields (validated): the median step, tokens/s and
    6 x params x tokens/s over 989 TFLOP/s (left out where it would pass 1, as on B200-class GPUs)."""
    assert spec.training and spec.seq is not None
    step_s = statistics.median(step_times_s)
    tokens_per_s = spec.batch * spec.seq * spec.gradient_accumulation / step_s
    mfu = 6 * params * tokens_per_s / MFU_PEAK_FLOPS
    result: dict[str, Any] = {
        "model": spec.model,
        "method": spec.method,
        "batch": spec.batch,
        "seq": spec.seq,
        "checkpointing": spec.checkpointing,
        "gradient_accumulation": spec.gradient_accumulation,
        "lora_rank": spec.lora_rank,
        "params": params,
        "trainable_params": trainable_params if spec.method == "lora" else None,
        "weights_gb": _positive(weights_bytes / GB, 3),
        "step_s": _positive(step_s, 4),
        "tokens_per_s": _positive(tokens_per_s, 1),
        "peak_allocated_gb": _positive(peak_allocated_bytes / GB, 3),
        "peak_reserved_gb": _positive(peak_reserved_bytes / GB, 3),
        "mfu_6PD_vs_989": _positive(mfu, 3) if mfu > 0 else None,
    }
    return TrainingRun.model_validate(result).model_dump(mode="json", exclude_none=True)


def decode_result(
    spec: RunSpec,
    *,
    weights_bytes: int,
    full_times_s: Sequence[float],
    prefill_times_s: Sequence[float],
    warm0_s: float,
    warm1_s: float | None,
    peak_allocated_bytes: int,
    peak_reserved_bytes: int | None = None,
    experts_implementation: str | None = None,
    forward: ForwardProfile | None = None,
) -> dict[str, Any]:
    """One decode run's figures, as `DecodeRun` fields (validated): a decode step is (median generate
    time - median prefill-only generate time) / (new tokens - 1). On CUDA `generate` runs one forward
    pass per new token, the first of them over the prompt (transformers 5.17, GenerationMixin._sample:
    the stop check is deferred on "mps" alone), so the two calls differ by new tokens - 1 decode steps."""
    assert not spec.training and spec.new_tokens is not None and spec.new_tokens >= 2
    step_s = (statistics.median(full_times_s) - statistics.median(prefill_times_s)) / (spec.new_tokens - 1)
    if not step_s > 0:
        raise ValueError(
            f"a full generate took no longer than the prefill alone ({statistics.median(full_times_s):.4f} s "
            f"vs {statistics.median(prefill_times_s):.4f} s): no decode time to report"
        )
    result: dict[str, Any] = {
        "model": spec.model,
        "method": spec.method,
        "engine": spec.engine,
        "batch": spec.batch,
        "prompt": spec.prompt,
        "new_tokens": spec.new_tokens,
        "weights_gb": _positive(weights_bytes / GB, 3),
        "decode_ms_per_step": _positive(step_s * 1000, 3),
        "generate_ms": _positive(statistics.median(full_times_s) * 1000, 3),
        "prefill_ms": _positive(statistics.median(prefill_times_s) * 1000, 3),
        "tokens_per_s_per_seq": _positive(1 / step_s, 1),
        "aggregate_tokens_per_s": _positive(spec.batch / step_s, 1),
        "peak_allocated_gb": _positive(peak_allocated_bytes / GB, 3),
        "peak_reserved_gb": None if not peak_reserved_bytes else _positive(peak_reserved_bytes / GB, 3),
        "warm0_s": _positive(warm0_s, 2),
        "warm1_s": None if warm1_s is None else _positive(warm1_s, 2),
        "experts_implementation": experts_implementation,
        "forward_kernels": None if forward is None else forward.kernels,
        "forward_gpu_busy_ms": None if forward is None else _positive(forward.gpu_busy_s * 1000, 3),
        "forward_ms": None if forward is None else _positive(forward.wall_s * 1000, 3),
    }
    return DecodeRun.model_validate(result).model_dump(mode="json", exclude_none=True)


def encode_result(
    spec: RunSpec,
    *,
    params: int,
    weights_bytes: int,
    pass_times_s: Sequence[float],
    peak_allocated_bytes: int,
    peak_reserved_bytes: int,
) -> dict[str, Any]:
    """One encoder run's figures, as `EncodeRun` fields (validated): the median forward pass and the
    tokens it read per second."""
    assert spec.method == "encode" and spec.seq is not None
    pass_s = statistics.median(pass_times_s)
    result: dict[str, Any] = {
        "model": spec.model,
        "method": spec.method,
        "batch": spec.batch,
        "seq": spec.seq,
        "params": params,
        "weights_gb": _positive(weights_bytes / GB, 3),
        "pass_ms": _positive(pass_s * 1000, 3),
        "tokens_per_s": _positive(spec.batch * spec.seq / pass_s, 1),
        "peak_allocated_gb": _positive(peak_allocated_bytes / GB, 3),
        "peak_reserved_gb": _positive(peak_reserved_bytes / GB, 3),
    }
    return EncodeRun.model_validate(result).model_dump(mode="json", exclude_none=True)


def method_text(
    runs: Sequence[Mapping[str, Any]], model_types: Mapping[str, str], device: Mapping[str, Any]
) -> str:
    """How every figure of a file was taken, in words (the file's `method`), for the runs it holds."""
    methods = {run["method"] for run in runs}
    bullets = _model_words(runs, model_types)
    if "full_finetune" in methods:
        bullets.append(
            "`full_finetune`: fp32 parameters, `torch.autocast(bfloat16)`, fused `torch.optim.AdamW`, "
            "loss from `model(input_ids=x, labels=x)` (Hugging Face's causal-LM loss, which upcasts logits "
            f"to fp32), random tokens, batch x seq as listed, {TRAIN_WARMUP_STEPS} warm-up steps then the "
            f"median of {TRAIN_TIMED_STEPS}; each step ends with `optimizer.step()` and "
            "`zero_grad(set_to_none=True)` and its outputs are freed before the next. `checkpointing: true` "
            "= `gradient_checkpointing_enable(use_reentrant=False)`; `gradient_accumulation` n = n "
            "micro-batches (loss / n) per optimizer step."
        )
    if "lora" in methods:
        bullets.append(
            "`lora`: bf16 base, peft LoRA r = `lora_rank`, alpha 2r, dropout 0, on q,k,v,o,gate,up,down "
            "(adapters in fp32, peft's default), and on a mixture of experts' 3-D expert weights through "
            "peft's `target_parameters`; fused AdamW over the adapters; the same loop."
        )
    if "inference" in methods:
        bullets.append(
            "`inference`: bf16, Hugging Face `generate`, greedy, exactly `new_tokens` generated (no EOS "
            "stop), random prompt tokens; `hf-eager` is eager with the dynamic cache, `hf-static-compile` "
            'is `cache_implementation="static"` (generate compiles the decode step with torch.compile and '
            "CUDA graphs). `decode_ms_per_step` = (generate time - prefill time) / (new tokens - 1), each "
            f"the median of {DECODE_REPEATS} calls (`generate_ms`, `prefill_ms`), the prefill time being a "
            "generate of 1 new token: generate runs a forward pass a new token, the first over the prompt. A "
            "mixture-of-experts model's `experts_implementation` is the one transformers chose (5.x: "
            "`grouped_mm`, one grouped GEMM over all experts a layer, where the GPU has it). For `hf-eager`, "
            "one decode forward (one token for each sequence after the prompts, dynamic cache) is run under "
            "torch.profiler after two untimed ones and one timed (`forward_ms`): `forward_kernels` is the "
            "CUDA kernels it launched, `forward_gpu_busy_ms` their summed durations. `warm0_s` "
            "is the first call (for hf-static-compile it includes compiling), `warm1_s` the second "
            "(hf-static-compile only)."
        )
    if "encode" in methods:
        bullets.append(
            f"`encode`: an encoder (`kind: encoder`) built as BERT (`{ENCODER_MODEL_TYPE}`; XLM-RoBERTa has "
            "the same shapes) without a head, or a decoder embedding model (Qwen3-Embedding) built as its "
            "family's base model (the layers and final norm, causal attention, no LM head), bf16, one "
            "forward pass of batch x seq random tokens with an "
            f"all-ones attention mask under `torch.inference_mode()`, {ENCODE_WARMUP_PASSES} warm-up passes "
            f"then the median of {ENCODE_TIMED_PASSES} (`pass_ms`); `tokens_per_s` = batch x seq / pass. "
            "This is what an embedding service computes per batch, without tokenizing or pooling."
        )
    bullets += [
        "Times are wall clock between `torch.cuda.synchronize()` calls.",
        "`weights_gb` = `torch.cuda.memory_allocated()` once the network (and its adapters) is built, "
        "less what was allocated before. `peak_allocated_gb` = `torch.cuda.max_memory_allocated()` minus "
        "what was allocated before the model was built, peak stats reset once it is built (a construction's "
        "transient, such as an LM head made and then tied to the embedding, is not counted), in 1e9 bytes. "
        "`peak_reserved_gb` is the caching allocator's peak likewise (what nvidia-smi would show, less "
        "the CUDA context). Everything is freed between runs, torch.compile's caches included.",
    ]
    if methods & {"full_finetune", "lora"}:
        bullets.append(
            "`mfu_6PD_vs_989` = 6 x params x tokens/s / 989e12 (the H100/H200 dense bf16 peak in the KB), "
            "left out where above 1."
        )
    bullets.append(_device_words(device))
    return "\n".join(
        textwrap.fill(bullet, width=100, initial_indent="- ", subsequent_indent="  ", break_on_hyphens=False)
        for bullet in bullets
    )


def _model_words(runs: Sequence[Mapping[str, Any]], model_types: Mapping[str, str]) -> list[str]:
    """The `method` bullets on the models: which, how they were built, and what differs by family."""
    methods = {run["method"] for run in runs}
    models = ", ".join(dict.fromkeys(run["model"] for run in runs))
    built_as = {model_types[run["model"]] for run in runs}
    types = ", ".join(f'"{t}"' for t in dict.fromkeys(model_types[run["model"]] for run in runs))
    classes = " or ".join(
        f"`{name}.from_config`"
        for name, used in (
            ("AutoModelForCausalLM", methods - {"encode"}),
            ("AutoModel", methods & {"encode"}),
        )
        if used
    )
    bullet = (
        f"Models: {models}, each built from its KB architecture (kb/models/<id>.yaml: the published "
        f"config.json values) with random weights (`AutoConfig.for_model({types}, ...)`, "
        f"{classes}, {_attention_words(built_as)}), on the GPU. Values the KB does "
        "not hold (RoPE theta and scaling, norm epsilon) keep transformers' defaults; none changes a shape."
    )
    return [bullet, *_family_words(built_as)]


def _device_words(device: Mapping[str, Any]) -> str:
    """The `method` bullet on the device figures."""
    device_words = []
    if device.get("bf16_matmul_tflops"):
        device_words.append(f"an {MATMUL_N}^3 bf16 matmul ran at {device['bf16_matmul_tflops']:g} TFLOP/s")
    if device.get("copy_tb_s_read_plus_write"):
        device_words.append(
            f"a device-to-device copy moved {device['copy_tb_s_read_plus_write']:g} TB/s counting bytes "
            "read and written"
        )
    device_words.append("`memory_total_gb` is what the driver reports (total_memory / 1e9)")
    return "Device figures: " + "; ".join(device_words) + "."


def _attention_words(model_types: set[str]) -> str:
    """The attention the models were built with: SDPA, naming the model types built otherwise."""
    other = {t: attention_implementation(t) for t in model_types if attention_implementation(t) != "sdpa"}
    return "SDPA attention" + "".join(f" ({impl} for {t}: no SDPA path)" for t, impl in sorted(other.items()))


def _family_words(model_types: set[str]) -> list[str]:
    """What a reader of the figures must know of the families built otherwise than plainly (transformers
    5.17): Gemma 2's soft-capping under SDPA, Phi-3's fused projections under LoRA."""
    words = []
    if "gemma2" in model_types:
        words.append(
            "`gemma2`: SDPA does not apply Gemma 2's attention-logit soft-capping (50; transformers passes "
            "it to eager, flash and flex attention only), so no batch x heads x seq x seq scores are made; "
            "the final-logit soft-capping (30) is applied, over the whole logits tensor."
        )
    if "phi3" in model_types:
        words.append(
            f"`phi3` fuses q, k, v into `qkv_proj` and gate, up into `gate_up_proj`: LoRA adapts "
            f"{', '.join(PHI3_LORA_TARGETS)}, one adapter pair per fused matrix."
        )
    return words


def build_document(
    *,
    device: Mapping[str, Any],
    stack: Mapping[str, Any],
    runs: Sequence[Mapping[str, Any]],
    method: str,
    measured_on: date,
    elapsed_s: float | None = None,
    failures: Sequence[Failure] = (),
) -> CalibrationFile:
    """The calibration file of these measurements, validated (pydantic ValidationError if not valid).
    Runs that could not be measured are kept with their error: an out-of-memory is itself a finding."""
    return CalibrationFile.model_validate(
        {
            "device": dict(device),
            "date": measured_on,
            "stack": dict(stack),
            "method": method,
            "runs": [dict(run) for run in runs],
            "failures": [{"run": f.run, "error": f.error} for f in failures],
            "elapsed_s": None if elapsed_s is None else _positive(elapsed_s, 1),
        }
    )


def document_json(document: CalibrationFile) -> str:
    """The file's text: the document without unset fields, one-space indented like the example file."""
    return json.dumps(document.model_dump(mode="json", exclude_none=True), indent=1) + "\n"


def write_document(document: CalibrationFile, out: Path, *, force: bool) -> None:
    """Write the (already validated) document; FileExistsError where `out` exists and not `force`."""
    text = document_json(document)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not force:
        with out.open("x", encoding="utf-8") as handle:
            handle.write(text)
        return
    partial = out.with_name(f".{out.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, out)


@dataclass
class Deadline:
    """The soft per-run time limit: checked between steps, so a single long step or compile can overrun."""

    limit_s: float | None
    start: float = field(default_factory=time.perf_counter)

    def check(self, where: str) -> None:
        if self.limit_s is not None and time.perf_counter() - self.start > self.limit_s:
            raise RunTimeout(f"over --timeout-per-run {self.limit_s:g} s ({where})")


@dataclass(frozen=True)
class Failure:
    """A run that was not measured, and why."""

    run: str
    error: str


def _import(name: str) -> Any:
    """A GPU-side dependency, imported when a measurement first needs it so the rest runs without it."""
    return importlib.import_module(name)


def _free(torch: Any) -> None:
    """Release what the last run left: Python garbage, torch.compile's caches and CUDA graphs, and the
    caching allocator's unused blocks."""
    gc.collect()
    torch._dynamo.reset()
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


@dataclass(frozen=True)
class _Baseline:
    """What was allocated and reserved before a run's model was built (peak stats reset just then)."""

    allocated: int
    reserved: int

    @classmethod
    def take(cls, torch: Any) -> _Baseline:
        _free(torch)
        torch.cuda.reset_peak_memory_stats()
        return cls(torch.cuda.memory_allocated(), torch.cuda.memory_reserved())


def _build_model(hf: HFConfig, dtype: Any, auto_class: str = "AutoModelForCausalLM") -> Any:
    """A randomly initialised network of `hf` (a causal LM, or for `auto_class` AutoModel the bare
    encoder), built directly on the GPU in `dtype` with SDPA attention (`attention_implementation`)."""
    torch, transformers = _import("torch"), _import("transformers")
    config = transformers.AutoConfig.for_model(hf.model_type, **hf.kwargs)
    major, minor = (int(part) for part in re.findall(r"\d+", transformers.__version__)[:2])
    dtype_key = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    with torch.device("cuda"):
        model = getattr(transformers, auto_class).from_config(
            config, attn_implementation=attention_implementation(hf.model_type), **{dtype_key: dtype}
        )
    wrong = {str(p.dtype) for p in model.parameters() if p.dtype != dtype}
    if wrong:
        raise RuntimeError(f"the model was built with {', '.join(sorted(wrong))} parameters, not {dtype}")
    # A construction's transients are not the workload's: a tied LM head is made, then replaced by the
    # embedding (311 MB for Qwen3-0.6B, on top of its 1.19 GB). The weights stay, so a peak is at least them.
    torch.cuda.reset_peak_memory_stats()
    return model


def _timed(torch: Any, action: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds `action` took on the GPU (synchronised before and after), and what it returned."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    value = action()
    torch.cuda.synchronize()
    return time.perf_counter() - start, value


def _repeated(
    torch: Any, action: Callable[[], Any], warmup: int, timed: int, deadline: Deadline, what: str
) -> list[float]:
    """Seconds of each of `timed` calls of `action` after `warmup` untimed ones, the deadline checked
    before each."""
    times: list[float] = []
    for index in range(warmup + timed):
        deadline.check(f"before {what} {index + 1}")
        seconds, _ = _timed(torch, action)
        if index >= warmup:
            times.append(seconds)
    return times


def _count_warning(spec: RunSpec, entry: Mapping[str, Any], built: int) -> None:
    """Say so where the network built has another parameter count than the KB gives (a mapping slip)."""
    expected = entry.get("params_count")
    if isinstance(expected, int) and expected != built:
        print(f"  note: {spec.model} built with {built:,} parameters; the KB counts {expected:,}", flush=True)


def measure_training(
    spec: RunSpec, entry: Mapping[str, Any], hf: HFConfig, deadline: Deadline
) -> dict[str, Any]:
    """The training step of `spec` (full fine-tune or LoRA) measured as `method_text` describes it."""
    assert spec.seq is not None
    torch = _import("torch")
    baseline = _Baseline.take(torch)
    torch.manual_seed(0)
    lora = spec.method == "lora"
    targets = lora_targets(spec.model, hf) if lora else ()
    model = _build_model(hf, torch.bfloat16 if lora else torch.float32)
    model.train()
    _count_warning(spec, entry, sum(p.numel() for p in model.parameters()))
    if spec.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if lora:
        assert spec.lora_rank is not None
        peft = _import("peft")
        experts = expert_parameter_targets((name, p.ndim) for name, p in model.named_parameters())
        lora_config = peft.LoraConfig(
            r=spec.lora_rank,
            lora_alpha=2 * spec.lora_rank,
            lora_dropout=0.0,
            target_modules=list(targets),
            task_type="CAUSAL_LM",
            **({"target_parameters": list(experts)} if experts else {}),
        )
        model = peft.get_peft_model(model, lora_config)
    weights_bytes = torch.cuda.memory_allocated() - baseline.allocated
    params = sum(p.numel() for p in model.parameters())
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-5, fused=True)
    x = torch.randint(0, hf.kwargs["vocab_size"], (spec.batch, spec.seq), device="cuda")
    accumulation = spec.gradient_accumulation

    def step() -> None:
        for _ in range(accumulation):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                out = model(input_ids=x, labels=x)
            loss = out.loss / accumulation if accumulation > 1 else out.loss
            loss.backward()
            del out, loss
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    times = _repeated(torch, step, TRAIN_WARMUP_STEPS, TRAIN_TIMED_STEPS, deadline, "step")
    return training_result(
        spec,
        params=params,
        trainable_params=sum(p.numel() for p in trainable),
        weights_bytes=weights_bytes,
        step_times_s=times,
        peak_allocated_bytes=torch.cuda.max_memory_allocated() - baseline.allocated,
        peak_reserved_bytes=torch.cuda.max_memory_reserved() - baseline.reserved,
    )


def measure_decode(
    spec: RunSpec, entry: Mapping[str, Any], hf: HFConfig, deadline: Deadline
) -> dict[str, Any]:
    """Greedy generation of `spec` measured as `method_text` describes it."""
    assert spec.prompt is not None and spec.new_tokens is not None
    prompt_tokens = spec.prompt
    torch = _import("torch")
    baseline = _Baseline.take(torch)
    torch.manual_seed(0)
    model = _build_model(hf, torch.bfloat16)
    model.eval()
    weights_bytes = torch.cuda.memory_allocated() - baseline.allocated
    _count_warning(spec, entry, sum(p.numel() for p in model.parameters()))
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    prompt = torch.randint(0, hf.kwargs["vocab_size"], (spec.batch, spec.prompt), device="cuda")
    mask = torch.ones_like(prompt)
    engine_kwargs = {"cache_implementation": "static"} if spec.engine == "hf-static-compile" else {}

    def generate(new_tokens: int, what: str) -> float:
        deadline.check(what)
        seconds, out = _timed(
            torch,
            lambda: model.generate(
                input_ids=prompt,
                attention_mask=mask,
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                do_sample=False,
                **engine_kwargs,
            ),
        )
        if tuple(out.shape) != (spec.batch, prompt_tokens + new_tokens):
            raise RuntimeError(f"generate returned shape {tuple(out.shape)} for {new_tokens} new tokens")
        return seconds

    warm0 = generate(spec.new_tokens, "first generate")
    warm1 = generate(spec.new_tokens, "second generate") if spec.engine == "hf-static-compile" else None
    full = [generate(spec.new_tokens, f"timed generate {i + 1}") for i in range(DECODE_REPEATS)]
    generate(1, "prefill warm-up")
    prefill = [generate(1, f"timed prefill {i + 1}") for i in range(DECODE_REPEATS)]
    peak_allocated = torch.cuda.max_memory_allocated() - baseline.allocated
    peak_reserved = torch.cuda.max_memory_reserved() - baseline.reserved
    forward = None
    if spec.engine == "hf-eager":
        deadline.check("profiled decode forward")
        forward = _profiled_decode_forward(torch, model, prompt)
    return decode_result(
        spec,
        weights_bytes=weights_bytes,
        full_times_s=full,
        prefill_times_s=prefill,
        warm0_s=warm0,
        warm1_s=warm1,
        peak_allocated_bytes=peak_allocated,
        peak_reserved_bytes=peak_reserved,
        experts_implementation=getattr(model.config, "_experts_implementation", None)
        if entry["architecture"].get("n_experts")
        else None,
        forward=forward,
    )


@dataclass(frozen=True)
class ForwardProfile:
    """One eager decode forward pass (one new token for each sequence, after the prompts) as
    torch.profiler saw it: what the host launched, how long the GPU was busy, how long it took."""

    kernels: int
    gpu_busy_s: float
    wall_s: float


def _profiled_decode_forward(torch: Any, model: Any, prompt: Any) -> ForwardProfile | None:
    """`ForwardProfile` of a decode forward after `prompt` is read into the dynamic cache: two
    untimed forwards, a timed one, then one under torch.profiler (CPU and CUDA activities), its CUDA
    kernels counted and their durations summed. None where the profiler fails: the run's other figures
    stand without it."""
    try:
        profiler = _import("torch.profiler")
        with torch.inference_mode():
            cache = model(input_ids=prompt, use_cache=True).past_key_values
            token = prompt[:, -1:]

            def forward() -> Any:
                return model(input_ids=token, past_key_values=cache, use_cache=True)

            for _ in range(2):
                forward()
            wall_s, _ = _timed(torch, forward)
            activities = [profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA]
            with profiler.profile(activities=activities) as recorded:
                forward()
                torch.cuda.synchronize()
        kernels = [e for e in recorded.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        busy_us = sum(e.time_range.elapsed_us() for e in kernels)
        return ForwardProfile(len(kernels), busy_us / 1e6, wall_s) if kernels else None
    except Exception as error:  # the profile is an extra figure, never the run's failure
        print(f"  (no forward profile: {_error_words(error)})", flush=True)
        return None


def measure_encode(
    spec: RunSpec, entry: Mapping[str, Any], hf: HFConfig, deadline: Deadline
) -> dict[str, Any]:
    """An encoder's forward pass over batch x seq tokens, measured as `method_text` describes it."""
    assert spec.seq is not None
    torch = _import("torch")
    baseline = _Baseline.take(torch)
    torch.manual_seed(0)
    model = _build_model(hf, torch.bfloat16, "AutoModel")
    model.eval()
    # a decoder embedding model's forward keeps every layer's keys and values unless told not to; an
    # embedding server reads the input and keeps nothing
    if getattr(model.config, "use_cache", None):
        model.config.use_cache = False
    weights_bytes = torch.cuda.memory_allocated() - baseline.allocated
    params = sum(p.numel() for p in model.parameters())
    _count_warning(spec, entry, params)
    ids = torch.randint(0, hf.kwargs["vocab_size"], (spec.batch, spec.seq), device="cuda")
    mask = torch.ones_like(ids)

    def forward() -> None:
        with torch.inference_mode():
            model(input_ids=ids, attention_mask=mask)

    times = _repeated(torch, forward, ENCODE_WARMUP_PASSES, ENCODE_TIMED_PASSES, deadline, "pass")
    return encode_result(
        spec,
        params=params,
        weights_bytes=weights_bytes,
        pass_times_s=times,
        peak_allocated_bytes=torch.cuda.max_memory_allocated() - baseline.allocated,
        peak_reserved_bytes=torch.cuda.max_memory_reserved() - baseline.reserved,
    )


def _driver_version() -> str | None:
    """The NVIDIA driver version nvidia-smi reports, or None where it cannot be read."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        found = subprocess.run(
            [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    first = found.stdout.strip().splitlines()[:1]
    return first[0].strip()[:40] if first and first[0].strip() else None


def _cuda_seconds(torch: Any, action: Callable[[], Any], iterations: int) -> float:
    """Seconds per call of `action` timed with CUDA events, after 3 untimed calls."""
    for _ in range(3):
        action()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        action()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) / 1000 / iterations


def _matmul_tflops(torch: Any) -> float:
    """TFLOP/s of an MATMUL_N^3 bf16 matmul."""
    n = MATMUL_N
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    return 2 * n**3 / _cuda_seconds(torch, lambda: torch.matmul(a, b, out=c), 20) / 1e12


def _copy_tb_s(torch: Any, size: int) -> float:
    """TB/s of a device-to-device copy of `size` bytes, counting bytes read and written."""
    source = torch.empty(size, device="cuda", dtype=torch.uint8)
    target = torch.empty_like(source)
    return 2 * size / _cuda_seconds(torch, lambda: target.copy_(source), 20) / 1e12


def measure_device(gpu: str) -> dict[str, Any]:
    """The `device` block: what the driver reports, a bf16 matmul's TFLOP/s and a copy's TB/s."""
    torch = _import("torch")
    properties = torch.cuda.get_device_properties(0)
    tflops = _matmul_tflops(torch)
    tb_s = _copy_tb_s(torch, min(COPY_BYTES, properties.total_memory // 8))
    _free(torch)
    return {
        "name": torch.cuda.get_device_name(0),
        "gpu": gpu,
        "memory_total_gb": round(properties.total_memory / GB, 2),
        "driver": _driver_version(),
        "bf16_matmul_tflops": _positive(tflops, 1),
        "copy_tb_s_read_plus_write": _positive(tb_s, 2),
    }


def stack_versions() -> dict[str, Any]:
    """The `stack` block: torch, transformers, peft (None where not installed) and CUDA versions."""
    torch, transformers = _import("torch"), _import("transformers")
    try:
        peft_version: str | None = str(_import("peft").__version__)
    except ImportError:
        peft_version = None
    return {
        "torch": str(torch.__version__),
        "transformers": str(transformers.__version__),
        "peft": peft_version,
        "cuda": torch.version.cuda,
    }


Progress = Callable[[Sequence[dict[str, Any]], Sequence[Failure], Mapping[str, str]], None]


def measure_runs(
    runs: Sequence[RunSpec], kb_root: Path, timeout_s: float | None, after_each: Progress | None = None
) -> tuple[list[dict[str, Any]], list[Failure], dict[str, str]]:
    """Every run measured on its own: the measured runs, the failures, and each model's HF model type.

    A failure (an exception, out of memory included) is recorded and the next run goes on after the
    memory is freed. Ctrl-C stops the runs left, which are recorded as not run; what was measured stays.
    `after_each` is given the figures so far after every run (main writes them to `<out>.inprogress`)."""
    torch = _import("torch")
    measured: list[dict[str, Any]] = []
    failures: list[Failure] = []
    model_types: dict[str, str] = {}
    for index, spec in enumerate(runs):
        print(f"[{index + 1}/{len(runs)}] {spec.name}", flush=True)
        stop: str | None = None
        try:
            entry = load_kb_model(spec.model, kb_root)
            hf = hf_config_from_kb(entry)
            measure = {"inference": measure_decode, "encode": measure_encode}.get(
                spec.method, measure_training
            )
            result = measure(spec, entry, hf, Deadline(timeout_s))
        except KeyboardInterrupt:
            failures.append(Failure(spec.name, "interrupted"))
            stop = "not run: interrupted"
        except Exception as error:
            failures.append(Failure(spec.name, _error_words(error)))
            print(f"  failed: {_error_words(error)}", flush=True)
        else:
            model_types[spec.model] = hf.model_type
            measured.append(result)
            print(f"  {json.dumps(result)}", flush=True)
        try:
            _free(torch)
        except Exception as error:
            stop = stop or f"not run: the GPU was unusable after {spec.name} ({_error_words(error)})"
        if stop is not None:
            failures += [Failure(left.name, stop) for left in runs[index + 1 :]]
            print(f"  stopping: the {len(runs) - index - 1} runs left are {stop}", flush=True)
        if after_each is not None:
            after_each(measured, failures, model_types)
        if stop is not None:
            break
    return measured, failures, model_types


def _error_words(error: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    message = str(error).strip().splitlines()
    return f"{type(error).__name__}: {message[0]}" if message else type(error).__name__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.calibrate",
        description="Measure training steps and decoding on this CUDA GPU and write a calibration file "
        "(engine/models/calibration.py). Run specs: " + SPEC_SYNTAX + ".",
    )
    parser.add_argument(
        "--out", type=Path, help="the file to write, e.g. data/calibration/h100-2026-12-01.json"
    )
    parser.add_argument("--gpu", help="the KB id of this GPU (kb/gpus/<id>.yaml), e.g. nvidia-h100-sxm")
    parser.add_argument(
        "--runs",
        nargs="+",
        default=["default"],
        metavar="SPEC",
        help="run specs and list names (default, extended, all, 80gb, h200, h200-second, eager-hosts, "
        "families, breadth); default: default",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="keep the runs NAME matches: a run spec, a model id or a pattern ('qwen3-8b:decode:*'); "
        "repeatable",
    )
    parser.add_argument(
        "--timeout-per-run",
        type=float,
        metavar="SECONDS",
        help="a soft limit per run, checked between steps and generate calls",
    )
    parser.add_argument("--force", action="store_true", help="write over --out if it exists")
    parser.add_argument("--list", action="store_true", help="print the runs chosen and stop (needs no GPU)")
    parser.add_argument(
        "--kb", type=Path, default=None, help="the KB folder (default: $GPU_ADVISOR_KB or kb/)"
    )
    return parser


def _progress_writer(
    path: Path, device: Mapping[str, Any], stack: Mapping[str, Any], start: float
) -> Progress:
    """What `measure_runs` calls after each run: the figures so far written to `path`, replaced run by
    run, so a harness killed from outside keeps them. A progress file never stops the measuring."""

    def save_so_far(
        measured: Sequence[dict[str, Any]], failures: Sequence[Failure], model_types: Mapping[str, str]
    ) -> None:
        if not measured:
            return
        try:
            document = build_document(
                device=device,
                stack=stack,
                runs=measured,
                method=method_text(measured, model_types, device),
                measured_on=date.today(),
                elapsed_s=time.perf_counter() - start,
                failures=failures,
            )
            write_document(document, path, force=True)
        except Exception as error:
            print(f"  note: {path} not written ({_error_words(error)})", flush=True)

    return save_so_far


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module docstring); returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    kb_root: Path = args.kb or paths.kb_dir()
    try:
        runs = select_runs(resolve_runs(args.runs), args.only)
        check_models_exist(runs, kb_root)
    except RunSpecError as error:
        parser.error(str(error))
    if args.list:
        for spec in runs:
            print(spec.name)
        return 0
    if args.out is None or args.gpu is None:
        parser.error("--out and --gpu are required (unless --list)")
    if not (kb_root / "gpus" / f"{args.gpu}.yaml").is_file():
        known = sorted(p.stem for p in (kb_root / "gpus").glob("*.yaml"))
        close = difflib.get_close_matches(args.gpu, known, 3)
        parser.error(
            f"--gpu {args.gpu}: no {kb_root / 'gpus' / args.gpu}.yaml"
            + (f" (did you mean {', '.join(close)}?)" if close else "")
        )
    if args.out.exists() and not args.force:
        parser.error(f"--out {args.out} exists; pass --force to write over it")
    if args.timeout_per_run is not None and not args.timeout_per_run > 0:
        parser.error("--timeout-per-run must be a positive number of seconds")
    try:
        torch = _import("torch")
        _import("transformers")
    except ImportError as error:
        print(f"bench.calibrate: measuring needs torch and transformers ({error})", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench.calibrate: no CUDA GPU is visible to torch", file=sys.stderr)
        return 2

    start = time.perf_counter()
    device = measure_device(args.gpu)
    stack = stack_versions()
    print(f"device: {json.dumps(device)}\nstack: {json.dumps(stack)}", flush=True)
    in_progress = args.out.with_name(f"{args.out.name}.inprogress")
    save_so_far = _progress_writer(in_progress, device, stack, start)
    measured, failures, model_types = measure_runs(runs, kb_root, args.timeout_per_run, save_so_far)
    elapsed = time.perf_counter() - start

    status = 0
    if measured:
        document = build_document(
            device=device,
            stack=stack,
            runs=measured,
            method=method_text(measured, model_types, device),
            measured_on=date.today(),
            elapsed_s=elapsed,
            failures=failures,
        )
        try:
            write_document(document, args.out, force=args.force)
            in_progress.unlink(missing_ok=True)
            print(f"wrote {args.out}: {len(measured)} of {len(runs)} runs in {elapsed:.0f} s", flush=True)
        except FileExistsError:
            print(f"bench.calibrate: {args.out} appeared while measuring; not written over", file=sys.stderr)
            print(document_json(document))
            status = 2
    else:
        print("bench.calibrate: no run was measured; nothing written", file=sys.stderr)
        status = 2
    if failures:
        print(f"failures ({len(failures)}):")
        for failure in failures:
            print(f"  {failure.run}: {failure.error}")
        status = max(status, 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
