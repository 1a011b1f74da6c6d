"""Schemathesis with none of the project's hooks, as any client generating requests from the OpenAPI
document would (tests/schemathesis_hookless.py says how): every check but max_response_time, every
phase, no failure. It runs in a process of its own, where tests/schemathesis_hooks.py is never
imported; a run in a process that has imported it refuses to start.

`schemathesis_hookless.run(max_examples=...)` is the same run at a larger size, for bench/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from engine.knowledge.paths import PROJECT_ROOT
from tests import schemathesis_hookless

MAX_EXAMPLES = 20
"""per operation and phase: about 4,000 requests, most of them the coverage phase's"""
CI_SEED = 20_261_126
"""CI runs the same requests every time (a red build must be reproducible); local runs explore anew"""


def test_a_client_generating_from_the_document_meets_no_failure() -> None:
    command = [sys.executable, "-m", "tests.schemathesis_hookless", "--max-examples", str(MAX_EXAMPLES)]
    if os.environ.get("CI"):
        command += ["--seed", str(CI_SEED)]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=540, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    print(f"hookless Schemathesis: {found['cases']} requests in {found['seconds']} s")
    assert set(found["cases_by_phase"]) == set(schemathesis_hookless.PHASES)
    assert found["failures"] == [], "\n".join(found["failures"])


def test_a_process_with_the_hooks_registered_is_refused() -> None:
    """`@schemathesis.hook` registers for the whole process: a run there would not be hookless."""
    import tests.schemathesis_hooks  # noqa: F401  (registers map_case for this process)

    with pytest.raises(RuntimeError, match="map_case"):
        schemathesis_hookless.run(max_examples=1)
