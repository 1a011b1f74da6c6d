"""Schemathesis against the ASGI app as any client generating requests from the OpenAPI document
would: none of tests/schemathesis_hooks.py, every check (but max_response_time: speed is bench/'s),
every phase (examples, coverage, fuzzing, stateful), through Schemathesis' own engine as
`schemathesis run` drives it.

One thing the run is told, and it changes no request: a schema-valid body rejected (ST202) for a rule
that relates two of its values, which the document states in the field's description because no
JSON Schema keyword can (tests/relational_rules.py lists them), is not counted as a failure, provided
the same body with that one number moved inside the rule is accepted. Such rejections are counted
apart (`cross_field_422s`); every other failure is a finding.

Run it in a process of its own: `@schemathesis.hook` registers hooks for the whole process, so a
pytest process that has imported tests/schemathesis_hooks.py would apply them here too
(`run` refuses to start then). From the command line:

    .venv/bin/python -m tests.schemathesis_hookless --max-examples 200 --seed 1
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import schemathesis
from fastapi.testclient import TestClient
from schemathesis.checks import load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import events, from_schema
from schemathesis.hooks import GLOBAL_HOOK_DISPATCHER, HookContext
from schemathesis.openapi.checks import RejectedPositiveData

from api.app import create_app
from engine.recommend import default_advisor
from tests.relational_rules import body_within_rules

ADMIN_TOKEN = "schemathesis-hookless-admin-token"
PHASES = ["examples", "coverage", "fuzzing", "stateful"]


@dataclass
class HooklessRun:
    """What one run found."""

    seconds: float
    cases: int
    cases_by_phase: dict[str, int]
    failures: list[str] = field(default_factory=list)
    """one line per failing check: operation, check, title, status and the start of the response"""
    cross_field_422s: dict[str, int] = field(default_factory=dict)
    """by operation, schema-valid bodies rejected for a rule JSON Schema cannot state (not failures)"""


def run(max_examples: int = 20, seed: int | None = None) -> HooklessRun:
    """Schemathesis over the whole API with `max_examples` per operation and phase."""
    hooks = {name: found for name, found in GLOBAL_HOOK_DISPATCHER.get_all().items() if found}
    if hooks:
        raise RuntimeError(f"global Schemathesis hooks are registered ({sorted(hooks)}): use a fresh process")
    load_all_checks()
    app = create_app(advisor=default_advisor(), admin_token=ADMIN_TOKEN)
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=_config(max_examples, seed))
    # version 2's routes take version 1's bodies through the same code; their own response schema is
    # checked in tests/test_schemathesis.py (test_version_2_answers_pass_every_check)
    schema = schema.exclude(path_regex="^/v2/")
    client = TestClient(app)
    cross_field = Counter[str]()

    def filter_failure(context: HookContext, failure: Any, case: Any, response: Any) -> bool:
        if _cross_field_rejection(client, failure, case):
            cross_field[case.operation.label] += 1
            return False
        return True

    schema.hooks.register_hook_with_name(filter_failure, "filter_failure")
    started = time.monotonic()
    found = HooklessRun(seconds=0.0, cases=0, cases_by_phase={})
    for event in from_schema(schema).execute():
        _record(event, found)
    found.seconds = round(time.monotonic() - started, 1)
    found.cross_field_422s = dict(sorted(cross_field.items()))
    return found


def _config(max_examples: int, seed: int | None) -> SchemathesisConfig:
    config = SchemathesisConfig()
    config.update(seed=seed, max_failures=None)
    project = config.projects.override
    project.phases.update(phases=PHASES)
    project.checks.update(included_check_names=["all"], excluded_check_names=["max_response_time"])
    project.generation.update(max_examples=max_examples)
    project.update(headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    return config


def _cross_field_rejection(client: TestClient, failure: Any, case: Any) -> bool:
    """A 422 for a schema-valid body that breaks a relational rule, and is accepted once within it."""
    if not isinstance(failure, RejectedPositiveData) or failure.status_code != 422:
        return False
    fixed = body_within_rules(case.operation.path, case.body)
    if fixed == case.body:
        return False
    again = client.request(case.method, case.formatted_path, params=case.query, json=fixed)
    return again.status_code < 300


def _record(event: Any, found: HooklessRun) -> None:
    recorder = getattr(event, "recorder", None)
    if not isinstance(event, events.ScenarioFinished | events.FuzzScenarioFinished) or recorder is None:
        if isinstance(event, events.NonFatalError | events.FatalError):
            found.failures.append(f"error: {event}")
        return
    phase = str(getattr(event, "phase", "fuzzing"))
    found.cases += len(recorder.cases)
    found.cases_by_phase[phase] = found.cases_by_phase.get(phase, 0) + len(recorder.cases)
    for case_id, checks in recorder.checks.items():
        for check in checks:
            if check.failure_info is not None:
                found.failures.append(_describe(recorder, case_id, check))


def _describe(recorder: Any, case_id: str, check: Any) -> str:
    failure = check.failure_info.failure
    interaction = recorder.interactions.get(case_id)
    response = interaction.response if interaction is not None else None
    status = response.status_code if response is not None else "-"
    text = (response.content or b"")[:300].decode(errors="replace") if response is not None else ""
    return f"{recorder.label} | {check.name} | {failure.title} | {status} {text}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    print(json.dumps(asdict(run(args.max_examples, args.seed))))


if __name__ == "__main__":
    main()
