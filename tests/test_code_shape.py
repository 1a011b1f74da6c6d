"""The engine's code stays in small pieces a reader can hold: no function over 60 lines, no class over
250 (cyclomatic complexity is held at 15 by ruff's C901, pyproject.toml). Lines are counted from the
`def` or `class` line to the last, docstrings and comments included."""

from __future__ import annotations

import ast
from pathlib import Path

from engine.knowledge.paths import PROJECT_ROOT

MAX_FUNCTION_LINES = 60
MAX_CLASS_LINES = 250
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def oversized(root: Path, kind: type[ast.AST] | tuple[type[ast.AST], ...], limit: int) -> list[str]:
    """`path:line name: N lines` for each definition of `kind` under `root` longer than `limit`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, kind) and isinstance(node, (*FUNCTIONS, ast.ClassDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {lines} lines")
    return found


def test_no_engine_function_is_over_60_lines() -> None:
    assert not oversized(PROJECT_ROOT / "engine", FUNCTIONS, MAX_FUNCTION_LINES)


def test_no_engine_class_is_over_250_lines() -> None:
    assert not oversized(PROJECT_ROOT / "engine", ast.ClassDef, MAX_CLASS_LINES)


def test_a_61_line_method_is_found(tmp_path: Path) -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(59))
    (tmp_path / "long.py").write_text(f"class Short:\n    def long(self):\n        '''60 more'''\n{body}\n")
    assert oversized(tmp_path, FUNCTIONS, MAX_FUNCTION_LINES) == ["long.py:2 long: 61 lines"]
    assert oversized(tmp_path, ast.ClassDef, MAX_CLASS_LINES) == []
