"""Response shapes of the read-only endpoints (api-contract.md, "Read-only endpoints")."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.models.kb import Gpu, GpuClass, Vendor


class GpuSummary(BaseModel):
    """One row of `GET /gpus`."""

    model_config = ConfigDict(populate_by_name=True)

    id: str = Field(description="KB gpu id")
    name: str = Field(description="marketing name")
    vendor: Vendor = Field(description="maker: nvidia | amd | intel | apple | google | generic")
    memory_gb: float = Field(description="memory per device, GB (1e9 bytes); unified memory for Apple")
    memory_bandwidth_gbs: float = Field(description="memory bandwidth, GB/s")
    platform: str = Field(description="primary software stack: cuda | rocm | mps | xla | synapseai | cpu")
    gpu_class: GpuClass = Field(
        alias="class", description="consumer | workstation | datacenter | apple-silicon | cpu"
    )

    @classmethod
    def of(cls, gpu: Gpu) -> GpuSummary:
        return cls(
            id=gpu.id,
            name=gpu.name,
            vendor=gpu.vendor,
            memory_gb=gpu.memory_gb,
            memory_bandwidth_gbs=gpu.memory_bandwidth_gbs,
            platform=gpu.platforms[0],
            gpu_class=gpu.gpu_class,
        )


class Health(BaseModel):
    """Body of `GET /healthz`."""

    status: Literal["ok"] = Field(description="the service is up with a valid knowledge base")
    kb_version: str = Field(description="content hash of the knowledge base in use")
    open_rule_sessions: int = Field(
        0, description="rule-engine sessions open right now: 0 between requests (a leak shows here)"
    )


class Ready(BaseModel):
    """Body of `GET /readyz`."""

    status: Literal["ready"] = Field(
        description="the worker answers: its KB is loaded and its rules compiled"
    )
    kb_version: str = Field(description="content hash of the knowledge base in use")
    rules: int = Field(description="rules compiled into the worker's rule engine")


class Version(BaseModel):
    """Body of `GET /version`."""

    version: str = Field(description="gpu-advisor version")
    kb_version: str = Field(description="content hash of the knowledge base in use")
    prices_as_of: str | None = Field(description="newest `as_of` date of the offers in use (ISO date)")


class ErrorDetail(BaseModel):
    """Error body of a failed request, e.g. a 404 for an unknown id."""

    detail: str = Field(description="what went wrong, naming the id or field")
