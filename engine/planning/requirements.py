"""The workload's needs before any hardware is chosen: the `sizing.*` and `hardware.*` facts the rules
read (docs/rule-facts.md), and the `requirements` block of the response."""

from __future__ import annotations

from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest
from engine.models.response import Bound, JobMemory, Requirements
from engine.models.rule import Scalar
from engine.planning.memory import Layout, per_gpu
from engine.planning.workload import DEFAULT_TOKENS_PER_S_PER_USER, Job
from engine.reasoning.conditions import Facts
from engine.sizing import GB, required_tokens_per_second

TARGET_HEADROOM = 0.05
TARGET_MIN_HEADROOM_GB = 1.0
"""`hardware.target_fits` keeps the larger of 5% and 1 GB free, the policy of the rule
keep-memory-headroom: it is known before any rule runs, so before that rule."""


def _gb(value: float) -> float:
    return round(value / GB, 3)


def stated_precision(job: Job) -> str:
    return job.requested_precision or "bf16"


def task_total(job: Job, method: str, precision: str, checkpointing: bool = False) -> float:
    return per_gpu(job, Layout(method, precision, checkpointing=checkpointing)).total


def sizing_facts(job: Job, kb: KB) -> dict[str, Scalar]:
    precision = stated_precision(job)
    training_precision = precision if precision in ("fp32", "bf16", "fp16", "fp8") else "bf16"
    facts: dict[str, Scalar] = {
        "sizing.params_b": round(job.params / 1e9, 4),
        "sizing.active_params_b": round(job.active_params / 1e9, 4),
        "sizing.full_training_gb": _gb(task_total(job, "full_finetune", training_precision)),
        "sizing.lora_gb": _gb(task_total(job, "lora", training_precision)),
        "sizing.qlora_gb": _gb(task_total(job, "qlora", "nf4")),
        "sizing.largest_gpu_gb": max((g.usable_memory_gb or g.memory_gb) for g in kb.gpus.values()),
    }
    inference = per_gpu(job, Layout("inference", precision if job.task == "inference" else "bf16"))
    facts["sizing.weights_gb"] = _gb(inference.weights)
    facts["sizing.inference_gb"] = _gb(inference.total)
    facts["sizing.inference_int8_gb"] = _gb(task_total(job, "inference", "int8"))
    facts["sizing.inference_int4_gb"] = _gb(task_total(job, "inference", "int4"))
    if job.task == "inference":
        facts["sizing.kv_cache_gb"] = _gb(inference.kv_cache)
        facts["sizing.kv_to_weights_pct"] = round(inference.kv_cache / inference.weights * 100, 2)
        facts["sizing.batch_size"] = job.batch
        facts["sizing.batch_from_traffic"] = job.batch_from_serving
        facts["sizing.task_gb"] = facts["sizing.inference_gb"]
    elif job.task == "qlora":
        facts["sizing.task_gb"] = facts["sizing.qlora_gb"]
    elif job.task == "lora":
        facts["sizing.task_gb"] = facts["sizing.lora_gb"]
    else:
        facts["sizing.task_gb"] = facts["sizing.full_training_gb"]
    if job.utilization is not None:
        facts["sizing.utilization_pct"] = round(job.utilization * 100, 3)
    if job.training_tokens is not None:
        facts["sizing.training_tokens_b"] = round(job.training_tokens / 1e9, 6)
    if job.deadline_hours is not None:
        facts["sizing.deadline_hours"] = round(job.deadline_hours, 3)
    per_user = per_user_tps(job)
    if per_user is not None:
        facts["sizing.per_user_tokens_per_s"] = round(per_user, 3)
    demand = required_tps(job)
    if demand is not None:
        facts["sizing.required_tokens_per_s"] = round(demand, 3)
    return facts


def required_tps(job: Job) -> float | None:
    """The token rate a serving fleet must sustain, when the request gives its traffic (requests per
    minute); None for a single stream, whose speed is the per-user target's concern."""
    serving = job.serving
    if serving is None or serving.requests_per_min is None:
        return None
    return required_tokens_per_second(serving.requests_per_min, serving.avg_output_tokens)


def per_user_tps(job: Job) -> float | None:
    """The decode speed each served sequence needs (`ServingNeeds.per_user_tps`); None for training."""
    if job.task != "inference":
        return None
    return job.serving.per_user_tps() if job.serving is not None else DEFAULT_TOKENS_PER_S_PER_USER


def workload_assumptions(job: Job) -> dict[str, float | str]:
    """The needs the request left open and the engine filled in, each with how to state the real one."""
    found: dict[str, float | str] = {}
    if job.training_tokens is not None:
        found["training_tokens_b"] = round(job.training_tokens / 1e9, 6)
        if job.tokens_source == "default":
            found["training_tokens_source"] = (
                "default: 20 tokens per parameter, compute-optimal (Hoffmann et al. 2022)"
                if job.task == "pretrain"
                else "default: 100M tokens, a typical instruction-tuning set"
            ) + "; give workload.training_tokens_b for the real figure"
    elif job.task != "inference":
        found["training_tokens_source"] = "none: each rented option is costed for workload.job_hours"
    if job.deadline_hours is not None:
        found["deadline_hours"] = round(job.deadline_hours, 3)
        if job.job_hours is None:
            found["deadline_source"] = (
                "default: a month to pretrain, a week to fine-tune, at most the horizon; "
                "give workload.job_hours for the real one"
            )
    if job.batch_from_serving:
        found["batch_size"] = float(job.batch)
        found["batch_size_source"] = (
            "from serving: sequences in flight at peak, requests/s x output tokens / tokens/s per user "
            "(Little's law), decoded together by continuous batching; give workload.batch_size to fix it"
        )
    per_user = per_user_tps(job)
    if per_user is not None:
        found["tokens_per_s_per_user"] = round(per_user, 3)
        serving = job.serving
        if serving is None or (serving.min_tokens_per_s_per_user is None and serving.latency_p95_s is None):
            found["tokens_per_s_per_user_source"] = (
                "default: twice reading speed; give workload.serving.min_tokens_per_s_per_user"
            )
    return found


def hardware_facts(request: RecommendRequest, kb: KB, task_gb: float) -> dict[str, Scalar]:
    facts: dict[str, Scalar] = {}
    target = request.constraints.target_hardware
    if target is not None:
        gpu = kb.gpus[target.gpu]
        memory = gpu.usable_memory_gb or gpu.memory_gb
        facts["hardware.target_gpu_gb"] = memory
        facts["hardware.target_total_gb"] = memory * target.count
        facts["hardware.target_class"] = gpu.gpu_class
        facts["hardware.target_vendor"] = gpu.vendor
        facts["hardware.target_bf16"] = "bf16" in gpu.native_precisions
        kept_free = max(TARGET_MIN_HEADROOM_GB, memory * TARGET_HEADROOM)
        facts["hardware.target_fits"] = task_gb / target.count <= memory - kept_free
        if gpu.compute_capability is not None:
            facts["hardware.target_compute_capability"] = float(gpu.compute_capability)
    owned = [kb.gpus[item.gpu] for item in request.constraints.existing_hardware]
    if owned:
        facts["hardware.owned_gpu_gb"] = max(g.usable_memory_gb or g.memory_gb for g in owned)
    return facts


def requirements(
    job: Job, facts: Facts, precision: str, planned_checkpointing: bool | None = None
) -> Requirements:
    """The whole job's needs, sized with the conventions the plans use: activation checkpointing as
    the request states, else as the first recommendation plans it (`planned_checkpointing`), else on
    for QLoRA (Dettmers et al. 2023 train with it; peft's `prepare_model_for_kbit_training` turns it on)."""
    method = job.task
    if job.checkpointing is not None:
        checkpointing = job.checkpointing
    elif planned_checkpointing is not None:
        checkpointing = planned_checkpointing
    else:
        checkpointing = method == "qlora"
    memory = per_gpu(
        job, Layout(method, "nf4" if method == "qlora" else precision, checkpointing=checkpointing)
    )
    bound = facts.get("bound", "compute" if job.training else "memory_bandwidth")
    demand = required_tps(job)
    return Requirements(
        params_b=round(job.params / 1e9, 4),
        active_params_b=round(job.active_params / 1e9, 4) if job.is_moe else None,
        precision="nf4" if method == "qlora" else precision,
        method=method,
        memory=JobMemory(
            weights_gb=_gb(memory.weights),
            gradients_gb=_gb(memory.gradients),
            optimizer_gb=_gb(memory.optimizer),
            activations_gb=_gb(memory.activations),
            kv_cache_gb=_gb(memory.kv_cache),
            overhead_gb=_gb(memory.overhead),
            total_gb=_gb(memory.total),
        ),
        bound=_bound(bound),
        required_tokens_per_s=None if demand is None else round(demand, 3),
        architecture_source=job.architecture_source,
        activation_checkpointing=checkpointing and method != "inference",
    )


def _bound(value: Scalar) -> Bound:
    if value == "compute":
        return "compute"
    if value == "interconnect":
        return "interconnect"
    return "memory_bandwidth"
