"""The GPUs a request names, by their KB ids: a request may name a GPU by a name people use (`RTX
4090`, `4090`, `nvidia-geforce-rtx-4090`: engine/knowledge/names.py), and everything after this step
reads ids only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from engine.knowledge.kb import KB
from engine.models.compare import CompareRequest
from engine.models.request import HardwareCount, RecommendRequest
from engine.planning.workload import UnknownReference, unknown_gpu

Named = TypeVar("Named", bound=HardwareCount)


def with_gpu_ids(request: RecommendRequest, kb: KB) -> RecommendRequest:
    """The request with each GPU it names by a name people use named by its KB id; the request itself
    when it names them all by id. UnknownReference for a name the KB does not know."""
    constraints = request.constraints
    owned = [
        gpu_by_id(item, kb, ("constraints", "existing_hardware", str(i), "gpu"))
        for i, item in enumerate(constraints.existing_hardware)
    ]
    target = constraints.target_hardware
    aimed = None if target is None else gpu_by_id(target, kb, ("constraints", "target_hardware", "gpu"))
    if aimed is target and _same(owned, constraints.existing_hardware):
        return request
    named = constraints.model_copy(update={"existing_hardware": owned, "target_hardware": aimed})
    return request.model_copy(update={"constraints": named})


def comparison_with_gpu_ids(body: CompareRequest, kb: KB) -> CompareRequest:
    """`with_gpu_ids` for a comparison: its choices and its request."""
    choices = [gpu_by_id(choice, kb, ("choices", str(i), "gpu")) for i, choice in enumerate(body.choices)]
    try:
        request = with_gpu_ids(body.request, kb)
    except UnknownReference as exc:  # its field is under `request` in this body
        raise UnknownReference(("request", *exc.loc), str(exc)) from None
    if request is body.request and _same(choices, body.choices):
        return body
    return body.model_copy(update={"choices": choices, "request": request})


def gpu_by_id(item: Named, kb: KB, loc: tuple[str, ...]) -> Named:
    """`item` naming its GPU by KB id (UnknownReference at `loc` for a name the KB does not know)."""
    gpu = kb.gpu_named(item.gpu)
    if gpu is None:
        raise UnknownReference(loc, unknown_gpu(kb, item.gpu))
    return item if gpu.id == item.gpu else item.model_copy(update={"gpu": gpu.id})


def _same(new: Sequence[object], old: Sequence[object]) -> bool:
    """Whether each item is the one it was (no name was replaced by an id)."""
    return all(a is b for a, b in zip(new, old, strict=True))
