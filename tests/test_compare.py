"""`POST /compare` and `gpu-advisor compare`: hardware choices side by side, each with the figures of a
recommendation and a verdict in words ("why not X?"); bad input is a 422 naming the field.

Golden comparisons live in tests/golden_compare (`<name>.request.json` and the recorded
`<name>.response.json`); `python3 scripts/dev.py golden` rewrites the recordings."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cli.main import EXIT_OK, EXIT_USAGE, main
from engine.models.compare import CompareRequest, CompareResponse
from engine.models.request import RecommendRequest
from engine.recommend import Advisor
from tests.golden_support import advisor as golden_advisor
from tests.golden_support import as_text, recorded

GOLDEN_COMPARE = Path(__file__).parent / "golden_compare"

SERVE_70B_FP16: dict[str, Any] = json.loads(
    (GOLDEN_COMPARE / "why-not-a-4090-70b-fp16.request.json").read_text(encoding="utf-8")
)["request"]
"""llama-2-70b served in fp16, one sequence of 4,096 tokens"""
SMALL: dict[str, Any] = {"workload": {"task": "inference", "model": "mistral-7b"}}
VERDICT_FIGURES = r"\d[\d,]* tok/s, \$[\d,.]+(/h| to buy)"


def compare(advisor: Advisor, request: dict[str, Any], *choices: dict[str, Any]) -> CompareResponse:
    return advisor.compare(CompareRequest.model_validate({"request": request, "choices": list(choices)}))


@pytest.fixture(scope="module")
def seventy_b(advisor: Advisor) -> CompareResponse:
    return compare(
        advisor,
        SERVE_70B_FP16,
        {"gpu": "nvidia-rtx-4090", "count": 1},
        {"gpu": "nvidia-l40s", "count": 2},
        {"gpu": "nvidia-h100-sxm", "count": 2},
    )


def test_a_70b_model_in_fp16_does_not_fit_a_4090_and_fits_two_h100s(seventy_b: CompareResponse) -> None:
    one_4090, two_l40s, two_h100 = seventy_b.choices
    # of what the driver reports: 24,564 MiB, 25.8 GB (kb/gpus/nvidia-rtx-4090.yaml), as the fit is measured
    needs = re.fullmatch(r"does not fit: needs (\d+\.\d) GB of 25\.8", one_4090.verdict)
    assert (
        needs
        and float(needs[1]) == pytest.approx(one_4090.fit.per_gpu_gb, abs=0.05)
        and float(needs[1]) > 25.8
    )
    assert not one_4090.fit.fits and not one_4090.feasible and one_4090.option is None
    assert one_4090.ruled_out and one_4090.rule  # the memory rule, in its own words
    # 70B in fp16 is 138 GB of weights: two 48 GB L40S hold it only in 8 bits; two 80 GB H100s hold it
    # as asked, 69 GB each within vLLM's 0.9 of the 85.5 GB each reports (vLLM serves Llama 2 70B in
    # fp16 with tensor_parallel_size 2 at its default gpu_memory_utilization).
    assert not two_l40s.fit.fits and two_l40s.feasible
    as_int8 = rf"does not fit as asked: needs 7\d\.\d GB of 48\.3; runs as int8: {VERDICT_FIGURES}"
    assert re.fullmatch(as_int8, two_l40s.verdict)
    assert two_h100.fit.fits and two_h100.feasible
    assert re.fullmatch(rf"fits, {VERDICT_FIGURES}", two_h100.verdict)
    assert two_h100.option is not None and two_h100.option.precision == "fp16"
    # Run as asked ranks first, as in a recommendation; the substitute after it.
    assert seventy_b.best == 2 and two_h100.option.rank == 1
    assert two_l40s.option is not None and two_l40s.option.rank == 2
    assert seventy_b.summary.startswith("For serving a 68.98B-parameter model, 2 x NVIDIA H100")
    assert one_4090.verdict in seventy_b.summary


def test_each_choice_has_the_figures_recommend_gives_for_the_same_hardware(
    advisor: Advisor, seventy_b: CompareResponse
) -> None:
    for choice in seventy_b.choices[1:]:
        option = choice.option
        assert option is not None
        # The same hardware got the same way (a target's plan is the first the ranking kept of it,
        # which may be bought where renting it is cheaper: pin the way).
        target = {
            "target_hardware": {"gpu": choice.gpu, "count": choice.count},
            "acquisition": option.acquisition,
        }
        answer = advisor.recommend(RecommendRequest.model_validate({**SERVE_70B_FP16, "constraints": target}))
        fit = answer.target_fit
        assert fit is not None
        assert fit == choice.fit
        assert (fit.throughput, fit.cost) == (option.throughput, option.cost)
    # And the same option as a ranked recommendation on two GPUs.
    two = {"gpu_count": 2, "vendors": ["nvidia"]}
    answer = advisor.recommend(
        RecommendRequest.model_validate({**SERVE_70B_FP16, "constraints": two, "top_k": 20})
    )
    option = seventy_b.choices[2].option
    assert option is not None
    same = [r for r in answer.recommendations if r.gpu == option.gpu and r.acquisition == option.acquisition]
    assert same, "two H100s are among the recommendations"
    assert (same[0].memory, same[0].throughput, same[0].cost, same[0].precision, same[0].parallelism) == (
        option.memory,
        option.throughput,
        option.cost,
        option.precision,
        option.parallelism,
    )


def test_the_least_a_choice_needs_is_never_more_than_its_best_plan_holds(advisor: Advisor) -> None:
    """A fit's "needs X GB per GPU at best" is the least any plan as asked needs there, so the best plan
    on the choice holds no less. Four PCIe RTX 4090s in one machine split Llama 3.1 70B in fp8 four ways
    by tensor parallelism, 19.0 GB each (70.55 GB of weights / 4 = 17.6, plus its share of the cache and
    the workspace); weighing the four as if on four machines, the fit saw only a pipeline and said 20.3
    GB at best beside that 19.0 GB plan. (A substitute plan, int8 where bf16 does not fit, is not held
    to the bf16 figure.)"""
    request = {"workload": {"task": "inference", "model": "llama-3-1-70b"}}
    found = compare(
        advisor,
        request,
        {"gpu": "nvidia-rtx-4090", "count": 4, "acquisition": "buy"},
        {"gpu": "nvidia-rtx-3090", "count": 4, "acquisition": "buy"},
        {"gpu": "nvidia-h100-sxm", "count": 2, "acquisition": "rent"},
    )
    four_4090, four_3090, two_h100 = found.choices
    for choice in (four_4090, two_h100):  # fp8 as the request's default on Ada and Hopper
        assert choice.fit.fits and choice.option is not None and choice.option.precision == "fp8"
        assert choice.fit.per_gpu_gb <= choice.option.memory.per_gpu_gb + 0.001, choice.fit.why
    # no fp8 on Ampere: bf16 as asked does not fit, and the plan shown is int8, a substitute
    assert not four_3090.fit.fits and four_3090.option is not None and four_3090.option.precision == "int8"
    assert four_4090.option is not None and four_4090.option.tp_degree == 4
    assert "tensor-parallel over 4 GPUs" in four_4090.fit.alternatives


def test_verdicts_say_fits_the_speed_and_the_price_as_it_is_paid(advisor: Advisor) -> None:
    answer = compare(
        advisor,
        SMALL,
        {"gpu": "nvidia-rtx-4090", "count": 1, "acquisition": "owned"},
        {"gpu": "nvidia-rtx-4090", "count": 1, "acquisition": "buy"},
        {"gpu": "nvidia-h100-sxm", "count": 1, "acquisition": "rent"},
        {"gpu": "google-tpu-v5e", "count": 1, "acquisition": "buy"},
    )
    owned, bought, rented, tpu = (c.verdict for c in answer.choices)
    assert re.fullmatch(r"fits, \d+ tok/s, owned, \$[\d.]+/h in power", owned)
    assert re.fullmatch(r"fits, \d+ tok/s, \$[\d,]+ to buy", bought)
    assert re.fullmatch(r"fits, \d+ tok/s, \$[\d.]+/h", rented)
    assert tpu == "not available: no way to buy 1 x Google Cloud TPU v5e (per chip) in the knowledge base"
    assert [c.acquisition for c in answer.choices] == ["owned", "buy", "rent", "buy"]
    assert [c.option.acquisition for c in answer.choices[:3] if c.option] == ["owned", "buy", "rent"]
    assert answer.best == 0  # what you own costs only its power


@pytest.mark.parametrize(("precision", "best"), [(None, 0), ("bf16", 1)])
def test_owned_cards_quantized_rank_as_recommend_ranks_them(
    advisor: Advisor, precision: str | None, best: int
) -> None:
    """A comparison ranks the choices as POST /recommend ranks the same options: four owned 3090s in int8
    (precision left open) before two RTX PRO 6000s to buy; with bf16 stated, the purchase (bf16 in TP2)
    first."""
    workload: dict[str, Any] = {"task": "inference", "model": "llama-3-1-70b"}
    if precision is not None:
        workload["precision"] = precision
    compared = compare(
        advisor,
        {"workload": workload},
        {"gpu": "nvidia-rtx-3090", "count": 4, "acquisition": "owned"},
        {"gpu": "nvidia-rtx-pro-6000-blackwell", "count": 2, "acquisition": "buy"},
    )
    assert compared.best == best


def test_a_choice_the_constraints_rule_out_says_which_rule(advisor: Advisor) -> None:
    request = {**SMALL, "constraints": {"acquisition": "buy", "budget_usd": 3000}}
    answer = compare(
        advisor,
        request,
        {"gpu": "nvidia-rtx-3090", "count": 1},
        {"gpu": "nvidia-h100-sxm", "count": 1, "acquisition": "rent"},
        {"gpu": "nvidia-h100-pcie", "count": 1},
    )
    used_3090, rented, pcie = answer.choices
    assert used_3090.feasible and answer.best == 0
    assert rented.fit.fits and not rented.feasible and rented.rule == "buy-only"
    assert rented.verdict.startswith("fits, but ruled out: Only hardware bought")
    assert pcie.rule == "budget-is-a-hard-filter" and "budget of $3,000" in pcie.verdict


def test_nothing_feasible_is_a_200_saying_so(advisor: Advisor) -> None:
    answer = compare(
        advisor,
        SERVE_70B_FP16,
        {"gpu": "nvidia-rtx-4090", "count": 1},
        {"gpu": "nvidia-rtx-3090", "count": 1},
    )
    assert answer.best is None and not any(c.feasible for c in answer.choices)
    assert "none of the 2 choices runs within the constraints" in answer.summary


# --- HTTP -------------------------------------------------------------------------------------------


def test_post_compare_answers_as_the_engine_does(client: TestClient, seventy_b: CompareResponse) -> None:
    body = {
        "request": SERVE_70B_FP16,
        "choices": [c.model_dump(include={"gpu", "count"}) for c in seventy_b.choices],
    }
    response = client.post("/compare", json=body)
    assert response.status_code == 200
    data = response.json()
    assert [c["verdict"] for c in data["choices"]] == [c.verdict for c in seventy_b.choices]
    assert data["best"] == 2 and data["requirements"] == seventy_b.requirements.model_dump(mode="json")


@pytest.mark.parametrize(
    ("choices", "request_body", "loc", "kind"),
    [
        ([{"gpu": "nvidia-rtx-4090"}], SMALL, ["body", "choices"], "too_short"),
        ([{"gpu": "nvidia-rtx-4090"}] * 5, SMALL, ["body", "choices"], "too_long"),
        (
            [{"gpu": "nvidia-rtx-4090", "count": 0}, {"gpu": "nvidia-rtx-3090"}],
            SMALL,
            ["body", "choices", 0, "count"],
            None,
        ),
        (
            [{"gpu": "nvidia-rtx-4090"}, {"gpu": "nvidia-rtx-9999"}],
            SMALL,
            ["body", "choices", "1", "gpu"],
            "unknown_reference",
        ),
        (
            [{"gpu": "nvidia-rtx-4090", "acquisition": "steal"}, {"gpu": "nvidia-rtx-3090"}],
            SMALL,
            ["body", "choices", 0, "acquisition"],
            None,
        ),
        (
            [{"gpu": "nvidia-rtx-4090"}, {"gpu": "nvidia-rtx-3090"}],
            {"workload": {"task": "inference", "model": "no-such-model"}},
            ["body", "request", "workload", "model"],
            "unknown_reference",
        ),
        (
            [{"gpu": "nvidia-rtx-4090"}, {"gpu": "nvidia-rtx-3090"}],
            {"workload": {"task": "inference"}},
            ["body", "request", "workload"],
            None,
        ),
        ([{"gpu": "nvidia-rtx-4090"}, {"gpu": "nvidia-rtx-3090"}], None, ["body", "request"], "missing"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(
    client: TestClient,
    choices: list[dict[str, Any]],
    request_body: dict[str, Any] | None,
    loc: list[Any],
    kind: str | None,
) -> None:
    body: dict[str, Any] = {"choices": choices} | (
        {"request": request_body} if request_body is not None else {}
    )
    response = client.post("/compare", json=body)
    assert response.status_code == 422, response.text
    errors = response.json()["detail"]
    assert any(e["loc"][: len(loc)] == loc and (kind is None or e["type"] == kind) for e in errors), errors
    assert "Traceback" not in response.text


def test_the_openapi_document_has_the_route_its_examples_and_the_gpu_ids(
    client: TestClient, advisor: Advisor
) -> None:
    document = client.get("/openapi.json").json()
    operation = document["paths"]["/compare"]["post"]
    assert "422" in operation["responses"] and "links" in operation["responses"]["200"]
    choice = document["components"]["schemas"]["Choice"]["properties"]["gpu"]
    assert sorted(advisor.kb.gpus) in [node.get("enum") for node in [choice, *choice.get("anyOf", [])]]
    examples = operation["requestBody"]["content"]["application/json"]["examples"]
    assert len(examples) >= 2
    for name, example in examples.items():
        response = client.post("/compare", json=example["value"])
        assert response.status_code == 200, name
        assert response.json()["best"] is not None, name


# --- the command line ---------------------------------------------------------------------------


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["compare", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


FLAGS_70B = ["--model", "llama-2-70b", "--task", "inference", "--precision", "fp16", "--batch-size", "1"]


def test_the_cli_prints_the_choices_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    choices = [
        "--choice",
        "nvidia-rtx-4090:1",
        "--choice",
        "nvidia-h100-sxm:2",
        "--choice",
        "nvidia-h100-sxm:4:rent",
    ]
    code, out, _ = run([*FLAGS_70B, "--seq-len", "4096", *choices], capsys)
    assert code == EXIT_OK
    assert "For serving a 68.98B-parameter model" in out
    for header in ("Rank", "GPUs", "GB/GPU", "tok/s", "Cost", "Total", "Verdicts", "Why"):
        assert header in out
    flat = " ".join(out.split())
    assert re.search(r"1 x RTX 4090: does not fit: needs \d+\.\d GB of 25\.8", flat)
    assert re.search(r"4 x H100 SXM5 80GB: fits, \d+ tok/s, \$[\d.]+/h", flat)


def test_the_cli_json_is_the_api_response_and_reads_a_compare_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "compare.json"
    path.write_text(json.dumps({"request": SMALL, "choices": [{"gpu": "nvidia-rtx-3090"}]}), encoding="utf-8")
    code, out, _ = run(
        [str(path), "--choice", "nvidia-h100-sxm:1:rent", "--budget-usd", "3000", "--json"], capsys
    )
    assert code == EXIT_OK
    answer = CompareResponse.model_validate_json(out)
    assert [(c.gpu, c.acquisition) for c in answer.choices] == [
        ("nvidia-rtx-3090", None),
        ("nvidia-h100-sxm", "rent"),
    ]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--choice", "nvidia-rtx-4090"], "choices"),
        (["--choice", "nvidia-rtx-4090:x", "--choice", "nvidia-rtx-3090"], "GPU:COUNT"),
        (
            ["--choice", "nvidia-rtx-4090:1:steal", "--choice", "nvidia-rtx-3090"],
            "HOW is one of buy, rent, owned",
        ),
        (["--choice", "nvidia-rtx-4090:0", "--choice", "nvidia-rtx-3090"], "choices.0.count"),
        (
            ["--choice", "nvidia-rtx-9999", "--choice", "nvidia-rtx-3090"],
            "choices.0.gpu: unknown GPU 'nvidia-rtx-9999'",
        ),
    ],
)
def test_bad_choices_are_a_message_and_exit_status_2(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["--model", "mistral-7b", "--task", "inference", *argv], capsys)
    assert code == EXIT_USAGE and out == ""
    assert said in err and "Traceback" not in err


# --- golden comparisons -------------------------------------------------------------------------


def golden_compare_names() -> list[str]:
    return sorted(p.name.removesuffix(".request.json") for p in GOLDEN_COMPARE.glob("*.request.json"))


def test_there_are_golden_comparisons() -> None:
    assert len(golden_compare_names()) >= 2


@pytest.mark.parametrize("name", golden_compare_names())
def test_comparison_matches_the_recording(name: str, request: pytest.FixtureRequest) -> None:
    body = CompareRequest.model_validate_json(
        (GOLDEN_COMPARE / f"{name}.request.json").read_text(encoding="utf-8")
    )
    answer = recorded(golden_advisor().compare(body))
    path = GOLDEN_COMPARE / f"{name}.response.json"
    if request.config.getoption("--update-golden"):
        path.write_text(as_text(answer), encoding="utf-8")
    assert path.exists(), f"no recording for {name}: run python3 scripts/dev.py golden"
    assert answer == json.loads(path.read_text(encoding="utf-8"))


def test_an_owned_choice_is_weighed_as_hardware_the_request_owns(advisor: Advisor) -> None:
    """/compare and /recommend rank the same owned cards alike: an owned choice counts among the
    hardware the user owns (rule owned-hardware-comes-first). Two owned 3090s QLoRA-tune a 70B model
    offloaded, for $5 of power over two days; a rented H100 takes 6.5 h for $8: both endpoints put the
    owned cards first."""
    workload = {"task": "qlora", "model": "llama-3-1-70b", "training_tokens_b": 0.02}
    owned = {"gpu": "nvidia-rtx-3090", "count": 2}
    compared = compare(
        advisor,
        {"workload": workload},
        {**owned, "acquisition": "owned"},
        {"gpu": "nvidia-h100-sxm", "count": 1, "acquisition": "rent"},
    )
    assert compared.best == 0  # the owned 3090s, the first choice
    assert any(step.rule == "owned-hardware-comes-first" for step in compared.trace)
    # cards the request lists already are not counted twice
    listed = compare(
        advisor,
        {"workload": workload, "constraints": {"existing_hardware": [owned]}},
        {**owned, "acquisition": "owned"},
        {"gpu": "nvidia-h100-sxm", "count": 1, "acquisition": "rent"},
    )
    owned_steps = [step for step in listed.trace if step.rule == "owned-hardware-comes-first"]
    assert listed.best == 0 and owned_steps[0].matched["constraints.existing_hardware.count"] == 1
    recommended = advisor.recommend(
        RecommendRequest.model_validate({"workload": workload, "constraints": {"existing_hardware": [owned]}})
    )
    assert recommended.recommendations[0].gpu == "nvidia-rtx-3090"
