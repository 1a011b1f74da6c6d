"""`gpu-advisor kb lint`: every check over the knowledge base, each problem with file, line and fix.

Checks: the file-level ones from `engine.knowledge.kb` (yaml, encoding, size, empty, duplicate-key, type,
missing-field, unknown-key, value, range, sources, id-stem, duplicate-id, reference, layout,
file-name, and, for a file the reader refuses, symlink, file-type and size) and the value-level ones
here (date, range, consistency, host, text, generated).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine.knowledge.catalog import CONFIG_FILE, CatalogError, build_offers, stale_offers
from engine.knowledge.documents import Loc
from engine.knowledge.kb import KB, LoadResult, host_takes, read_kb, reference_problems
from engine.knowledge.names import normal_name
from engine.knowledge.paths import display_path
from engine.knowledge.problems import KBInvalid, Problem
from engine.knowledge.snapshot import Tree
from engine.knowledge.text import text_findings
from engine.models.kb import KIND_MODELS, Entity, Gpu, Host, Interconnect, Model, Offer

_NO_BANDWIDTH_KINDS = ("none", "unified")


def lint_kb(root: Path | Tree, data: Path | Tree | None, today: date) -> list[Problem]:
    """All problems in the KB at `root`; `data` (the snapshot folder) enables the generated check.
    Either may be a folder or a `Tree` already read from one."""
    kb_tree, data_tree = _tree(root), _tree(data) if data is not None else None
    return lint_loaded(read_kb(kb_tree), kb_tree, data_tree, today)


def load_checked_kb(root: Path | Tree, data: Path | Tree | None, today: date) -> KB:
    """The KB at `root` if every lint check passes (what the service runs on), else `KBInvalid`."""
    kb_tree, data_tree = _tree(root), _tree(data) if data is not None else None
    result = read_kb(kb_tree)
    problems = lint_loaded(result, kb_tree, data_tree, today)
    if problems or result.kb is None:
        raise KBInvalid(problems)
    return result.kb


def lint_loaded(result: LoadResult, kb_tree: Tree, data: Tree | None, today: date) -> list[Problem]:
    """Every problem of a KB read from `kb_tree`: its reading problems plus the value and generated
    checks."""
    problems = list(result.problems)
    if result.kb is not None:
        problems.extend(value_problems(result.kb, today))
        # Offers are generated from gpus and providers: check them only once those are valid,
        # or one broken GPU file would also be reported as dozens of stale offers.
        inputs_valid = not any(p.path.split("/")[-2:-1] in (["gpus"], ["providers"]) for p in problems)
        if inputs_valid and data is not None and data.is_file(data.root / CONFIG_FILE):
            problems.extend(generated_problems(result.kb, kb_tree, data))
    return sorted(set(problems))


def _tree(source: Path | Tree) -> Tree:
    return source if isinstance(source, Tree) else Tree.read(source)


def entity_problems(kb: KB) -> list[Problem]:
    """The checks that need only the entities, not their files: references between them and values.
    What a KB restored from the cache is put through again. Dates are not: the cache key holds the
    day they were checked against, so a restored KB was stored the same day."""
    return sorted(set(reference_problems(kb)) | set(value_problems(kb, None)))


def value_problems(kb: KB, today: date | None) -> Iterator[Problem]:
    """Values that are well-typed but wrong: dates after `today` (unless None), dense > sparse,
    inconsistent links, control characters in text (engine/knowledge/text.py)."""
    for kind in KIND_MODELS:
        for entity_id, entity in kb.of_kind(kind).items():
            for loc, message, check, fix in _entity_findings(kb, entity, today):
                path, line = kb.line(kind, entity_id, loc)
                yield Problem(path, line, check, message, fix)
    yield from _alias_problems(kb)


def _alias_problems(kb: KB) -> Iterator[Problem]:
    """A model name must lead to one model: aliases are compared with each other and with every model
    id as names are matched (engine/knowledge/names.py: case and separators aside). An alias that only
    spells the model's own id differently is allowed: it says how people write it."""
    owner: dict[str, str] = {normal_name(model_id): model_id for model_id in kb.models}
    for model_id, model in sorted(kb.models.items()):
        for i, alias in enumerate(model.aliases):
            first = owner.setdefault(normal_name(alias), model_id)
            if first != model_id:
                path, line = kb.line("models", model_id, ("aliases", i))
                message = f"alias {alias!r} already names model {first!r}"
                yield Problem(path, line, "alias", message, "remove it or name the model it means")


Finding = tuple[Loc, str, str, str]


def _entity_findings(kb: KB, entity: Entity, today: date | None) -> Iterator[Finding]:
    yield from text_findings(entity)
    if today is not None:
        for loc, value in _dates(entity, ()):
            if value > today:
                yield (
                    loc,
                    f"date {value} is in the future",
                    "date",
                    "use the date the fact was read or published",
                )
    if isinstance(entity, Gpu):
        yield from _gpu_findings(kb, entity)
    elif isinstance(entity, Host):
        yield from _host_findings(kb, entity)
    elif isinstance(entity, Interconnect):
        if entity.kind not in _NO_BANDWIDTH_KINDS and entity.bandwidth_gbs <= 0:
            yield ("bandwidth_gbs",), "bandwidth must be > 0", "range", "give the link's bandwidth in GB/s"
    elif isinstance(entity, Offer):
        if entity.gpu_count > 1 and entity.interconnect == "none":
            yield (
                ("interconnect",),
                f"{entity.gpu_count} GPUs cannot be joined by `none`",
                "consistency",
                "name the link between the GPUs (pcie-4, nvlink-4, ...)",
            )
    elif isinstance(entity, Model):
        yield from _model_findings(entity)


def _gpu_findings(kb: KB, gpu: Gpu) -> Iterator[Finding]:
    for name in type(gpu).model_fields:
        if "_dense_" not in name:
            continue
        sparse_name = name.replace("_dense_", "_sparse_")
        dense, sparse = getattr(gpu, name), getattr(gpu, sparse_name, None)
        if dense is not None and sparse is not None and dense > sparse:
            yield (
                (sparse_name,),
                f"{name} {dense} exceeds {sparse_name} {sparse}",
                "range",
                "dense figures are at most the sparse ones; check which headline is sparse",
            )
    if gpu.sold_as in _HOSTED and not any(host_takes(host, gpu) for host in kb.hosts.values()):
        yield (
            ("sold_as",),
            f"a GPU sold as a {gpu.sold_as} needs a host, and no host in hosts/ takes {gpu.id}",
            "host",
            "add a host that takes its form factor and class, or name it in a host's `gpus`",
        )
    if gpu.usable_memory_gb is not None and gpu.usable_memory_gb > gpu.memory_gb:
        yield (
            ("usable_memory_gb",),
            f"usable memory {gpu.usable_memory_gb} GB exceeds memory_gb {gpu.memory_gb}",
            "range",
            "usable memory is at most the physical memory",
        )
    link = kb.interconnects.get(gpu.interconnect)
    if link is not None:
        if link.max_gpus is not None and gpu.link_domain_gpus > link.max_gpus:
            yield (
                ("link_domain_gpus",),
                f"{gpu.link_domain_gpus} GPUs exceed {link.id}'s {link.max_gpus}",
                "consistency",
                "lower link_domain_gpus or pick the right interconnect",
            )
        if link.kind not in _NO_BANDWIDTH_KINDS and gpu.interconnect_gbs is None:
            yield (
                ("interconnect_gbs",),
                f"{link.id} needs the per-GPU bandwidth",
                "missing-field",
                "add `interconnect_gbs`",
            )
    if gpu.vendor == "nvidia" and gpu.compute_capability is not None:
        capability = _capability(gpu.compute_capability)
        for i, precision_id in enumerate(gpu.native_precisions):
            precision = kb.precisions.get(precision_id)
            if precision is None or precision.min_compute_capability is None:
                continue
            if capability < _capability(precision.min_compute_capability):
                yield (
                    ("native_precisions", i),
                    f"{precision_id} needs compute capability "
                    f"{precision.min_compute_capability}, this GPU has {gpu.compute_capability}",
                    "consistency",
                    "remove it from native_precisions (it is emulated, not native)",
                )


_HOSTED = ("card", "server")
"""GPUs bought on their own need a host; a `machine` is priced whole, a `cloud-only` one is not bought."""


def _host_findings(kb: KB, host: Host) -> Iterator[Finding]:
    for i, gpu_id in enumerate(host.gpus):
        gpu = kb.gpus.get(gpu_id)
        if gpu is not None and not host_takes(host, gpu):
            yield (
                ("gpus", i),
                f"{gpu_id} is a {gpu.gpu_class} {gpu.form_factor} GPU: not of this host's form factors "
                "or classes",
                "consistency",
                "remove it, or correct gpu_form_factors / gpu_classes",
            )


def _model_findings(model: Model) -> Iterator[Finding]:
    if model.active_params_b is not None and model.active_params_b > model.params_b:
        yield (
            ("active_params_b",),
            "active parameters exceed total parameters",
            "range",
            "active_params_b is the per-token subset of params_b",
        )
    if model.architecture is not None and model.architecture.n_experts and model.active_params_b is None:
        yield (
            ("active_params_b",),
            "a mixture-of-experts model needs its active parameters",
            "missing-field",
            "add `active_params_b` (published parameters used per token)",
        )


def generated_problems(kb: KB, kb_tree: Tree, data: Tree) -> Iterator[Problem]:
    """kb/offers/ must equal a fresh import of the snapshot."""
    offers_dir = kb.root / "offers"
    anchor = kb.root.parent
    try:
        result = build_offers(data, kb.gpus, kb.providers)
    except CatalogError as exc:
        yield Problem(
            display_path(data.root / CONFIG_FILE, anchor),
            0,
            "generated",
            str(exc),
            "fix the snapshot or the import configuration",
        )
        return
    for name, what in stale_offers(result, kb_tree, offers_dir):
        yield Problem(
            display_path(offers_dir / name, anchor),
            0,
            "generated",
            f"generated offer {what}",
            "run `gpu-advisor kb import-catalog`; never edit offers by hand",
        )


def _capability(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def _dates(value: Any, loc: Loc) -> Iterator[tuple[Loc, date]]:
    if isinstance(value, BaseModel):
        for name, info in type(value).model_fields.items():
            yield from _dates(getattr(value, name), (*loc, info.alias or name))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _dates(item, (*loc, i))
    elif isinstance(value, date):
        yield loc, value
