"""Load `kb/` into an immutable, validated knowledge base.

Reading never raises on bad input: every file problem (syntax, schema, id, reference) becomes a
`Problem` with the file and line, so `kb lint` can report them all at once. `load_kb` is the
strict entry point the service uses: it returns a KB only when there is no problem at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from engine.knowledge.documents import Document, Loc, ReadError, read_yaml_mapping
from engine.knowledge.names import Aliased, Names
from engine.knowledge.paths import display_path
from engine.knowledge.placeholders import placeholder_problems
from engine.knowledge.problems import KBInvalid, Problem
from engine.knowledge.snapshot import Tree
from engine.models.kb import (
    KIND_MODELS,
    Entity,
    Gpu,
    Host,
    Interconnect,
    Model,
    Offer,
    Platform,
    Precision,
    Provider,
    Stack,
)

E = TypeVar("E", bound=Entity)
Named = TypeVar("Named")


@dataclass(frozen=True)
class Origin:
    """Where an entity was read from, to point problems at a file and line."""

    display: str
    document: Document


@dataclass(frozen=True)
class KB:
    """The validated knowledge base. Mappings are read-only views keyed by entity id."""

    root: Path
    version: str
    gpus: Mapping[str, Gpu]
    hosts: Mapping[str, Host]
    interconnects: Mapping[str, Interconnect]
    precisions: Mapping[str, Precision]
    stacks: Mapping[str, Stack]
    platforms: Mapping[str, Platform]
    providers: Mapping[str, Provider]
    offers: Mapping[str, Offer]
    models: Mapping[str, Model]
    origins: Mapping[tuple[str, str], Origin] = field(repr=False)
    _names: dict[str, Names] = field(default_factory=dict, init=False, repr=False, compare=False)

    def model_named(self, name: str) -> Model | None:
        """The model a name means: its id, or (engine/knowledge/names.py) an alias or a repo name."""
        return _named(self.models, self.names("models"), name)

    def gpu_named(self, name: str) -> Gpu | None:
        """The GPU a name means: its id, or (engine/knowledge/names.py) an alias (`RTX 4090`, `4090`)."""
        return _named(self.gpus, self.names("gpus"), name)

    def names(self, kind: Literal["models", "gpus"]) -> Names:
        """Every model's or GPU's names, built on first use (a KB never changes)."""
        found = self._names.get(kind)
        if found is None:
            entities: Mapping[str, Aliased] = self.models if kind == "models" else self.gpus
            found = self._names[kind] = Names.of(entities)
        return found

    def of_kind(self, kind: str) -> Mapping[str, Entity]:
        """Entities of one KB folder name (`gpus`, `offers`, ...)."""
        entities: Mapping[str, Entity] = getattr(self, kind)
        return entities

    def line(self, kind: str, entity_id: str, loc: Loc = ()) -> tuple[str, int]:
        """(display path, line) of a field of an entity; line 0 for one not read from a file here
        (a KB from the cache keeps no documents)."""
        origin = self.origins.get((kind, entity_id))
        if origin is None:
            return f"{self.root.name}/{kind}/{entity_id}.yaml", 0
        return origin.display, origin.document.line_of(loc)


def _named(entities: Mapping[str, Named], names: Names, name: str) -> Named | None:
    """The entity a name means: by its id first (the common case, no normalising), else by `names`."""
    found = entities.get(name)
    if found is None:
        entity_id = names.find(name)
        found = None if entity_id is None else entities[entity_id]
    return found


@dataclass(frozen=True)
class LoadResult:
    kb: KB | None
    problems: list[Problem]


def load_kb(root: Path | Tree) -> KB:
    """The knowledge base at `root`, or `KBInvalid` listing every problem found."""
    result = read_kb(root)
    if result.problems or result.kb is None:
        raise KBInvalid(result.problems)
    return result.kb


def read_kb(source: Path | Tree) -> LoadResult:
    """Read and validate every file under `source` (a folder, or one already read into memory),
    collecting problems instead of raising."""
    tree = source if isinstance(source, Tree) else Tree.read(source)
    root = tree.root
    anchor = root.parent
    if not tree.is_dir(root):
        return LoadResult(
            None,
            [
                Problem(
                    display_path(root, anchor),
                    0,
                    "layout",
                    "knowledge base folder not found",
                    "pass --kb DIR or set GPU_ADVISOR_KB",
                )
            ],
        )
    problems = list(_layout_problems(tree, anchor))
    entities: dict[str, dict[str, Entity]] = {}
    origins: dict[tuple[str, str], Origin] = {}
    for kind, model in KIND_MODELS.items():
        entities[kind] = _read_kind(tree, root / kind, kind, model, anchor, origins, problems)
    # Each kind's entities were validated by KIND_MODELS[kind], so the views have the field's type.
    views: dict[str, Any] = {
        kind: MappingProxyType(dict(sorted(items.items()))) for kind, items in entities.items()
    }
    kb = KB(root=root, version=content_version([tree]), origins=MappingProxyType(origins), **views)
    # A file that exists but failed validation is reported once, not again by every file naming it.
    unreadable = frozenset(
        (kind, path.stem)
        for kind in KIND_MODELS
        for path in tree.iterdir(root / kind)
        if path.suffix == ".yaml" and path.stem not in entities[kind]
    )
    problems.extend(reference_problems(kb, unreadable))
    return LoadResult(kb, sorted(problems))


def _read_kind(
    tree: Tree,
    folder: Path,
    kind: str,
    model: type[Entity],
    anchor: Path,
    origins: dict[tuple[str, str], Origin],
    problems: list[Problem],
) -> dict[str, Entity]:
    """The valid entities of one KB folder, recording where each came from."""
    loaded = []
    for path in _entity_files(tree, folder, anchor, problems):
        display = display_path(path, anchor)
        read = _read_entity(tree, path, display, model, problems)
        if read is not None:
            loaded.append((path.stem, display, *read))
    entities: dict[str, Entity] = {}
    # Files named after their id register first, so a copy with a stale id is the one reported.
    for _stem, display, entity, document in sorted(loaded, key=lambda item: (item[2].id != item[0], item[0])):
        if entity.id in entities:
            first = origins[(kind, entity.id)].display
            message = f"id {entity.id!r} is already used by {first}"
            problems.append(
                Problem(
                    display, document.line_of(("id",)), "duplicate-id", message, "give each entity its own id"
                )
            )
            continue
        entities[entity.id] = entity
        origins[(kind, entity.id)] = Origin(display, document)
    return entities


def content_version(trees: list[Tree]) -> str:
    """A short content hash of every YAML file in `trees` (the `kb_version` of responses)."""
    digest = hashlib.sha256()
    for tree in trees:
        for name, content in tree.yaml_files():
            digest.update(name.encode("utf-8", "surrogateescape"))
            digest.update(b"\0")
            digest.update(content if isinstance(content, bytes) else repr(content).encode())
    return digest.hexdigest()[:12]


def _layout_problems(tree: Tree, anchor: Path) -> Iterator[Problem]:
    root = tree.root
    for kind in KIND_MODELS:
        if not tree.is_dir(root / kind):
            yield Problem(
                display_path(root / kind, anchor),
                0,
                "layout",
                f"folder `{kind}` is missing",
                f"create {kind}/ (it may be empty)",
            )
    for child in tree.iterdir(root):
        if tree.is_dir(child) and child.name not in KIND_MODELS and not child.name.startswith("."):
            yield Problem(
                display_path(child, anchor),
                0,
                "layout",
                f"unknown folder `{child.name}`",
                f"KB folders are: {', '.join(KIND_MODELS)}",
            )


def _entity_files(tree: Tree, folder: Path, anchor: Path, problems: list[Problem]) -> Iterator[Path]:
    for path in tree.iterdir(folder):
        if path.name.startswith(".") or path.name == "README.md":
            continue
        if tree.is_dir(path):
            problems.append(
                Problem(
                    display_path(path, anchor),
                    0,
                    "layout",
                    "sub-folders are not read",
                    f"move its files into {folder.name}/",
                )
            )
        elif path.suffix != ".yaml":
            problems.append(
                Problem(
                    display_path(path, anchor),
                    0,
                    "file-name",
                    f"only .yaml files are read, not {path.suffix or 'extension-less'} files",
                    f"rename it to {path.stem}.yaml or remove it",
                )
            )
        else:
            yield path


def _read_entity(
    tree: Tree, path: Path, display: str, model: type[E], problems: list[Problem]
) -> tuple[E, Document] | None:
    document = read_yaml_mapping(path, display, tree)
    if isinstance(document, ReadError):
        problems.append(Problem(display, document.line, document.check, document.message, document.fix))
        return None
    problems.extend(placeholder_problems(document))
    try:
        entity = model.model_validate(document.data)
    except ValidationError as exc:
        problems.extend(schema_problems(exc, document, model))
        return None
    if entity.id != path.stem:
        problems.append(
            Problem(
                display,
                document.line_of(("id",)),
                "id-stem",
                f"id {entity.id!r} does not match the file name {path.name!r}",
                f"set `id: {path.stem}` or rename the file to {entity.id}.yaml",
            )
        )
    return entity, document


_CHECK_BY_ERROR = {
    "missing": "missing-field",
    "extra_forbidden": "unknown-key",
    "greater_than": "range",
    "greater_than_equal": "range",
    "less_than": "range",
    "less_than_equal": "range",
    "finite_number": "range",
}


def schema_problems(exc: ValidationError, document: Document, model: type[BaseModel]) -> Iterator[Problem]:
    """Turn pydantic errors into problems with a check name, the line, and how to fix it."""
    for error in exc.errors(include_url=False):
        loc: Loc = tuple(error["loc"])
        dotted = ".".join(str(part) for part in loc) or "(file)"
        kind = error["type"]
        check = _CHECK_BY_ERROR.get(kind, "type" if kind.endswith(("_type", "_parsing")) else "value")
        if loc and loc[0] == "sources" and check in ("missing-field", "value"):
            check = "sources"
        message = f"`{dotted}`: {error['msg']}"
        if loc and check not in ("missing-field", "unknown-key"):
            message += f" (got {_short(error.get('input'))})"
        yield Problem(document.display, document.line_of(loc), check, message, _fix(check, loc, model))


def _fix(check: str, loc: Loc, model: type[BaseModel]) -> str:
    field_name = str(loc[-1]) if loc else "the field"
    if check == "missing-field":
        return f"add `{field_name}`"
    if check == "unknown-key":
        if len(loc) == 1:
            allowed = sorted(info.alias or name for name, info in model.model_fields.items())
            return f"remove it or fix its spelling; allowed keys: {', '.join(allowed)}"
        return "remove it or fix its spelling (see docs/schema/)"
    if check == "sources":
        return "add `sources:` with at least one {url or document, accessed}"
    return "correct the value (see docs/schema/ for the allowed values)"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _references(entity: Entity) -> Iterator[tuple[Loc, str, str]]:
    """(field location, target KB folder, referenced id) for each reference an entity makes."""
    if isinstance(entity, Gpu):
        yield ("interconnect",), "interconnects", entity.interconnect
        if entity.host_interface is not None:
            yield ("host_interface",), "interconnects", entity.host_interface
        for i, stack in enumerate(entity.platforms):
            yield ("platforms", i), "stacks", stack
        for i, precision in enumerate(entity.native_precisions):
            yield ("native_precisions", i), "precisions", precision
    elif isinstance(entity, Host):
        for i, gpu_id in enumerate(entity.gpus):
            yield ("gpus", i), "gpus", gpu_id
    elif isinstance(entity, Platform):
        for i, support in enumerate(entity.stacks):
            yield ("stacks", i, "stack"), "stacks", support.stack
    elif isinstance(entity, Model):
        if entity.native_precision is not None:
            yield ("native_precision",), "precisions", entity.native_precision
    elif isinstance(entity, Offer):
        yield ("provider",), "providers", entity.provider
        yield ("gpu",), "gpus", entity.gpu
        yield ("interconnect",), "interconnects", entity.interconnect


def reference_problems(kb: KB, unreadable: frozenset[tuple[str, str]] = frozenset()) -> Iterator[Problem]:
    """Every reference between KB files must name an entity that exists. References to an id whose
    file exists but is invalid (`unreadable`: (kind, file stem)) are left to that file's problem."""
    for kind in KIND_MODELS:
        for entity_id, entity in kb.of_kind(kind).items():
            for loc, target, ref in _references(entity):
                if ref not in kb.of_kind(target) and (target, ref) not in unreadable:
                    path, line = kb.line(kind, entity_id, loc)
                    yield Problem(
                        path,
                        line,
                        "reference",
                        f"`{'.'.join(map(str, loc))}` names unknown {target[:-1]} {ref!r}",
                        f"use an id from kb/{target}/ or add {ref}.yaml",
                    )


def host_takes(host: Host, gpu: Gpu) -> bool:
    """Whether `gpu` goes into `host`: its form factor, its class, and, for a host that names the
    GPUs its baseboard takes, its id."""
    return (
        gpu.form_factor in host.gpu_form_factors
        and (not host.gpu_classes or gpu.gpu_class in host.gpu_classes)
        and (not host.gpus or gpu.id in host.gpus)
    )
