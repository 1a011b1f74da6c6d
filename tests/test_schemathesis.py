"""Schemathesis against the ASGI app: every operation, every check, on requests generated from the
OpenAPI document (which lists the KB's ids), valid and invalid, plus its examples."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks

from api.app import create_app
from engine.recommend import default_advisor

ADMIN_TOKEN = "schemathesis-admin-token"
advisor = default_advisor()
app = create_app(advisor=advisor, admin_token=ADMIN_TOKEN)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)
load_all_checks()
# every check; max_response_time only runs with a limit, and speed is measured in bench/, not here
ALL_CHECKS = [check for check in CHECKS.get_all() if getattr(check, "__name__", "") != "max_response_time"]


def relational_violation(body: Any) -> str | None:
    """The field of a rule no JSON Schema can state, as it relates two values, that `body` breaks:
    a MoE's active parameters cannot exceed its total (the request's, or the KB model's), n_heads
    is a multiple of n_kv_heads, and gpu_count cannot exceed max_gpus."""
    workload = body.get("workload") if isinstance(body, dict) else None
    constraints = body.get("constraints") if isinstance(body, dict) else None
    if isinstance(workload, dict) and _number(workload.get("active_params_b")):
        model = advisor.kb.models.get(str(workload.get("model")))
        total = workload.get("params_b") if _number(workload.get("params_b")) else model and model.params_b
        if _number(total) and workload["active_params_b"] > total:
            return "active_params_b"
    architecture = workload.get("architecture") if isinstance(workload, dict) else None
    if isinstance(architecture, dict):
        heads, kv_heads = architecture.get("n_heads"), architecture.get("n_kv_heads")
        if _number(heads) and _number(kv_heads) and kv_heads > 0 and heads % kv_heads:
            return "architecture"
    if isinstance(constraints, dict):
        count, cap = constraints.get("gpu_count"), constraints.get("max_gpus")
        if _number(count) and _number(cap) and count > cap:
            return "gpu_count"
    return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@schema.hook
def filter_body(context: Any, body: Any) -> bool:
    """Generate few bodies that break a relational rule: each costs a call that proves one thing."""
    return relational_violation(body) is None


@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_passes_every_check(case: Any) -> None:
    admin = case.operation.path.startswith("/admin/")
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"} if admin else None
    broken = relational_violation(case.body) if case.operation.path == "/recommend" else None
    if broken is not None:
        # Schemathesis would expect a schema-valid body to be accepted; the right answer is a 422
        # naming the field (or, for a body that also breaks the schema, some field).
        response = case.call()
        assert response.status_code == 422, response.text
        if case.meta is not None and case.meta.generation.mode.is_positive:
            assert any(broken in error["loc"] for error in response.json()["detail"]), response.text
        return
    case.call_and_validate(headers=headers, checks=ALL_CHECKS)
