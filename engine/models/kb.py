"""Knowledge-base schemas: the only place the shape of a `kb/` file is defined.

Every model forbids unknown keys, so a misspelt field is an error rather than a silently
ignored value. Units live in field names (`_gb` = 1e9 bytes, `_gbs` = GB/s, `_w` = watts,
`_usd` = US dollars). Tensor throughput is always the *dense* figure (no structured sparsity);
sparse figures, where a vendor headlines them, go in the `*_sparse_*` fields.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

EntityId = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$", max_length=96),
    Field(description="kebab-case id; equals the file stem; never reused"),
]
Text = Annotated[str, StringConstraints(min_length=1, max_length=2000)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Url = Annotated[str, StringConstraints(pattern=r"^https?://\S+$", max_length=500)]
Confidence = Literal["high", "medium", "low"]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Strict(BaseModel):
    """Base for every KB model: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Source(Strict):
    """Where a fact comes from: a URL or a named document, and when it was read."""

    url: Url | None = None
    document: Text | None = Field(None, description="a document that is not on the web, or a seed file")
    accessed: date = Field(description="date the source was read (not in the future)")
    note: Text | None = None

    @model_validator(mode="after")
    def _url_or_document(self) -> Source:
        if self.url is None and self.document is None:
            raise ValueError("a source needs `url` or `document`")
        return self


Sources = Annotated[list[Source], Field(min_length=1, description="at least one source")]


class Entity(Strict):
    """Fields every KB file has."""

    id: EntityId
    sources: Sources
    notes: list[Text] = Field(default_factory=list)


# --- GPUs and other accelerators -------------------------------------------------------------

GpuClass = Literal["consumer", "workstation", "datacenter", "apple-silicon", "cpu"]
Vendor = Literal["nvidia", "amd", "intel", "apple", "google", "generic"]
FormFactor = Literal["sxm", "pcie", "oam", "soc", "module", "cloud", "socket"]
SoldAs = Literal["card", "server", "machine", "cloud-only"]
PriceKind = Literal["new", "used", "msrp", "estimate"]


class Price(Strict):
    """A purchase price for one unit (one card, one machine, or 1/8 of an 8-GPU server)."""

    price_usd: NonNegativeFloat
    kind: PriceKind
    as_of: date
    note: Text | None = None


class Gpu(Entity):
    """An accelerator: a GPU card, an SXM/OAM module, an Apple SoC machine, a TPU chip, or a CPU."""

    name: Name
    aliases: list[Name] = Field(default_factory=list, description="other names, e.g. earlier ids")
    vendor: Vendor
    gpu_class: GpuClass = Field(alias="class")
    architecture: Name
    compute_capability: Annotated[str, StringConstraints(pattern=r"^\d{1,2}\.\d$")] | None = Field(
        None, description="NVIDIA CUDA compute capability, e.g. '8.9'"
    )
    gfx_target: Annotated[str, StringConstraints(pattern=r"^gfx[0-9a-f]{3,4}$")] | None = Field(
        None, description="AMD ROCm target, e.g. 'gfx942'"
    )
    launch_year: Annotated[int, Field(ge=1990, le=2100)]
    form_factor: FormFactor
    sold_as: SoldAs
    memory_gb: PositiveFloat
    usable_memory_gb: PositiveFloat | None = Field(
        None, description="memory the accelerator can use when less than memory_gb (Apple GPU limit, B200)"
    )
    memory_type: Name
    memory_bandwidth_gbs: PositiveFloat
    fp32_tflops: PositiveFloat | None = Field(None, description="non-tensor (vector) FP32")
    tf32_dense_tflops: PositiveFloat | None = None
    fp16_dense_tflops: PositiveFloat | None = None
    bf16_dense_tflops: PositiveFloat | None = None
    fp8_dense_tflops: PositiveFloat | None = None
    fp4_dense_tflops: PositiveFloat | None = None
    int8_dense_tops: PositiveFloat | None = None
    int4_dense_tops: PositiveFloat | None = None
    tf32_sparse_tflops: PositiveFloat | None = None
    fp16_sparse_tflops: PositiveFloat | None = None
    bf16_sparse_tflops: PositiveFloat | None = None
    fp8_sparse_tflops: PositiveFloat | None = None
    fp4_sparse_tflops: PositiveFloat | None = None
    int8_sparse_tops: PositiveFloat | None = None
    tdp_w: Annotated[int, Field(gt=0, le=5000)] | None = None
    interconnect: EntityId = Field(description="GPU-to-GPU link (interconnect id)")
    interconnect_gbs: PositiveFloat | None = Field(
        None, description="per-GPU GPU-to-GPU bandwidth, bidirectional aggregate"
    )
    link_domain_gpus: Annotated[int, Field(ge=1, le=1024)] = Field(
        1, description="GPUs that share the GPU-to-GPU link in one node (8 on HGX, 2 with a bridge)"
    )
    host_interface: EntityId | None = Field(None, description="host link (interconnect id), e.g. pcie-5")
    platforms: list[EntityId] = Field(min_length=1, description="software stacks (stack ids)")
    native_precisions: list[EntityId] = Field(min_length=1, description="precision ids with hardware support")
    prices: list[Price] = Field(default_factory=list)
    confidence: Confidence = "high"
    doubts: list[Text] = Field(default_factory=list, description="figures to re-check, and why")


# --- Interconnects, precisions, stacks, operating systems -----------------------------------

InterconnectKind = Literal[
    "pcie", "nvlink", "nvswitch", "infiniband", "ethernet", "fabric", "unified", "ici", "none"
]
InterconnectScope = Literal["host", "intra-node", "inter-node", "on-package"]


class Interconnect(Entity):
    """A link between GPUs (or GPU and host): PCIe, NVLink, InfiniBand, unified memory, ..."""

    name: Name
    kind: InterconnectKind
    scope: InterconnectScope
    generation: Name | None = None
    bandwidth_gbs: NonNegativeFloat = Field(description="per-GPU (or per-port) bandwidth, see direction")
    direction: Literal["bidirectional", "unidirectional"]
    max_gpus: Annotated[int, Field(ge=1, le=100000)] | None = Field(
        None, description="GPUs one link domain can join (None: limited by the network)"
    )
    latency_us: PositiveFloat | None = None
    tensor_parallel_suitable: bool = Field(description="fast enough for tensor parallelism (NVLink class)")


PrecisionUse = Literal["training", "mixed-precision-training", "inference", "kv-cache", "compute-only"]


class Precision(Entity):
    """A number format: its size, range and where it runs natively."""

    name: Name
    kind: Literal["float", "integer", "quantized"]
    bits: Annotated[int, Field(ge=1, le=64)]
    bytes_per_param: PositiveFloat
    storage_overhead_bits_per_param: NonNegativeFloat = Field(
        0, description="extra bits per parameter for block scales etc. (e.g. NF4 double-quant 0.127)"
    )
    exponent_bits: Annotated[int, Field(ge=0, le=16)] | None = None
    mantissa_bits: Annotated[int, Field(ge=0, le=64)] | None = None
    max_value: PositiveFloat | None = None
    uses: list[PrecisionUse] = Field(min_length=1)
    needs_loss_scaling: bool = False
    min_compute_capability: Annotated[str, StringConstraints(pattern=r"^\d{1,2}\.\d$")] | None = Field(
        None, description="lowest NVIDIA compute capability with native (tensor-core) support"
    )
    native_architectures: list[Name] = Field(default_factory=list)
    stability: Text
    range_note: Text


class Stack(Entity):
    """A software platform an accelerator runs on: CUDA, ROCm, MPS, MLX, XLA, ..."""

    name: Name
    vendors: list[Vendor] = Field(min_length=1)
    description: Text


class OsStackSupport(Strict):
    stack: EntityId
    via: Literal["native", "wsl2"]
    support: Literal["full", "limited", "experimental"]
    note: Text | None = None


class Platform(Entity):
    """An operating system the user runs, and the GPU stacks it supports (and how)."""

    name: Name
    stacks: list[OsStackSupport] = Field(min_length=1)
    caveats: list[Text] = Field(default_factory=list)


# --- Clouds ----------------------------------------------------------------------------------

ProviderKind = Literal["hyperscaler", "neocloud", "marketplace", "aggregator", "notebook"]


class Spot(Strict):
    available: bool
    note: Text | None = None


class Billing(Strict):
    increment: Literal["second", "minute", "hour", "month"]
    minimum_minutes: Annotated[int, Field(ge=0)] = 0
    note: Text | None = None


class Provider(Entity):
    """A cloud that rents GPUs."""

    name: Name
    kind: ProviderKind
    url: Url
    hosts: Literal["provider", "community", "mixed", "upstream"] = Field(
        description="who runs the machines: the provider, community hosts, or upstream clouds (aggregators)"
    )
    spot: Spot
    billing: Billing
    catalog_name: Name | None = Field(None, description="the cloud's name in the offer catalog snapshot")


class Offer(Entity):
    """A provider's priced instance. Generated by `gpu-advisor kb import-catalog`; never hand-edited."""

    provider: EntityId
    instance_type: Name
    gpu: EntityId
    gpu_count: Annotated[int, Field(ge=1, le=1024)]
    interconnect: EntityId = Field(description="link between this instance's GPUs (interconnect id)")
    vcpus: NonNegativeFloat | None = None
    memory_gib: NonNegativeFloat | None = Field(None, description="host RAM")
    on_demand_usd_per_hour: NonNegativeFloat | None = None
    spot_usd_per_hour: NonNegativeFloat | None = None
    region_count: Annotated[int, Field(ge=0)]
    regions: list[Name] = Field(default_factory=list)
    as_of: date

    @model_validator(mode="after")
    def _has_a_price(self) -> Offer:
        if self.on_demand_usd_per_hour is None and self.spot_usd_per_hour is None:
            raise ValueError("an offer needs `on_demand_usd_per_hour` or `spot_usd_per_hour`")
        return self


# --- Models ----------------------------------------------------------------------------------


class TransformerDims(Strict):
    """The core transformer sizes (config.json names), shared by the KB and the request."""

    n_layers: Annotated[int, Field(ge=1, le=1000)]
    hidden_size: Annotated[int, Field(ge=1, le=1_000_000)]
    n_heads: Annotated[int, Field(ge=1, le=10_000)]
    n_kv_heads: Annotated[int, Field(ge=1, le=10_000)]
    head_dim: Annotated[int, Field(ge=1, le=10_000)]
    intermediate_size: Annotated[int, Field(ge=1, le=10_000_000)]
    vocab_size: Annotated[int, Field(ge=1, le=10_000_000)]

    @model_validator(mode="after")
    def _grouped_query_attention(self) -> TransformerDims:
        if self.n_heads % self.n_kv_heads:
            raise ValueError("n_heads must be a multiple of n_kv_heads")
        return self


class Architecture(TransformerDims):
    """Published transformer hyper-parameters (the model's config), enough to count parameters
    and size activations and the KV cache."""

    mlp: Literal["gated", "dense"] = Field(description="gated: SwiGLU/GeGLU (3 matrices); dense: 2 matrices")
    norm: Literal["rmsnorm", "layernorm"]
    position_embedding: Literal["rope", "learned", "alibi", "relative"]
    max_position_embeddings: Annotated[int, Field(ge=1)]
    tie_word_embeddings: bool
    attention_bias: bool = Field(False, description="biases on the q, k and v projections")
    attention_output_bias: bool | None = Field(
        None, description="bias on the attention output projection (default: same as attention_bias)"
    )
    mlp_bias: bool = False
    norms_per_layer: Annotated[int, Field(ge=0, le=8)] = Field(
        2,
        description="norm modules per layer: 2 for pre-LN (Llama), 4 for Gemma-2 (pre/post attn and MLP)",
    )
    n_experts: Annotated[int, Field(ge=1)] | None = None
    experts_per_token: Annotated[int, Field(ge=1)] | None = None
    sliding_window: Annotated[int, Field(ge=1)] | None = None
    sliding_window_layers: Annotated[int, Field(ge=0)] | None = Field(
        None, description="layers that use the sliding window (Gemma-2: every other); default: all"
    )
    type_vocab_size: Annotated[int, Field(ge=0)] = Field(0, description="BERT token-type embeddings")
    pooler: bool = Field(False, description="BERT pooler dense layer")

    @model_validator(mode="after")
    def _consistent(self) -> Architecture:
        if (self.n_experts is None) != (self.experts_per_token is None):
            raise ValueError("n_experts and experts_per_token go together")
        if self.sliding_window_layers is not None and (
            self.sliding_window is None or self.sliding_window_layers > self.n_layers
        ):
            raise ValueError("sliding_window_layers needs sliding_window and at most n_layers layers")
        if self.n_experts is not None and (self.experts_per_token or 0) > self.n_experts:
            raise ValueError("experts_per_token cannot exceed n_experts")
        return self


class Model(Entity):
    """A well-known model with its published size and architecture."""

    name: Name
    family: Name
    kind: Literal["decoder", "encoder", "encoder-decoder", "cnn"]
    params_b: PositiveFloat = Field(description="published total parameters, billions")
    active_params_b: PositiveFloat | None = Field(
        None, description="MoE: published parameters used per token"
    )
    params_count: Annotated[int, Field(gt=0)] | None = Field(None, description="exact published count")
    context_length: Annotated[int, Field(ge=1)] | None = None
    release_year: Annotated[int, Field(ge=2010, le=2100)]
    license: Name | None = None
    architecture: Architecture | None = None


KIND_MODELS: dict[str, type[Entity]] = {
    "gpus": Gpu,
    "interconnects": Interconnect,
    "precisions": Precision,
    "stacks": Stack,
    "platforms": Platform,
    "providers": Provider,
    "offers": Offer,
    "models": Model,
}
"""Folder under kb/ → the model its files validate against."""
