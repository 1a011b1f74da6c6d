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
LaunchName = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(?::\d+GB)?$", max_length=40)
]
Url = Annotated[str, StringConstraints(pattern=r"^https?://\S+$", max_length=500)]
Confidence = Literal["high", "medium", "low"]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Strict(BaseModel):
    """Base for every KB model: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Source(Strict):
    """Where a fact comes from: a URL or a named document, and when it was read."""

    url: Url | None = Field(None, description="web address of the source")
    document: Text | None = Field(None, description="a document that is not on the web, or a seed file")
    accessed: date = Field(description="date the source was read (not in the future)")
    note: Text | None = Field(None, description="what the source gives, or where in it")

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
    notes: list[Text] = Field(default_factory=list, description="free-text remarks")


# --- GPUs and other accelerators -------------------------------------------------------------

GpuClass = Literal["consumer", "workstation", "datacenter", "apple-silicon", "cpu"]
Vendor = Literal["nvidia", "amd", "intel", "apple", "google", "generic"]
FormFactor = Literal["sxm", "pcie", "oam", "soc", "module", "cloud", "socket"]
SoldAs = Literal["card", "server", "machine", "cloud-only"]
PriceKind = Literal["new", "used", "msrp", "estimate"]


class Price(Strict):
    """A purchase price for one unit (one card, one machine, or 1/8 of an 8-GPU server): the figure
    the answer costs with, and the range buyers saw around it."""

    price_usd: NonNegativeFloat = Field(description="price of one unit, US dollars (the figure used)")
    low_usd: NonNegativeFloat | None = Field(
        None, description="low end of the prices seen for one unit, US dollars (with high_usd)"
    )
    high_usd: NonNegativeFloat | None = Field(
        None, description="high end of the prices seen for one unit, US dollars (with low_usd)"
    )
    kind: PriceKind = Field(description="new | used | msrp (list price) | estimate")
    as_of: date = Field(description="date the price was seen")
    note: Text | None = Field(None, description="where and how the price was found")
    range_note: Text | None = Field(None, description="where the low and high figures come from")

    @model_validator(mode="after")
    def _range_around_the_price(self) -> Price:
        if (self.low_usd is None) != (self.high_usd is None):
            raise ValueError("low_usd and high_usd go together")
        low, high = self.low_usd, self.high_usd
        if low is not None and high is not None and not low <= self.price_usd <= high:
            raise ValueError("the range must hold the price: low_usd <= price_usd <= high_usd")
        return self

    @property
    def low(self) -> float:
        return self.price_usd if self.low_usd is None else self.low_usd

    @property
    def high(self) -> float:
        return self.price_usd if self.high_usd is None else self.high_usd


class Gpu(Entity):
    """An accelerator: a GPU card, an SXM/OAM module, an Apple SoC machine, a TPU chip, or a CPU."""

    name: Name = Field(description="marketing name")
    aliases: list[Name] = Field(default_factory=list, description="other names, e.g. earlier ids")
    vendor: Vendor = Field(description="maker: nvidia | amd | intel | apple | google | generic")
    gpu_class: GpuClass = Field(
        alias="class", description="consumer | workstation | datacenter | apple-silicon | cpu"
    )
    architecture: Name = Field(description="chip architecture, e.g. Hopper")
    compute_capability: Annotated[str, StringConstraints(pattern=r"^\d{1,2}\.\d$")] | None = Field(
        None, description="NVIDIA CUDA compute capability, e.g. '8.9'"
    )
    gfx_target: Annotated[str, StringConstraints(pattern=r"^gfx[0-9a-f]{3,4}$")] | None = Field(
        None, description="AMD ROCm target, e.g. 'gfx942'"
    )
    launch_year: Annotated[int, Field(ge=1990, le=2100)] = Field(description="year of launch")
    form_factor: FormFactor = Field(description="sxm | pcie | oam | soc | module | cloud | socket")
    sold_as: SoldAs = Field(
        description="how it is bought: a card, in a server, as a whole machine, or not at all (cloud-only)"
    )
    memory_gb: PositiveFloat = Field(
        description="memory per device, GB (1e9 bytes); unified memory for Apple"
    )
    usable_memory_gb: PositiveFloat | None = Field(
        None, description="memory the accelerator can use when less than memory_gb (Apple GPU limit, B200)"
    )
    memory_reported_mib: PositiveFloat | None = Field(
        None,
        description="memory the driver reports (nvidia-smi / rocm-smi / torch total_memory), MiB; "
        "absent: derived from memory_gb",
    )
    memory_type: Name = Field(description="e.g. HBM3, GDDR6X, LPDDR5")
    memory_bandwidth_gbs: PositiveFloat = Field(description="memory bandwidth, GB/s")
    fp32_tflops: PositiveFloat | None = Field(None, description="non-tensor (vector) FP32")
    tf32_dense_tflops: PositiveFloat | None = Field(None, description="TF32 tensor throughput, dense, TFLOPS")
    fp16_dense_tflops: PositiveFloat | None = Field(None, description="FP16 tensor throughput, dense, TFLOPS")
    bf16_dense_tflops: PositiveFloat | None = Field(None, description="BF16 tensor throughput, dense, TFLOPS")
    fp8_dense_tflops: PositiveFloat | None = Field(None, description="FP8 tensor throughput, dense, TFLOPS")
    fp4_dense_tflops: PositiveFloat | None = Field(None, description="FP4 tensor throughput, dense, TFLOPS")
    int8_dense_tops: PositiveFloat | None = Field(None, description="INT8 tensor throughput, dense, TOPS")
    int4_dense_tops: PositiveFloat | None = Field(None, description="INT4 tensor throughput, dense, TOPS")
    tf32_sparse_tflops: PositiveFloat | None = Field(
        None, description="TF32 tensor throughput with structured sparsity, TFLOPS"
    )
    fp16_sparse_tflops: PositiveFloat | None = Field(
        None, description="FP16 tensor throughput with structured sparsity, TFLOPS"
    )
    bf16_sparse_tflops: PositiveFloat | None = Field(
        None, description="BF16 tensor throughput with structured sparsity, TFLOPS"
    )
    fp8_sparse_tflops: PositiveFloat | None = Field(
        None, description="FP8 tensor throughput with structured sparsity, TFLOPS"
    )
    fp4_sparse_tflops: PositiveFloat | None = Field(
        None, description="FP4 tensor throughput with structured sparsity, TFLOPS"
    )
    int8_sparse_tops: PositiveFloat | None = Field(
        None, description="INT8 tensor throughput with structured sparsity, TOPS"
    )
    tdp_w: Annotated[int, Field(gt=0, le=5000)] | None = Field(None, description="rated power (TDP), watts")
    sustained_tensor_share: Annotated[float, Field(gt=0, le=1)] | None = Field(
        None,
        description="share of its datasheet tensor rates the card sustains under a long matmul load, "
        "where its power limit holds the clock below the boost clock the datasheet assumes (a 72 W "
        "L4), relative to the GPU the speed model is calibrated on; absent: 1",
    )
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
    prices: list[Price] = Field(default_factory=list, description="purchase prices, one unit each")
    confidence: Confidence = Field("high", description="trust in the figures: high | medium | low")
    doubts: list[Text] = Field(default_factory=list, description="figures to re-check, and why")
    skypilot_name: LaunchName | None = Field(
        None,
        description="SkyPilot's accelerator name, as `resources.accelerators` takes it (the canonical one of "
        "data/cloud-catalog/gpu-name-map.csv for this GPU); None when SkyPilot has none",
    )
    dstack_name: LaunchName | None = Field(
        None,
        description="dstack's GPU name, as `resources.gpu` takes it (gpuhunt's KNOWN_*_GPUS), with the "
        "memory where dstack knows the name at several sizes, e.g. A100:80GB; None when dstack has none",
    )


# --- Hosts: the system a bought GPU goes into -----------------------------------------------

HostKind = Literal["workstation", "pcie-server", "sxm-server", "oam-server", "superchip-server"]
Chassis = Literal["tower", "open-frame", "rack"]


class HostPrice(Strict):
    """What one host costs WITHOUT its GPUs, as a range (a single figure: low == high)."""

    low_usd: NonNegativeFloat = Field(description="low end of the price range, US dollars, GPUs excluded")
    high_usd: NonNegativeFloat = Field(description="high end of the price range, US dollars, GPUs excluded")
    kind: PriceKind = Field(description="new | used | msrp (list price) | estimate")
    as_of: date = Field(description="date the price was seen")
    note: Text | None = Field(None, description="where and how the price was found or derived")

    @model_validator(mode="after")
    def _ordered(self) -> HostPrice:
        if self.low_usd > self.high_usd:
            raise ValueError("low_usd must be at most high_usd")
        return self

    @property
    def midpoint_usd(self) -> float:
        return (self.low_usd + self.high_usd) / 2


class Host(Entity):
    """The system a bought GPU goes into: a workstation, a PCIe server, or the SXM/OAM baseboard
    server a module is sold on. Priced without the GPUs, so that a bought option costs the GPUs
    plus the hosts they need."""

    name: Name = Field(description="display name, e.g. the reference model")
    kind: HostKind = Field(
        description="workstation | pcie-server | sxm-server (HGX/DGX-class baseboard) | oam-server "
        "(OAM universal baseboard) | superchip-server (Grace Hopper-class module with its own CPU)"
    )
    chassis: Chassis = Field(description="tower | open-frame | rack")
    rack_units: Annotated[int, Field(ge=1, le=48)] | None = Field(
        None, description="height in rack units (rack chassis only)"
    )
    gpu_form_factors: list[FormFactor] = Field(
        min_length=1, description="GPU form factors it takes: pcie, sxm, oam, module"
    )
    gpu_classes: list[GpuClass] = Field(
        default_factory=list,
        description="GPU classes it takes (a tower's airflow suits consumer and workstation cards, "
        "passively cooled datacenter cards need a server's); empty: any class",
    )
    gpus: list[EntityId] = Field(
        default_factory=list,
        description="the GPUs its baseboard takes (gpu ids; a baseboard is generation-specific: an HGX "
        "H100 board takes H100/H200 SXM5, not V100 SXM2); empty: any GPU of its form factors and classes",
    )
    gpu_slots: Annotated[int, Field(ge=1, le=16)] = Field(description="the most GPUs one host takes")
    whole_board: bool = Field(
        False,
        description="the GPUs sit on a baseboard bought full: a node holds exactly gpu_slots GPUs",
    )
    cpu: Name = Field(description="CPUs as configured, e.g. '2x Intel Xeon Platinum 8480+'")
    host_ram_gb: PositiveFloat = Field(description="host (CPU) memory as configured, GB")
    power_w: Annotated[int, Field(gt=0, le=20000)] = Field(
        description="the host's own draw under load WITHOUT the GPUs (CPUs, RAM, fans, NICs, switches), watts"
    )
    prices: list[HostPrice] = Field(min_length=1, description="prices of one host, GPUs excluded")
    includes: list[Text] = Field(min_length=1, description="what the price includes (and what it leaves out)")
    confidence: Confidence = Field("medium", description="trust in the figures: high | medium | low")
    doubts: list[Text] = Field(default_factory=list, description="figures to re-check, and why")

    @model_validator(mode="after")
    def _consistent(self) -> Host:
        if (self.chassis == "rack") != (self.rack_units is not None):
            raise ValueError("rack_units is given for a rack chassis, and only for one")
        if self.whole_board and not self.gpus:
            raise ValueError("a whole_board host names the gpus its baseboard takes")
        return self


# --- Interconnects, precisions, stacks, operating systems -----------------------------------

InterconnectKind = Literal[
    "pcie", "nvlink", "nvswitch", "infiniband", "ethernet", "fabric", "unified", "ici", "none"
]
InterconnectScope = Literal["host", "intra-node", "inter-node", "on-package"]


class Interconnect(Entity):
    """A link between GPUs (or GPU and host): PCIe, NVLink, InfiniBand, unified memory, ..."""

    name: Name = Field(description="display name")
    kind: InterconnectKind = Field(
        description="pcie | nvlink | nvswitch | infiniband | ethernet | fabric | unified | ici | none"
    )
    scope: InterconnectScope = Field(
        description="what it joins: GPU and host, GPUs in a node, nodes, or dies on one package"
    )
    generation: Name | None = Field(None, description="technology generation, e.g. '4' or 'NDR'")
    bandwidth_gbs: NonNegativeFloat = Field(description="per-GPU (or per-port) bandwidth, see direction")
    direction: Literal["bidirectional", "unidirectional"] = Field(
        description="whether bandwidth_gbs counts both directions together or one"
    )
    max_gpus: Annotated[int, Field(ge=1, le=100000)] | None = Field(
        None, description="GPUs one link domain can join (None: limited by the network)"
    )
    latency_us: PositiveFloat | None = Field(None, description="latency, microseconds")
    tensor_parallel_suitable: bool = Field(description="fast enough for tensor parallelism (NVLink class)")


PrecisionUse = Literal["training", "mixed-precision-training", "inference", "kv-cache", "compute-only"]


class Precision(Entity):
    """A number format: its size, range and where it runs natively."""

    name: Name = Field(description="display name")
    kind: Literal["float", "integer", "quantized"] = Field(
        description="float, integer, or quantized (block-scaled storage format)"
    )
    bits: Annotated[int, Field(ge=1, le=64)] = Field(description="bits per value")
    bytes_per_param: PositiveFloat = Field(description="bytes per stored parameter, scales excluded")
    storage_overhead_bits_per_param: NonNegativeFloat = Field(
        0, description="extra bits per parameter for block scales etc. (e.g. NF4 double-quant 0.127)"
    )
    exponent_bits: Annotated[int, Field(ge=0, le=16)] | None = Field(
        None, description="exponent bits (floats)"
    )
    mantissa_bits: Annotated[int, Field(ge=0, le=64)] | None = Field(
        None, description="mantissa (fraction) bits (floats)"
    )
    max_value: PositiveFloat | None = Field(None, description="largest finite value")
    uses: list[PrecisionUse] = Field(
        min_length=1,
        description="where it is used: training, mixed-precision-training, inference, kv-cache, compute-only",
    )
    needs_loss_scaling: bool = Field(
        False, description="training needs loss scaling to avoid gradient underflow"
    )
    min_compute_capability: Annotated[str, StringConstraints(pattern=r"^\d{1,2}\.\d$")] | None = Field(
        None, description="lowest NVIDIA compute capability with native (tensor-core) support"
    )
    native_architectures: list[Name] = Field(
        default_factory=list, description="chip architectures with native support, e.g. Hopper"
    )
    stability: Text = Field(description="numerical behaviour in training and inference, in words")
    range_note: Text = Field(description="range and precision, in words")


MaturityLevel = Literal["production", "maturing", "limited"]
TaskKind = Literal["training", "serving"]


class Maturity(Strict):
    """How ready a stack's software is for one kind of work on one class of device, with its sources."""

    task: TaskKind = Field(description="training (pretraining and fine-tuning) | serving")
    gpu_class: GpuClass | Literal["any"] = Field(
        "any", description="the device class it holds for (consumer, datacenter, ...), or any"
    )
    level: MaturityLevel = Field(
        description="production: the mainstream engines and frameworks support it and teams run it in "
        "production | maturing: supported, with gaps (kernels, models or features lag; porting) | "
        "limited: community or experimental support, not for production"
    )
    reason: Text = Field(description="why, in one sentence")
    sources: Sources


class Stack(Entity):
    """A software platform an accelerator runs on: CUDA, ROCm, MPS, MLX, XLA, ..."""

    name: Name = Field(description="display name")
    vendors: list[Vendor] = Field(min_length=1, description="vendors whose accelerators it runs on")
    description: Text = Field(description="what it is, what it is good for, and its limits")
    maturity: list[Maturity] = Field(
        default_factory=list,
        description="how ready its software is, per task kind and device class (the most specific "
        "entry holds: a device class before `any`)",
    )

    def maturity_for(self, task: TaskKind, gpu_class: str) -> Maturity | None:
        """The entry for this task on this device class: its own class's, else `any`'s, else None."""
        fallback = None
        for entry in self.maturity:
            if entry.task == task and entry.gpu_class == gpu_class:
                return entry
            if entry.task == task and entry.gpu_class == "any":
                fallback = entry
        return fallback


class OsStackSupport(Strict):
    """How one software stack runs on an operating system."""

    stack: EntityId = Field(description="software stack (stack id)")
    via: Literal["native", "wsl2"] = Field(description="natively, or inside WSL2 on Windows")
    support: Literal["full", "limited", "experimental"] = Field(description="full | limited | experimental")
    note: Text | None = Field(None, description="what works and what does not")


class Platform(Entity):
    """An operating system the user runs, and the GPU stacks it supports (and how)."""

    name: Name = Field(description="display name")
    stacks: list[OsStackSupport] = Field(
        min_length=1, description="software stacks usable from this OS, and how"
    )
    caveats: list[Text] = Field(default_factory=list, description="practical warnings for ML work on this OS")


# --- Clouds ----------------------------------------------------------------------------------

ProviderKind = Literal["hyperscaler", "neocloud", "marketplace", "aggregator", "notebook"]


class Spot(Strict):
    """Whether a provider rents spot (preemptible) capacity."""

    available: bool = Field(description="spot capacity is offered")
    note: Text | None = Field(None, description="terms, e.g. the preemption warning")


class Billing(Strict):
    """How a provider bills rented time."""

    increment: Literal["second", "minute", "hour", "month"] = Field(description="billing granularity")
    minimum_minutes: Annotated[int, Field(ge=0)] = Field(
        0, description="minimum billed time per start, minutes"
    )
    note: Text | None = Field(None, description="details and exceptions")


class Commitment(Strict):
    """Capacity a provider rents below its on-demand rate for a term, paid for every hour of it whether
    used or not (reserved instances, savings plans, committed use discounts)."""

    name: Name = Field(description="the provider's name for it, e.g. Savings Plans")
    terms_months: list[Annotated[int, Field(ge=1, le=120)]] = Field(
        min_length=1, description="the terms offered, months"
    )
    max_discount_pct: Annotated[float, Field(gt=0, lt=100)] = Field(
        description="the largest discount off on-demand the provider publishes (an 'up to' figure: a quote "
        "for a given GPU and term may be less)"
    )


class Provider(Entity):
    """A cloud that rents GPUs."""

    name: Name = Field(description="display name")
    kind: ProviderKind = Field(description="hyperscaler | neocloud | marketplace | aggregator | notebook")
    url: Url = Field(description="home page")
    hosts: Literal["provider", "community", "mixed", "upstream"] = Field(
        description="who runs the machines: the provider, community hosts, or upstream clouds (aggregators)"
    )
    spot: Spot = Field(description="spot (preemptible) capacity")
    billing: Billing = Field(description="billing granularity and minimum")
    catalog_name: Name | None = Field(None, description="the cloud's name in the offer catalog snapshot")
    skypilot_cloud: LaunchName | None = Field(
        None,
        description="SkyPilot's name for this cloud (`resources.cloud`); None when SkyPilot lacks it",
    )
    dstack_backend: LaunchName | None = Field(
        None,
        description="dstack's backend type for this cloud (`backends`); None when dstack has none",
    )
    commitment: Commitment | None = Field(
        None,
        description="committed capacity below the on-demand rate, where the provider publishes its terms",
    )


class Offer(Entity):
    """A provider's priced instance. Generated by `gpu-advisor kb import-catalog`; never hand-edited."""

    provider: EntityId = Field(description="the cloud renting it (provider id)")
    instance_type: Name = Field(description="the provider's instance type")
    gpu: EntityId = Field(description="the instance's accelerator (gpu id)")
    gpu_count: Annotated[int, Field(ge=1, le=1024)] = Field(description="GPUs in one instance")
    interconnect: EntityId = Field(description="link between this instance's GPUs (interconnect id)")
    vcpus: NonNegativeFloat | None = Field(None, description="virtual CPUs per instance")
    memory_gib: NonNegativeFloat | None = Field(None, description="host RAM")
    on_demand_usd_per_hour: NonNegativeFloat | None = Field(
        None, description="on-demand price of the whole instance, US dollars per hour"
    )
    spot_usd_per_hour: NonNegativeFloat | None = Field(
        None, description="spot price of the whole instance, US dollars per hour"
    )
    region_count: Annotated[int, Field(ge=0)] = Field(description="regions that offer it")
    regions: list[Name] = Field(default_factory=list, description="names of those regions, where known")
    as_of: date = Field(description="date of the price snapshot")

    @model_validator(mode="after")
    def _has_a_price(self) -> Offer:
        if self.on_demand_usd_per_hour is None and self.spot_usd_per_hour is None:
            raise ValueError("an offer needs `on_demand_usd_per_hour` or `spot_usd_per_hour`")
        return self


# --- Models ----------------------------------------------------------------------------------


class TransformerDims(Strict):
    """The core transformer sizes (config.json names), shared by the KB and the request."""

    n_layers: Annotated[int, Field(ge=1, le=1000, description="transformer layers (num_hidden_layers)")]
    hidden_size: Annotated[int, Field(ge=1, le=1_000_000, description="model width (hidden_size)")]
    n_heads: Annotated[int, Field(ge=1, le=10_000, description="attention heads (num_attention_heads)")]
    n_kv_heads: Annotated[
        int,
        Field(
            ge=1,
            le=10_000,
            description="key/value heads (num_key_value_heads); fewer than n_heads with GQA",
        ),
    ]
    head_dim: Annotated[int, Field(ge=1, le=10_000, description="width of one attention head")]
    intermediate_size: Annotated[
        int, Field(ge=1, le=10_000_000, description="MLP inner width (intermediate_size)")
    ]
    vocab_size: Annotated[int, Field(ge=1, le=10_000_000, description="vocabulary size, tokens")]

    @model_validator(mode="after")
    def _grouped_query_attention(self) -> TransformerDims:
        if self.n_heads % self.n_kv_heads:
            raise ValueError("n_heads must be a multiple of n_kv_heads")
        return self


class LinearAttention(Strict):
    """Layers that are Gated DeltaNet (linear attention with a fixed state) instead of attention:
    Qwen3-Next and Qwen3.5 put one in three layers of four (config.json's full_attention_interval and
    linear_* keys)."""

    layers: Annotated[int, Field(ge=1, le=1000)] = Field(description="how many layers are linear attention")
    key_heads: Annotated[int, Field(ge=1, le=10_000)] = Field(description="linear_num_key_heads")
    value_heads: Annotated[int, Field(ge=1, le=10_000)] = Field(description="linear_num_value_heads")
    key_head_dim: Annotated[int, Field(ge=1, le=10_000)] = Field(description="linear_key_head_dim")
    value_head_dim: Annotated[int, Field(ge=1, le=10_000)] = Field(description="linear_value_head_dim")
    conv_kernel: Annotated[int, Field(ge=1, le=100)] = Field(4, description="linear_conv_kernel_dim")
    state_dtype: Literal["bf16", "fp32"] = Field(
        "bf16", description="the recurrent state's dtype as served (config mamba_ssm_dtype)"
    )


class Architecture(TransformerDims):
    """Published transformer hyper-parameters (the model's config), enough to count parameters
    and size activations and the KV cache."""

    mlp: Literal["gated", "dense"] = Field(description="gated: SwiGLU/GeGLU (3 matrices); dense: 2 matrices")
    norm: Literal["rmsnorm", "layernorm"] = Field(description="normalization: RMSNorm or LayerNorm")
    position_embedding: Literal["rope", "learned", "alibi", "relative"] = Field(
        description="position encoding (learned adds a position table)"
    )
    max_position_embeddings: Annotated[int, Field(ge=1)] = Field(
        description="longest sequence the position encoding supports, tokens"
    )
    tie_word_embeddings: bool = Field(description="the output head shares the input embedding matrix")
    attention_bias: bool = Field(False, description="biases on the q, k and v projections")
    attention_output_bias: bool | None = Field(
        None, description="bias on the attention output projection (default: same as attention_bias)"
    )
    mlp_bias: bool = Field(False, description="biases on the MLP projections")
    norms_per_layer: Annotated[int, Field(ge=0, le=8)] = Field(
        2,
        description="norm modules per layer: 2 for pre-LN (Llama), 4 for Gemma-2 (pre/post attn and MLP)",
    )
    final_logit_softcapping: Annotated[float, Field(gt=0)] | None = Field(
        None,
        description="the logits are soft-capped, cap x tanh(logits / cap) (Gemma 2: 30); training keeps the "
        "tanh's output beside the logits",
    )
    n_experts: Annotated[int, Field(ge=1)] | None = Field(None, description="MoE: experts per layer")
    experts_per_token: Annotated[int, Field(ge=1)] | None = Field(
        None, description="MoE: experts each token is routed to"
    )
    sliding_window: Annotated[int, Field(ge=1)] | None = Field(
        None, description="attention window on sliding-window layers, tokens"
    )
    sliding_window_layers: Annotated[int, Field(ge=0)] | None = Field(
        None, description="layers that use the sliding window (Gemma-2: every other); default: all"
    )
    type_vocab_size: Annotated[int, Field(ge=0)] = Field(0, description="BERT token-type embeddings")
    pooler: bool = Field(False, description="BERT pooler dense layer")
    qk_norm: bool = Field(
        False, description="an RMSNorm over head_dim on queries and keys in every layer (Qwen3, Gemma 3)"
    )
    attention_output_gate: bool = Field(
        False,
        description="gated attention (Qwen3-Next, Qwen3.5; config attn_output_gate): the query projection "
        "also yields a sigmoid gate per query channel, twice as wide",
    )
    moe_intermediate_size: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="MoE: width of each expert when it differs from the dense MLP; intermediate_size is then "
        "the width of the dense layers (config moe_intermediate_size; Llama 4: intermediate_size, with "
        "intermediate_size_mlp the dense width)",
    )
    n_shared_experts: Annotated[int, Field(ge=0)] = Field(
        0, description="MoE: experts every token goes through beside the routed ones (DeepSeek-V3: 1)"
    )
    moe_layers: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="MoE: layers with the expert MLP (DeepSeek-V3: 61 - first_k_dense_replace 3 = 58); "
        "default: all",
    )
    kv_lora_rank: Annotated[int, Field(ge=1)] | None = Field(
        None, description="multi-head latent attention: width of the cached key-value latent"
    )
    q_lora_rank: Annotated[int, Field(ge=1)] | None = Field(
        None, description="MLA: width of the query latent; absent when queries are projected directly"
    )
    qk_rope_head_dim: Annotated[int, Field(ge=1)] | None = Field(
        None, description="MLA: rotary part of each query/key head, cached once per token"
    )
    qk_nope_head_dim: Annotated[int, Field(ge=1)] | None = Field(
        None, description="MLA: non-rotary part of each query/key head; head_dim = nope + rope"
    )
    v_head_dim: Annotated[int, Field(ge=1)] | None = Field(None, description="MLA: width of each value head")
    extra_params_count: Annotated[int, Field(ge=0)] = Field(
        0,
        description="parameters outside the language transformer described here (a vision encoder and "
        "projector): held in memory, not run per token",
    )
    linear_attention: LinearAttention | None = Field(
        None, description="hybrid models: the layers that keep a recurrent state instead of a KV cache"
    )

    @model_validator(mode="after")
    def _latent_attention(self) -> Architecture:
        mla = (self.kv_lora_rank, self.qk_rope_head_dim, self.qk_nope_head_dim, self.v_head_dim)
        if any(v is not None for v in mla) and any(v is None for v in mla):
            raise ValueError("kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim and v_head_dim go together")
        if self.q_lora_rank is not None and self.kv_lora_rank is None:
            raise ValueError("q_lora_rank needs kv_lora_rank (multi-head latent attention)")
        if self.qk_nope_head_dim is not None and self.qk_rope_head_dim is not None:
            if self.head_dim != self.qk_nope_head_dim + self.qk_rope_head_dim:
                raise ValueError("with latent attention head_dim is qk_nope_head_dim + qk_rope_head_dim")
            if self.n_kv_heads != self.n_heads:
                raise ValueError("with latent attention n_kv_heads equals n_heads")
        return self

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
        moe_only = (self.moe_intermediate_size, self.moe_layers, self.n_shared_experts or None)
        if self.n_experts is None and any(v is not None for v in moe_only):
            raise ValueError("moe_intermediate_size, moe_layers and n_shared_experts need n_experts")
        if self.moe_layers is not None and self.moe_layers > self.n_layers:
            raise ValueError("moe_layers cannot exceed n_layers")
        if self.linear_attention is not None and self.linear_attention.layers > self.n_layers:
            raise ValueError("linear_attention.layers cannot exceed n_layers")
        return self


ModelAlias = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$", max_length=120),
    Field(description="a model name as people write it: `meta-llama/Llama-3.1-8B-Instruct`, `llama3.1:8b`"),
]


class Model(Entity):
    """A well-known model with its published size and architecture."""

    name: Name = Field(description="display name")
    family: Name = Field(description="model family, e.g. llama-3")
    kind: Literal["decoder", "encoder", "encoder-decoder", "cnn"] = Field(
        description="decoder | encoder | encoder-decoder | cnn"
    )
    embedding: bool = Field(
        False,
        description="served as a text embedder: it reads its input and returns a vector, generating nothing "
        "(a decoder such as Qwen3-Embedding, pooled from its last token); encoders are read so already",
    )
    params_b: PositiveFloat = Field(description="published total parameters, billions")
    active_params_b: PositiveFloat | None = Field(
        None, description="MoE: published parameters used per token"
    )
    params_count: Annotated[int, Field(gt=0)] | None = Field(None, description="exact published count")
    context_length: Annotated[int, Field(ge=1)] | None = Field(None, description="context window, tokens")
    release_year: Annotated[int, Field(ge=2010, le=2100)] = Field(description="year of release")
    license: Name | None = Field(None, description="license name")
    aliases: list[ModelAlias] = Field(
        default_factory=list,
        description="other names people use for this architecture: Hugging Face repo ids (base, instruct), "
        "short names; matched case-insensitively, unique across the KB",
    )
    native_precision: EntityId | None = Field(
        None, description="precision id of the released checkpoint (config torch_dtype), e.g. bf16"
    )
    fp16_overflows: bool = Field(
        False,
        description="its activations exceed fp16's range (65,504): it gives inf or NaN computing in fp16 and "
        "runs in bf16 or fp32 only (cite where this is reported)",
    )
    qat_precision: Literal["int4"] | None = Field(
        None,
        description="the weights precision of a quantization-aware-trained checkpoint its makers released "
        "beside the 16-bit one (Gemma 3's int4 QAT releases; cite the release)",
    )
    architecture: Architecture | None = Field(
        None,
        description="published hyper-parameters; absent: layer sizes are estimated from the parameter count",
    )

    @property
    def sized(self) -> bool:
        """The advisor sizes it: a transformer, whose memory and speed go by the token (a convolutional
        network's go by the image, which no formula here counts)."""
        return self.kind != "cnn"


KIND_MODELS: dict[str, type[Entity]] = {
    "gpus": Gpu,
    "hosts": Host,
    "interconnects": Interconnect,
    "precisions": Precision,
    "stacks": Stack,
    "platforms": Platform,
    "providers": Provider,
    "offers": Offer,
    "models": Model,
}
"""Folder under kb/ → the model its files validate against."""
