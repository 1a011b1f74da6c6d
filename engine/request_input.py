"""A `POST /recommend` request from the command line: a request file (YAML or JSON), then flags on
top of it. Each flag writes one field of the contract's request; validation is the request model's."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.documents import ReadError, parse_yaml_mapping
from engine.models.request import RecommendRequest

MAX_REQUEST_FILE_BYTES = 64 * 1024
"""The same limit as the HTTP API's request body."""


class RequestInputError(ValueError):
    """The request file or flags cannot make a request; the message says which and why."""


@dataclass(frozen=True)
class Flag:
    """One command-line flag and the request field it sets."""

    option: str
    path: tuple[str, ...]
    kind: str  # "float" | "int" | "str" | "bool" | "list" | "hardware" | "hardware-list"
    help: str
    choices: tuple[str, ...] | None = None


FLAGS: tuple[Flag, ...] = (
    Flag(
        "--task",
        ("workload", "task"),
        "str",
        "inference | pretrain | full_finetune | lora | qlora",
        ("inference", "pretrain", "full_finetune", "lora", "qlora"),
    ),
    Flag("--model", ("workload", "model"), "str", "KB model id, e.g. llama-3-1-8b (see GET /models)"),
    Flag("--params-b", ("workload", "params_b"), "float", "total parameters, billions"),
    Flag(
        "--active-params-b", ("workload", "active_params_b"), "float", "MoE: parameters per token, billions"
    ),
    Flag(
        "--precision",
        ("workload", "precision"),
        "str",
        "fp32 | fp16 | bf16 | fp8 | int8 | int4",
        ("fp32", "fp16", "bf16", "fp8", "int8", "int4"),
    ),
    Flag(
        "--kv-cache-precision",
        ("workload", "kv_cache_precision"),
        "str",
        "fp16 | bf16 | fp8 | int8",
        ("fp16", "bf16", "fp8", "int8"),
    ),
    Flag(
        "--optimizer",
        ("workload", "optimizer"),
        "str",
        "adamw | adam | adamw_8bit | sgd | adafactor",
        ("adamw", "adam", "adamw_8bit", "sgd", "adafactor"),
    ),
    Flag("--batch-size", ("workload", "batch_size"), "int", "sequences in flight per step"),
    Flag("--seq-len", ("workload", "seq_len"), "int", "tokens per sequence (prompt + generated)"),
    Flag("--lora-rank", ("workload", "lora_rank"), "int", "LoRA rank (lora, qlora)"),
    Flag("--training-tokens-b", ("workload", "training_tokens_b"), "float", "tokens to train on, billions"),
    Flag("--job-hours", ("workload", "job_hours"), "float", "your estimate of the job's wall-clock hours"),
    Flag(
        "--budget-usd", ("constraints", "budget_usd"), "float", "capex when buying; total spend when renting"
    ),
    Flag("--acquisition", ("constraints", "acquisition"), "str", "buy | rent | any", ("buy", "rent", "any")),
    Flag(
        "--os",
        ("constraints", "os"),
        "str",
        "your OS: linux | windows | macos",
        ("linux", "windows", "macos"),
    ),
    Flag("--on-prem-only", ("constraints", "on_prem_only"), "bool", "data may not leave owned hardware"),
    Flag("--utilization-pct", ("constraints", "utilization_pct"), "float", "expected busy share, percent"),
    Flag("--hours-per-week", ("constraints", "hours_per_week"), "float", "expected busy hours per week"),
    Flag("--horizon-months", ("constraints", "horizon_months"), "float", "comparison horizon, months"),
    Flag("--interruptible", ("constraints", "interruptible"), "bool", "the job tolerates spot preemption"),
    Flag("--providers", ("constraints", "providers"), "list", "allowed provider ids, comma-separated"),
    Flag("--vendors", ("constraints", "vendors"), "list", "allowed vendors: nvidia,amd,intel,apple"),
    Flag("--max-gpus", ("constraints", "max_gpus"), "int", "at most this many GPUs"),
    Flag("--gpu-count", ("constraints", "gpu_count"), "int", "exactly this many GPUs"),
    Flag("--parallelism", ("constraints", "parallelism"), "list", "strategy already chosen, e.g. zero-3"),
    Flag(
        "--owned",
        ("constraints", "existing_hardware"),
        "hardware-list",
        "hardware you own, GPU[:COUNT], comma-separated, e.g. nvidia-rtx-4090:2",
    ),
    Flag("--target", ("constraints", "target_hardware"), "hardware", "will it run on GPU[:COUNT]?"),
    Flag(
        "--no-quantization",
        ("constraints", "allow_quantization"),
        "bool",
        "keep the stated precision for weights and KV cache",
    ),
    Flag(
        "--deployment",
        ("constraints", "deployment"),
        "str",
        "workstation | dense_rack",
        ("workstation", "dense_rack"),
    ),
    Flag(
        "--objective",
        ("objective",),
        "str",
        "cheapest | fastest | balanced",
        ("cheapest", "fastest", "balanced"),
    ),
    Flag("--top-k", ("top_k",), "int", "how many options to show (1-20)"),
)


def read_request_file(path: Path) -> dict[str, Any]:
    """A request document from a YAML or JSON file (JSON is YAML), read as defensively as KB files
    (no aliases, bounded nesting and size); a clear error when it is not one."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RequestInputError(f"{path.name}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_REQUEST_FILE_BYTES:
        raise RequestInputError(f"{path.name}: larger than {MAX_REQUEST_FILE_BYTES // 1024} KB")
    parsed = parse_yaml_mapping(raw, path, path.name)
    if isinstance(parsed, ReadError):
        where = f":{parsed.line}" if parsed.line else ""
        raise RequestInputError(f"{path.name}{where}: {parsed.message} ({parsed.fix})")
    return parsed.data


def apply_flags(document: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """`document` with each given flag's value written at its field (flags win over the file)."""
    merged = copy.deepcopy(document)
    for flag in FLAGS:
        value = values.get(_dest(flag))
        if value is None or value is False:
            continue
        node = merged
        for key in flag.path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = node[key] = {}
            node = child
        node[flag.path[-1]] = _converted(flag, value)
    return merged


def to_request(document: dict[str, Any]) -> RecommendRequest:
    """The validated request; a RequestInputError naming each wrong field otherwise."""
    try:
        return RecommendRequest.model_validate(document)
    except ValidationError as exc:
        lines = [f"  {'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors()]
        raise RequestInputError("the request is not valid:\n" + "\n".join(lines)) from None


def _dest(flag: Flag) -> str:
    return flag.option.lstrip("-").replace("-", "_")


def _converted(flag: Flag, value: Any) -> Any:
    if flag.option == "--no-quantization":
        return False
    if flag.kind == "list":
        return [item.strip() for item in str(value).split(",") if item.strip()]
    if flag.kind == "hardware":
        return _hardware(str(value))
    if flag.kind == "hardware-list":
        return [_hardware(item) for item in str(value).split(",") if item.strip()]
    return value


def _hardware(text: str) -> dict[str, Any]:
    gpu, _, count = text.strip().partition(":")
    if count and not count.isdigit():
        raise RequestInputError(f"{text!r}: write GPU or GPU:COUNT, e.g. nvidia-rtx-4090:2")
    return {"gpu": gpu, "count": int(count) if count else 1}
