"""Models by the names people use (engine/knowledge/names.py): ids, aliases and Hugging Face repo ids,
case and separators aside; an unknown name is a 422 that offers the closest known ones."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from engine.knowledge.kb import KB
from engine.knowledge.names import Names, normal_name


@pytest.mark.parametrize(
    ("name", "model_id"),
    [
        ("llama-3-1-8b", "llama-3-1-8b"),
        ("Llama-3.1-8B", "llama-3-1-8b"),
        ("llama 3.1 8b", "llama-3-1-8b"),
        ("MIXTRAL_8x7B", "mixtral-8x7b"),
    ],
)
def test_ids_match_whatever_the_case_and_separators(kb: KB, name: str, model_id: str) -> None:
    found = kb.model_named(name)
    assert found is not None and found.id == model_id


def test_every_alias_in_the_kb_names_its_model(kb: KB) -> None:
    aliases = [(alias, model.id) for model in kb.models.values() for alias in model.aliases]
    for alias, model_id in aliases:
        for spelling in (alias, alias.upper(), alias.lower()):
            found = kb.model_named(spelling)
            assert found is not None and found.id == model_id, spelling


def test_a_repo_id_and_its_name_without_the_owner(kb: KB) -> None:
    """`meta-llama/Llama-3.1-8B-Instruct` as an alias also makes `Llama-3.1-8B-Instruct` a name."""
    llama = kb.models["llama-3-1-8b"]
    models = {
        **kb.models,
        "llama-3-1-8b": llama.model_copy(update={"aliases": ["meta-llama/Llama-3.1-8B-Instruct"]}),
    }
    names = Names.of(models)
    assert names.find("meta-llama/llama-3.1-8b-instruct") == "llama-3-1-8b"
    assert names.find("Llama-3.1-8B-Instruct") == "llama-3-1-8b"


def test_a_name_two_repos_share_without_their_owners_names_neither(kb: KB) -> None:
    a, b = kb.models["llama-3-1-8b"], kb.models["mistral-7b"]
    models = {
        **kb.models,
        a.id: a.model_copy(update={"aliases": ["one/Shared-Name"]}),
        b.id: b.model_copy(update={"aliases": ["two/Shared-Name"]}),
    }
    names = Names.of(models)
    assert names.find("Shared-Name") is None
    assert names.find("one/shared-name") == a.id


def test_closest_names_for_an_unknown_one(kb: KB) -> None:
    """difflib's ratio: `llama-3-70b` is closest to the Llama 70B and Llama 3 ids."""
    closest = kb.names("models").closest("llama-3-70b")
    assert "llama-3-1-70b" in closest
    assert len(closest) <= 3
    assert kb.names("models").closest("zzzzzzzz") == []


def test_normal_name() -> None:
    assert normal_name(" Qwen/Qwen2.5-7B-Instruct ") == "qwen-qwen2-5-7b-instruct"
    assert normal_name("llama3.1:8b") == "llama3-1-8b"


def test_unknown_model_is_a_422_with_did_you_mean(client: TestClient) -> None:
    response = client.post("/recommend", json={"workload": {"task": "inference", "model": "llama-3-70b"}})
    assert response.status_code == 422
    error = next(e for e in response.json()["detail"] if e["loc"] == ["body", "workload", "model"])
    assert "did you mean" in error["msg"] and "llama-3-1-70b" in error["msg"]


def test_a_repo_style_name_is_accepted_by_the_api(client: TestClient) -> None:
    response = client.post("/recommend", json={"workload": {"task": "inference", "model": "Llama-3.1-8B"}})
    assert response.status_code == 200, response.text
    assert response.json()["requirements"]["params_b"] == pytest.approx(8.03, rel=1e-3)
