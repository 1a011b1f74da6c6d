"""engine/planning/requirements.py: the workload's needs before any hardware is chosen, as the `sizing.*` and
`hardware.*` facts the rules read, the response's `requirements` block and the assumptions filled in."""

from __future__ import annotations

from typing import Any

import pytest

from engine.knowledge.kb import KB
from engine.models.request import RecommendRequest
from engine.planning.memory import Layout, per_gpu
from engine.planning.requirements import hardware_facts, requirements, sizing_facts, workload_assumptions
from engine.planning.workload import Job, resolve

GB = 1e9
# Facts are rounded to 3 decimals (GB) or 2 (percent) by the adapter, so they are compared exactly with the
# same rounding of the arithmetic; rel=1e-12 where unrounded bytes are compared: float rounding only.
# Llama 3.1 8B config.json: 32 layers x 8 KV heads x 128 wide; K and V in 2 bytes: 131,072 B per token.
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2


def request_of(workload: dict[str, Any], **constraints: Any) -> RecommendRequest:
    return RecommendRequest.model_validate({"workload": workload, "constraints": constraints})


def job_of(kb: KB, **workload: Any) -> Job:
    return resolve(request_of(workload), kb)


def test_inference_facts_are_the_weights_the_cache_and_their_ratio(kb: KB) -> None:
    job = job_of(kb, task="inference", model="llama-3-1-8b", seq_len=8192, precision="bf16")
    facts = sizing_facts(job, kb)
    kv_gb = KV_PER_TOKEN * 8192 / GB  # 1.0737 GB
    assert facts["sizing.params_b"] == 8.03
    assert facts["sizing.weights_gb"] == 16.06  # 8.03e9 x 2 bytes
    assert facts["sizing.kv_cache_gb"] == round(kv_gb, 3) == 1.074
    # what vLLM holds: weights, the cache, the workspace of an 8,192-token forward and the sampler's
    # logits, the CUDA context and graph pool (engine/planning/memory.py)
    memory = per_gpu(job, Layout("inference", "bf16"))
    rest = memory.activations + memory.overhead
    assert facts["sizing.inference_gb"] == round((16.06e9 + KV_PER_TOKEN * 8192 + rest) / GB, 3)
    # int8: 1 byte per linear weight, the embeddings and LM head kept in 16-bit are in the weights term
    int8 = per_gpu(job, Layout("inference", "int8"))
    assert facts["sizing.inference_int8_gb"] == round(int8.total / GB, 3) < facts["sizing.inference_gb"]
    assert int8.activations + int8.overhead == rest
    assert facts["sizing.kv_to_weights_pct"] == round(kv_gb / 16.06 * 100, 2) == 6.69
    assert facts["sizing.precision"] == "bf16"  # what the ratio's weights are figured in
    assert facts["sizing.task_gb"] == facts["sizing.inference_gb"]
    assert facts["sizing.per_user_tokens_per_s"] == 10.0  # default: twice reading speed
    assert facts["sizing.largest_gpu_gb"] == max(
        (g.usable_memory_gb or g.memory_gb) for g in kb.gpus.values()
    )


@pytest.mark.parametrize(
    ("task", "fact"),
    [("full_finetune", "sizing.full_training_gb"), ("lora", "sizing.lora_gb"), ("qlora", "sizing.qlora_gb")],
)
def test_the_task_figure_is_the_tasks_own(kb: KB, task: str, fact: str) -> None:
    job = job_of(kb, task=task, model="llama-3-1-8b")
    facts = sizing_facts(job, kb)
    assert facts["sizing.task_gb"] == facts[fact]
    assert "sizing.kv_cache_gb" not in facts  # a training job has no KV cache to report
    # QLoRA's 4-bit base needs less than LoRA's 16-bit one, which needs less than training every weight
    qlora, lora, full = (float(facts[f"sizing.{name}_gb"]) for name in ("qlora", "lora", "full_training"))
    assert qlora < lora < full


def test_full_training_is_eighteen_bytes_a_parameter_plus_activations_and_context(kb: KB) -> None:
    job = job_of(kb, task="full_finetune", params_b=1.0)
    facts = sizing_facts(job, kb)
    memory = per_gpu(job, Layout("full_finetune", "bf16"))
    # Hugging Face, Model training anatomy: mixed-precision AdamW keeps 18 bytes per parameter (fp32
    # gradients; the ZeRO paper's 16 counts them in 16-bit)
    assert memory.weights + memory.gradients + memory.optimizer == pytest.approx(18e9, rel=1e-12)  # rounding
    assert facts["sizing.full_training_gb"] == round((18e9 + memory.activations + 1.3e9) / GB, 3)


def test_traffic_gives_the_required_token_rate_with_burst_headroom(kb: KB) -> None:
    request = request_of(
        {
            "task": "inference",
            "model": "llama-3-1-8b",
            "serving": {"requests_per_min": 600, "avg_output_tokens": 200},
        }
    )
    facts = sizing_facts(resolve(request, kb), kb)
    # guide G2 Q4: 600 requests/min = 10/s x 200 output tokens = 2,000 tokens/s, + 20% headroom = 2,400
    assert facts["sizing.required_tokens_per_s"] == 2400.0
    assert facts["sizing.utilization_pct"] == 100.0  # a service with stated traffic runs every hour


def test_a_target_gpu_fits_within_what_the_plans_may_fill(kb: KB) -> None:
    serving = {"task": "inference", "params_b": 7}
    h100 = request_of(serving, target_hardware={"gpu": "nvidia-h100-sxm", "count": 2})
    job = resolve(h100, kb)
    # an H100 80GB reports 81,559 MiB (85.52 GB); vLLM takes 0.9 of it, 76.97 GB per GPU: two GPUs
    # share the task
    budget = 81_559 * 2**20 * 0.9 / GB
    assert hardware_facts(h100, kb, 2 * budget - 0.01, job)["hardware.target_fits"] is True
    assert hardware_facts(h100, kb, 2 * budget + 0.01, job)["hardware.target_fits"] is False
    facts = hardware_facts(h100, kb, 10.0, job)
    assert facts["hardware.target_total_gb"] == 160.0 and facts["hardware.target_gpu_gb"] == 80.0
    assert facts["hardware.target_compute_capability"] == 9.0 and facts["hardware.target_bf16"] is True
    # training keeps the larger of 5% and 1 GB free of what the driver reports: a 12 GB RTX 3060
    # reports 12,288 MiB (12.88 GB), 5% is 0.64 GB, so the 1 GB floor applies
    training = request_of(
        {"task": "lora", "params_b": 1}, target_hardware={"gpu": "nvidia-rtx-3060-12gb", "count": 1}
    )
    lora = resolve(training, kb)
    usable = 12_288 * 2**20 / GB - 1.0
    assert hardware_facts(training, kb, usable - 0.01, lora)["hardware.target_fits"] is True
    assert hardware_facts(training, kb, usable + 0.01, lora)["hardware.target_fits"] is False


def test_usable_memory_counts_where_it_is_less_than_the_memory(kb: KB) -> None:
    gpu = kb.gpus["apple-m4-16gb"]  # macOS lets the GPU wire about 2/3 of 16 GB: 10.7 GB usable
    assert gpu.usable_memory_gb == 10.7 and gpu.memory_gb == 16
    request = request_of(
        {"task": "inference", "params_b": 1},
        target_hardware={"gpu": "apple-m4-16gb"},
        existing_hardware=[{"gpu": "apple-m4-16gb"}],
    )
    facts = hardware_facts(request, kb, 1.0, resolve(request, kb))
    assert facts["hardware.target_gpu_gb"] == facts["hardware.owned_gpu_gb"] == 10.7


def test_requirements_default_checkpointing_to_qlora_and_let_the_request_and_plan_decide(kb: KB) -> None:
    qlora = job_of(kb, task="qlora", model="llama-3-1-8b")
    stated = requirements(qlora, {}, "bf16")
    # Dettmers et al. 2023 train QLoRA with checkpointing; the base is NF4 whatever precision is asked
    assert stated.activation_checkpointing is True and stated.precision == "nf4"
    lora = job_of(kb, task="lora", model="llama-3-1-8b")
    assert requirements(lora, {}, "bf16").activation_checkpointing is False
    assert requirements(lora, {}, "bf16", planned_checkpointing=True).activation_checkpointing is True
    asked = job_of(kb, task="lora", model="llama-3-1-8b", gradient_checkpointing=False)
    assert requirements(asked, {}, "bf16", planned_checkpointing=True).activation_checkpointing is False
    planned = requirements(lora, {}, "bf16", planned_checkpointing=True).memory
    # the reported memory is the checkpointed plan's, in GB to 3 decimals
    memory = per_gpu(lora, Layout("lora", "bf16", checkpointing=True))
    assert planned.activations_gb == round(memory.activations / GB, 3)
    assert planned.total_gb == round(memory.total / GB, 3)


def test_requirements_bound_defaults_by_task_and_reads_the_rules_bound(kb: KB) -> None:
    serving = job_of(kb, task="inference", model="llama-3-1-8b")
    training = job_of(kb, task="pretrain", params_b=1.0)
    assert requirements(serving, {}, "bf16").bound == "memory_bandwidth"
    assert requirements(training, {}, "bf16").bound == "compute"
    assert requirements(training, {"bound": "interconnect"}, "bf16").bound == "interconnect"
    assert requirements(serving, {"bound": "something else"}, "bf16").bound == "memory_bandwidth"
    # a dense model reports no active-parameter count; inference never checkpoints
    assert requirements(serving, {}, "bf16").active_params_b is None
    assert requirements(serving, {}, "bf16", planned_checkpointing=True).activation_checkpointing is False


def test_assumptions_name_the_defaults_the_engine_filled_in(kb: KB) -> None:
    pretrain = workload_assumptions(job_of(kb, task="pretrain", params_b=7))
    # Hoffmann et al. 2022: 20 tokens per parameter: 140B tokens for 7B
    assert pretrain["training_tokens_b"] == 140.0
    assert "Hoffmann" in str(pretrain["training_tokens_source"])
    assert pretrain["deadline_hours"] == 720.0  # a month to pretrain (30 x 24 h)
    finetune = workload_assumptions(job_of(kb, task="lora", params_b=7))
    assert finetune["training_tokens_b"] == 0.1 and finetune["deadline_hours"] == 168.0  # 100M, a week
    hours_only = workload_assumptions(job_of(kb, task="lora", params_b=7, job_hours=10))
    assert "training_tokens_b" not in hours_only
    assert str(hours_only["training_tokens_source"]).startswith("none")
    stated = workload_assumptions(job_of(kb, task="lora", params_b=7, training_tokens_b=2, job_hours=10))
    # nothing left to assume of the workload; the stack and the memory accounting are always stated
    assert {k: v for k, v in stated.items() if not k.startswith("training_") or k == "training_tokens_b"} == {
        "training_tokens_b": 2.0,
        "deadline_hours": 10.0,
    }
    assert "Hugging Face Trainer-class" in str(stated["training_stack"])
    assert stated["training_flops_share"] == pytest.approx(0.414, abs=0.001)  # 0.47 x 0.88 for LoRA
    serving = workload_assumptions(job_of(kb, task="inference", params_b=7))
    assert serving["tokens_per_s_per_user"] == 10.0 and "tokens_per_s_per_user_source" in serving


def test_serving_assumptions_state_how_close_the_engines_speed_is_and_an_eager_hosts_launches(kb: KB) -> None:
    """vLLM is held to 0.65-1.35 of a measured speed, Hugging Face eager to 0.6-1.75 (the hosts' spread,
    engine/sizing/serving_engines.py); only eager decode is bound by the host's launches: Qwen3-30B-A3B's
    48 MoE layers at 1.1 ms x 1.49 (4,390 kernels a forward against Qwen3-8B's 2,218 over 36 layers)."""
    vllm = workload_assumptions(job_of(kb, task="inference", model="qwen3-30b-a3b"))
    assert str(vllm["decode_speed_band"]).startswith("predictions within 0.65-1.35 x measured")
    assert "decode_host_launch_s" not in vllm
    eager = workload_assumptions(
        job_of(kb, task="inference", model="qwen3-30b-a3b", serving={"engine": "hf-eager"})
    )
    assert str(eager["decode_speed_band"]).startswith("predictions within 0.6-1.75 x")
    assert eager["decode_host_launch_s"] == pytest.approx(48 * 0.9e-3 * 1.22 * 1.49, abs=1e-4)
    assert "twofold" in str(eager["decode_host_launch_source"])


def test_the_kv_ratio_names_the_precision_of_its_weights(kb: KB) -> None:
    """The ratio is figured before any GPU is chosen: in the requested precision, 16 bits when the
    request states none (a GPU with fp8 then halves the weights, and the ratio doubles)."""
    stated = sizing_facts(job_of(kb, task="inference", model="llama-3-1-8b", precision="fp8"), kb)
    unstated = sizing_facts(job_of(kb, task="inference", model="llama-3-1-8b"), kb)
    assert (stated["sizing.precision"], unstated["sizing.precision"]) == ("fp8", "bf16")
    assert stated["sizing.kv_to_weights_pct"] > unstated["sizing.kv_to_weights_pct"]
