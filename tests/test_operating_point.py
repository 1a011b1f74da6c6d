"""A serving fleet is planned at each plan's operating point (engine/planning/operating_point.py): the
least batch whose tokens/s carry the plan's share of the rate, by Little's law at the plan's own
speed, not at the per-user floor's. Sized at the floor, 600 requests/min to Llama 3.1 8B put 256
sequences in every copy's KV cache whatever its speed: two RTX 5090s held 128 each at 37 tokens/s
(22.9 GB a GPU) where about 20 each carry the rate at 100 (11.7 GB), and one RTX PRO 6000 held 256 at
29 where about 40 carry it at 90."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from engine.models.request import RecommendRequest
from engine.models.response import Recommendation, RecommendResponse
from engine.planning.memory import Layout, per_gpu
from engine.planning.operating_point import Demand, load, operating_point
from engine.planning.performance import Speed
from engine.planning.workload import resolve
from engine.sizing import GB
from tests.golden_support import advisor

# --- the search, on a replica whose decode step grows with its batch (a roofline: step = a + c b) ---


def roofline(fixed_s: float, per_sequence_s: float, prefill: float | None = None) -> Any:
    def speed_at(b: int) -> Speed:
        per_sequence = 1.0 / (fixed_s + per_sequence_s * b)
        return Speed(per_sequence, per_sequence * b, prefill_tokens_per_s=prefill)

    return speed_at


def test_the_least_batch_that_carries_the_rate() -> None:
    """A 10 ms step plus 0.1 ms a sequence: 1,500 tokens/s need b / (10 + 0.1 b) ms >= 1.5, b >= 17.6;
    18 sequences decode at 84.7 tokens/s each."""
    speed_at = roofline(0.010, 0.0001)
    point = operating_point(Demand(1500.0, 0.0, 10.0), 1, 256, speed_at)
    assert 17 * speed_at(17).tokens_per_s < 1500 <= 18 * speed_at(18).tokens_per_s
    assert point is not None and point.copies == 1
    assert 18 <= point.per_replica <= 18 * 9 // 8  # to within an eighth, on the larger side


def test_a_rate_one_copy_cannot_carry_takes_the_fewest_copies() -> None:
    """At most 64 sequences fit (`most`): 64 / 16.4 ms = 3,902 tokens/s a copy, so 9,000 need three
    copies, each at the least batch that carries 3,000 (42: 42 / 14.2 ms = 2,958, 43 to within an
    eighth)."""
    speed_at = roofline(0.010, 0.0001)
    point = operating_point(Demand(9000.0, 0.0, 10.0), 1, 64, speed_at)
    assert point is not None and point.copies == 3
    assert load(Demand(9000.0, 0.0, 10.0), speed_at(point.per_replica), point.per_replica, 1) <= 3
    assert 43 <= point.per_replica <= 43 * 9 // 8


def test_replicas_share_a_copy_and_prompts_take_their_time() -> None:
    """Two replicas carry the rate together; reading prompts takes a fixed share of the copy's time
    (12,000 of 40,000 prompt tokens/s: 30%), so decoding must fit in the rest."""
    speed_at = roofline(0.010, 0.0001, prefill=40_000.0)
    demand = Demand(2000.0, 12_000.0, 10.0)
    point = operating_point(demand, 2, 128, speed_at)
    assert point is not None and point.copies == 1
    b = point.per_replica
    assert load(demand, speed_at(b), b, 2) <= 1.0 < load(demand, speed_at(b * 7 // 8 - 1), b * 7 // 8 - 1, 2)


def test_too_slow_even_alone_is_still_sized_for_the_rate() -> None:
    """A replica slower than the floor at one sequence is sized for the rate regardless: the per-user
    filter rules it out, and where that rule is lifted (the way-out search) it must carry the rate. It
    was sized at one sequence and one copy, so 3,000 requests/min of Llama 3.1 70B came out as one Mac
    Studio once the floor was lifted."""
    speed_at = roofline(0.010, 0.0001)
    assert operating_point(Demand(100.0, 0.0, 150.0), 1, 256, speed_at) == operating_point(
        Demand(100.0, 0.0, None), 1, 256, speed_at
    )
    # 256 / 35.6 ms = 7,191 tokens/s a copy at the most: three copies of 6,667, b / (10 + 0.1 b) ms
    point = operating_point(Demand(20_000.0, 0.0, 150.0), 1, 256, speed_at)
    assert point is not None and point.copies == 3 and 200 <= point.per_replica <= 225


def test_the_floor_caps_the_batch_before_the_copies_are_counted() -> None:
    """At 50 tokens/s a sequence a replica holds at most 100 (20 ms); 6,000 tokens/s then need two copies
    of 5,000, not one of 256 sequences at 28 tokens/s."""
    speed_at = roofline(0.010, 0.0001)
    point = operating_point(Demand(6000.0, 0.0, 50.0), 1, 256, speed_at)
    assert point is not None and point.copies == 2
    assert speed_at(point.per_replica).tokens_per_s >= 50


# --- the answers ---

RATE = {"requests_per_min": 600, "avg_input_tokens": 512, "avg_output_tokens": 256}


def ask(model: str, serving: dict[str, Any], **constraints: Any) -> RecommendResponse:
    body = {
        "workload": {"task": "inference", "model": model, "serving": serving},
        "constraints": constraints,
        "top_k": 10,
    }
    return advisor().recommend(RecommendRequest.model_validate(body))


def held(rec: Recommendation) -> float:
    """The sequences a plan decodes at once: its tokens/s in all over each sequence's."""
    return rec.throughput.aggregate_tokens_per_s / rec.throughput.tokens_per_s


@pytest.mark.parametrize(
    ("model", "serving", "constraints"),
    [
        ("llama-3-1-8b", RATE, {"acquisition": "buy"}),
        ("gemma-3-12b", {"requests_per_min": 1000, "avg_input_tokens": 2000, "avg_output_tokens": 200}, {}),
        ("qwen3-30b-a3b", {"requests_per_min": 300}, {"acquisition": "rent"}),
    ],
)
def test_each_plan_holds_what_its_own_speed_leaves_in_flight(
    model: str, serving: dict[str, Any], constraints: dict[str, Any]
) -> None:
    """Little's law at the plan's speed: a copy decoding s tokens/s a sequence carries the demand R
    (burst headroom in) with R / s sequences, more while it also reads prompts (a share p of its
    time: R / (s (1 - p))). Each single-copy plan holds that many, to within the search's eighth, and
    never more than the floor puts in flight."""
    answer = ask(model, serving, **constraints)
    need = answer.requirements.required_tokens_per_s
    prompts = need / serving.get("avg_output_tokens", 256) * serving.get("avg_input_tokens", 512)
    floor_in_flight = float(answer.assumptions["batch_size"])
    single = [r for r in answer.recommendations if "copies" not in r.why]
    assert single
    for rec in single:
        speed = rec.throughput
        assert speed.tokens_per_s >= 10.0
        busy = prompts / speed.prefill_tokens_per_s if speed.prefill_tokens_per_s else 0.0
        least = need / (speed.tokens_per_s * (1 - busy))
        assert least * 0.97 <= held(rec) <= least * 9 / 8 + 2 * max(1, rec.gpu_count), (
            rec.gpu,
            held(rec),
            least,
        )
        assert held(rec) <= floor_in_flight + rec.gpu_count


def test_replicas_that_could_not_hold_the_floors_batch_now_serve() -> None:
    """600 requests/min with the token counts unstated: each sequence is sized at the 2,048-token
    seq_len. Four RTX 4090s as replicas would each hold 64 of the floor's 256 sequences, 27 GB with fp8
    weights, more than the 22 GB a 4090 leaves a serving engine: they were planned in tensor parallel
    (four ways, 25 tokens/s). At the rate's own operating point each replica holds 16."""
    answer = ask("llama-3-1-8b", {"requests_per_min": 600}, acquisition="buy")
    rig = next(r for r in answer.recommendations if r.gpu == "nvidia-rtx-4090" and r.gpu_count == 4)
    assert rig.parallelism == ["replicas"]
    body = {"workload": {"task": "inference", "model": "llama-3-1-8b", "serving": {"requests_per_min": 600}}}
    job = resolve(RecommendRequest.model_validate(body), advisor().kb)
    replicas = Layout("inference", "fp8", dp=4)
    assert job.batch == 256 and per_gpu(job, replicas).total / GB > 26
    assert rig.memory.per_gpu_gb < 22 and held(rig) < 128
    at_point = per_gpu(replace(job, batch=round(held(rig))), replicas)
    assert rig.memory.kv_cache_per_gpu_gb == pytest.approx(at_point.kv_cache / GB, rel=0.1)


def test_owned_cards_are_not_copied() -> None:
    """Cards the user owns serve the rate only if they carry it: one RTX 4090 holds about 40 sequences
    of 2,048 tokens at the floor, a third of 600 requests/min, and the answer named "3 x RTX 4090,
    already owned". It is ruled out, saying how many the rate needs; at 100 requests/min it serves."""
    body = {
        "workload": {"task": "inference", "model": "llama-3-1-8b", "serving": {"requests_per_min": 600}},
        "constraints": {"existing_hardware": [{"gpu": "nvidia-rtx-4090", "count": 1}]},
    }
    answer = advisor().recommend(RecommendRequest.model_validate(body))
    assert not [r for r in answer.recommendations if r.acquisition == "owned"]
    assert "the rate needs 3 x NVIDIA GeForce RTX 4090" in answer.summary
    assert "more than the 1 you own" in answer.summary
    body["workload"]["serving"] = {"requests_per_min": 100}  # type: ignore[index]
    first = advisor().recommend(RecommendRequest.model_validate(body)).recommendations[0]
    assert (first.acquisition, first.gpu_count) == ("owned", 1)


def test_degenerate_figures_give_an_answer_not_an_error() -> None:
    """A floor of 0 asks for no speed; a replica that decodes nothing carries no rate (found by
    schemathesis: a request rate of 5e-324 with its floor filtered to 0 divided by zero)."""
    speed_at = roofline(0.010, 0.0001)
    assert operating_point(Demand(1e-300, 0.0, 0.0), 1, 256, speed_at) == operating_point(
        Demand(1e-300, 0.0, None), 1, 256, speed_at
    )
    assert operating_point(Demand(100.0, 0.0, 10.0), 1, 8, lambda b: Speed(0.0, 0.0)) is None
    assert operating_point(Demand(100.0, 0.0, None), 1, 8, lambda b: Speed(0.0, 0.0)) is None


def test_a_batch_that_decodes_nothing_midway_is_bisected_not_interpolated() -> None:
    """An infinite load at one end (a speed of 0 at one sequence) has no line through it: the search
    falls back to the geometric middle rather than failing on a NaN."""

    def speed_at(b: int) -> Speed:
        per_sequence = 0.0 if b == 1 else 1.0 / (0.010 + 0.0001 * b)
        return Speed(per_sequence, per_sequence * b)

    point = operating_point(Demand(1500.0, 0.0, None), 1, 256, speed_at)
    assert point is not None and 18 <= point.per_replica <= 20
