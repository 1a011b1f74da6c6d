"""The memory a worker holds is bounded whatever its traffic: caches weigh what they keep and drop the
least recently used past their bound, and requests that differ only in owned or target hardware
share the hardware options rather than each building its own (engine/planning/search.py,
engine/planning/bounded_cache.py). The attack review's soak grew a worker from 95 MB to 1.2 GB: each
request naming owned hardware was a new context, and each context kept about 3 MB of options."""

from __future__ import annotations

import gc
import random
import tracemalloc

from engine.models.request import RecommendRequest
from engine.planning.bounded_cache import BoundedCache
from engine.planning.candidates import context_for
from engine.recommend import Advisor


def test_a_cache_keeps_within_its_bytes_dropping_the_least_recently_used() -> None:
    cache: BoundedCache[str, bytes] = BoundedCache(100, len)
    for key in "abcd":
        cache.put(key, b"x" * 30)
    assert cache.bytes == 90 and len(cache) == 3 and cache.get("a") is None
    assert cache.get("b") is not None  # now the most recently used
    cache.put("e", b"x" * 30)
    assert cache.get("c") is None and cache.get("b") is not None and cache.bytes <= 100


def _owning(gpu: str, count: int) -> RecommendRequest:
    return RecommendRequest.model_validate(
        {
            "workload": {"task": "inference", "model": "mistral-7b"},
            "constraints": {"existing_hardware": [{"gpu": gpu, "count": count}]},
        }
    )


def test_requests_that_differ_in_owned_hardware_share_the_options(advisor: Advisor) -> None:
    searcher = advisor.searcher
    first = searcher.options(context_for(_owning("nvidia-rtx-4090", 1), spot=False), None)
    slices = len(searcher._slices)
    second = searcher.options(context_for(_owning("nvidia-rtx-3090", 2), spot=False), None)
    assert len(searcher._slices) == slices  # nothing new made but the owned cards themselves
    shared = {id(o) for o in first if o.acquisition != "owned"} & {id(o) for o in second}
    assert len(shared) == len([o for o in first if o.acquisition != "owned"])


def test_many_different_requests_keep_memory_bounded(advisor: Advisor) -> None:
    rng = random.Random(7)
    gpus = sorted(advisor.kb.gpus)
    requests = [_owning(rng.choice(gpus), rng.randint(1, 8)) for _ in range(40)]
    for request in requests[:5]:
        advisor.recommend(request)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for request in requests[5:]:
            advisor.recommend(request)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 35 new contexts: about 3 MB each when each built its own options; references to shared ones now
    assert grown < 8 * 2**20, f"{grown / 2**20:.1f} MB"
    for cache in (advisor.searcher._slices, advisor.searcher._options, advisor.searcher._groups):
        assert cache.bytes <= cache.max_bytes
