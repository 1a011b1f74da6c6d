"""The full soak: 50,000 `POST /recommend` calls against one server, RSS at start and end, open rule
sessions and errors. It takes longer than `make bench` allows, so it runs on its own and leaves its
figures in bench/soak-full.json, which bench/RESULTS.md then reports.

    .venv/bin/python -m bench.soak [--calls N] [--seconds S]
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

from bench.http_load import soak

FULL_SOAK = Path(__file__).with_name("soak-full.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=50_000)
    parser.add_argument("--seconds", type=float, default=1800.0, help="stop early after this long")
    args = parser.parse_args()
    result = soak(args.calls, args.seconds)
    result["date"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    FULL_SOAK.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
