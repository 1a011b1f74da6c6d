"""The plan space: which layouts (method, precision, parallelism, checkpointing) are tried on a
count of GPUs, in preference order. A pure function of the rules' suggestions and the request, not
of the model's size, so each space's specs are built once (`plan_specs`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from engine.planning.memory import Layout, Split
from engine.reasoning.policy import Policy

METHOD_ORDER = ("pretrain", "full_finetune", "lora", "qlora")
PRECISION_ORDER = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
TRAINING_PRECISIONS = ("fp32", "bf16", "fp16", "fp8")
INTEGER_PRECISIONS = ("int8", "int4")
SHARDED_NAMES = ("zero-3", "fsdp-full-shard")
PARTIAL_ZERO = {1: "zero-1", 2: "zero-2"}
HYBRID_SHARD = "hybrid-shard"
"""ZeRO-3 / FSDP sharding inside each node, whole copies across nodes (PyTorch FSDP's HYBRID_SHARD,
torchtitan's HSDP, DeepSpeed's MiCS and ZeRO++ hpZ): tried first on several nodes, where the rules
suggest it, as it moves a node's share of DDP's traffic across the network"""
OFFLOADED_METHODS = ("pretrain", "full_finetune", "qlora")
"""the methods planned with CPU offload as a last resort: full training's optimizer states (ZeRO-Offload),
and QLoRA's frozen 4-bit base (FSDP's CPU offload); LoRA falls back to QLoRA before its base leaves the GPU"""
DISTRIBUTED_OPTIMIZER = "distributed-optimizer"
"""tensor parallelism with the optimizer states sharded over the data-parallel copies (Megatron-LM's
distributed optimizer, ZeRO stage 1), suggested for large models' training"""
"""ZeRO stages below full sharding, planned when the request lists them: with the same memory per GPU
as DDP for the weights, they suit a team whose stack already runs them (ZeRO-1 on 64 GPUs)"""


@dataclass(frozen=True)
class Spec:
    layout: Layout
    strategy: str
    parallelism: tuple[str, ...]


@dataclass(frozen=True)
class PlanSpace:
    """What the specs tried depend on: the rules' suggestions and the request, not the model's size."""

    precisions: tuple[tuple[str, tuple[str, ...]], ...]
    """each method in preference order, with its precisions in preference order"""
    strategies: frozenset[str]
    sharded_name: str | None
    checkpointing: tuple[bool, ...]
    batch: int
    """sequences in flight (inference: replicas beyond them would idle)"""


# 256 plan spaces and GPU counts: the bench mix uses 114, a 2,000-request soak of random requests 393;
# each entry is some 30 objects every full garbage collection walks (bench/mixed_soak.py)
@lru_cache(maxsize=256)
def plan_specs(space: PlanSpace, count: int, per_node: int) -> tuple[Spec, ...]:
    """The specs for `count` GPUs, `per_node` to a node, in preference order (a pure function of few
    distinct arguments, so built once per plan space; the specs are immutable)."""
    return tuple(
        Spec(
            Layout(method, precision, tp, split, dp, zero, offload, ckpt, shard),
            strategy,
            _parallelism(strategy, zero, space.sharded_name, hybrid=shard > 0),
        )
        for method, precisions in space.precisions
        for precision in precisions
        for strategy, tp, dp, split, zero, offload, shard in _layouts(space, method, count, per_node)
        for ckpt in (space.checkpointing if method != "inference" else (False,))
    )


LayoutRow = tuple[str, int, int, Split, int, bool, int]
"""(strategy, tp, dp, split, ZeRO stage, offload, ZeRO-3 shard group) of one layout"""


def _layouts(space: PlanSpace, method: str, count: int, per_node: int) -> Iterator[LayoutRow]:
    """The layouts of `count` GPUs, in preference order."""
    ways = [w for w in (2, 4, 8, 16, 32, 64) if w <= count and count % w == 0]
    # Tensor parallelism splits attention heads, so it takes a power of two; pipeline stages
    # can be any number (vLLM and DeepSpeed take e.g. 3), so all `count` GPUs can form one.
    stages = sorted({*ways, count} - {1})
    if method == "inference":
        yield from _serving_layouts(space, count, per_node, ways, stages)
        return
    yield from _training_layouts(space, count, per_node, ways, stages)
    if "offload" in space.strategies and method in OFFLOADED_METHODS:
        yield "offload", 1, count, "tensor", 3, True, 0


def _serving_layouts(
    space: PlanSpace, count: int, per_node: int, ways: list[int], stages: list[int]
) -> Iterator[LayoutRow]:
    """Replicas beyond the sequences in flight would idle (a serving fleet grows by copies)."""
    if count == 1:
        yield "single", 1, 1, "tensor", 0, False, 0
    elif count <= space.batch:
        yield "replicas", 1, count, "tensor", 0, False, 0
    busy = [w for w in ways if count // w <= space.batch]
    if "tensor-parallel" in space.strategies:
        for tp in (w for w in busy if w <= per_node):
            yield "tensor-parallel", tp, count // tp, "tensor", 0, False, 0
    if "pipeline-parallel" in space.strategies:
        for pp in (s for s in stages if count // s <= space.batch):
            yield "pipeline-parallel", pp, count // pp, "pipeline", 0, False, 0


def _training_layouts(
    space: PlanSpace, count: int, per_node: int, ways: list[int], stages: list[int]
) -> Iterator[LayoutRow]:
    """One GPU, else (on several nodes) hybrid sharding, data parallel, the ZeRO stages listed, full
    sharding, tensor and pipeline parallelism, each where the rules suggest it."""
    strategies = space.strategies
    if count == 1:
        yield "single", 1, 1, "tensor", 0, False, 0
        return
    if space.sharded_name and HYBRID_SHARD in strategies and 1 < per_node < count:
        # first on several nodes: each node holds a whole sharded copy, so only a node's share of
        # DDP's gradient traffic crosses the network (rule hybrid-shard-across-nodes)
        yield space.sharded_name, 1, count, "tensor", 3, False, per_node
    if "ddp" in strategies:
        yield "ddp", 1, count, "tensor", 0, False, 0
    for stage, name in PARTIAL_ZERO.items():  # only where the request lists them (their rules)
        if name in strategies:
            yield name, 1, count, "tensor", stage, False, 0
    if space.sharded_name:
        yield space.sharded_name, 1, count, "tensor", 3, False, 0
    if "tensor-parallel" in strategies:
        for tp in (w for w in ways if w <= per_node):
            yield "tensor-parallel", tp, count // tp, "tensor", 0, False, 0
    if "pipeline-parallel" in strategies:
        for pp in stages:
            yield "pipeline-parallel", pp, count // pp, "pipeline", 0, False, 0
    if "tensor-parallel" in strategies and DISTRIBUTED_OPTIMIZER in strategies:
        # last: tried only where neither plain tensor parallelism nor full sharding runs the job
        for tp in (w for w in ways if w <= per_node and count // w > 1):
            yield "tensor-parallel", tp, count // tp, "tensor", 1, False, 0


NATIVE_ATTRIBUTE = {"fp8": "fp8_native", "bf16": "bf16_native"}
"""the option attribute that says a GPU computes in a precision natively"""


def _precisions(
    method: str, base: str, policy: Policy, neutral: str | None = None, qat: str | None = None
) -> tuple[str, ...]:
    """A method's precisions in preference order: the quality-neutral one first where it applies
    (a GPU without it natively is excluded from it by rule fp8-only-where-native and takes the
    next), then the requested or rule-chosen one, then the suggested substitutes, floating-point
    before integer, with the model's quantization-aware-trained release (`qat`, serving only) between
    them: a released 4-bit checkpoint before a post-training int8 or int4 quantization."""
    if method == "qlora":
        return ("nf4",)
    allowed = PRECISION_ORDER if method == "inference" else TRAINING_PRECISIONS
    suggested = [p for p in PRECISION_ORDER if p in {str(v) for v in policy.suggested("precision")}]
    released = [qat] if qat and method == "inference" else []
    floating = [p for p in suggested if p not in INTEGER_PRECISIONS]
    integer = [p for p in suggested if p in INTEGER_PRECISIONS]
    ordered = [*([neutral] if neutral else []), base, *floating, *released, *integer]
    return tuple(p for i, p in enumerate(ordered) if p in allowed and p not in ordered[:i])


def own_precisions(
    requested: str | None, base: str, neutral: str | None, qat: str | None = None
) -> tuple[str | None, ...]:
    """The precisions that count as the request's own: the requested or rule-chosen one (`base`), the
    quality-neutral one, with none stated and bf16 chosen fp16 (where a GPU has no bf16 it runs
    fp16, with loss scaling when training: the same memory and, for the user, the same plan, as rule
    default-precision-bf16 says; a GPU with bf16 plans bf16 first), and the precision of a
    quantization-aware-trained release (rule serve-qat-releases-where-16-bit-does-not-fit)."""
    own = requested or base
    return (own, neutral, "fp16" if requested is None and own == "bf16" else None, qat)


def plan_space_for(
    task: str,
    policy: Policy,
    base: str,
    neutral: str | None,
    checkpointing: bool | None,
    batch: int,
    qat: str | None = None,
) -> PlanSpace:
    """The plan space of a request: its methods (the task, then the substitutes the rules suggest),
    each method's precisions, the parallelism the rules suggest, and checkpointing (the request's
    choice, else off, and on as well when a rule suggests it)."""
    strategies = frozenset(str(v) for v in policy.suggested("parallelism"))
    if checkpointing is not None:
        tried: tuple[bool, ...] = (checkpointing,)
    else:
        tried = (False, True) if policy.facts.get("plan.gradient_checkpointing") is True else (False,)
    return PlanSpace(
        tuple((m, _precisions(m, base, policy, neutral, qat)) for m in _methods(task, policy)),
        strategies,
        next((n for n in SHARDED_NAMES if n in strategies), None),
        tried,
        batch,
    )


def _methods(task: str, policy: Policy) -> list[str]:
    if task == "inference":
        return ["inference"]
    suggested = {str(v) for v in policy.suggested("method")}
    start = METHOD_ORDER.index(task)
    return [task] + [m for m in METHOD_ORDER[start + 1 :] if m in suggested]


def _parallelism(
    strategy: str, zero: int, sharded_name: str | None, *, hybrid: bool = False
) -> tuple[str, ...]:
    if hybrid:
        return (strategy, HYBRID_SHARD)
    if strategy == "offload":
        return (sharded_name or "zero-3", "offload")
    if strategy == "single":
        return ()
    if strategy == "tensor-parallel" and zero == 1:
        return (strategy, PARTIAL_ZERO[1])  # the distributed optimizer beside it
    return (strategy,)
