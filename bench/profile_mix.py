"""Profile `Advisor.recommend` over the bench mix with cProfile (a development aid).

.venv/bin/python -m bench.profile_mix [--rounds N] [--sort tottime|cumulative] [--limit N]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

from bench.mix import requests
from engine.models.request import RecommendRequest
from engine.recommend import default_advisor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10, help="passes over the mix")
    parser.add_argument("--sort", default="tottime", help="pstats sort key")
    parser.add_argument("--limit", type=int, default=40, help="rows printed")
    args = parser.parse_args()
    advisor = default_advisor()
    mix = [RecommendRequest.model_validate(body) for body in requests().values()]
    for request in mix:  # warm-up: option lists and caches built as in the service
        advisor.recommend(request)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.rounds):
        for request in mix:
            advisor.recommend(request)
    profiler.disable()
    pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.limit)


if __name__ == "__main__":
    main()
