"""A `POST /recommend` request from the command line: a request file (YAML or JSON), then flags on
top of it. Each flag writes one field of the contract's request; validation is the request model's."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.maintenance import ReadError, parse_yaml_mapping
from engine.models.compare import CompareRequest
from engine.models.request import RecommendRequest

ACQUISITIONS = ("buy", "rent", "owned")
"""how a compared choice's GPUs are got (`Choice.acquisition`)"""
MAX_REQUEST_FILE_BYTES = 64 * 1024
"""The same limit as the HTTP API's request body."""


class RequestInputError(ValueError):
    """The request file or flags cannot make a request; the message says which and why."""


@dataclass(frozen=True)
class Flag:
    """One command-line flag and the request field it sets. Its help and choices come from the
    field's description and enum in the request's JSON Schema, so they cannot drift from the API."""

    path: tuple[str, ...]
    kind: str
    """float | int | str | list | hardware | hardware-list; bool: a switch that sets the field true;
    off: a switch that sets it false; file: a JSON or YAML file whose mapping is the field's value"""
    option: str | None = None
    """default: `--` and the field name with dashes"""
    usage: str | None = None
    """help for a flag whose form differs from the field's (GPU[:COUNT], a negated switch)"""

    @property
    def name(self) -> str:
        return self.option or "--" + self.path[-1].replace("_", "-")

    @property
    def help(self) -> str:
        return self.usage or str(_field_schema(self.path).get("description", ""))

    @property
    def choices(self) -> tuple[str, ...] | None:
        """The field's enum values, for a single-valued string flag."""
        if self.kind != "str":
            return None
        field = _field_schema(self.path)
        for node in [field, *field.get("anyOf", [])]:
            if "enum" in node:
                return tuple(str(value) for value in node["enum"])
        return None


def _field_schema(path: tuple[str, ...]) -> dict[str, Any]:
    """The JSON Schema of the request field at `path`, with `$ref`s followed."""
    schema = _REQUEST_SCHEMA
    node: dict[str, Any] = schema
    for key in path:
        node = _resolved(node, schema)["properties"][key]
    return node


def _resolved(node: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    candidates: list[dict[str, Any]] = [node, *node.get("anyOf", [])]
    for candidate in candidates:
        if "$ref" in candidate:
            found: dict[str, Any] = schema["$defs"][candidate["$ref"].rsplit("/", 1)[-1]]
            return found
        if "properties" in candidate:
            return candidate
    return node


_REQUEST_SCHEMA = RecommendRequest.model_json_schema()

FLAGS: tuple[Flag, ...] = (
    Flag(("workload", "task"), "str"),
    Flag(
        ("workload", "model"),
        "str",
        usage="KB model id or a name people use, e.g. llama-3-1-8b, meta-llama/Llama-3.1-8B-Instruct "
        "(GET /models lists them)",
    ),
    Flag(
        ("workload", "hf_config"),
        "file",
        "--hf-config",
        "a Hugging Face config.json (a local file) to size the model from; nothing is downloaded",
    ),
    Flag(("workload", "params_b"), "float"),
    Flag(("workload", "active_params_b"), "float"),
    Flag(("workload", "precision"), "str"),
    Flag(("workload", "kv_cache_precision"), "str"),
    Flag(("workload", "optimizer"), "str"),
    Flag(("workload", "batch_size"), "int"),
    Flag(("workload", "seq_len"), "int"),
    Flag(("workload", "lora_rank"), "int"),
    Flag(("workload", "training_tokens_b"), "float"),
    Flag(("workload", "job_hours"), "float"),
    Flag(("workload", "fused_loss"), "bool"),
    Flag(("workload", "training_stack"), "str"),
    Flag(("workload", "serving", "requests_per_min"), "float"),
    Flag(("workload", "serving", "avg_input_tokens"), "int"),
    Flag(("workload", "serving", "avg_output_tokens"), "int"),
    Flag(("workload", "serving", "engine"), "str"),
    Flag(("workload", "serving", "sequences_per_request"), "int"),
    Flag(("workload", "serving", "corpus_documents"), "int"),
    Flag(("constraints", "budget_usd"), "float"),
    Flag(("constraints", "acquisition"), "str"),
    Flag(("constraints", "os"), "str"),
    Flag(("constraints", "on_prem_only"), "bool"),
    Flag(("constraints", "utilization_pct"), "float"),
    Flag(("constraints", "hours_per_week"), "float"),
    Flag(("constraints", "horizon_months"), "float"),
    Flag(("constraints", "interruptible"), "bool"),
    Flag(("constraints", "providers"), "list", usage="allowed provider ids, comma-separated"),
    Flag(
        ("constraints", "vendors"), "list", usage="allowed vendors, comma-separated: nvidia,amd,intel,apple"
    ),
    Flag(
        ("constraints", "gpu_classes"),
        "list",
        usage="allowed GPU classes, comma-separated: consumer,workstation,datacenter,apple-silicon,cpu",
    ),
    Flag(("constraints", "max_gpus"), "int"),
    Flag(("constraints", "gpu_count"), "int"),
    Flag(
        ("constraints", "parallelism"),
        "list",
        usage="strategies already chosen, comma-separated, e.g. zero-3",
    ),
    Flag(
        ("constraints", "existing_hardware"),
        "hardware-list",
        "--owned",
        "hardware you own, GPU[:COUNT[:HOST_RAM_GIB]], comma-separated, e.g. nvidia-rtx-4090:2 or "
        "nvidia-rtx-3090:2:128 (the RAM of the machine they are in, which CPU-offload plans are held to)",
    ),
    Flag(("constraints", "target_hardware"), "hardware", "--target", "will it run on GPU[:COUNT]?"),
    Flag(
        ("constraints", "allow_quantization"),
        "off",
        "--no-quantization",
        "keep the stated precision for weights and KV cache",
    ),
    Flag(("constraints", "deployment"), "str"),
    Flag(("objective",), "str"),
    Flag(("top_k",), "int"),
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
        raise _invalid("the request", exc) from None


def to_compare(document: dict[str, Any], values: dict[str, Any], choices: list[str]) -> CompareRequest:
    """The validated `POST /compare` body: `document` is a request (or a compare body with its own
    choices), the flags are written on its request, and each `--choice` GPU[:COUNT[:HOW]] is added."""
    if "request" in document or "choices" in document:
        request, listed = document.get("request", {}), document.get("choices", [])
    else:
        request, listed = document, []
    if not isinstance(request, dict) or not isinstance(listed, list):
        raise RequestInputError("the file's `request` must be a mapping and its `choices` a list")
    body = {"request": apply_flags(request, values), "choices": [*listed, *map(_choice, choices)]}
    try:
        return CompareRequest.model_validate(body)
    except ValidationError as exc:
        raise _invalid("the comparison", exc) from None


def _invalid(what: str, exc: ValidationError) -> RequestInputError:
    """An error naming each wrong field of `what`."""
    lines = [f"  {'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors()]
    return RequestInputError(f"{what} is not valid:\n" + "\n".join(lines))


def _choice(text: str) -> dict[str, Any]:
    """GPU[:COUNT[:HOW]] as a choice: nvidia-h100-sxm:2:rent."""
    gpu, _, rest = text.strip().partition(":")
    count, _, how = rest.partition(":")
    choice = _hardware(f"{gpu}:{count}" if count else gpu)
    if how:
        if how not in ACQUISITIONS:
            raise RequestInputError(
                f"{text!r}: HOW is one of {', '.join(ACQUISITIONS)}, e.g. nvidia-h100-sxm:2:rent"
            )
        choice["acquisition"] = how
    return choice


def _dest(flag: Flag) -> str:
    return flag.name.lstrip("-").replace("-", "_")


def _converted(flag: Flag, value: Any) -> Any:
    if flag.kind == "off":
        return False
    if flag.kind == "list":
        return [item.strip() for item in str(value).split(",") if item.strip()]
    if flag.kind == "hardware":
        return _hardware(str(value))
    if flag.kind == "hardware-list":
        return [_owned(item) for item in str(value).split(",") if item.strip()]
    if flag.kind == "file":
        return read_request_file(Path(str(value)))
    return value


def _owned(text: str) -> dict[str, Any]:
    """An `--owned` item: GPU[:COUNT[:HOST_RAM_GIB]] (`existing_hardware[].host_ram_gib`)."""
    head, _, ram = text.strip().rpartition(":") if text.count(":") == 2 else (text, "", "")
    if not ram:
        return _hardware(head)
    try:
        gib = float(ram)
    except ValueError:
        raise RequestInputError(
            f"{text!r}: write GPU[:COUNT[:HOST_RAM_GIB]], e.g. nvidia-rtx-3090:2:128"
        ) from None
    return {**_hardware(head), "host_ram_gib": gib}


def _hardware(text: str) -> dict[str, Any]:
    gpu, _, count = text.strip().partition(":")
    if count and not count.isdigit():
        raise RequestInputError(f"{text!r}: write GPU or GPU:COUNT, e.g. nvidia-rtx-4090:2")
    return {"gpu": gpu, "count": int(count) if count else 1}
