"""CLI plumbing: generated schema files are current; usage errors are messages, not tracebacks."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import EXIT_UNAVAILABLE, main
from engine.knowledge.paths import PROJECT_ROOT as PROJECT
from engine.maintenance import schema_documents


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
        [sys.executable, "-m", "cli.main", "kb", "lint", "--today", "not-a-date"],
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


@pytest.fixture
def serve_without_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve` up to the point where it would start the server: the KB is not loaded, and a server
    start fails the test."""
    import uvicorn

    import cli.main

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server was started")

    monkeypatch.setattr(cli.main, "load_advisor", lambda *args: object())
    monkeypatch.setattr(uvicorn, "run", started)


@pytest.mark.parametrize(
    ("arguments", "named", "span"),
    [
        (["--port", "99999"], "--port", "from 1 to 65535"),
        (["--port", "65536"], "--port", "from 1 to 65535"),
        (["--port", "0"], "--port", "from 1 to 65535"),
        (["--port", "-1"], "--port", "from 1 to 65535"),
        (["--port", "http"], "--port", "from 1 to 65535"),
        (["--workers", "0"], "--workers", "of at least 1"),
        (["--workers", "-2"], "--workers", "of at least 1"),
        (["--workers", "two"], "--workers", "of at least 1"),
    ],
)
@pytest.mark.usefixtures("serve_without_a_server")
def test_serve_refuses_a_port_or_worker_count_out_of_range(
    capsys: pytest.CaptureFixture[str], arguments: list[str], named: str, span: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", *arguments])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {named}: must be a whole number {span}" in err and "Traceback" not in err


@pytest.mark.usefixtures("serve_without_a_server")
def test_serve_says_in_one_line_that_a_port_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == EXIT_UNAVAILABLE
    err = capsys.readouterr().err
    assert err == f"gpu-advisor: not starting: cannot listen on 127.0.0.1:{port}: address already in use\n"


@pytest.mark.parametrize("host", ["192.0.2.1", "no-such-host.invalid"])  # RFC 5737, RFC 6761 §6.4
@pytest.mark.usefixtures("serve_without_a_server")
def test_serve_says_in_one_line_that_a_host_cannot_be_bound(
    capsys: pytest.CaptureFixture[str], host: str
) -> None:
    assert main(["serve", "--host", host, "--port", "8000"]) == EXIT_UNAVAILABLE
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"gpu-advisor: not starting: cannot listen on {host}:8000: ")


def test_serve_reports_a_bad_port_without_a_traceback() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "serve", "--port", "99999"],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "--port" in result.stderr
