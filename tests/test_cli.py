"""CLI plumbing: generated schema files are current; usage errors are messages, not tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main, schema_documents
from engine.paths import PROJECT_ROOT as PROJECT


def test_json_schemas_in_docs_are_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "schema", "--check"]) == 0
    gpu_schema = json.loads(schema_documents()["gpus.schema.json"])
    assert "class" in gpu_schema["properties"]
    assert gpu_schema["additionalProperties"] is False


def test_stats_counts_entities(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "stats"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("gpus")


def test_console_script_reports_bad_arguments_without_a_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "engine.cli", "kb", "lint", "--today", "not-a-date"],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "--today" in result.stderr


def test_serve_refuses_an_invalid_kb(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
    assert main(["serve", "--kb", str(kb_copy), "--port", "1"]) == 1
    captured = capsys.readouterr()
    assert "kb/gpus/nvidia-h100-sxm.yaml:1: missing-field:" in captured.out
    assert "not starting" in captured.err
