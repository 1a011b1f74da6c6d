"""`gpu-advisor recommend`: flags or a request file in, a ranked table with the why (or the
contract's JSON) out; bad input is a message naming the field, exit status 2, no traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import EXIT_OK, EXIT_USAGE, main
from cli.report import options_table
from cli.request_input import apply_flags, to_request
from engine.knowledge.paths import PROJECT_ROOT
from engine.models.response import RecommendResponse


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["recommend", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_flags_give_a_ranked_table_with_the_why(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--params-b", "7", "--task", "inference", "--top-k", "3"], capsys)
    assert code == EXIT_OK
    assert "GB/GPU" in out and "Total" in out
    why = out[out.index("Why") :]
    ranks = re.findall(r"^(\d+)\. ", why, re.MULTILINE)
    assert ranks == ["1", "2", "3"]  # numbered lines only: "4.5 GB" inside a why is not a rank
    assert "For serving a 7B-parameter model" in out  # the summary comes first


def test_json_is_the_contract_response(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["--model", "llama-3-1-8b", "--task", "qlora", "--acquisition", "rent", "--json"], capsys
    )
    assert code == EXIT_OK
    response = RecommendResponse.model_validate_json(out)
    assert response.feasible and response.recommendations
    assert all(r.acquisition == "rent" and r.method == "qlora" for r in response.recommendations)


def test_a_request_file_with_flags_on_top(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    request = tmp_path / "job.yaml"
    request.write_text(
        "workload:\n  task: lora\n  model: llama-3-1-8b\n  batch_size: 4\n"
        "constraints:\n  on_prem_only: true\n"
    )
    code, out, _ = run([str(request), "--top-k", "2", "--json"], capsys)
    assert code == EXIT_OK
    response = RecommendResponse.model_validate_json(out)
    assert len(response.recommendations) == 2
    assert all(r.acquisition != "rent" for r in response.recommendations)  # the file's constraint held


def test_a_json_request_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    golden = PROJECT_ROOT / "tests" / "golden" / "budget-too-small.request.json"
    code, out, _ = run([str(golden)], capsys)
    assert code == EXIT_OK
    assert "To make it feasible" in out and "Ruled out" in out


def test_a_json_request_file_with_a_pasted_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Hugging Face config.json writes `"rms_norm_eps": 1e-06`: a float in JSON and YAML 1.2, a string
    to YAML 1.1's resolver, which refused the file ("Input should be a valid number"). Qwen3-8B's config
    keys, pasted as the model's card gives them."""
    config = {
        "model_type": "qwen3",
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_attention_heads": 32,
        "num_hidden_layers": 36,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 40960,
        "rms_norm_eps": 1e-06,
        "tie_word_embeddings": False,
        "vocab_size": 151936,
    }
    request = tmp_path / "job.json"
    request.write_text(json.dumps({"workload": {"task": "inference", "hf_config": config}}))
    assert '"rms_norm_eps": 1e-06' in request.read_text()
    code, out, err = run([str(request), "--json"], capsys)
    assert code == EXIT_OK, err
    response = RecommendResponse.model_validate_json(out)
    assert response.requirements.params_b == pytest.approx(8.19, abs=0.01)


def test_trace_lists_the_rules_that_fired(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--params-b", "7", "--task", "inference", "--on-prem-only", "--trace"], capsys)
    assert code == EXIT_OK
    assert "Trace" in out and "privacy" in out


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--params-b", "-3", "--task", "inference"], "workload.params_b"),
        (["--task", "inference"], "params_b"),
        (["--model", "gpt-7", "--task", "inference"], "workload.model"),
        (
            ["--params-b", "7", "--task", "inference", "--target", "rtx-9090"],
            "constraints.target_hardware.gpu",
        ),
        (["--params-b", "7", "--task", "inference", "--providers", "aws,acme"], "constraints.providers.1"),
        (["--params-b", "7", "--task", "inference", "--owned", "nvidia-rtx-4090:two"], "GPU:COUNT"),
        (["--params-b", "7", "--task", "inference", "--owned", "nvidia-rtx-4090:1:lots"], "HOST_RAM_GIB"),
        (
            ["--params-b", "7", "--task", "inference", "--owned", "nvidia-rtx-4090:1:-5"],
            "existing_hardware.0.host_ram_gib",
        ),
        (["--params-b", "7", "--task", "inference", "--max-gpus", "2", "--gpu-count", "4"], "gpu_count"),
    ],
)
def test_bad_input_names_the_field(argv: list[str], named: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert code == EXIT_USAGE
    assert named in err and "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("broken.yaml", "workload: [unclosed\n", "broken.yaml:"),
        ("list.yaml", "- 1\n- 2\n", "mapping"),
        ("empty.json", "", "empty"),
        ("alias.yaml", "a: &x 1\nb: *x\n", "anchors"),
    ],
)
def test_a_bad_request_file_is_a_message(
    tmp_path: Path, name: str, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, _, err = run([str(path)], capsys)
    assert code == EXIT_USAGE
    assert message in err and "Traceback" not in err


def test_a_missing_request_file_is_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([str(tmp_path / "nope.yaml")], capsys)
    assert code == EXIT_USAGE and "nope.yaml: cannot read it" in err


def test_the_console_script_answers_as_a_whole_process() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "recommend", "--params-b", "7", "--task", "inference", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["feasible"] is True


def test_every_flag_names_a_request_field_and_takes_its_help_from_it() -> None:
    from typing import get_args

    from cli.request_input import FLAGS
    from engine.models.request import Task

    for flag in FLAGS:
        assert flag.help, flag.name  # the field's description, or the flag's own usage
    task = next(flag for flag in FLAGS if flag.name == "--task")
    assert task.choices == get_args(Task)
    assert next(flag for flag in FLAGS if flag.name == "--params-b").choices is None


def test_switches_set_their_field_true_or_false() -> None:
    """`--on-prem-only` sets its field true; `--no-quantization` sets `allow_quantization` false;
    a switch not given leaves its field to the request's default."""
    given = apply_flags({}, {"on_prem_only": True, "no_quantization": True, "interruptible": False})
    assert given == {"constraints": {"on_prem_only": True, "allow_quantization": False}}
    request = to_request({"workload": {"task": "inference", "params_b": 7}, **given})
    assert request.constraints.allow_quantization is False
    assert request.constraints.on_prem_only is True


def test_a_request_file_with_part_of_an_architecture_and_only_a_speed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI has no architecture or serving flags: a request file carries them, partial as the API
    takes them (Llama-3-8B's shape without its vocabulary; one user at 30 tokens/s)."""
    request = tmp_path / "job.yaml"
    request.write_text(
        "workload:\n  task: inference\n  params_b: 8.03\n"
        "  architecture: {n_layers: 32, hidden_size: 4096, n_heads: 32, n_kv_heads: 8}\n"
        "  serving: {min_tokens_per_s_per_user: 30}\n"
    )
    code, out, _ = run([str(request), "--json"], capsys)
    assert code == EXIT_OK
    response = RecommendResponse.model_validate_json(out)
    assert response.assumptions["architecture.vocab_size"] == "32000 (Llama 2's vocabulary, assumed)"
    assert all(r.throughput.tokens_per_s >= 30 for r in response.recommendations)


def test_help_still_lists_the_optimizers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["recommend", "--help"])
    assert exited.value.code == 0
    assert "sgd_momentum" in capsys.readouterr().out


def test_the_table_holds_memory_against_what_the_driver_reports(capsys: pytest.CaptureFixture[str]) -> None:
    """An H100 80GB reports 81,559 MiB, 85.5e9 bytes (kb/gpus/nvidia-h100-sxm.yaml); a plan's GB per GPU is
    in 1e9 bytes, so the table's capacity is that figure, not the name's 80 ("80.3/80" for a plan that fits
    read as over-full), and a line under the table says so."""
    argv = ["--model", "llama-3-1-70b", "--task", "lora", "--acquisition", "rent", "--top-k", "3"]
    code, out, _ = run([*argv, "--json"], capsys)
    assert code == EXIT_OK
    response = RecommendResponse.model_validate_json(out)
    h100 = [r for r in response.recommendations if r.gpu == "nvidia-h100-sxm"]
    assert h100 and h100[0].capacity_gb == 85.5 and h100[0].vram_per_gpu_gb == 80
    assert all(r.memory.per_gpu_gb <= r.capacity_gb for r in response.recommendations)
    code, table, _ = run(argv, capsys)
    assert code == EXIT_OK
    for r in response.recommendations:
        assert f"{r.memory.per_gpu_gb:.1f}/{r.capacity_gb:g}" in table
    assert "of what each GPU's driver reports" in table


def test_a_training_tables_speed_is_the_runs_as_its_why_states(capsys: pytest.CaptureFixture[str]) -> None:
    """The table's tok/s for a training run is the run's over all its GPUs, the figure its why gives
    ("about 129 training tokens/s"), not one data-parallel replica's share: two owned 3090s QLoRA-tuning a
    70B model read 129, not 64, beside one rented H100's 849."""
    code, out, _ = run(
        [
            "--task", "qlora", "--model", "llama-3-1-70b", "--training-tokens-b", "0.02",
            "--owned", "nvidia-rtx-3090:2", "--top-k", "3", "--json",
        ],
        capsys,
    )  # fmt: skip
    assert code == EXIT_OK
    answer = RecommendResponse.model_validate_json(out)
    cells = list(options_table(answer).columns[5].cells)
    for rec, cell in zip(answer.recommendations, cells, strict=True):
        stated = re.search(r"about ([\d,]+) training tokens/s", rec.why)
        assert stated is not None, rec.why
        assert cell == stated.group(1), (rec.gpu, cell, rec.why)
    assert any(rec.gpu_count > 1 for rec in answer.recommendations)


def test_owned_cards_may_name_the_ram_of_their_machine(capsys: pytest.CaptureFixture[str]) -> None:
    """`--owned GPU:COUNT:HOST_RAM_GIB`: two 3090s in a 32 GiB machine cannot hold QLoRA's 40 GB
    offloaded base of a 70B model, and the answer says so with both figures; without the RAM they run it."""
    flags = ["--task", "qlora", "--model", "llama-3-1-70b", "--training-tokens-b", "0.02", "--top-k", "1"]
    code, out, _ = run([*flags, "--owned", "nvidia-rtx-3090:2:32", "--json"], capsys)
    assert code == EXIT_OK
    answer = RecommendResponse.model_validate_json(out)
    assert answer.recommendations[0].acquisition != "owned"
    assert "has 32 GiB" in answer.summary
    code, out, _ = run([*flags, "--owned", "nvidia-rtx-3090:2", "--json"], capsys)
    assert RecommendResponse.model_validate_json(out).recommendations[0].acquisition == "owned"
