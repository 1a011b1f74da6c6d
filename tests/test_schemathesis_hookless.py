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

MAX_EXAMPLES = 10
"""per operation and phase: about 3,800 requests, most of them the coverage phase's (which the
number does not bound); `schemathesis_hookless.run(max_examples=150)` explores further"""
CI_SEED = 20_261_126
"""CI runs the same requests every time (a red build must be reproducible); local runs explore anew"""
RUN_TEST = "test_a_client_generating_from_the_document_meets_no_failure"


def start_run() -> subprocess.Popen[str]:
    """The hookless run, started in a process of its own (tests/conftest.py starts it as soon as the
    suite is collected, so it runs on the second core beside the other tests)."""
    command = [sys.executable, "-m", "tests.schemathesis_hookless", "--max-examples", str(MAX_EXAMPLES)]
    if os.environ.get("CI"):
        command += ["--seed", str(CI_SEED)]
    pipe = subprocess.PIPE
    return subprocess.Popen(command, cwd=PROJECT_ROOT, stdout=pipe, stderr=pipe, text=True)


def test_a_client_generating_from_the_document_meets_no_failure(request: pytest.FixtureRequest) -> None:
    run = getattr(request.config, "hookless_run", None) or start_run()
    try:
        out, err = run.communicate(timeout=540)
    finally:
        run.kill()
    assert run.returncode == 0, err[-3000:]
    found = json.loads(out)
    print(f"hookless Schemathesis: {found['cases']} requests in {found['seconds']} s")
    assert set(found["cases_by_phase"]) == set(schemathesis_hookless.PHASES)
    assert found["failures"] == [], "\n".join(found["failures"])


def test_a_process_with_the_hooks_registered_is_refused() -> None:
    """`@schemathesis.hook` registers for the whole process: a run there would not be hookless."""
    import tests.schemathesis_hooks  # noqa: F401  (registers map_case for this process)

    with pytest.raises(RuntimeError, match="map_case"):
        schemathesis_hookless.run(max_examples=1)
