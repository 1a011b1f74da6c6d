"""Where the project's data lives. Overridable by environment for tests and deployments."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def kb_dir() -> Path:
    """The knowledge base: $GPU_ADVISOR_KB, else the embedded `kb/`."""
    return Path(os.environ.get("GPU_ADVISOR_KB") or PROJECT_ROOT / "kb")


def rules_dir() -> Path:
    """The rules: $GPU_ADVISOR_RULES, else the embedded `rules/`."""
    return Path(os.environ.get("GPU_ADVISOR_RULES") or PROJECT_ROOT / "rules")


def data_dir() -> Path:
    """Fact snapshots the KB is built from: $GPU_ADVISOR_DATA, else the embedded `data/`."""
    return Path(os.environ.get("GPU_ADVISOR_DATA") or PROJECT_ROOT / "data")


def display_path(path: Path, anchor: Path) -> str:
    """A path as a user should see it: relative to the working directory when it is below it,
    else relative to `anchor` (e.g. the folder holding kb/), so no machine path is shown. The file's
    own name is kept as it is: a symlink is named, not the file it points to (which may lie outside
    the KB and is nobody's business)."""
    resolved = path.parent.resolve() / path.name
    for base in (Path.cwd().resolve(), anchor.resolve()):
        if resolved.is_relative_to(base):
            return resolved.relative_to(base).as_posix()
    return path.name
