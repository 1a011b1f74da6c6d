"""The layers of docs/architecture.md, read from the code: a module imports only layers below its own
(or its own layer's package); anything else must be listed there with its reason."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {
    "engine.models": 0,
    "engine.sizing": 1,
    "engine.knowledge": 2,
    "engine.reasoning": 3,
    "engine.planning": 4,
    "engine.answer": 5,
    "engine.recommend": 6,
    "engine.maintenance": 6,
    "api": 7,
    "cli": 7,
}
"""each layer's package and its height: the faces (api, cli) share the top"""


def layer_of(module: str) -> str | None:
    found = [name for name in LAYERS if module == name or module.startswith(name + ".")]
    return max(found, key=len) if found else None


def imports(path: Path) -> set[str]:
    """Every absolute module (and `module.name`) a file imports, at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def listed_exceptions() -> set[tuple[str, str]]:
    """`importer` → `imported` pairs listed in docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return set(re.findall(r"`([\w.]+)` → `([\w.]+)`", text))


def violations() -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for folder in ("engine", "api", "cli"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            importer = module_name(path)
            if importer == "engine":
                continue  # the package marker, empty
            own = layer_of(importer)
            assert own is not None, f"{importer} is in no layer: add it to one (docs/architecture.md)"
            for imported in imports(path):
                target = layer_of(imported)
                if target is None or target == own:
                    continue
                if LAYERS[target] >= LAYERS[own]:
                    found.add((importer, target))
    return found


def test_no_module_imports_a_layer_above_or_beside_its_own_unless_listed() -> None:
    unlisted = violations() - listed_exceptions()
    assert not unlisted, sorted(unlisted)


def test_every_listed_exception_is_still_needed() -> None:
    """A listed exception whose import has gone is removed from the list, so the list stays true."""
    assert listed_exceptions() <= violations()


def test_one_module_imports_durable() -> None:
    importers = {
        module_name(path)
        for folder in ("engine", "api", "cli")
        for path in (ROOT / folder).rglob("*.py")
        if any(name.split(".")[0] in ("durable", "durable_rules_engine") for name in imports(path))
    }
    assert importers == {"engine.reasoning.chaining"}


def test_the_answer_layer_uses_no_planner_internals() -> None:
    """engine/answer/ turns plans into words: it imports no private name from planning (a leading
    underscore), reads no private attribute of another object (a planner's memos) and sets none."""
    found = []
    for path in sorted((ROOT / "engine" / "answer").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine.planning"):
                found += [f"{path.name}: imports {a.name}" for a in node.names if a.name.startswith("_")]
            if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
            # nor sets a mode on another object (`planner.as_asked_only = False` once did)
            targets = node.targets if isinstance(node, ast.Assign) else []
            written = [t for t in targets if isinstance(t, ast.Attribute) and not _own(t.value)]
            found += [f"{path.name}:{node.lineno}: sets .{t.attr}" for t in written]
    assert not found, found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own(value: ast.expr) -> bool:
    """`self.x` or `cls.x`: a class's own attribute, private to it by design."""
    return isinstance(value, ast.Name) and value.id in ("self", "cls")


RESULT_READERS = {
    "engine.planning.deadline": "the request's time budget: a slow chart stops with the request"
}
"""planning modules the answer layer may import whole, with the reason"""


def test_the_answer_layer_plans_nothing() -> None:
    """engine/answer/ imports from planning only what planning found and its units: result types
    (dataclasses, named tuples, exceptions) and constants, never a function or a class that plans
    (Planner, Searcher); bench/call_path.py shows the same at run time (0 calls back into planning)."""
    found = []
    for path in sorted((ROOT / "engine" / "answer").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("engine.planning"):
                continue
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                if name in RESULT_READERS or alias.name.isupper():
                    continue
                if not _a_result_type(getattr(module, alias.name)):
                    found.append(f"{path.name}: {name}")
    assert not found, found


def _a_result_type(value: object) -> bool:
    return inspect.isclass(value) and (
        dataclasses.is_dataclass(value) or issubclass(value, tuple | BaseException)
    )


FACADES = ("engine.recommend", "engine.maintenance", "engine.models")
"""what the faces may import from the engine: the Advisor's module (answering), the KB's keeping, and
the contract's data types"""


def test_the_faces_call_only_the_advisor_and_the_kb_keeping() -> None:
    """api/ and cli/ reach the engine through engine/recommend.py and engine/maintenance.py (and the
    models every layer shares), never a layer below: the faces stay thin, and a change inside the
    engine does not reach them."""
    found = []
    for folder in ("api", "cli"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules = [node.module or ""]
                elif isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                else:
                    continue
                found += [
                    f"{folder}/{path.name}:{node.lineno}: {module}"
                    for module in modules
                    if module.split(".")[0] == "engine" and not module.startswith(FACADES)
                ]
    assert not found, found
