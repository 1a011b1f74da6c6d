"""`POST /admin/reload` under faults: every worker serves the same KB afterwards, no request fails or
mixes two KBs while it runs, an edit racing the reload is served whole or not at all, an unchanged
KB is not reloaded, and replaced rule engines free their memory."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.lifecycle import ServedKB
from engine.knowledge import paths
from engine.knowledge.kb import content_version
from engine.knowledge.problems import KBInvalid
from engine.knowledge.snapshot import Tree
from engine.reasoning.engines import make_engine
from engine.reasoning.rules import read_rules

TOKEN = "reload-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
RTX_4090 = "gpus/nvidia-rtx-4090.yaml"
OWNED_4090 = {
    "workload": {"task": "inference", "model": "mistral-7b"},
    "constraints": {"on_prem_only": True, "existing_hardware": [{"gpu": "nvidia-rtx-4090", "count": 1}]},
    "top_k": 1,
}
"""Its summary names the owned GPU, so an answer shows which KB generation it came from."""


def rename_4090(kb_root: Path, name: str) -> None:
    """Rename the RTX 4090 in its file, written whole (as editors save: a new file renamed over)."""
    gpu = kb_root / RTX_4090
    draft = kb_root.parent / "draft.yaml"  # beside the KB, not in it
    draft.write_text(re.sub(r"(?m)^name: .*$", f"name: {name}", gpu.read_text()))
    draft.replace(gpu)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def served(kb_copy: Path, tmp_path: Path) -> Iterator[str]:
    """`gpu-advisor serve --workers 2` over a copy of the KB, with an admin token."""
    port = _free_port()
    env = {
        **os.environ,
        "GPU_ADVISOR_ADMIN_TOKEN": TOKEN,
        "GPU_ADVISOR_DATA": str(kb_copy.parent / "data"),
        "GPU_ADVISOR_CACHE": str(tmp_path / "cache"),
    }
    command = [sys.executable, "-m", "cli.main", "serve", "--workers", "2", "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--kb", str(kb_copy)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(base, server)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _wait_until_up(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            error = server.stderr.read().decode() if server.stderr else ""
            raise AssertionError(f"the server exited: {error}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the server did not come up")


def _versions(base: str, samples: int = 30) -> set[str]:
    """kb_version as answered on `samples` fresh connections (so both workers answer some)."""
    return {httpx.get(f"{base}/version", timeout=10).json()["kb_version"] for _ in range(samples)}


def _reload(base: str) -> dict[str, Any]:
    answer = httpx.post(f"{base}/admin/reload", headers=ADMIN, timeout=120)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_every_worker_serves_the_reloaded_kb(served: str, kb_copy: Path) -> None:
    (before,) = _versions(served)
    rename_4090(kb_copy, "RTX 4090 after the reload")
    reloaded = _reload(served)
    assert reloaded["previous_kb_version"] == before != reloaded["kb_version"]
    assert reloaded["workers"] == 2 and reloaded["changed"] is True
    assert _versions(served) == {reloaded["kb_version"]}
    names = {httpx.get(f"{served}/gpus/nvidia-rtx-4090", timeout=10).json()["name"] for _ in range(20)}
    assert names == {"RTX 4090 after the reload"}


def test_reloads_under_load_fail_no_request_and_mix_no_answer(served: str, kb_copy: Path) -> None:
    """Answers keep coming while three reloads land; each answer is wholly of one KB generation."""
    (first,) = _versions(served, samples=4)
    generation_of = {first: "NVIDIA GeForce RTX 4090"}
    answers: list[tuple[int, str, str]] = []
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(base_url=served, timeout=60) as client:
            while not stop.is_set():
                reply = client.post("/recommend", json=OWNED_4090)
                body = reply.json() if reply.status_code == 200 else {}
                answers.append((reply.status_code, body.get("kb_version", ""), body.get("summary", "")))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for generation in (1, 2, 3):
            time.sleep(0.3)
            name = f"RTX 4090 generation {generation}"
            rename_4090(kb_copy, name)
            reloaded = _reload(served)
            assert reloaded["workers"] == 2
            generation_of[reloaded["kb_version"]] = name
        time.sleep(0.3)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert len(answers) > 20
    assert {status for status, _, _ in answers} == {200}
    for _, version, summary in answers:
        assert f"is {generation_of[version]}, already owned" in summary, (version, summary)
    assert {version for _, version, _ in answers[-4:]} == {reloaded["kb_version"]}


def test_an_unchanged_kb_is_not_reloaded(kb_copy: Path) -> None:
    with TestClient(create_app(kb_copy, admin_token=TOKEN)) as client:
        engine = client.app.state.advisor.engine  # type: ignore[attr-defined]
        reloaded = client.post("/admin/reload", headers=ADMIN).json()
        assert reloaded["changed"] is False and reloaded["kb_version"] == reloaded["previous_kb_version"]
        assert client.app.state.advisor.engine is engine  # type: ignore[attr-defined]


def test_an_edit_racing_the_reload_is_served_whole(kb_copy: Path) -> None:
    """While the reload runs, a GPU file flips between two valid contents as fast as it can be
    written. What is served afterwards is exactly one of them, under that content's version."""
    versions = {}
    for name in ("RTX 4090 A", "RTX 4090 B"):
        rename_4090(kb_copy, name)
        versions[content_version([Tree.read(kb_copy), Tree.read(paths.rules_dir())])] = name
    with TestClient(create_app(kb_copy, admin_token=TOKEN)) as client:
        stop = threading.Event()

        def flip() -> None:
            while not stop.is_set():
                for name in versions.values():
                    rename_4090(kb_copy, name)

        flipper = threading.Thread(target=flip)
        flipper.start()
        try:
            reloaded = client.post("/admin/reload", headers=ADMIN)
        finally:
            stop.set()
            flipper.join()
        assert reloaded.status_code == 200, reloaded.text
        version = reloaded.json()["kb_version"]
        assert version in versions
        assert client.get("/gpus/nvidia-rtx-4090").json()["name"] == versions[version]


def test_a_refused_reload_changes_nothing_on_any_worker(served: str, kb_copy: Path) -> None:
    (before,) = _versions(served, samples=10)
    (kb_copy / "gpus/nvidia-h100-sxm.yaml").write_text("id: nvidia-h100-sxm\n")
    refused = httpx.post(f"{served}/admin/reload", headers=ADMIN, timeout=120)
    assert refused.status_code == 409
    assert any("nvidia-h100-sxm.yaml" in problem for problem in refused.json()["problems"])
    assert _versions(served, samples=10) == {before}


RELOADS_IN_A_FRESH_PROCESS = """
import json, os, sys
from pathlib import Path
from fastapi.testclient import TestClient
from api.app import create_app
from engine.recommend import Advisor

def rss_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

kb, token, body = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
with TestClient(create_app(kb, admin_token=token)) as client:
    served = client.app.state.served
    checked = served.advisor.checked
    for _ in range(6):  # the allocator's own start-up growth is not what is measured
        served._install(Advisor.of(checked, served.rules_root))
    before = rss_mb()
    for _ in range(25):
        served._install(Advisor.of(checked, served.rules_root))
        assert client.post("/recommend", json=body).status_code == 200
    print(json.dumps({"growth_mb": rss_mb() - before}))
"""


def test_twenty_five_reloads_keep_rss_within_10_mb(kb_copy: Path) -> None:
    """durable-rules keeps each ruleset in its C core until it is deleted: about 0.8 MB per engine,
    so 25 reloads that did not free the replaced engines would add about 20 MB, twice the bound (100
    reloads took a minute and a half of the suite's ten, 40 took 40 s). Each swap here is the reload's
    own (`ServedKB._install`), of an advisor over the checked KB, in a process of its own: the full
    collection each swap ends with (api/heap.py) walks the whole heap, which in the suite's process
    holds every test's objects (0.8 s a swap there, milliseconds in a service's)."""
    ran = subprocess.run(
        [sys.executable, "-c", RELOADS_IN_A_FRESH_PROCESS, str(kb_copy), TOKEN, json.dumps(OWNED_4090)],
        cwd=paths.PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert json.loads(ran.stdout.splitlines()[-1])["growth_mb"] < 10


def test_a_request_that_reaches_a_replaced_engine_is_still_answered() -> None:
    rules = read_rules(paths.rules_dir()).rules
    facts = {"workload.task": "inference", "workload.params_b": 7.0}
    engine = make_engine(rules, "durable")
    answer = engine.run(facts)
    engine.close()
    assert engine.run(facts) == answer  # the reference engine's identical outcome


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_no_state_folder_outlives_the_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The private generations folder goes with the app, also when start-up fails."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with TestClient(create_app(admin_token=TOKEN)) as client:
        assert client.get("/healthz").status_code == 200
        assert list(temp.iterdir())  # the folder exists while the app runs
    assert not list(temp.iterdir())
    broken = tmp_path / "rules" / "misc"
    broken.mkdir(parents=True)
    (broken / "broken.yaml").write_text("id: broken\n")
    with pytest.raises(KBInvalid), TestClient(create_app(rules_root=broken.parent)):
        pass
    assert not list(temp.iterdir())


def test_a_worker_that_cannot_read_the_published_kb_publishes_its_own(
    kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rather than serve a KB of its own while the others serve the generation (a split service),
    a worker that cannot read the published generation makes the one it checked the generation."""
    shared = tmp_path / "state"
    shared.mkdir(mode=0o700)
    (shared / "generation").write_text("a-generation-whose-entry-is-gone")
    monkeypatch.setenv("GPU_ADVISOR_STATE", str(shared))
    monkeypatch.setenv("GPU_ADVISOR_WORKERS", "1")
    with TestClient(create_app(kb_copy, admin_token=TOKEN)) as client:
        served: ServedKB = client.app.state.served  # type: ignore[attr-defined]
        assert served.generations.current() == served.advisor.key is not None
        assert served.generations.convergence(served.advisor.key).complete


def test_an_unchanged_reload_waits_for_the_workers_still_switching(
    kb_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two reloads close together on two workers: the second finds the files unchanged while the
    other worker is still switching to the first's generation. It answers once that worker serves
    it, not at once with "1 of 2 workers" (a 503 for a reload that succeeds)."""
    shared = tmp_path / "state"
    shared.mkdir(mode=0o700)
    monkeypatch.setenv("GPU_ADVISOR_STATE", str(shared))
    monkeypatch.setenv("GPU_ADVISOR_WORKERS", "2")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])  # a live worker pid
    try:
        with TestClient(create_app(kb_copy, admin_token=TOKEN)) as client:
            served: ServedKB = client.app.state.served  # type: ignore[attr-defined]
            key = served.advisor.key
            assert key is not None
            (shared / f"worker-{other.pid}").write_text("the-generation-before")
            threading.Timer(0.5, (shared / f"worker-{other.pid}").write_text, (key,)).start()
            reloaded = client.post("/admin/reload", headers=ADMIN)
            assert reloaded.status_code == 200, reloaded.text
            assert reloaded.json()["changed"] is False and reloaded.json()["workers"] == 2
    finally:
        other.kill()
        other.wait()
