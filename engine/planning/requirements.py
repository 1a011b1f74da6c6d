"""The workload's needs before any hardware is chosen: the `sizing.*` and `hardware.*` facts the rules
read (docs/rule-facts.md), and the `requirements` block of the response."""

from __future__ import annotations

from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest, Workload
from engine.models.response import Bound, JobMemory, Requirements
from engine.models.rule import Scalar
from engine.planning.memory import Layout, per_gpu, reported_bytes, serving_budget
from engine.planning.performance import method_utilization, prefill_share
from engine.planning.workload import DEFAULT_TOKENS_PER_S_PER_USER, ENCODER_LATENCY_S, Job
from engine.reasoning.conditions import Facts
from engine.sizing import GB, required_tokens_per_second
from engine.sizing.serving_engines import profile

STACK_WORDS = {
    "huggingface": "a Hugging Face Trainer-class eager PyTorch stack (bf16 autocast, SDPA, PEFT); "
    "give workload.training_stack for megatron-lm or torchtitan",
    "megatron-lm": "Megatron-LM (Megatron-Core): up to 47% MFU on H100 clusters, as published",
    "torchtitan": "torchtitan (FSDP2 + torch.compile): 33-39% MFU for Llama 3.1 8B on H100s, as published",
}
TARGET_HEADROOM = 0.05
TARGET_MIN_HEADROOM_GB = 1.0
"""`hardware.target_fits` keeps the larger of 5% and 1 GB free, the policy of the rule
keep-memory-headroom: it is known before any rule runs, so before that rule."""


def _gb(value: float) -> float:
    return round(value / GB, 3)


NATIVE_SERVING_FORMAT = {"fp8": "fp8", "fp4": "int4"}
"""a checkpoint released in fp8 is served in fp8, one in a 4-bit format at 4 bits (rules
serve-fp8-checkpoints-in-fp8 and serve-4-bit-checkpoints-in-4-bit)"""


def stated_precision(job: Job) -> str:
    """The precision the job is sized in before the rules plan it: the request's, else the format an
    fp8 or 4-bit checkpoint is served in, else bf16."""
    if job.requested_precision is not None:
        return job.requested_precision
    if job.task == "inference" and job.native_precision in NATIVE_SERVING_FORMAT:
        return NATIVE_SERVING_FORMAT[job.native_precision]
    return "bf16"


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
    inference_precision = precision if job.task == "inference" else "bf16"
    inference = per_gpu(job, Layout("inference", inference_precision))
    facts["sizing.weights_gb"] = _gb(inference.weights)
    facts["sizing.precision"] = inference_precision
    facts["sizing.inference_gb"] = _gb(inference.total)
    facts["sizing.inference_int8_gb"] = _gb(task_total(job, "inference", "int8"))
    facts["sizing.inference_int4_gb"] = _gb(task_total(job, "inference", "int4"))
    if job.task == "inference":
        facts["sizing.kv_cache_gb"] = _gb(inference.kv_cache)
        facts["sizing.context_tokens"] = job.context_tokens
        # to three figures, as a message writes a share: 149%, 6.69%
        facts["sizing.kv_to_weights_pct"] = float(f"{inference.kv_cache / inference.weights * 100:.3g}")
        facts["sizing.batch_size"] = job.batch
        facts["sizing.batch_from_traffic"] = job.batch_from_serving
        at_floor = None if job.serving is None else job.serving.in_flight_at_floor()
        if job.batch_from_serving and at_floor is not None:
            facts["sizing.in_flight_at_floor"] = at_floor
        facts["sizing.task_gb"] = facts["sizing.inference_gb"]
    elif job.task == "qlora":
        facts["sizing.task_gb"] = facts["sizing.qlora_gb"]
    elif job.task == "lora":
        facts["sizing.task_gb"] = facts["sizing.lora_gb"]
    else:
        facts["sizing.task_gb"] = facts["sizing.full_training_gb"]
    facts.update(window_facts(job))
    if job.utilization is not None:
        # to a tenth, as a message writes it: 20 hours a week is 11.9%, not 11.905%
        facts["sizing.utilization_pct"] = round(job.utilization * 100, 1)
    if job.training_tokens is not None:
        facts["sizing.training_tokens_b"] = round(job.training_tokens / 1e9, 6)
        facts["sizing.training_pflop"] = round(training_pflop(job), 6)
    if job.deadline_hours is not None:
        facts["sizing.deadline_hours"] = round(job.deadline_hours, 3)
    per_user = per_user_tps(job)
    if per_user is not None:
        facts["sizing.per_user_tokens_per_s"] = round(per_user, 3)
    demand = required_tps(job)
    if demand is not None:
        facts["sizing.required_tokens_per_s"] = round(demand, 3)
    return facts


def window_facts(job: Job) -> dict[str, Scalar]:
    """The model's context window against the sequences asked (engine/planning/context_window.py)."""
    if job.context_window is None:
        return {}
    facts: dict[str, Scalar] = {
        "sizing.context_window": job.context_window,
        "sizing.context_asked": job.asked_context_tokens,
        "sizing.beyond_window": job.asked_context_tokens > job.context_window,
    }
    if job.chunks_per_input > 1:
        facts["sizing.chunks_per_input"] = job.chunks_per_input
    return facts


def training_pflop(job: Job) -> float:
    """A training run's compute, PFLOP: 6 N D for full training, 4 N D with frozen base weights (the
    adapters' backward skips the weight gradients), N the active parameters, D the tokens (Kaplan et al.
    2020; Transformer Math 101); attention and recomputation left out, as a size, not a speed."""
    per_token = 4.0 if job.task in ("lora", "qlora") else 6.0
    return per_token * job.active_params * (job.training_tokens or 0.0) / 1e15


def required_tps(job: Job) -> float | None:
    """The token rate a serving fleet must sustain, when the request gives its traffic (requests per
    minute); None for a single stream, whose speed is the per-user target's concern."""
    serving = job.serving
    if serving is None or serving.requests_per_min is None:
        return None
    if job.reads_only:  # an encoder or embedding model reads its input and generates nothing
        # its input: the serving block's, else seq_len (Job.context_tokens), as its speed is sized,
        # for each of a request's inputs
        inputs = job.context_tokens * serving.sequences_per_request * job.chunks_per_input
        return required_tokens_per_second(serving.requests_per_min, inputs)
    return required_tokens_per_second(serving.requests_per_min, serving.avg_output_tokens)


def required_prefill_tokens_per_second(job: Job) -> float | None:
    """The prompt tokens a decoder's fleet must read per second (prefill), with the same burst
    headroom as its output; None without traffic or without a prompt."""
    serving = job.serving
    if serving is None or serving.requests_per_min is None or job.reads_only or serving.avg_input_tokens < 1:
        return None
    return required_tokens_per_second(serving.requests_per_min, serving.avg_input_tokens)


def per_user_tps(job: Job) -> float | None:
    """The speed each served sequence needs, tokens/s (None for training): a decoder's decode speed
    (`ServingNeeds.per_user_tps`); an encoder's input read within the latency target, else within
    ENCODER_LATENCY_S, together with the rest of its batch (or faster, if the request says so)."""
    if job.task != "inference":
        return None
    serving = job.serving
    if job.reads_only:
        latency = (
            ENCODER_LATENCY_S if serving is None or serving.latency_p95_s is None else serving.latency_p95_s
        )
        stated = 0.0 if serving is None else serving.min_tokens_per_s_per_user or 0.0
        return max(job.context_tokens / latency, stated)
    return serving.per_user_tps() if serving is not None else DEFAULT_TOKENS_PER_S_PER_USER


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
    found.update(length_assumptions(job))
    if job.batch_from_serving:
        found["batch_size"] = float(job.batch)
        found["batch_size_source"] = (
            "from serving: sequences in flight at peak if each decoded at the per-user floor, requests/s x "
            "output tokens / tokens/s per user (Little's law), the most any plan holds (requirements' KV "
            "cache); each plan holds those its own speed leaves in flight, the least batch that carries "
            "its share of the rate, decoded together by continuous batching; give workload.batch_size "
            "to fix it"
        )
    if job.training:
        found["training_stack"] = STACK_WORDS[job.training_stack]
        found["training_flops_share"] = round(method_utilization(job, job.task), 3)
        found["training_memory"] = (
            "what an eager PyTorch step keeps at its peak (engine/sizing/kept_activations.py): fp32 weights "
            "and gradients under bf16 autocast, AdamW states, activations, and the loss's fp32 logits "
            + (
                "(fused loss: none)"
                if job.fused_loss
                else "and their gradient (workload.fused_loss removes them)"
            )
        )
    else:
        found.update(engine_assumptions(job))
    per_user = per_user_tps(job)
    if per_user is not None:
        found["tokens_per_s_per_user"] = round(per_user, 3)
        serving = job.serving
        if serving is None or (serving.min_tokens_per_s_per_user is None and serving.latency_p95_s is None):
            found["tokens_per_s_per_user_source"] = (
                "default: each sequence's input read within 1 s with its batch (Nielsen's 1-second limit); "
                "give workload.serving.latency_p95_s"
                if job.reads_only
                else "default: twice reading speed; give workload.serving.min_tokens_per_s_per_user"
            )
    return found


def length_assumptions(job: Job) -> dict[str, float | str]:
    """The model's context window, and the sequence length when the window replaced the default."""
    found: dict[str, float | str] = {}
    if job.context_window is not None:
        found["context_window"] = float(job.context_window)
    if job.seq_len_shortened:
        found["seq_len"] = float(job.seq_len)
        default = Workload.model_fields["seq_len"].default
        found["seq_len_source"] = (
            f"the model's context window of {job.seq_len:,} tokens, shorter than the default {default:,} the "
            "request left; give workload.seq_len for another length"
        )
    return found


def engine_assumptions(job: Job) -> dict[str, float | str]:
    """What a served job's figures assume of its engine: its profile's source and efficiencies, how
    close its decode predictions are held to measurements, and for an eager engine the host's launches."""
    found: dict[str, float | str] = {}
    engine = profile(job.engine)
    found["serving_engine"] = job.engine
    found["serving_engine_source"] = engine.source
    found["decode_bandwidth_efficiency"] = engine.bandwidth_efficiency
    if engine.step_overhead_s > 0:  # what each decode step costs beside the bytes it streams
        found["decode_step_overhead_s"] = engine.step_overhead_s
    low, high = engine.band
    found["decode_speed_band"] = f"predictions within {low:g}-{high:g} x measured (docs/calibration.md)"
    if engine.layer_dispatch_s > 0:
        found["decode_host_launch_s"] = round(engine.launch_seconds(job.shape), 4)
        found["decode_host_launch_source"] = (
            "the host launching each layer's kernels, every step, bounds eager decode whatever the GPU "
            f"(a mixture-of-experts layer {engine.moe_dispatch_factor:g} times a dense one); hosts of one "
            "GPU type differ about twofold (engine/sizing/serving_engines.py)"
        )
    found["prefill_flops_share"] = round(prefill_share(job), 3)
    if engine.memory_utilization < 1.0:
        found["gpu_memory_utilization"] = engine.memory_utilization
    found["context_tokens"] = float(job.context_tokens)
    return found


def hardware_facts(request: RecommendRequest, kb: KB, task_gb: float, job: Job) -> dict[str, Scalar]:
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
        # the plans' own fit: a serving engine's share of what the driver reports, else that less the
        # headroom (the keep-memory-headroom rule's share, not yet known here, at its least)
        reported = reported_bytes(gpu) / GB
        budget = serving_budget(gpu, job) if job.task == "inference" else None
        usable = (
            budget / GB
            if budget is not None
            else reported - max(TARGET_MIN_HEADROOM_GB, reported * TARGET_HEADROOM)
        )
        facts["hardware.target_fits"] = task_gb / target.count <= usable
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
