"""`POST /recommend` request body, exactly as docs/api-contract.md defines it.

Unknown keys are rejected, NaN and infinities are rejected, and every number has a sane range, so a
bad value is a 422 naming the field rather than a surprise deep in the sizing math. Checks that need
the knowledge base (an unknown model or GPU id) happen where the KB is at hand.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.models.kb import TransformerDims

Task = Literal["inference", "pretrain", "full_finetune", "lora", "qlora"]
WeightPrecision = Literal["fp32", "fp16", "bf16", "fp8", "int8", "int4"]
KvPrecision = Literal["fp16", "bf16", "fp8", "int8"]
Optimizer = Literal["adamw", "adam", "adamw_8bit", "sgd", "adafactor"]
Os = Literal["linux", "windows", "macos"]
RequestVendor = Literal["nvidia", "amd", "intel", "apple"]
Parallelism = Literal[
    "ddp", "zero-1", "zero-2", "zero-3", "fsdp-full-shard", "tensor-parallel", "pipeline-parallel", "offload"
]
HardwareId = Annotated[str, Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$", max_length=96)]


def _positive(upper: float, description: str) -> object:
    return Field(gt=0, le=upper, allow_inf_nan=False, description=description)


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ArchitectureIn(TransformerDims):
    """Enables exact activation and KV-cache math when the model is not in the catalog."""


class Serving(RequestModel):
    requests_per_min: Annotated[float, _positive(1e9, "peak requests per minute")]
    avg_input_tokens: Annotated[int, Field(ge=0, le=10_000_000)]
    avg_output_tokens: Annotated[int, Field(ge=1, le=10_000_000)]
    latency_p95_s: Annotated[float, _positive(86_400, "95th-percentile latency target, seconds")] | None = (
        None
    )
    min_tokens_per_s_per_user: Annotated[float, _positive(1e6, "decode speed each user needs")] | None = None


class Workload(RequestModel):
    task: Task
    model: HardwareId | None = Field(None, description="KB model id; fills params and architecture")
    params_b: Annotated[float, _positive(100_000, "total parameters, billions")] | None = None
    active_params_b: (
        Annotated[float, _positive(100_000, "MoE: parameters used per token, billions")] | None
    ) = None
    architecture: ArchitectureIn | None = None
    precision: WeightPrecision | None = Field(
        None, description="for training tasks fp16/bf16 mean mixed precision; absent: the engine chooses"
    )
    kv_cache_precision: KvPrecision | None = None
    optimizer: Optimizer = "adamw"
    batch_size: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    seq_len: Annotated[int, Field(ge=1, le=10_000_000)] = 2048
    gradient_checkpointing: bool | None = None
    lora_rank: Annotated[int, Field(ge=1, le=4096)] = 16
    training_tokens_b: Annotated[float, _positive(1e6, "tokens to train on, billions")] | None = None
    job_hours: Annotated[float, _positive(1e6, "the job's wall-clock hours")] | None = None
    serving: Serving | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        if self.model is None and self.params_b is None:
            raise ValueError("give `model` (a KB model id) or `params_b`")
        if (
            self.active_params_b is not None
            and self.params_b is not None
            and self.active_params_b > self.params_b
        ):
            raise ValueError("active_params_b cannot exceed params_b")
        if self.serving is not None and self.task != "inference":
            raise ValueError("`serving` applies to inference only")
        return self


class HardwareCount(RequestModel):
    gpu: HardwareId
    count: Annotated[int, Field(ge=1, le=100_000)] = 1


class Constraints(RequestModel):
    budget_usd: Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)] | None = None
    on_prem_only: bool = False
    os: Os | None = None
    acquisition: Literal["buy", "rent", "any"] = "any"
    utilization_pct: Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)] | None = None
    hours_per_week: Annotated[float, Field(gt=0, le=168, allow_inf_nan=False)] | None = None
    horizon_months: Annotated[float, Field(gt=0, le=240, allow_inf_nan=False)] = 36
    interruptible: bool = False
    providers: list[HardwareId] | None = Field(None, min_length=1, max_length=100)
    vendors: list[RequestVendor] | None = Field(None, min_length=1)
    max_gpus: Annotated[int, Field(ge=1, le=100_000)] | None = None
    gpu_count: Annotated[int, Field(ge=1, le=100_000)] | None = None
    parallelism: list[Parallelism] | None = Field(None, min_length=1)
    availability_target_pct: Annotated[float, Field(gt=0, le=100, allow_inf_nan=False)] | None = None
    existing_hardware: list[HardwareCount] = Field(default_factory=list, max_length=100)
    target_hardware: HardwareCount | None = None
    allow_quantization: bool = True
    electricity_usd_per_kwh: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] = 0.12
    deployment: Literal["workstation", "dense_rack"] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Constraints:
        if self.utilization_pct is not None and self.hours_per_week is not None:
            raise ValueError("give utilization_pct or hours_per_week, not both")
        if self.gpu_count is not None and self.max_gpus is not None and self.gpu_count > self.max_gpus:
            raise ValueError("gpu_count cannot exceed max_gpus")
        if self.on_prem_only and self.acquisition == "rent":
            raise ValueError("on_prem_only rules out acquisition: rent")
        return self


class RecommendRequest(RequestModel):
    workload: Workload
    constraints: Constraints = Field(default_factory=Constraints)
    objective: Literal["cheapest", "fastest", "balanced"] = "balanced"
    top_k: Annotated[int, Field(ge=1, le=20)] = 5
