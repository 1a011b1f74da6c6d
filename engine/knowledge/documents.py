"""Reading one YAML file defensively: any input (binary junk, an empty file, a 10 MB file,
anchors/aliases, duplicate keys, deep nesting) gives a Problem, never an exception.

Only `yaml.SafeLoader` is used: nothing in kb/ or rules/ is ever executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.knowledge.snapshot import Tree, Unreadable, read_file


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """LibYAML's safe loader when PyYAML was built with it (10x faster), else the pure-Python one, with
    YAML 1.2's (and JSON's) exponent floats. PyYAML resolves YAML 1.1, whose floats need a dot and a
    signed exponent: `1e-06`, as every Hugging Face config.json writes `rms_norm_eps`, stayed a string,
    and a JSON request file with a pasted config was refused ("Input should be a valid number")."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)

MAX_DEPTH = 32
"""KB files nest three or four levels. Deeper input is refused before composing, because LibYAML's
composer recurses on the C stack and a file nested 100,000 deep would crash the process."""

_OPENERS = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSERS = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)

MAX_FILE_BYTES = 1_000_000
"""KB and rule files are a few KB; anything near a megabyte is a mistake (or an attack)."""

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """A parsed YAML mapping and its node tree, kept to turn a field location into a line."""

    path: Path
    display: str
    data: dict[str, Any]
    node: yaml.MappingNode

    def line_of(self, loc: Loc) -> int:
        """1-based line of the deepest node on `loc` that exists (a key's line for mapping keys)."""
        node: yaml.Node = self.node
        line = node.start_mark.line + 1
        for part in loc:
            child = _child(node, part)
            if child is None:
                break
            key_line, node = child
            line = key_line
        return line


def _child(node: yaml.Node, part: str | int) -> tuple[int, yaml.Node] | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return key.start_mark.line + 1, value
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        item = node.value[part]
        return item.start_mark.line + 1, item
    return None


@dataclass(frozen=True)
class ReadError:
    line: int
    check: str
    message: str
    fix: str


def read_yaml_mapping(path: Path, display: str, tree: Tree | None = None) -> Document | ReadError:
    """Parse `path` as a single YAML mapping, or say precisely why it cannot be. With `tree`, the
    bytes are the ones the tree read (see engine/knowledge/snapshot.py), not the disk's now; either
    way only a regular file is read, and no further than the size limit. A file refused says why,
    never what it holds."""
    raw = tree.content(path) if tree is not None else read_file(path, MAX_FILE_BYTES)
    if isinstance(raw, Unreadable):
        return _unreadable(raw)
    if len(raw) > MAX_FILE_BYTES:
        return _too_large(len(raw))
    return parse_yaml_mapping(raw, path, display)


def _unreadable(found: Unreadable) -> ReadError:
    if found.check == "size":
        return _too_large(found.size)
    if found.check == "read":
        return ReadError(0, "read", f"cannot read file: {found.reason}", found.fix)
    return ReadError(0, found.check, found.reason, found.fix)


def _too_large(size: int) -> ReadError:
    return ReadError(
        0,
        "size",
        f"larger than {MAX_FILE_BYTES:,} bytes ({size:,})",
        "a KB file holds one entity; split or trim it",
    )


def parse_yaml_mapping(raw: bytes, path: Path, display: str) -> Document | ReadError:
    """Parse bytes already read (see `read_yaml_mapping`)."""
    if b"\x00" in raw:
        return ReadError(
            0,
            "encoding",
            "file contains NUL bytes (binary, not YAML text)",
            "replace it with a UTF-8 YAML file",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return ReadError(line, "encoding", f"not valid UTF-8 at byte {exc.start}", "save the file as UTF-8")
    if not text.strip():
        return ReadError(0, "empty", "file is empty", "add the entity's fields or delete the file")
    try:
        return _parse(text, path, display)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        return ReadError(line, "yaml", f"invalid YAML: {exc.problem or exc.context}", "fix the YAML syntax")
    except yaml.YAMLError as exc:
        return ReadError(0, "yaml", f"invalid YAML: {exc}", "fix the YAML syntax")
    except RecursionError:
        return ReadError(0, "yaml", "nesting is too deep", "flatten the structure")
    except (ValueError, TypeError, OverflowError) as exc:
        return ReadError(0, "yaml", f"invalid value: {exc}", "fix the value")


def _parse(text: str, path: Path, display: str) -> Document | ReadError:
    depth = 0
    for token in yaml.scan(text, Loader=_Loader):
        if isinstance(token, yaml.AnchorToken | yaml.AliasToken):
            return ReadError(
                token.start_mark.line + 1,
                "yaml",
                "anchors and aliases are not allowed",
                "write the value out in full",
            )
        depth += isinstance(token, _OPENERS) - isinstance(token, _CLOSERS)
        if depth > MAX_DEPTH:
            line = token.start_mark.line + 1
            return ReadError(
                line, "yaml", f"nested more than {MAX_DEPTH} levels deep", "flatten the structure"
            )
    nodes = list(yaml.compose_all(text, Loader=_Loader))
    if not nodes or nodes[0] is None:
        return ReadError(0, "empty", "file has no YAML document", "add the entity's fields")
    if len(nodes) > 1:
        return ReadError(
            nodes[1].start_mark.line + 1,
            "yaml",
            "more than one YAML document",
            "keep one entity per file; remove the `---` separator",
        )
    node = nodes[0]
    if not isinstance(node, yaml.MappingNode):
        return ReadError(
            node.start_mark.line + 1,
            "type",
            "top level must be a mapping of field: value",
            "start the file with `id: ...`",
        )
    duplicate = _first_duplicate_key(node)
    if duplicate is not None:
        line, key = duplicate
        return ReadError(line, "duplicate-key", f"key {key!r} appears more than once", "keep one of them")
    data = _Loader("").construct_document(node)
    return Document(path=path, display=display, data=data, node=node)


def _first_duplicate_key(root: yaml.Node) -> tuple[int, str] | None:
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        return key.start_mark.line + 1, key.value
                    seen.add(key.value)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None
