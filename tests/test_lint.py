"""`gpu-advisor kb lint`: clean on the embedded KB; each way of breaking a file is reported with
the file, the line and the check, and the exit status is non-zero."""

from __future__ import annotations

import re
import shutil
from datetime import date
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from engine.knowledge.lint import lint_kb
from engine.knowledge.paths import PROJECT_ROOT as PROJECT
from engine.models.kb import KIND_MODELS
from tests.support_lint import lint_main

H100 = "gpus/nvidia-h100-sxm.yaml"


def run_lint(kb_root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = lint_main(kb_root)
    return code, capsys.readouterr().out


def edit(path: Path, old: str, new: str) -> int:
    """Replace the first line matching `old` (a regex) with `new`; return that 1-based line."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(old, line):
            lines[i] = new
            path.write_text("\n".join(lines) + "\n")
            return i + 1
    raise AssertionError(f"{old!r} not in {path}")


def assert_reported(out: str, file: str, line: int, check: str) -> None:
    assert f"kb/{file}:{line}: {check}: " in out, out


def test_embedded_kb_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "lint"]) == 0
    assert "no problems" in capsys.readouterr().out


def test_wrong_type(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / H100, r"memory_gb:", "memory_gb: lots")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, H100, line, "type")


def test_missing_field(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(kb_copy / H100, r"vendor:", "")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, H100, 1, "missing-field")
    assert "add `vendor`" in out


def test_unknown_key(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / H100, r"memory_gb:", "memry_gb: 80")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, H100, line, "unknown-key")
    assert "memory_gb" in out  # the fix lists the allowed keys


def test_dangling_reference(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / H100, r"interconnect:", "interconnect: nvlink-99")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, H100, line, "reference")
    assert "nvlink-99" in out


def test_dangling_reference_from_an_offer(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    offer = next((kb_copy / "offers").glob("lambda-*.yaml"))
    line = edit(offer, r"gpu:", "gpu: no-such-gpu")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, f"offers/{offer.name}", line, "reference")


def test_duplicate_id(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(kb_copy / H100, kb_copy / "gpus/nvidia-h100-sxm-copy.yaml")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, "gpus/nvidia-h100-sxm-copy.yaml", 1, "duplicate-id")
    assert_reported(out, "gpus/nvidia-h100-sxm-copy.yaml", 1, "id-stem")


def set_field(path: Path, key: str, value: object) -> int:
    """Set a top-level field of a KB file (replacing it if present); return that field's 1-based line."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data[key] = value
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(f"{key}:"))


def test_alias_naming_two_models(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A name must lead to one model: an alias equal (case and separators aside) to another model's id
    or alias is refused."""
    line = set_field(kb_copy / "models/llama-3-1-70b.yaml", "aliases", ["Mistral-7B", "my-llama"])
    set_field(kb_copy / "models/llama-3-1-8b.yaml", "aliases", ["MY_LLAMA"])
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, "models/llama-3-1-70b.yaml", line + 1, "alias")
    assert "already names model 'mistral-7b'" in out
    assert "already names model 'llama-3-1-70b'" in out


def test_native_precision_must_be_a_known_precision(
    kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = set_field(kb_copy / "models/llama-3-1-8b.yaml", "native_precision", "bf17")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, "models/llama-3-1-8b.yaml", line, "reference")


def test_scaffold_text_left_in_a_kb_file(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / H100, r"name:", "name: Say what the rule decides, in one sentence")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, H100, line, "placeholder")


def test_negative_bandwidth(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / H100, r"memory_bandwidth_gbs:", "memory_bandwidth_gbs: -5")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, H100, line, "range")


def test_negative_price(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / H100, r"  - price_usd:", "  - price_usd: -1")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, H100, line, "range")


def test_invalid_yaml(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / H100, r"name:", "name: [NVIDIA H100")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    reported = re.search(r"kb/gpus/nvidia-h100-sxm\.yaml:(\d+): yaml: ", out)
    assert reported is not None, out
    assert int(reported.group(1)) >= line


def test_future_date(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / H100, r"    accessed:", "    accessed: 2999-01-01")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, H100, line, "date")


def test_dense_above_sparse(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / H100, r"bf16_sparse_tflops:", "bf16_sparse_tflops: 10")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, H100, line, "range")


def test_missing_sources(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = kb_copy / "interconnects/nvlink-4.yaml"
    text = path.read_text()
    path.write_text(text[: text.index("sources:")])
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, "interconnects/nvlink-4.yaml", 1, "sources")


def test_native_precision_the_hardware_lacks(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = edit(kb_copy / "gpus/nvidia-t4.yaml", r"native_precisions:", "native_precisions: [fp16, bf16]")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, "gpus/nvidia-t4.yaml", line, "consistency")


def test_hand_edited_offer_is_stale(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    offer = next((kb_copy / "offers").glob("aws-*.yaml"))
    edit(offer, r"region_count:", "region_count: 99")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, f"offers/{offer.name}", 0, "generated")


@pytest.mark.parametrize(
    ("content", "check"),
    [
        (b"", "empty"),
        (b"\x00\x01\x02binary", "encoding"),
        (b"- a list\n", "type"),
        (b"id: x\nid: y\n", "duplicate-key"),
    ],
)
def test_unreadable_files(
    kb_copy: Path, capsys: pytest.CaptureFixture[str], content: bytes, check: str
) -> None:
    (kb_copy / "gpus/broken.yaml").write_bytes(content)
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert "kb/gpus/broken.yaml:" in out and f": {check}: " in out, out


def test_huge_file(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (kb_copy / "gpus/huge.yaml").write_bytes(b"id: huge\n" + b"# padding\n" * 1_100_000)
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, "gpus/huge.yaml", 0, "size")


def test_stray_files_and_folders(kb_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(kb_copy / H100, kb_copy / "gpus/nvidia-h100-sxm.yml")
    (kb_copy / "gpu").mkdir()
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    assert_reported(out, "gpus/nvidia-h100-sxm.yml", 0, "file-name")
    assert "kb/gpu:0: layout: " in out


def test_missing_kb_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_lint(tmp_path / "nowhere", capsys)
    assert code == 1
    assert "layout: knowledge base folder not found" in out


def test_every_problem_line_has_the_documented_shape(
    kb_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit(kb_copy / H100, r"memory_gb:", "memory_gb: -1")
    (kb_copy / "models/junk.yaml").write_bytes(b"\xff\xfe")
    code, out = run_lint(kb_copy, capsys)
    assert code == 1
    for line in out.splitlines():
        assert re.fullmatch(r"\S+:\d+: [a-z-]+: .+ \(.+\)", line), line


def _tiny_kb(base: Path, content: bytes) -> Path:
    root = base / "kb"
    for kind in KIND_MODELS:
        (root / kind).mkdir(parents=True)
    (root / "gpus/x.yaml").write_bytes(content)
    return root


H100_LINES = (PROJECT / "kb" / H100).read_text().splitlines()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_lint_never_raises_on_any_file_content(
    tmp_path_factory: pytest.TempPathFactory, content: bytes
) -> None:
    root = _tiny_kb(tmp_path_factory.mktemp("any"), content)
    problems = lint_kb(root, None, date(2026, 11, 26))
    assert problems and all(p.path.startswith("kb/") for p in problems)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, len(H100_LINES) - 1), st.text(max_size=60))
def test_lint_never_raises_on_a_mangled_line(
    tmp_path_factory: pytest.TempPathFactory, index: int, junk: str
) -> None:
    lines = list(H100_LINES)
    lines[index] = junk
    root = _tiny_kb(tmp_path_factory.mktemp("mangled"), "\n".join(lines).encode())
    assert isinstance(lint_kb(root, None, date(2026, 11, 26)), list)
