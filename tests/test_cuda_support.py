"""GPUs CUDA 13 left behind rank lower as purchases, not as rentals (rules/acquisition/
buy-gpus-cuda-13-supports.yaml; CUDA 12.9 release notes: Maxwell, Pascal and Volta lose offline
compilation and library support in the next major release, CUDA 13.0)."""

from __future__ import annotations

from engine.models.request import RecommendRequest
from engine.recommend import Advisor

HELD_BACK = "held to CUDA 12.x"
PRETRAIN_1B = {"task": "pretrain", "params_b": 1, "training_tokens_b": 20}
"""a small pretraining run whose cheapest plans include V100s, bought used and rented"""


def _plans(advisor: Advisor, acquisition: str, objective: str = "balanced") -> list[tuple[str, str, bool]]:
    body = {
        "workload": PRETRAIN_1B,
        "constraints": {"acquisition": acquisition, "budget_usd": 40000},
        "top_k": 10,
        "objective": objective,
    }
    answer = advisor.recommend(RecommendRequest.model_validate(body))
    return [(r.gpu, r.acquisition, HELD_BACK in r.why) for r in answer.recommendations]


def test_a_bought_v100_is_marked_down_and_a_rented_one_is_not(advisor: Advisor) -> None:
    bought = [(gpu, held) for gpu, _, held in _plans(advisor, "buy") if "v100" in gpu]
    rented = [(gpu, held) for gpu, _, held in _plans(advisor, "rent", "cheapest") if "v100" in gpu]
    assert bought and all(held for _, held in bought)
    assert rented and not any(held for _, held in rented)


def test_turing_and_newer_are_not_marked_down(advisor: Advisor) -> None:
    plans = _plans(advisor, "buy")
    assert any("v100" not in gpu and "p100" not in gpu for gpu, _, _ in plans)
    assert not any(held for gpu, _, held in plans if "v100" not in gpu and "p100" not in gpu)
