"""`gpu-advisor kb lint` run on a KB folder as the CLI runs it, checked against today's date (a fact's
date may be any day up to it)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from cli.main import main


def lint_main(kb_root: Path) -> int:
    """The exit code of `kb lint` over `kb_root`, its data folder beside it; what it printed is the
    caller's to capture."""
    data = kb_root.parent / "data"
    return main(
        ["kb", "lint", "--kb", str(kb_root), "--data", str(data), "--today", date.today().isoformat()]
    )
