"""Each workload's sizing is kept across requests (engine/planning/plan_fit.py `SizingCache`): requests
about one workload share it, an answer never depends on what was asked before it, and the cache holds
what it is bounded to."""

from __future__ import annotations

import copy

from engine.models.request import RecommendRequest
from engine.planning.bounded_cache import BoundedCache
from engine.planning.plan_fit import MEMO_ITEM_BYTES, SizingCache, weigh_memo
from engine.recommend import Advisor
from tests.golden_support import advisor as golden_advisor
from tests.golden_support import golden_names, golden_request, recorded


def _fresh(advisor: Advisor) -> Advisor:
    """The advisor with an empty sizing cache (a copy: the KB, rules and option caches are shared)."""
    cold = copy.copy(advisor)
    cold.sizing_cache = SizingCache()
    return cold


def _request(budget: float | None = None, model: str = "llama-3-1-8b") -> RecommendRequest:
    return RecommendRequest.model_validate(
        {
            "workload": {"model": model, "task": "lora", "training_tokens_b": 0.1},
            "constraints": {"budget_usd": budget},
        }
    )


def test_an_answer_does_not_depend_on_the_questions_asked_before_it() -> None:
    # every recorded request asked once more of an advisor that has answered all of them, in reverse
    # order, gives the answer an advisor that has sized nothing gives
    names = golden_names()
    warm = _fresh(golden_advisor())
    for name in reversed(names):
        warm.recommend(golden_request(name))
    assert len(warm.sizing_cache) >= len(names) // 2
    for name in names:
        request = golden_request(name)
        cold = _fresh(golden_advisor())
        assert recorded(warm.recommend(request)) == recorded(cold.recommend(request)), name


def test_requests_about_one_workload_share_its_sizing() -> None:
    advisor = _fresh(golden_advisor())
    first = advisor.planned(_request(budget=5000)).reasoned.planner.sizing
    again = advisor.planned(_request(budget=20000)).reasoned.planner.sizing
    assert again is first
    assert first.memory, "the first request sized its layouts into the shared memo"
    other = advisor.planned(_request(model="qwen3-8b")).reasoned.planner.sizing
    assert other is not first
    assert len(advisor.sizing_cache) == 2


def test_a_filled_memo_is_weighed_by_what_it_holds() -> None:
    advisor = _fresh(golden_advisor())
    memo = advisor.planned(_request()).reasoned.planner.sizing
    assert weigh_memo(memo) > 100 * MEMO_ITEM_BYTES  # hundreds of specs, layouts and speeds
    assert advisor.sizing_cache.bytes == weigh_memo(memo)


def test_a_value_weighed_again_after_it_grows_evicts_the_least_recently_used() -> None:
    cache: BoundedCache[str, list[int]] = BoundedCache(100, len)
    cache.put("old", [1] * 40)
    grows: list[int] = [1] * 10
    cache.put("new", grows)
    grows.extend([1] * 60)
    cache.reweigh("new")
    assert cache.bytes == 70
    assert cache.get("old") is None
    assert cache.get("new") is grows
    cache.reweigh("gone")  # a key no longer kept is left alone
    assert cache.bytes == 70
