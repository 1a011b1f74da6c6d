"""The HTTP service per api-contract.md: every endpoint's shape, and every kind of bad input getting
its status and a body that names the field or id."""

from __future__ import annotations

import gc
import json
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from engine.knowledge.kb import KB
from engine.knowledge.paths import PROJECT_ROOT
from engine.knowledge.problems import KBInvalid
from engine.recommend import Advisor
from tests.support_http import assert_clean_error
from tests.support_json import SMALL_CONFIG, nested

GOLDEN = PROJECT_ROOT / "tests" / "golden"
SMALL = {"workload": {"task": "inference", "model": "mistral-7b"}, "constraints": {"acquisition": "buy"}}


# --- read-only endpoints ---------------------------------------------------------------------


def test_healthz_reports_the_version_of_kb_and_rules(client: TestClient, advisor: Advisor) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "kb_version": advisor.version, "open_rule_sessions": 0}


def test_gpus_list_has_the_contract_shape(client: TestClient, kb: KB) -> None:
    body = client.get("/gpus").json()
    assert len(body) == len(kb.gpus)
    for row in body:
        assert set(row) == {"id", "name", "vendor", "memory_gb", "memory_bandwidth_gbs", "platform", "class"}
        assert row["class"] in {"consumer", "workstation", "datacenter", "apple-silicon", "cpu"}
    h100 = next(row for row in body if row["id"] == "nvidia-h100-sxm")
    # NVIDIA H100 datasheet: 80 GB HBM3, SXM5
    assert (h100["memory_gb"], h100["platform"], h100["class"]) == (80, "cuda", "datacenter")


def test_one_gpu_has_every_field_and_its_sources(client: TestClient) -> None:
    body = client.get("/gpus/nvidia-h100-sxm").json()
    assert body["memory_bandwidth_gbs"] == 3350  # NVIDIA H100 datasheet: 3.35 TB/s (SXM)
    assert body["class"] == "datacenter"
    assert body["sources"] and body["sources"][0]["accessed"]


def test_providers_and_offers_carry_prices_with_their_date(client: TestClient, kb: KB) -> None:
    providers = client.get("/providers").json()
    assert {p["id"] for p in providers} == set(kb.providers)
    offers = client.get("/offers", params={"gpu": "nvidia-h100-sxm"}).json()
    assert offers and all(o["gpu"] == "nvidia-h100-sxm" and o["as_of"] for o in offers)
    assert len(offers) == sum(1 for o in kb.offers.values() if o.gpu == "nvidia-h100-sxm")
    lambda_offers = client.get("/offers", params={"provider": "lambda"}).json()
    assert lambda_offers and {o["provider"] for o in lambda_offers} == {"lambda"}
    assert len(client.get("/offers").json()) == len(kb.offers)


def test_models_list_the_catalog_with_architectures(client: TestClient, kb: KB) -> None:
    models = {m["id"]: m for m in client.get("/models").json()}
    assert set(models) == set(kb.models)
    # Llama 3.1 8B config.json: 32 layers, 8 KV heads
    llama = client.get("/models/llama-3-1-8b").json()
    assert llama["architecture"]["n_layers"] == 32 and llama["architecture"]["n_kv_heads"] == 8


def test_rules_list_metadata_and_one_rule_its_conditions(client: TestClient, advisor: Advisor) -> None:
    rules = client.get("/rules").json()
    assert [r["id"] for r in rules] == sorted(rule.id for rule in advisor.rules)
    for row in rules:
        assert (
            row["citations"]
            and row["rationale"]
            and row["status"] in {"experimental", "stable", "deprecated"}
        )
    first = rules[0]
    detail = client.get(f"/rules/{first['id']}").json()
    assert detail["id"] == first["id"] and detail["category"] == first["category"] != "uncategorized"
    assert detail["when"] and detail["then"] and detail["test_cases"] >= 2
    assert all(
        action["verb"] in {"derive", "require", "exclude", "prefer", "suggest", "warn"}
        for action in detail["then"]
    )


def test_hosts_list_the_systems_gpus_are_bought_with(client: TestClient, kb: KB) -> None:
    hosts = {h["id"]: h for h in client.get("/hosts").json()}
    assert set(hosts) == set(kb.hosts)
    hgx = client.get("/hosts/hgx-h100-8gpu").json()
    assert hgx["gpu_slots"] == 8 and hgx["prices"] and hgx["sources"]


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/gpus/no-such-gpu", "no-such-gpu"),
        ("/hosts/no-such-host", "no-such-host"),
        ("/models/no-such-model", "no-such-model"),
        ("/rules/no-such-rule", "no-such-rule"),
        ("/offers?gpu=no-such-gpu", "no-such-gpu"),
        ("/offers?provider=no-such-cloud", "no-such-cloud"),
    ],
)
def test_unknown_ids_are_404s_naming_the_id(client: TestClient, path: str, named: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert named in response.json()["detail"]


def test_version(client: TestClient, advisor: Advisor) -> None:
    body = client.get("/version").json()
    assert body["kb_version"] == advisor.version
    assert body["prices_as_of"] >= "2025-01-01"


# --- POST /recommend ----------------------------------------------------------------------------


def test_recommend_answers_as_the_engine_does(client: TestClient, advisor: Advisor) -> None:
    request = json.loads((GOLDEN / "privacy-means-no-cloud.request.json").read_text())
    response = client.post("/recommend", json=request)
    assert response.status_code == 200
    body = response.json()
    assert body["feasible"] is True
    assert body["recommendations"] and all(r["acquisition"] != "rent" for r in body["recommendations"])
    assert body["kb_version"] == advisor.version
    expected = advisor.recommend(_request(request)).model_dump(mode="json")
    assert {**body, "request_id": None} == {**expected, "request_id": None}


def test_an_unsatisfiable_request_is_a_200_with_the_reason(client: TestClient) -> None:
    request = json.loads((GOLDEN / "budget-too-small.request.json").read_text())
    response = client.post("/recommend", json=request)
    assert response.status_code == 200
    body = response.json()
    assert body["feasible"] is False and body["recommendations"] == []
    assert body["relaxation"]["constraint"] == "constraints.acquisition"
    assert "budget" in body["summary"].lower()


def _with(path: str, value: Any) -> dict[str, Any]:
    """SMALL with `value` written at the dotted `path`."""
    request = json.loads(json.dumps(SMALL))
    *parents, last = path.split(".")
    node = request
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return request


BAD_INPUTS = [
    # (case, body, the loc the 422 must name)
    ("unknown top-level key", {**SMALL, "colour": "red"}, ["body", "colour"]),
    ("unknown nested key", _with("workload.gpus", 2), ["body", "workload", "gpus"]),
    ("wrong type", _with("workload.batch_size", "eight"), ["body", "workload", "batch_size"]),
    ("negative", _with("workload.seq_len", -1), ["body", "workload", "seq_len"]),
    ("negative budget", _with("constraints.budget_usd", -5), ["body", "constraints", "budget_usd"]),
    ("absurd size", _with("workload.params_b", 1e9), ["body", "workload", "params_b"]),
    ("absurd top_k", {**SMALL, "top_k": 500}, ["body", "top_k"]),
    (
        "percent over 100",
        _with("constraints.utilization_pct", 150),
        ["body", "constraints", "utilization_pct"],
    ),
    ("unknown enum", _with("workload.task", "distill"), ["body", "workload", "task"]),
    ("unknown precision", _with("workload.precision", "fp6"), ["body", "workload", "precision"]),
    ("unknown vendor", _with("constraints.vendors", ["nvidai"]), ["body", "constraints", "vendors", 0]),
    ("unknown model", _with("workload.model", "gpt-7"), ["body", "workload", "model"]),
    (
        "unknown target GPU",
        _with("constraints.target_hardware", {"gpu": "rtx-9090", "count": 1}),
        ["body", "constraints", "target_hardware", "gpu"],
    ),
    (
        "unknown owned GPU",
        _with("constraints.existing_hardware", [{"gpu": "rtx-9090", "count": 1}]),
        ["body", "constraints", "existing_hardware", "0", "gpu"],
    ),
    (
        "unknown provider",
        _with("constraints.providers", ["aws", "acme"]),
        ["body", "constraints", "providers", "1"],
    ),
    ("task missing", {"workload": {"model": "mistral-7b"}}, ["body", "workload", "task"]),
    ("workload missing", {"constraints": {}}, ["body", "workload"]),
    # the rules that relate two values (tests/schemathesis_hooks.py teaches them to the generator)
    (
        "active above total",
        _with("workload.active_params_b", 9),  # mistral-7b has 7.24B parameters in all
        ["body", "workload", "active_params_b"],
    ),
    (
        "heads not grouped evenly",
        _with(
            "workload.architecture",
            {
                "n_layers": 32,
                "hidden_size": 4096,
                "n_heads": 32,
                "n_kv_heads": 12,
                "head_dim": 128,
                "intermediate_size": 14336,
                "vocab_size": 32000,
            },
        ),
        ["body", "workload", "architecture", "n_kv_heads"],
    ),
    (
        "more key/value heads than heads",
        _with("workload.architecture", {"n_heads": 8, "n_kv_heads": 16}),
        ["body", "workload", "architecture", "n_kv_heads"],
    ),
    (
        "heads that do not split the width, no head_dim",
        _with("workload.architecture", {"hidden_size": 4100, "n_heads": 32}),
        ["body", "workload", "architecture", "n_heads"],
    ),
    (
        # 80 multi-head layers of width 8192 hold at least their q, k, v and o projections,
        # 80 x 4 x 8192^2 = 21.5 B parameters: more than twice mistral-7b's 7.24 B
        "an architecture far larger than the model",
        _with(
            "workload.architecture", {"n_layers": 80, "hidden_size": 8192, "n_heads": 64, "n_kv_heads": 64}
        ),
        ["body", "workload", "architecture"],
    ),
    (
        "more GPUs than the cap",
        {**SMALL, "constraints": {"max_gpus": 2, "gpu_count": 4}},
        ["body", "constraints", "gpu_count"],
    ),
    (
        # sized as a transformer of 25.6M parameters, ResNet-50 was "trained" on 100M tokens in 0.3 h
        "a convolutional network",
        {"workload": {"task": "full_finetune", "model": "resnet-50"}},
        ["body", "workload", "model"],
    ),
]


@pytest.mark.parametrize(("case", "body", "loc"), BAD_INPUTS, ids=[case for case, _, _ in BAD_INPUTS])
def test_bad_input_is_a_422_naming_the_field(
    client: TestClient, case: str, body: dict[str, Any], loc: list[Any]
) -> None:
    response = client.post("/recommend", json=body)
    assert response.status_code == 422, response.text
    assert loc in [error["loc"] for error in response.json()["detail"]]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_422s_naming_the_field(client: TestClient, literal: str) -> None:
    raw = '{"workload": {"task": "inference", "params_b": LITERAL}}'.replace("LITERAL", literal)
    response = client.post("/recommend", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "workload", "params_b"]


def test_malformed_json_is_a_422_with_the_position(client: TestClient) -> None:
    raw = '{"workload": {"task": "inference"'
    response = client.post("/recommend", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "json_invalid"


def test_bodies_over_64_kb_are_413s(client: TestClient) -> None:
    padded = _with("workload.model", "mistral-7b")
    raw = json.dumps(padded) + " " * 70_000
    response = client.post("/recommend", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert "65536 bytes" in response.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: refused as it streams in
        yield raw.encode()[:40_000]
        yield raw.encode()[40_000:]

    streamed = client.post("/recommend", content=chunks(), headers={"content-type": "application/json"})
    assert streamed.status_code == 413


def test_a_body_just_under_the_limit_is_read(client: TestClient) -> None:
    raw = json.dumps(SMALL) + " " * (64 * 1024 - len(json.dumps(SMALL)) - 1)
    response = client.post("/recommend", content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 200


def test_no_error_body_shows_a_traceback_or_a_path(client: TestClient) -> None:
    bodies = [body for _, body, _ in BAD_INPUTS] + [_with("workload.params_b", 100_000)]
    for body in bodies:
        text = client.post("/recommend", json=body).text
        assert "Traceback" not in text and str(PROJECT_ROOT) not in text and ".py" not in text


def test_the_largest_allowed_sizes_are_answered_not_crashed(client: TestClient) -> None:
    """Upper bounds of every number at once: a 200 (feasible or not), never a 500 or a NaN."""
    body = {
        "workload": {
            "task": "pretrain",
            "params_b": 100_000,
            "batch_size": 1_000_000,
            "seq_len": 10_000_000,
            "training_tokens_b": 1e6,
        },
        "constraints": {"budget_usd": 1e12, "horizon_months": 240, "max_gpus": 100_000},
        "top_k": 20,
    }
    response = client.post("/recommend", json=body)
    assert response.status_code == 200
    assert response.json()["feasible"] in (True, False)


# --- free-form JSON nested deep (engine/models/free_json.py) ------------------------------------

TWO_CHOICES = [{"gpu": "nvidia-rtx-4090"}, {"gpu": "nvidia-h100-sxm"}]
REQUEST_ROUTES = ["/recommend", "/report", "/compare"]
"""the routes that take a RecommendRequest"""


def _wrapped(route: str, request: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The body `route` takes `request` in, and where the request's locs begin in it."""
    if route == "/compare":
        return {"request": request, "choices": TWO_CHOICES}, ["body", "request"]
    return request, ["body"]


@pytest.mark.parametrize("route", REQUEST_ROUTES)
@pytest.mark.parametrize("key", ["rope_scaling", "quantization_config"])
def test_a_config_value_nested_300_deep_is_a_422_naming_it(client: TestClient, route: str, key: str) -> None:
    """An hf_config key holding JSON 300 levels deep is refused by the request model, on every route
    (the report once failed serializing it back: "Maximum serialization depth exceeded")."""
    workload = {"task": "inference", "hf_config": {**SMALL_CONFIG, key: nested(300)}}
    body, loc = _wrapped(route, {"workload": workload})
    response = client.post(route, json=body)
    assert_clean_error(response, 422)
    assert [*loc, "workload", "hf_config", key] in [error["loc"] for error in response.json()["detail"]]


def _deep_bodies(route: str) -> dict[str, str]:
    """Raw bodies nested hundreds (and thousands) of levels deep, as JSON text."""
    config = {"workload": {"task": "inference", "hf_config": {**SMALL_CONFIG, "text_config": "@"}}}
    unknown = {"workload": {"task": "inference", "model": "mistral-7b"}, "x": "@"}

    def raw(request: dict[str, Any], filling: str) -> str:
        return json.dumps(_wrapped(route, request)[0]).replace('"@"', filling)

    return {
        "text_config 800 deep": raw(config, '{"text_config": ' * 800 + "{}" + "}" * 800),
        "unknown key, a list 600 deep": raw(unknown, "[" * 600 + "]" * 600),
        "unknown key, a list 30,000 deep": raw(unknown, "[" * 30_000 + "]" * 30_000),
    }


@pytest.mark.parametrize("route", REQUEST_ROUTES)
def test_a_body_nested_hundreds_deep_is_a_4xx(client: TestClient, route: str) -> None:
    for case, raw in _deep_bodies(route).items():
        response = client.post(route, content=raw, headers={"content-type": "application/json"})
        assert 400 <= response.status_code < 500, (case, response.status_code)
        assert_clean_error(response, response.status_code)


# --- start-up and reload ------------------------------------------------------------------------


def test_an_app_over_an_invalid_kb_refuses_to_start(kb_copy: Path) -> None:
    (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
    with pytest.raises(KBInvalid) as raised, TestClient(create_app(kb_copy)):
        pass
    assert any(p.check == "missing-field" for p in raised.value.problems)


def test_an_app_over_an_invalid_rule_refuses_to_start(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    (rules / "misc").mkdir(parents=True)
    (rules / "misc" / "broken.yaml").write_text("id: broken\ntitle: no conditions\n")
    with pytest.raises(KBInvalid) as raised, TestClient(create_app(rules_root=rules)):
        pass
    assert any("broken.yaml" in p.path for p in raised.value.problems)


def test_reload_is_absent_without_a_token(client: TestClient) -> None:
    assert client.post("/admin/reload").status_code == 404
    assert "/admin/reload" not in client.get("/openapi.json").json()["paths"]


def test_reload_needs_the_token_and_keeps_the_last_good_kb(kb_copy: Path) -> None:
    with TestClient(create_app(kb_copy, admin_token="s3cret")) as client:
        before = client.get("/healthz").json()["kb_version"]
        assert client.post("/admin/reload").status_code == 401
        wrong = client.post("/admin/reload", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401

        (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
        refused = client.post("/admin/reload", headers={"Authorization": "Bearer s3cret"})
        assert refused.status_code == 409
        assert any("nvidia-h100-sxm.yaml" in problem for problem in refused.json()["problems"])
        assert client.get("/healthz").json()["kb_version"] == before
        assert client.get("/gpus/nvidia-h100-sxm").status_code == 200  # still served
        assert client.post("/recommend", json=SMALL).status_code == 200

        (kb_copy / "gpus/nvidia-h100-sxm.yaml").unlink()
        for offer in (kb_copy / "offers").glob("*.yaml"):
            if "gpu: nvidia-h100-sxm\n" in offer.read_text():
                offer.unlink()
        for host in (kb_copy / "hosts").glob("hgx-h100-*.yaml"):  # the boards that name it
            host.write_text(host.read_text().replace("nvidia-h100-sxm, ", ""))
        _drop_generated_check(kb_copy)
        reloaded = client.post("/admin/reload", headers={"Authorization": "Bearer s3cret"})
        assert reloaded.status_code == 200, reloaded.text
        assert reloaded.json()["previous_kb_version"] == before != reloaded.json()["kb_version"]
        assert client.get("/gpus/nvidia-h100-sxm").status_code == 404
        assert client.get("/healthz").json()["kb_version"] == reloaded.json()["kb_version"]
        enum = _model_enum(client.get("/openapi.json").json(), "HardwareCount", "gpu")
        assert "nvidia-h100-sxm" not in enum and "nvidia-a100-sxm-80gb" in enum


def test_a_replaced_advisor_is_freed_though_the_heap_was_frozen(kb_copy: Path) -> None:
    """The service freezes its long-lived heap (api/heap.py); a reload must still free the old KB."""
    with TestClient(create_app(kb_copy, admin_token="s3cret")) as client:
        assert gc.get_freeze_count() > 0  # start-up froze the heap, the advisor with it
        client.post("/recommend", json=SMALL)
        # The rule engine and its actions refer to each other: a cycle only the collector frees.
        old = weakref.ref(client.app.state.advisor.engine)  # type: ignore[attr-defined]
        gpu = kb_copy / "gpus/nvidia-rtx-4090.yaml"
        gpu.write_text(gpu.read_text() + "# edited\n")  # a change, so the reload replaces the advisor
        reloaded = client.post("/admin/reload", headers={"Authorization": "Bearer s3cret"})
        assert reloaded.status_code == 200, reloaded.text
        assert reloaded.json()["changed"] is True
        assert old() is None
        assert client.post("/recommend", json=SMALL).status_code == 200


def test_the_openapi_document_lists_the_kb_ids(client: TestClient, kb: KB) -> None:
    document = client.get("/openapi.json").json()
    # the models the advisor sizes: resnet-50, a convolutional network, is refused with a 422
    sized = sorted(m.id for m in kb.models.values() if m.kind != "cnn")
    assert "resnet-50" in kb.models and "resnet-50" not in sized
    assert _model_enum(document, "Workload", "model") == sized
    assert _model_enum(document, "HardwareCount", "gpu") == sorted(kb.gpus)
    examples = document["paths"]["/recommend"]["post"]["requestBody"]["content"]["application/json"]
    assert len(examples["examples"]) >= 3


def test_every_example_request_is_answered(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    examples = document["paths"]["/recommend"]["post"]["requestBody"]["content"]["application/json"]
    for name, example in examples["examples"].items():
        response = client.post("/recommend", json=example["value"])
        assert response.status_code == 200, name
        assert response.json()["feasible"], name


def test_every_field_of_the_openapi_document_is_described(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    missing = [
        f"{name}.{prop}"
        for name, schema in document["components"]["schemas"].items()
        if name not in ("ValidationError", "HTTPValidationError")  # FastAPI's own
        for prop, spec in schema.get("properties", {}).items()
        if "description" not in spec
    ]
    assert missing == []


def _model_enum(document: dict[str, Any], schema: str, field: str) -> list[str]:
    prop = document["components"]["schemas"][schema]["properties"][field]
    for node in [prop, *prop.get("anyOf", [])]:
        if "enum" in node:
            return list(node["enum"])
    raise AssertionError(f"{schema}.{field} has no enum")


def _drop_generated_check(kb_root: Path) -> None:
    """Deleting a GPU and its offers by hand makes the offers differ from what the catalog import
    would generate; this test is about reload, so it runs without the generated-offers check."""
    config = kb_root.parent / "data" / "catalog-import.yaml"
    config.unlink()


def _request(body: dict[str, Any]) -> Any:
    from engine.models.request import RecommendRequest

    return RecommendRequest.model_validate(body)
