#!/usr/bin/env python3
"""Set up and run gpu-advisor with nothing but python3 (3.11 or 3.12) and a C compiler.

    python3 scripts/dev.py run     # create .venv, install, serve the embedded KB on 127.0.0.1:8000
    python3 scripts/dev.py test    # create .venv, install with dev tools, run lint + type checks + tests

The virtual environment is re-installed whenever pyproject.toml changes. Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".installed"
SUPPORTED = ((3, 11), (3, 12))  # durable-rules 2.0.28 does not import on 3.13 (see pyproject.toml)


def _python_for_venv() -> str:
    if sys.version_info[:2] in SUPPORTED:
        return sys.executable
    for name in ("python3.12", "python3.11"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit(
        f"gpu-advisor needs Python 3.11 or 3.12 (found {sys.version.split()[0]}); "
        "install python3.12 or python3.11 and run this again"
    )


def _run(*args: str | Path) -> None:
    command = [str(a) for a in args]
    result = subprocess.run(command, cwd=ROOT, check=False)
    if result.returncode != 0:
        sys.exit(result.returncode)


def ensure_venv() -> None:
    """Create .venv and install the project with its dev tools, unless already current."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    if not (BIN / "python").exists():
        print("creating .venv ...", flush=True)
        _run(_python_for_venv(), "-m", "venv", VENV)
    print(
        "installing gpu-advisor and its tools into .venv (first run compiles durable-rules) ...", flush=True
    )
    _run(BIN / "python", "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    _run(BIN / "python", "-m", "pip", "install", "--quiet", "-e", ".[dev]")
    STAMP.write_text(wanted)


def run() -> None:
    _run(BIN / "gpu-advisor", "serve", "--host", "127.0.0.1", "--port", os.environ.get("PORT", "8000"))


def test() -> None:
    _run(BIN / "ruff", "check", ".")
    _run(BIN / "ruff", "format", "--check", ".")
    _run(BIN / "mypy")
    _run(BIN / "gpu-advisor", "kb", "lint")
    _run(BIN / "python", "-m", "pytest")


TASKS = {"run": run, "test": test}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in TASKS:
        sys.exit(f"usage: python3 scripts/dev.py {{{'|'.join(TASKS)}}}")
    ensure_venv()
    TASKS[sys.argv[1]]()
