"""A request's workload, resolved against the KB: parameter counts, the layer shape behind activation and
KV-cache math, and the defaults the request leaves open.

Where the request gives an architecture, it is used, completed where it is partial
(engine/planning/architecture.py); a KB model's published architecture comes next; otherwise the shape
is estimated from the parameter count (Kaplan et al. 2020, GPT-3 aspect ratio) with multi-head
attention, which over- rather than under-states the KV cache. A serving block's absent fields take their
stated defaults (engine/models/request.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import ceil
from typing import Any, Literal

from engine.knowledge.kb import KB
from engine.models.kb import Architecture as KbArchitecture
from engine.models.kb import Model
from engine.models.request import (
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    RecommendRequest,
    Serving,
    ServingEngine,
    Task,
    TrainingStack,
    Workload,
)
from engine.planning.architecture import Contradiction, Filled, complete
from engine.planning.context_window import Window, fitted, window_of
from engine.planning.hf_config import FromHfConfig, SizedConfig, sized_config
from engine.sizing import TransformerShape, estimate_dims_from_params, shape_from_architecture
from engine.sizing.precision import KvCacheDtype
from engine.sizing.shape import DEFAULT_VOCAB_SIZE
from engine.sizing.training_memory import Optimizer
from engine.sizing.units import HOURS_PER_MONTH

ArchitectureSource = Literal["kb-model", "request", "hf-config", "estimated"]
TRAINING_TASKS: tuple[Task, ...] = ("pretrain", "full_finetune", "lora", "qlora")
ADAPTER_METHODS = frozenset({"lora", "qlora"})
"""methods that train adapters on a frozen base"""
ESTIMATED_VOCAB = 32_000
"""Vocabulary assumed for an estimated shape (Llama 2's 32,000 tokens)."""
PRETRAIN_TOKENS_PER_PARAM = 20.0
"""Tokens assumed for a pretraining run given no token count: the compute-optimal 20 tokens per
parameter (Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", Table 3)."""
FINETUNE_TOKENS = 100e6
"""Tokens assumed for a fine-tuning run given no token count: 100M, e.g. 3 epochs over 30,000
examples of about 1,100 tokens (instruction sets such as Alpaca's 52,000 examples or OASST1's 10,000
conversations are of this order)."""
DEFAULT_DEADLINE_HOURS = {
    "pretrain": 30 * 24.0,
    "full_finetune": 7 * 24.0,
    "lora": 7 * 24.0,
    "qlora": 7 * 24.0,
}
"""The wall-clock a training run may take when the request gives no `job_hours`: a month for
pretraining, a week for fine-tuning (capped by the horizon). Longer runs are planned only when asked."""
TokensSource = Literal["request", "default", "none"]
ModelKind = Literal["decoder", "encoder"]


class InvalidRequest(ValueError):
    """The request is well-formed but cannot be read against the KB; `loc` is the request field."""

    def __init__(self, loc: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc


class UnknownReference(InvalidRequest):
    """The request names an id the KB does not have."""


ENCODER_LATENCY_S = 1.0
"""How long an encoder may take for one batch when the request states no latency: the 1-second limit
below which a user's flow of thought stays uninterrupted (J. Nielsen, Usability Engineering, 1993,
ch. 5, "Response Times: The 3 Important Limits")."""
DEFAULT_TOKENS_PER_S_PER_USER = 10.0
"""The decode speed a served sequence needs when the request states none: about twice reading speed
(people read 4-5 words, 5-7 tokens, a second), the floor below which a chat feels stalled. Offline
batch jobs that tolerate less say so with `serving.min_tokens_per_s_per_user`."""
MAX_TOKENS_PER_S_PER_USER = 1e6
"""the largest per-user speed a request may state (`Serving.min_tokens_per_s_per_user`)"""
MAX_IN_FLIGHT = 256
"""The most sequences one serving copy is planned to decode together (vLLM's default max_num_seqs)."""


@dataclass(frozen=True)
class ServingNeeds:
    """A request's serving block with its defaults filled in (`defaulted` names those used)."""

    requests_per_min: float | None
    """None: a single stream, no fleet to size"""
    avg_input_tokens: int
    avg_output_tokens: int
    latency_p95_s: float | None
    min_tokens_per_s_per_user: float | None
    defaulted: tuple[str, ...]
    corpus_documents: int | None = None
    sequences_per_request: int = 1
    """encoders: the inputs of one request, each of `avg_input_tokens`, read together as one batch"""

    @classmethod
    def of(cls, serving: Serving) -> ServingNeeds:
        defaulted = tuple(
            name for name in ("avg_input_tokens", "avg_output_tokens") if getattr(serving, name) is None
        )
        return cls(
            requests_per_min=serving.requests_per_min,
            avg_input_tokens=(
                DEFAULT_INPUT_TOKENS if serving.avg_input_tokens is None else serving.avg_input_tokens
            ),
            avg_output_tokens=(
                DEFAULT_OUTPUT_TOKENS if serving.avg_output_tokens is None else serving.avg_output_tokens
            ),
            latency_p95_s=serving.latency_p95_s,
            min_tokens_per_s_per_user=serving.min_tokens_per_s_per_user,
            defaulted=defaulted,
            corpus_documents=serving.corpus_documents,
            sequences_per_request=serving.sequences_per_request or 1,
        )

    @property
    def batch_corpus(self) -> bool:
        """a corpus to embed once and no live traffic: a batch job, not a service"""
        return self.corpus_documents is not None and self.requests_per_min is None

    @property
    def tokens_stated(self) -> bool:
        """the request gives the prompt or the output length"""
        return len(self.defaulted) < 2

    def per_user_tps(self) -> float:
        """The decode speed each sequence needs: the stated floor, or the output tokens over the p95
        latency target, whichever is higher (guide G2, Interview Q&A Q4: 200 tokens in 5 s is 40
        tokens/s; prefill and queueing also count against the target, so this is a lower bound); with
        neither, the default floor."""
        stated = [self.min_tokens_per_s_per_user or 0.0]
        if self.latency_p95_s is not None:
            stated.append(self.avg_output_tokens / self.latency_p95_s)
        # at most the request's own ceiling for a stated floor: a near-zero latency target would
        # otherwise ask for an infinite speed (and JSON has no infinity)
        return min(max(stated), MAX_TOKENS_PER_S_PER_USER) or DEFAULT_TOKENS_PER_S_PER_USER

    def in_flight(self) -> int | None:
        """Sequences one copy decodes at once at peak: those in flight at the floor
        (`in_flight_at_floor`), at most MAX_IN_FLIGHT. Serving engines batch them continuously (Kwon
        et al. 2023, vLLM), so a fleet is sized at this batch, not at one sequence per copy. None
        without a request rate."""
        at_floor = self.in_flight_at_floor()
        return None if at_floor is None else min(MAX_IN_FLIGHT, at_floor)

    def in_flight_at_floor(self) -> int | None:
        """Sequences in flight across the fleet when each decodes at the per-user floor, by Little's
        law (L = arrival rate x time in system): requests per second x output tokens / the per-user
        speed. None without a request rate."""
        if self.requests_per_min is None:
            return None
        seconds = self.avg_output_tokens / self.per_user_tps()
        return max(1, ceil(self.requests_per_min / 60 * seconds))


@dataclass(frozen=True)
class Job:
    """The workload as the sizing math needs it."""

    task: Task
    params: float
    active_params: float
    shape: TransformerShape
    architecture_source: ArchitectureSource
    filled: tuple[Filled, ...]
    """the sizes a partial architecture in the request left out, as filled in"""
    model: str | None
    requested_precision: str | None
    kv_dtype: KvCacheDtype | None
    optimizer: Optimizer
    batch: int
    batch_from_serving: bool
    """`batch` is the serving fleet's sequences in flight (the request left batch_size unstated)"""
    seq_len: int
    lora_rank: int
    checkpointing: bool | None
    training_tokens: float | None
    """tokens to train on: the request's, else a default per task (None for inference, and when the
    request gives `job_hours` but no token count: the run is then costed for `job_hours`)"""
    tokens_source: TokensSource
    deadline_hours: float | None
    """the wall-clock a run may take: a training run's `job_hours` when a token count is known, else a
    default; a corpus run's `job_hours` (`corpus_run`)"""
    job_hours: float | None
    serving: ServingNeeds | None
    utilization: float | None
    """expected busy share of the horizon (0-1), when the request gives one (or `always_on`)"""
    always_on: bool
    """a service with stated traffic or an availability target, whose request gives no utilization:
    it runs, and a rental is billed, every hour (utilization 1)"""
    horizon_hours: float
    config_used: tuple[str, ...] = ()
    """the keys of the request's `hf_config` the sizing read"""
    config_notes: tuple[str, ...] = ()
    """what that config left unsaid and was taken from its model_type"""
    config_cautions: tuple[str, ...] = ()
    """what that config describes and the sizing does not (layers other than attention it cannot size)"""
    native_precision: str | None = None
    """the precision the model's checkpoint is released in (its KB entry's, or its config's)"""
    qat_precision: str | None = None
    """the precision of a quantization-aware-trained checkpoint released beside it (its KB entry's)"""
    fp16_overflows: bool = False
    """its activations exceed fp16's range, so it computes in bf16 or fp32 only (its KB entry's, or its
    config's model type's)"""
    fused_loss: bool = False
    """training: a fused linear cross-entropy that never holds the whole batch's logits"""
    engine: ServingEngine = "vllm"
    """inference: the serving software"""
    kind: ModelKind = "decoder"
    """decoder (causal attention), encoder (bidirectional: embeds or classifies), as the KB model says"""
    embedding: bool = False
    """a decoder served as a text embedder (Qwen3-Embedding): it reads its input and generates nothing"""
    training_stack: TrainingStack = "huggingface"
    """training: the software stack, which sets the share of peak FLOPS reached"""
    batch_stated: bool = False
    """the request stated `batch_size` (a training plan that steps more sequences than it says so)"""
    context_window: int | None = None
    """the positions the model was trained for (engine/planning/context_window.py), when known"""
    chunks_per_input: int = 1
    """an encoder's input longer than its window is read as this many chunks, each a sequence"""
    seq_len_shortened: bool = False
    """the request left `seq_len` at its default, longer than the window, and the window replaced it"""

    @property
    def training(self) -> bool:
        return self.task in TRAINING_TASKS

    @property
    def is_moe(self) -> bool:
        return self.active_params < self.params

    @property
    def encoder(self) -> bool:
        """an encoder: its attention is bidirectional (every token attends to the whole input)"""
        return self.kind == "encoder"

    @property
    def reads_only(self) -> bool:
        """an encoder or an embedding model: it reads its input (prefill only) and generates nothing, so
        it keeps no KV cache and has no decode speed"""
        return self.encoder or self.embedding

    @property
    def corpus_run(self) -> bool:
        """An encoder or embedding model given a corpus and no live traffic: a run of the hours its plan
        takes to embed the corpus, billed (rented) for those hours as a training run is, and held to
        `job_hours` when given; not a service over the horizon at an assumed use."""
        return self.reads_only and self.serving is not None and self.serving.batch_corpus

    @property
    def context_tokens(self) -> int:
        """Tokens each served sequence holds in the KV cache at its longest: the prompt plus the output
        when the serving block states either, else `seq_len`; an encoder's input, or each chunk of one
        longer than its window (`chunks_per_input`)."""
        asked = self.asked_context_tokens
        return ceil(asked / self.chunks_per_input) if self.reads_only else asked

    @property
    def asked_context_tokens(self) -> int:
        """The tokens a sequence holds as the request asks, an encoder's input read whole."""
        serving = self.serving
        if serving is None or not serving.tokens_stated:
            return self.seq_len
        if self.reads_only:
            return max(1, serving.avg_input_tokens)
        return serving.avg_input_tokens + serving.avg_output_tokens


def unknown_model(kb: KB, name: str) -> str:
    """The 422 message for a model name the KB does not know, with the closest names it does."""
    hint = kb.names("models").suggestion(name)
    return f"unknown model {name!r}: {hint}GET /models lists the known ids and their aliases"


def unknown_gpu(kb: KB, name: str) -> str:
    """The 422 message for a GPU name the KB does not know, with the closest names it does."""
    hint = kb.names("gpus").suggestion(name)
    return f"unknown GPU {name!r}: {hint}GET /gpus lists the known ids and their aliases"


def resolve(request: RecommendRequest, kb: KB) -> Job:
    """The request's workload with the KB's model filled in (UnknownReference for an unknown id):
    the ids checked, the model and hf_config read, the parameter counts and the architecture settled,
    then the serving, batch, tokens and utilisation derived into one Job."""
    workload = request.workload
    check_ids(request, kb)
    model = named_model(workload, kb)
    sized = read_hf_config(workload)
    params_b, active_b = parameter_counts(workload, model, sized)
    architecture = architecture_of(workload, model, sized, params_b, active_b)
    return job_of(request, model, sized, params_b, active_b, architecture)


def check_ids(request: RecommendRequest, kb: KB) -> None:
    """Every GPU and provider id the request names is the KB's (UnknownReference naming the field)."""
    for loc, gpu_id in _named_gpus(request):
        if gpu_id not in kb.gpus:
            raise UnknownReference(loc, unknown_gpu(kb, gpu_id))
    for index, provider in enumerate(request.constraints.providers or []):
        if provider not in kb.providers:
            raise UnknownReference(
                ("constraints", "providers", str(index)),
                f"unknown provider id {provider!r}: GET /providers lists the known ids",
            )


def named_model(workload: Workload, kb: KB) -> Model | None:
    """The KB model the request names, by any name people use for it (None when it names none)."""
    if workload.model is None:
        return None
    model = kb.model_named(workload.model)
    if model is None:
        raise UnknownReference(("workload", "model"), unknown_model(kb, workload.model))
    if not model.sized:
        # Its memory is activations per image and its speed images a second, from its convolutions'
        # FLOPs; sized as a transformer of its parameter count, ResNet-50 was "trained" on 100M tokens
        # in 0.3 h on a V100, where ImageNet's 90 epochs take days.
        raise InvalidRequest(
            ("workload", "model"),
            f"{model.id} is a convolutional network: the advisor sizes transformers (text generators, "
            "encoders and embedding models), whose memory and speed are counted per token, and has no "
            "sizing for image batches",
        )
    return model


def read_hf_config(workload: Workload) -> SizedConfig | None:
    """The request's Hugging Face config read into a shape and counts (InvalidRequest when it cannot be)."""
    if workload.hf_config is None:
        return None
    try:
        return sized_config(workload.hf_config)
    except ValueError as exc:
        raise InvalidRequest(("workload", "hf_config"), str(exc)) from None


def parameter_counts(
    workload: Workload, model: Model | None, sized: SizedConfig | None
) -> tuple[float, float]:
    """(total, active) parameters in billions: the request's, else the KB model's, else the config's
    (an MoE config's active share applied to the request's total when it gives one)."""
    params_b = workload.params_b or (model.params_b if model else None)
    if sized is not None and params_b is None:
        params_b = sized.params / 1e9
    assert params_b is not None  # the request model requires `model`, `params_b` or `hf_config`
    active_b = workload.active_params_b or (model.active_params_b if model else None)
    if sized is not None and active_b is None and sized.active_params < sized.params:
        active_b = min(params_b, params_b * sized.active_params / sized.params)
    active_b = active_b or params_b
    if active_b > params_b:  # a KB model's size against the request's active_params_b
        raise InvalidRequest(
            ("workload", "active_params_b"),
            f"active_params_b ({active_b:g}) cannot exceed the model's {params_b:g} B parameters",
        )
    return params_b, active_b


@dataclass(frozen=True)
class Architecture:
    """The layer shape the sizing uses and where it came from."""

    shape: TransformerShape
    source: str
    """request | hf-config | kb-model | estimated"""
    filled: tuple[Filled, ...] = ()
    """the dimensions completed from the parameter count when the request gave some"""


def architecture_of(
    workload: Workload, model: Model | None, sized: SizedConfig | None, params_b: float, active_b: float
) -> Architecture:
    """The shape from the request's architecture (completed from the counts), else its hf_config,
    else the KB model's, else estimated from the parameter count."""
    if workload.architecture is not None:
        try:
            completed = complete(workload.architecture, params_b * 1e9, active_b * 1e9)
        except Contradiction as exc:
            raise InvalidRequest(("workload", "architecture"), str(exc)) from None
        return Architecture(completed.shape, "request", completed.filled)
    if sized is not None:
        return Architecture(sized.shape, "hf-config")
    if model is not None and model.architecture is not None:
        return Architecture(_kb_shape(model.architecture, model.kind), "kb-model")
    return Architecture(estimated_shape(params_b * 1e9), "estimated")


@lru_cache(maxsize=256)
def _kb_shape(architecture: KbArchitecture, kind: str) -> TransformerShape:
    """A KB model's shape, one object per architecture (a KB's frozen model, hashed by value): the
    sizing caches keyed by a shape then find it by identity."""
    return shape_from_architecture(architecture.model_dump(), kind=kind)


def utilization_pct(request: RecommendRequest, serving: ServingNeeds | None) -> tuple[float | None, bool]:
    """The busy share in percent (`utilization_pct`, or `hours_per_week` / 168) and whether the job is
    always on: a served model with traffic or an availability target and no stated use runs at 100%."""
    workload, constraints = request.workload, request.constraints
    utilization = constraints.utilization_pct
    if utilization is None and constraints.hours_per_week is not None:
        utilization = constraints.hours_per_week / 168 * 100
    always_on = (
        utilization is None
        and workload.task == "inference"
        and (
            (serving is not None and serving.requests_per_min is not None)
            or constraints.availability_target_pct is not None
        )
    )
    return (100.0 if always_on else utilization), always_on


def _from_config(read: FromHfConfig | None, model: Model | None) -> dict[str, Any]:
    """The Job's fields that a pasted config, else the KB model, gives: the keys read, the notes and
    cautions on them, the checkpoint's precision and whether fp16 overflows."""
    return {
        "config_used": read.used if read else (),
        "config_notes": read.notes if read else (),
        "config_cautions": read.cautions if read else (),
        "native_precision": (read.native_precision if read else None)
        or (model.native_precision if model else None),
        "qat_precision": model.qat_precision if model else None,
        "fp16_overflows": (read is not None and read.fp16_overflows)
        or (model is not None and model.fp16_overflows),
    }


def job_of(
    request: RecommendRequest,
    model: Model | None,
    sized: SizedConfig | None,
    params_b: float,
    active_b: float,
    architecture: Architecture,
) -> Job:
    """The Job: the settled counts and shape with the serving needs, batch, training tokens, deadline
    and utilisation derived from the request."""
    workload, constraints = request.workload, request.constraints
    horizon_hours = constraints.horizon_months * HOURS_PER_MONTH
    serving = None if workload.serving is None else ServingNeeds.of(workload.serving)
    encoder = model is not None and model.kind == "encoder"
    embedding = model is not None and model.embedding
    from_config = sized.read if sized else None
    window = _window(workload, serving, window_of(model, from_config), reads_only=encoder or embedding)
    batch, from_serving = _batch(workload, serving, reads_only=encoder or embedding, chunks=window.chunks)
    tokens, tokens_source = training_tokens(
        workload.task, params_b * 1e9, workload.training_tokens_b, workload.job_hours
    )
    utilization, always_on = utilization_pct(request, serving)
    corpus_run = (encoder or embedding) and serving is not None and serving.batch_corpus
    deadline = _deadline(workload.task, tokens, workload.job_hours, horizon_hours, corpus_run=corpus_run)
    return Job(
        task=workload.task,
        params=params_b * 1e9,
        active_params=active_b * 1e9,
        shape=architecture.shape,
        architecture_source=architecture.source,  # type: ignore[arg-type]
        filled=architecture.filled,
        model=model.id if model is not None else None,
        requested_precision=workload.precision,
        kv_dtype=workload.kv_cache_precision,
        optimizer=workload.optimizer,
        batch=batch,
        batch_from_serving=from_serving,
        batch_stated="batch_size" in workload.model_fields_set,
        lora_rank=workload.lora_rank,
        checkpointing=workload.gradient_checkpointing,
        training_tokens=tokens,
        tokens_source=tokens_source,
        deadline_hours=deadline,
        job_hours=workload.job_hours,
        serving=serving,
        utilization=None if utilization is None else utilization / 100,
        always_on=always_on,
        horizon_hours=horizon_hours,
        **_from_config(from_config, model),
        **window.job_fields(),
        fused_loss=workload.fused_loss,
        training_stack=workload.training_stack,
        engine=(workload.serving.engine if workload.serving else None) or "vllm",
        kind="encoder" if encoder else "decoder",
        embedding=embedding,
    )


def _window(
    workload: Workload, serving: ServingNeeds | None, tokens: int | None, *, reads_only: bool
) -> Window:
    """The request's sequences held to the model's window of `tokens` positions: an encoder's input is
    the serving block's when it states one, and read in chunks only when served."""
    stated = serving.avg_input_tokens if serving is not None and serving.tokens_stated else None
    return fitted(workload, stated, tokens, reads_only=reads_only and workload.task == "inference")


def _batch(
    workload: Workload, serving: ServingNeeds | None, *, reads_only: bool, chunks: int = 1
) -> tuple[int, bool]:
    """The request's batch_size; for a serving fleet whose request leaves it unstated, the sequences in
    flight at peak (`ServingNeeds.in_flight`). The second value says which. An encoder's traffic is
    not decoded together: its demand sizes the copies, and each copy's forward reads the request's
    batch, else one request's inputs (`sequences_per_request`, each in `chunks` when longer than the
    model's window)."""
    stated = "batch_size" in workload.model_fields_set
    if reads_only:
        inputs = (1 if serving is None else serving.sequences_per_request) * chunks
        return (workload.batch_size if stated else max(workload.batch_size, inputs)), False
    in_flight = None if serving is None else serving.in_flight()
    if stated or in_flight is None:
        return workload.batch_size, False
    return in_flight, True


def training_tokens(
    task: Task, params: float, tokens_b: float | None, job_hours: float | None
) -> tuple[float | None, TokensSource]:
    """The tokens a training run is sized for, and where the figure comes from."""
    if task not in TRAINING_TASKS:
        return None, "none"
    if tokens_b is not None:
        return tokens_b * 1e9, "request"
    if job_hours is not None:  # the user sized the run in hours: each option is costed for them
        return None, "none"
    if task == "pretrain":
        return PRETRAIN_TOKENS_PER_PARAM * params, "default"
    return FINETUNE_TOKENS, "default"


def _deadline(
    task: Task, tokens: float | None, job_hours: float | None, horizon_hours: float, *, corpus_run: bool
) -> float | None:
    """The wall-clock a run may take (`Job.deadline_hours`): a corpus run's only when stated."""
    if corpus_run:
        return job_hours
    if tokens is None:
        return None
    if job_hours is not None:
        return job_hours
    return min(DEFAULT_DEADLINE_HOURS[task], horizon_hours)


def _named_gpus(request: RecommendRequest) -> list[tuple[tuple[str, ...], str]]:
    constraints = request.constraints
    named: list[tuple[tuple[str, ...], str]] = [
        (("constraints", "existing_hardware", str(i), "gpu"), item.gpu)
        for i, item in enumerate(constraints.existing_hardware)
    ]
    if constraints.target_hardware is not None:
        named.append((("constraints", "target_hardware", "gpu"), constraints.target_hardware.gpu))
    return named


def estimated_shape(n_params: float) -> TransformerShape:
    """A dense shape for a model known only by its size: :func:`estimate_dims_from_params`, rounded to
    whole 128-wide heads, a 4h dense MLP (so 12 L h^2 matches the count) and multi-head attention."""
    _, layers, heads = estimate_dims_from_params(n_params)
    n_heads = max(1, round(heads))
    width = n_heads * 128
    return TransformerShape(
        n_layers=max(1, round(layers)),
        hidden_size=width,
        n_heads=n_heads,
        n_kv_heads=n_heads,
        head_dim=128,
        intermediate_size=4 * width,
        vocab_size=DEFAULT_VOCAB_SIZE,
        mlp="dense",
        norm="layernorm",
    )
