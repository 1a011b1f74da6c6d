"""`POST /recommend` response body, exactly as docs/api-contract.md defines it (fields may be added,
never renamed or dropped). Units are in the field names: `_gb` = 1e9 bytes, `_usd`, `_pct`, `_per_s`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SerializationInfo, field_serializer

from engine.models.rule import Scalar

Bound = Literal["memory_bandwidth", "compute", "interconnect"]
Acquisition = Literal["buy", "rent", "owned"]
Pricing = Literal["owned", "on_demand", "spot"]


CITE_BY_ID = "cite_by_id"
"""the serialization context key of API version 2 (engine/answer/lean.py): a function giving the ids of
citation texts, which the answer then holds in place of the texts"""


def cited(texts: list[str], info: SerializationInfo) -> list[str]:
    """Citations as serialized: the texts (version 1), or their ids when the context numbers them."""
    context = info.context
    number: Callable[[list[str]], list[str]] | None = context.get(CITE_BY_ID) if context else None
    return texts if number is None else number(texts)


class ResponseModel(BaseModel):
    """Base of the response models: no extra keys, and instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class JobMemory(ResponseModel):
    """The whole job's memory before sharding, GB."""

    weights_gb: float = Field(description="model weights, GB")
    gradients_gb: float = Field(description="gradients (training), GB")
    optimizer_gb: float = Field(description="optimizer states plus fp32 master weights (training), GB")
    activations_gb: float = Field(
        description="activations and logits kept for the backward pass (training), or the serving engine's "
        "activation workspace (inference), GB"
    )
    kv_cache_gb: float = Field(description="KV cache (inference), GB")
    overhead_gb: float = Field(description="the CUDA context, and a serving engine's CUDA graph pool, GB")
    total_gb: float = Field(description="sum of the parts above, GB")


class Requirements(ResponseModel):
    """The workload before any hardware is chosen."""

    params_b: float = Field(description="total parameters, billions")
    active_params_b: float | None = Field(None, description="MoE: parameters used per token, billions")
    precision: str = Field(description="weights precision the sizing assumes (nf4 for qlora)")
    method: str = Field(description="the requested task: inference | pretrain | full_finetune | lora | qlora")
    memory: JobMemory = Field(description="the whole job's memory before sharding, GB")
    bound: Bound = Field(description="what limits speed: memory_bandwidth | compute | interconnect")
    required_tokens_per_s: float | None = Field(
        None, description="serving demand, when `serving` gives requests_per_min"
    )
    architecture_source: Literal["kb-model", "request", "hf-config", "estimated"] = Field(
        description="where the layer sizes behind activations and KV cache came from"
    )
    activation_checkpointing: bool = Field(
        False,
        description="whether `memory` assumes activation checkpointing: as the request says, else as the "
        "first recommendation plans it (always for qlora, as the QLoRA recipe does)",
    )


class GpuMemory(ResponseModel):
    """Memory on each GPU after sharding, GB."""

    per_gpu_gb: float = Field(description="memory each GPU needs, GB")
    headroom_pct: float = Field(
        description="share of the GPU's memory left free: of what the driver reports (`reported_gb`) "
        "where that is known"
    )
    fits: bool = Field(
        description="the plan fits each GPU: within a serving engine's share of the memory the driver "
        "reports, else that memory less the headroom kept free"
    )
    weights_per_gpu_gb: float = Field(description="model weights on each GPU, GB")
    gradients_per_gpu_gb: float = Field(description="gradients on each GPU (training), GB")
    optimizer_per_gpu_gb: float = Field(
        description="optimizer states plus fp32 master weights on each GPU (training), GB"
    )
    activations_per_gpu_gb: float = Field(
        description="activations and logits kept for the backward pass on each GPU (training), or the "
        "serving engine's activation workspace (inference), GB"
    )
    kv_cache_per_gpu_gb: float = Field(description="KV cache on each GPU (inference), GB")
    logits_per_gpu_gb: float = Field(
        0.0,
        description="of activations_per_gpu_gb: the loss's logits, their fp32 copy and its gradient on each "
        "GPU (training; 0 with workload.fused_loss, and for inference), GB",
    )
    overhead_per_gpu_gb: float = Field(
        description="the CUDA context on each GPU, and a serving engine's CUDA graph pool, GB"
    )
    reported_gb: float | None = Field(
        None,
        description="memory the driver reports on each GPU, GB (1e9 bytes): what `fits` and "
        "`headroom_pct` are measured against; an H100 80GB reports 81,559 MiB, 85.5 GB",
    )


class Throughput(ResponseModel):
    """Estimated speed of one recommendation."""

    tokens_per_s: float = Field(
        description="per sequence when decoding (an encoder: its input tokens, read with its batch); per "
        "replica when training"
    )
    aggregate_tokens_per_s: float = Field(description="all sequences and replicas together")
    max_concurrent_sequences: int | None = Field(None, description="inference: sequences the KV cache holds")
    training_hours: float | None = Field(None, description="wall-clock hours for training_tokens_b")
    prefill_tokens_per_s: float | None = Field(
        None, description="inference: prompt tokens all replicas read per second when doing nothing else"
    )
    time_to_first_token_s: float | None = Field(
        None, description="inference: one average prompt's prefill on an idle replica, seconds (no queueing)"
    )
    corpus_hours: float | None = Field(
        None, description="encoders: hours to embed serving.corpus_documents of avg_input_tokens each"
    )


class Cost(ResponseModel):
    """What one recommendation costs, US dollars."""

    capex_usd: float = Field(
        description="purchase price of the GPUs bought and the hosts they go in (0 when rented or owned)"
    )
    hourly_usd: float = Field(description="running cost per busy hour: rent, or power when owned")
    monthly_usd: float = Field(description="running cost per month at the stated use")
    cost_per_1m_tokens_usd: float | None = Field(
        description="horizon cost per million tokens processed at the stated use"
    )
    gpu_hours: float | None = Field(
        description="GPU-hours of one run, when its length is known (training_tokens_b or job_hours)"
    )
    run_cost_usd: float | None = Field(
        description="cost of one run when its length is known: rent, or depreciation and power when bought"
    )
    break_even_hours: float | None = Field(description="hours of use after which owning beats renting")
    horizon_cost_usd: float = Field(
        description="total cost of this option over the horizon at the stated use"
    )
    rent_cost_over_horizon_usd: float | None = Field(
        description="renting equivalent capacity for the same use (the cheapest on-demand offer of the GPU)"
    )
    capex_low_usd: float | None = Field(
        None,
        description="bought: capex at the low end of the GPU and host prices seen (kb/gpus, kb/hosts ranges)",
    )
    capex_high_usd: float | None = Field(
        None, description="bought: capex at the high end of the GPU and host prices seen"
    )


LaunchTool = Literal["skypilot", "dstack"]


class Launch(ResponseModel):
    """A rented recommendation as specs the engineer can launch: a SkyPilot task YAML
    (https://docs.skypilot.co/en/latest/reference/yaml-spec.html) and a dstack task run configuration
    (https://dstack.ai/docs/reference/dstack.yml/task/), each as YAML text."""

    skypilot: str | None = Field(
        None, description="SkyPilot task YAML (`sky launch task.yaml`); absent when SkyPilot cannot run it"
    )
    dstack: str | None = Field(
        None,
        description="dstack task run configuration (`dstack apply -f task.dstack.yml`); absent when "
        "dstack cannot run it",
    )
    unavailable: dict[LaunchTool, str] = Field(
        default_factory=dict, description="each tool whose spec is absent, with why"
    )


def capacity_gb(nominal_gb: float, reported_gb: float | None) -> float:
    """A GPU's memory in the unit of a plan's GB (1e9 bytes), to 0.1 GB: what the driver reports where
    the KB has it, else the nominal size. A card's name rounds its bytes (an "H100 80GB" reports
    85.5e9), so "80.3 of 80" beside a plan that fits would read as over-full."""
    return nominal_gb if reported_gb is None else reported_gb


class Recommendation(ResponseModel):
    """One hardware option with its plan, memory, speed, cost and justification."""

    rank: int = Field(description="position in the list, 1 = best")
    score: float = Field(
        description="ranking score for the objective (higher is better), including rule preference weights"
    )
    gpu: str = Field(description="KB gpu id")
    gpu_name: str = Field(description="marketing name of the GPU")
    gpu_count: int = Field(description="all GPUs in the recommendation (all replicas, all nodes)")
    nodes: int = Field(description="machines the GPUs are spread over")
    vram_per_gpu_gb: float = Field(description="memory of each GPU the job can use, GB")
    interconnect: str = Field(
        description="link between the GPUs: nvlink | nvswitch | pcie | infiniband | unified | none"
    )
    platform: str = Field(description="software stack it runs on: cuda | rocm | mps | cpu | ...")
    os_path: str = Field(description="how it runs from the user's OS, e.g. wsl2 on Windows; rented: linux")
    acquisition: Acquisition = Field(description="buy | rent | owned (already owned hardware)")
    provider: str | None = Field(description="cloud provider id when rented")
    instance_type: str | None = Field(description="the provider's instance type when rented")
    pricing: Pricing = Field(description="owned | on_demand | spot")
    price_kind: str = Field(description="new | used | estimate | msrp (buy), on_demand | spot, owned")
    precision: str = Field(
        description="weights format proposed; may differ from the request, with a reason in why"
    )
    method: str = Field(
        description="method proposed (e.g. qlora instead of full_finetune); may differ from the request, "
        "with a reason in why"
    )
    parallelism: list[str] = Field(
        description="multi-GPU strategies used, empty on one GPU: replicas | ddp | zero-1 | zero-2 | "
        "zero-3 | fsdp-full-shard | tensor-parallel | pipeline-parallel | offload (zero-1 and zero-2 "
        "alone only when the request lists them; tensor-parallel with zero-1 is a distributed optimizer "
        "beside tensor parallelism, for training a model of 13B or more; zero-3 or fsdp-full-shard with "
        "hybrid-shard shards inside each node and keeps a copy per node, on several nodes)"
    )
    tp_degree: int = Field(description="GPUs each copy of the weights is split over by tensor parallelism")
    offload: bool = Field(
        description="optimizer states and master weights (QLoRA: its frozen base) live in host memory"
    )
    memory: GpuMemory = Field(description="memory per GPU, after sharding")
    throughput: Throughput = Field(description="estimated speed")
    cost: Cost = Field(description="costs at the stated use over the horizon")
    why: str = Field(description="plain-language justification for this option")
    trace_steps: list[int] = Field(description="steps of `trace` that produced this option")
    citations: list[str] = Field(
        description="sources of the rules behind this option: title and section, then <URL> where one exists"
    )

    @field_serializer("citations")
    def _cited(self, texts: list[str], info: SerializationInfo) -> list[str]:
        return cited(texts, info)

    @property
    def capacity_gb(self) -> float:
        """Each GPU's memory in the unit of `memory.per_gpu_gb` (`capacity_gb`)."""
        return capacity_gb(self.vram_per_gpu_gb, self.memory.reported_gb)

    @property
    def shown_tokens_per_s(self) -> float:
        """The speed a table's one column shows (not serialised): a served sequence's tokens/s, what
        its reader sees; a training run's over all its GPUs, what sets its hours and what the `why`
        states ("about 129 training tokens/s"), not one data-parallel replica's share of it."""
        speed = self.throughput
        return speed.tokens_per_s if self.method == "inference" else speed.aggregate_tokens_per_s

    price_as_of: str | None = Field(
        None,
        description="date (ISO) the prices this option is costed with were seen: the offer's when rented, "
        "the older of the GPU's and the host's when bought; absent when owned",
    )
    launch: Launch | None = Field(
        None,
        description="rented: the option as a SkyPilot task and a dstack run configuration, ready to launch",
    )


class Rejected(ResponseModel):
    """A notable option ruled out, with the rule that did it."""

    gpu: str = Field(description="KB gpu id")
    gpu_count: int = Field(description="GPUs in the option")
    acquisition: Acquisition = Field(description="buy | rent | owned")
    provider: str | None = Field(None, description="cloud provider id when rented")
    reason: str = Field(description="why it was ruled out")
    rule: str = Field(description="id of the rule that ruled it out (`memory` when no layout fits)")


class TargetFit(ResponseModel):
    """Whether the job runs on `constraints.target_hardware`, and ways to make it run."""

    gpu: str = Field(description="KB gpu id of the target")
    gpu_name: str | None = Field(None, description="the target GPU's name")
    count: int = Field(description="number of target GPUs")
    fits: bool = Field(
        description="the requested method and precision fit each GPU's memory less the headroom kept free"
    )
    per_gpu_gb: float = Field(description="least memory per GPU the job needs as asked, GB")
    vram_per_gpu_gb: float = Field(description="memory of each target GPU the job can use, GB")
    reported_gb: float | None = Field(
        None,
        description="memory the driver reports on each target GPU, GB (1e9 bytes): what `fits` is measured "
        "against; an H100 80GB reports 81,559 MiB, 85.5 GB",
    )
    why: str = Field(description="the verdict in words, with ways to make it run when it does not fit")
    alternatives: list[str] = Field(
        description="what fits: a fused loss, another method, lower-precision weights, offload, parallelism, "
        "more GPUs"
    )
    throughput: Throughput | None = Field(
        None, description="the speed of the best plan on the target, when one passes every constraint"
    )
    cost: Cost | None = Field(
        None,
        description="the cost of the best plan on the target (as owned, bought or rented), when one passes",
    )
    plan: str | None = Field(None, description="that plan in words: method, precision, parallelism")

    @property
    def capacity_gb(self) -> float:
        """Each target GPU's memory in the unit of `per_gpu_gb` (`capacity_gb`)."""
        return capacity_gb(self.vram_per_gpu_gb, self.reported_gb)


class TraceStep(ResponseModel):
    """One rule firing in the forward-chaining record."""

    step: int = Field(description="firing order, from 1")
    rule: str = Field(description="id of the rule that fired")
    title: str = Field(description="the rule's title")
    matched: dict[str, Scalar] = Field(description="facts the rule's condition read, with their values")
    derived: dict[str, Scalar] = Field(description="facts the rule derived")
    message: str = Field(description="the rule's messages, with fact values filled in")
    citations: list[str] = Field(
        description="the rule's sources: title and section, then <URL> where one exists"
    )

    @field_serializer("citations")
    def _cited(self, texts: list[str], info: SerializationInfo) -> list[str]:
        return cited(texts, info)


class Relaxation(ResponseModel):
    """The cheapest way out of an infeasible request: the constraint to relax and what it buys."""

    constraint: str = Field(
        description="the request constraint to relax, e.g. constraints.budget_usd (else the rule id)"
    )
    rule: str = Field(description="id of the rule whose filter the constraint drives")
    message: str = Field(description="the cheapest option once relaxed: hardware, plan and spend")


class RecommendResponse(ResponseModel):
    """Body of a `POST /recommend` answer (200), feasible or not."""

    request_id: str = Field(description="unique per call")
    kb_version: str = Field(description="content hash of the knowledge base and rules in use")
    prices_as_of: str = Field(description="date of the price snapshot used (ISO date), or 'unknown'")
    oldest_price_as_of: str | None = Field(
        None,
        description="the oldest `price_as_of` of the recommendations (ISO date); a warning names any "
        "older than constraints.max_price_age_days",
    )
    feasible: bool = Field(description="at least one option meets every hard constraint")
    summary: str = Field(description="1-3 sentences a chat bot can post as-is")
    requirements: Requirements = Field(description="the workload, before any hardware is chosen")
    recommendations: list[Recommendation] = Field(description="best first; at most top_k")
    rejected: list[Rejected] = Field(description="notable options ruled out, with the rule that did it")
    target_fit: TargetFit | None = Field(
        None, description="present when constraints.target_hardware was given"
    )
    trace: list[TraceStep] = Field(description="forward-chaining record, in firing order")
    warnings: list[str] = Field(description="cautions from the rules and the sizing")
    assumptions: dict[str, float | str] = Field(
        description="conventions behind the numbers (name: value), stated once"
    )
    relaxation: Relaxation | None = Field(
        None, description="when infeasible: the cheapest constraint to relax"
    )
