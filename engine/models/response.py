"""`POST /recommend` response body, exactly as docs/api-contract.md defines it (fields may be added,
never renamed or dropped). Units are in the field names: `_gb` = 1e9 bytes, `_usd`, `_pct`, `_per_s`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.models.rule import Scalar

Bound = Literal["memory_bandwidth", "compute", "interconnect"]
Acquisition = Literal["buy", "rent", "owned"]
Pricing = Literal["owned", "on_demand", "spot"]


class ResponseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JobMemory(ResponseModel):
    """The whole job's memory before sharding, GB."""

    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    activations_gb: float
    kv_cache_gb: float
    overhead_gb: float
    total_gb: float


class Requirements(ResponseModel):
    """The workload before any hardware is chosen."""

    params_b: float
    active_params_b: float | None = Field(None, description="MoE: parameters used per token, billions")
    precision: str
    method: str
    memory: JobMemory
    bound: Bound
    required_tokens_per_s: float | None = Field(None, description="serving demand, when `serving` was given")
    architecture_source: Literal["kb-model", "request", "estimated"] = Field(
        description="where the layer sizes behind activations and KV cache came from"
    )


class GpuMemory(ResponseModel):
    """Memory on each GPU after sharding, GB."""

    per_gpu_gb: float
    headroom_pct: float = Field(description="share of the GPU's memory left free")
    fits: bool
    weights_per_gpu_gb: float
    gradients_per_gpu_gb: float
    optimizer_per_gpu_gb: float
    activations_per_gpu_gb: float
    kv_cache_per_gpu_gb: float
    overhead_per_gpu_gb: float


class Throughput(ResponseModel):
    tokens_per_s: float = Field(description="per sequence when decoding; per replica when training")
    aggregate_tokens_per_s: float = Field(description="all sequences and replicas together")
    max_concurrent_sequences: int | None = Field(None, description="inference: sequences the KV cache holds")
    training_hours: float | None = Field(None, description="wall-clock hours for training_tokens_b")


class Cost(ResponseModel):
    capex_usd: float
    hourly_usd: float = Field(description="running cost per busy hour: rent, or power when owned")
    monthly_usd: float = Field(description="running cost per month at the stated use")
    cost_per_1m_tokens_usd: float | None
    gpu_hours: float | None
    run_cost_usd: float | None
    break_even_hours: float | None = Field(description="hours of use after which owning beats renting")
    horizon_cost_usd: float = Field(
        description="total cost of this option over the horizon at the stated use"
    )
    rent_cost_over_horizon_usd: float | None = Field(
        description="renting equivalent capacity for the same use (the cheapest on-demand offer of the GPU)"
    )


class Recommendation(ResponseModel):
    rank: int
    score: float
    gpu: str
    gpu_name: str
    gpu_count: int
    nodes: int
    vram_per_gpu_gb: float
    interconnect: str
    platform: str
    os_path: str
    acquisition: Acquisition
    provider: str | None
    instance_type: str | None
    pricing: Pricing
    price_kind: str = Field(description="new | used | estimate | msrp (buy), on_demand | spot, owned")
    precision: str
    method: str
    parallelism: list[str]
    tp_degree: int
    offload: bool
    memory: GpuMemory
    throughput: Throughput
    cost: Cost
    why: str
    trace_steps: list[int]
    citations: list[str]


class Rejected(ResponseModel):
    gpu: str
    gpu_count: int
    acquisition: Acquisition
    provider: str | None = None
    reason: str
    rule: str


class TargetFit(ResponseModel):
    gpu: str
    count: int
    fits: bool
    per_gpu_gb: float
    vram_per_gpu_gb: float
    why: str
    alternatives: list[str]


class TraceStep(ResponseModel):
    step: int
    rule: str
    title: str
    matched: dict[str, Scalar]
    derived: dict[str, Scalar]
    message: str
    citations: list[str]


class Relaxation(ResponseModel):
    """The cheapest way out of an infeasible request: the constraint to relax and what it buys."""

    constraint: str
    rule: str
    message: str


class RecommendResponse(ResponseModel):
    request_id: str
    kb_version: str
    prices_as_of: str
    feasible: bool
    summary: str
    requirements: Requirements
    recommendations: list[Recommendation]
    rejected: list[Rejected]
    target_fit: TargetFit | None = None
    trace: list[TraceStep]
    warnings: list[str]
    assumptions: dict[str, float | str]
    relaxation: Relaxation | None = Field(
        None, description="when infeasible: the cheapest constraint to relax"
    )
