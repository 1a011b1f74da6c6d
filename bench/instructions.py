"""Instructions per answer: the CPU work of one pass over the bench mix, counted by valgrind's callgrind.

Milliseconds depend on the host. Shared cloud hosts of one nominal type differ by more than twice: the
commit whose bench read 4.87 ms (78516e8) answers the same mix in 11-13 ms on others, and one host
moves a figure by 10-30% between two runs a minute apart. An instruction count does not move: the same
code, KB and mix give the same count run after run (to 0.01% here, busy or idle; one run in eight read
0.3% low), since it depends on the interpreter and its libraries, not on the host's speed or load. So
two commits, or a change and its parent, are compared by their counts, and a goal in milliseconds on
one host can be carried to another by the ratio of two counts.

The count covers `Advisor.recommend` over each request of the mix once, after two warm-up passes, with
the advisor as a worker serves it (warmed, heap settled); start-up is not counted (callgrind collects
only inside the one `eval` that runs the pass). Under valgrind a pass runs about 50 times slower, so a
count takes about 40 s. String hashing is fixed (PYTHONHASHSEED=0), so dict and set orders repeat, and
the KB is parsed, never read from its cache.

    .venv/bin/python -m bench.instructions [--root DIR] [--cold]

`--root` counts another checkout of the project (`git worktree add /tmp/at-78516e8 78516e8`) with this
interpreter, as a side-by-side reference.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from engine.knowledge.paths import PROJECT_ROOT

REFERENCE_COMMIT = "78516e8"
"""the last commit whose `make bench` met the in-process goal: median 4.87 ms on the host of its day"""
REFERENCE_MS = 4.87
REFERENCE_INSTRUCTIONS = 35.1e6
"""its count per answer on its own mix (`--root` a worktree of it), with this project's interpreter"""
GOAL_MS = 5.0


def goal_instructions() -> float:
    """The in-process goal (median <= 5 ms) carried to instructions at the rate of the host that met it:
    a count at or under this would answer in 5 ms there."""
    return REFERENCE_INSTRUCTIONS * GOAL_MS / REFERENCE_MS


PASS = """
import sys
sys.path.insert(0, ".")
from bench.mix import requests
from engine.models.request import RecommendRequest
from engine.recommend import default_advisor
try:
    from bench.inprocess import in_service
    advisor = in_service(default_advisor())
except ImportError:  # a checkout from before the settled heap
    advisor = default_advisor()
mix = [RecommendRequest.model_validate(body) for body in requests().values()]
for _ in range(2):
    for request in mix:
        advisor.recommend(request)
COLD = {cold}
sizing = getattr(advisor, "sizing_cache", None)
def one_pass():
    for request in mix:
        if COLD and sizing is not None:
            sizing.clear()
        advisor.recommend(request)
print(len(mix), flush=True)
sys.stdin.readline()
eval("one_pass()")
"""
"""The child's program: warm up, say how many requests the mix has, wait for instrumentation to be on,
then the counted pass inside `eval` (the function callgrind's collection is toggled on). `COLD`: each
workload's sizing is made anew (the advisor's `SizingCache` emptied before each request), as for the
first question about a workload."""


def available() -> str | None:
    """Why instructions cannot be counted here, or None when they can."""
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not installed (Debian: valgrind)" if missing else None


def count(root: Path = PROJECT_ROOT, *, cold: bool = False) -> dict[str, float]:
    """Instructions per answer of one pass over the mix of the checkout at `root`; `cold`: with each
    workload's sizing made anew."""
    with tempfile.TemporaryDirectory() as folder:
        out, log = Path(folder) / "callgrind.out", Path(folder) / "valgrind.log"
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",  # start-up runs uninstrumented (about 5x slower, not 50x)
            "--collect-atstart=no",
            "--toggle-collect=builtin_eval",
            f"--callgrind-out-file={out}",
            f"--log-file={log}",
            sys.executable,
            "-c",
            PASS.replace("{cold}", str(cold)),
        ]
        # Fixed string hashes (dict and set orders repeat), the KB parsed rather than read from its
        # cache, and nothing else in the environment: unpickled objects, or three more variables (a
        # make's), lay the heap out otherwise, and move a count by 0.3-0.4%.
        env = {"PATH": os.defpath, "PYTHONHASHSEED": "0", "GPU_ADVISOR_CACHE": "off"}
        child = subprocess.Popen(
            command, cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert child.stdin is not None and child.stdout is not None
        requests = int(child.stdout.readline())
        subprocess.run(["callgrind_control", "--instr=on", str(child.pid)], check=True, capture_output=True)
        child.stdin.write("go\n")
        child.stdin.close()
        if child.wait() != 0:
            tail = log.read_text()[-2000:]
            raise RuntimeError(f"the counted pass failed (exit {child.returncode}): {tail}")
        totals = re.search(r"^(?:totals|summary): (\d+)", out.read_text(), re.MULTILINE)
        if totals is None:
            raise RuntimeError("callgrind wrote no totals")
    return {"requests": requests, "instructions_per_answer": int(totals.group(1)) / requests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=PROJECT_ROOT, help="the checkout to count")
    parser.add_argument("--cold", action="store_true", help="each workload's sizing made anew")
    args = parser.parse_args()
    why_not = available()
    if why_not:
        sys.exit(f"bench.instructions: {why_not}")
    print(json.dumps(count(args.root.resolve(), cold=args.cold), indent=2))


if __name__ == "__main__":
    main()
