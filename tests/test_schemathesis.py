"""Schemathesis against the ASGI app, every check on every response: each operation on requests
generated from the OpenAPI document (its examples, the coverage and fuzzing phases, valid and
invalid), then stateful sequences that follow the document's links (`GET /gpus` to
`GET /gpus/{gpu_id}`, `POST /recommend` to the GPU it recommends, ...). The request rules that relate
two values, which no JSON Schema can state, are taught to the generator in tests/schemathesis_hooks.py,
which lists them and says why; tests/test_schemathesis_hookless.py runs without them.

The same run from the command line, against a server started with the admin token:

    SCHEMATHESIS_HOOKS=tests.schemathesis_hooks schemathesis run URL/openapi.json --checks all \\
        --phases examples,coverage,fuzzing,stateful -H "Authorization: Bearer TOKEN"
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks

from api.app import create_app
from engine.recommend import default_advisor
from tests.schemathesis_hooks import within_relational_rules  # importing it registers the hooks

ADMIN_TOKEN = "schemathesis-admin-token"
app = create_app(advisor=default_advisor(), admin_token=ADMIN_TOKEN)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)
load_all_checks()
# Every check (`--checks all`); max_response_time needs a limit and is left out: speed is measured
# in bench/, never asserted in a test.
ALL_CHECKS = [check for check in CHECKS.get_all() if getattr(check, "__name__", "") != "max_response_time"]


def _auth(case: Any) -> dict[str, str] | None:
    admin = case.operation.path.startswith("/admin/")
    return {"Authorization": f"Bearer {ADMIN_TOKEN}"} if admin else None


@schema.exclude(path_regex="^/v2/").parametrize()
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_passes_every_check(case: Any) -> None:
    case.call_and_validate(headers=_auth(case), checks=ALL_CHECKS)


VERSION_2_BODIES = {
    "/v2/recommend": [
        {"workload": {"task": "inference", "model": "llama-3-1-70b"}, "constraints": {"acquisition": "rent"}},
        {"workload": {"task": "lora", "model": "llama-3-1-8b"}, "top_k": 2},
    ],
    "/v2/compare": [
        {
            "request": {"workload": {"task": "inference", "model": "llama-3-1-8b"}},
            "choices": [{"gpu": "nvidia-rtx-4090"}, {"gpu": "nvidia-h100-sxm", "acquisition": "rent"}],
        }
    ],
}
"""version 2 takes version 1's bodies through the same code (fuzzed above with 30 examples each): a
few answers check its own response schema, every check as above, at a small share of the suite"""


@pytest.mark.parametrize(("path", "body"), [(p, b) for p, bodies in VERSION_2_BODIES.items() for b in bodies])
def test_version_2_answers_pass_every_check(path: str, body: dict[str, Any]) -> None:
    case = schema[path]["POST"].Case(body=body, query={"format": "json"})
    case.call_and_validate(checks=ALL_CHECKS)


class Workflows(schema.as_state_machine()):  # type: ignore[misc]
    """Call sequences along the OpenAPI links, each response checked as above."""

    def get_call_kwargs(self, case: Any) -> dict[str, Any]:
        headers = _auth(case)
        return {"headers": headers} if headers else {}

    def validate_response(
        self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any
    ) -> None:
        case.validate_response(
            response,
            checks=ALL_CHECKS,
            additional_checks=additional_checks,
            headers=kwargs.get("headers"),
            transport_kwargs=kwargs or None,
            recorder=self.recorder,
        )


# Bounded so this file stays a small share of the suite: 50 scenarios of up to 6 calls.
Workflows.TestCase.settings = settings(
    max_examples=50, stateful_step_count=6, deadline=None, suppress_health_check=list(HealthCheck)
)
TestWorkflows = Workflows.TestCase


def test_the_stateful_phase_follows_every_link() -> None:
    """Each link the document declares is a transition schemathesis resolved: one it could not
    resolve (an unknown operationId or parameter) would drop out of the stateful phase unseen."""
    document = app.openapi()
    declared = sum(
        len(response.get("links", {}))
        for operations in document["paths"].values()
        for operation in operations.values()
        for response in operation["responses"].values()
    )
    assert declared >= 9 and schema.statistic.transitions.selected == declared


SMALL = {"task": "inference", "model": "mistral-7b"}


CONFIG = {
    "num_hidden_layers": 4,
    "hidden_size": 256,
    "num_attention_heads": 8,
    "intermediate_size": 512,
    "vocab_size": 32000,
}

TINY_CONFIG = {"num_hidden_layers": 1, "hidden_size": 4, "num_attention_heads": 1, "vocab_size": 32}


@pytest.mark.parametrize(
    "workload",
    [
        {**SMALL, "active_params_b": 9},
        {"task": "inference", "model": "mixtral-8x7b", "params_b": 1},  # below the model's 12.9B active
        {**SMALL, "architecture": {"n_heads": 32, "n_kv_heads": 12}},
        {**SMALL, "architecture": {"n_heads": 8, "n_kv_heads": 16}},
        {**SMALL, "architecture": {"hidden_size": 4100, "n_heads": 32}},
        {**SMALL, "architecture": {"hidden_size": 4100, "n_heads": 32, "n_kv_heads": 12}},
        {**SMALL, "architecture": {"n_layers": 80, "hidden_size": 8192, "n_heads": 64, "n_kv_heads": 64}},
        {**SMALL, "architecture": {"n_layers": 1000, "hidden_size": 1_000_000, "n_heads": 10_000}},
        {"task": "inference", "hf_config": {**CONFIG, "num_key_value_heads": 3}},
        {"task": "inference", "hf_config": {**CONFIG, "num_local_experts": 4, "num_experts_per_tok": 8}},
        {"task": "inference", "hf_config": {**CONFIG, "hidden_size": 250}},  # 8 heads, no head_dim
        {"task": "inference", "hf_config": {"text_config": {**CONFIG, "num_key_value_heads": 3}}},
        # a config of a few hundred parameters: no active count a request may state is within it
        {"task": "inference", "hf_config": {**TINY_CONFIG, "intermediate_size": 1}, "active_params_b": 2.4},
        {"task": "inference", "hf_config": {**CONFIG, "num_hidden_layers": 1000, "hidden_size": 1_000_000}},
    ],
)
def test_the_hooks_bring_each_relational_422_within_the_rules(workload: dict[str, Any]) -> None:
    """Each body is a 422 as it stands (tests/test_api.py names the fields) and a 200 once the hooks
    have moved it within the rules, so the generator's positive cases are positive."""
    client = TestClient(app)
    assert client.post("/recommend", json={"workload": workload}).status_code == 422
    fixed = within_relational_rules({"workload": workload})
    assert client.post("/recommend", json=fixed).status_code == 200, fixed


@pytest.mark.parametrize(
    "workload",
    [
        {"task": "inference", "hf_config": {**CONFIG, "vocab_size": None}},
        {"task": "inference", "hf_config": {**CONFIG, "num_local_experts": 8}},  # no experts per token
        {"task": "inference", "hf_config": {"text_config": {}}},
        {"task": "inference", "hf_config": {**CONFIG, "kv_lora_rank": 64}},  # no latent head widths
    ],
)
def test_the_hooks_leave_what_the_document_states_to_the_document(workload: dict[str, Any]) -> None:
    """A body the JSON Schema calls invalid is no business of the hooks: they change nothing in it
    (so tests/schemathesis_hookless.py, which asks them which 422s are cross-field, cannot excuse it)."""
    assert TestClient(app).post("/recommend", json={"workload": workload}).status_code == 422
    assert within_relational_rules({"workload": workload}) == {"workload": workload}
