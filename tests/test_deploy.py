"""The deployment kit (deploy/, Dockerfile): the Kubernetes manifests are valid for a pinned Kubernetes
version, their probes answer as the manifests expect, the container runs as the image builds it, and
the image builds where a Docker daemon and its base images are at hand."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from fastapi.testclient import TestClient

from api.app import create_app
from cli.main import _parser
from engine.knowledge.paths import PROJECT_ROOT
from engine.recommend import Advisor

DEPLOY = PROJECT_ROOT / "deploy"
KUBERNETES_VERSION = "1.33.0"
"""the Kubernetes release the manifests are validated against (kubernetes-validate's schemas)"""
MANIFESTS = sorted(p for p in DEPLOY.glob("*.yaml") if p.name != "kustomization.yaml")
REFRESH = DEPLOY / "refresh"
REFRESH_MANIFESTS = sorted(p for p in REFRESH.glob("*.yaml") if p.name != "kustomization.yaml")


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _container() -> dict[str, Any]:
    (deployment,) = _documents(DEPLOY / "deployment.yaml")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


@pytest.mark.parametrize(
    "path",
    MANIFESTS + REFRESH_MANIFESTS,
    ids=[p.relative_to(DEPLOY).as_posix() for p in MANIFESTS + REFRESH_MANIFESTS],
)
def test_each_manifest_is_valid_for_the_pinned_kubernetes(path: Path) -> None:
    for document in _documents(path):
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize(("folder", "manifests"), [(DEPLOY, MANIFESTS), (REFRESH, REFRESH_MANIFESTS)])
def test_the_kustomization_lists_every_manifest(folder: Path, manifests: list[Path]) -> None:
    (kustomization,) = _documents(folder / "kustomization.yaml")
    assert sorted(kustomization["resources"]) == [p.name for p in manifests]


def test_the_refresh_job_runs_commands_the_cli_takes_and_writes_only_its_volumes() -> None:
    """Each `gpu-advisor` step of the CronJob parses as the CLI's own arguments (a renamed option would
    fail every week, unseen), and it writes only to the volumes it mounts: the copy, /tmp, the store."""
    (job,) = _documents(REFRESH / "cronjob.yaml")
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    steps = [s.strip() for s in container["args"][0].split("&&")]
    invoked = [shlex.split(s)[1:] for s in steps if s.startswith("gpu-advisor ")]
    assert [i[:2] for i in invoked] == [["kb", "refresh"], ["kb", "bundle"]]
    for argv in invoked:
        assert _parser().parse_args(argv).handler is not None
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v}
    (pvc,) = _documents(REFRESH / "bundles-pvc.yaml")
    assert claims == {pvc["metadata"]["name"]}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/work", "/tmp", "/bundles"}


def test_the_pod_runs_unprivileged_on_a_read_only_root() -> None:
    (deployment,) = _documents(DEPLOY / "deployment.yaml")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    security = _container()["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"] for m in _container()["volumeMounts"]}
    assert mounts == {"/tmp"}  # the generation folder, /metrics' files and the chart scratch


def test_every_selector_finds_the_pods() -> None:
    (deployment,) = _documents(DEPLOY / "deployment.yaml")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    (service,) = _documents(DEPLOY / "service.yaml")
    (budget,) = _documents(DEPLOY / "pdb.yaml")
    (scaler,) = _documents(DEPLOY / "hpa.yaml")
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert scaler["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert budget["spec"]["minAvailable"] < scaler["spec"]["minReplicas"]  # a drain can proceed


def test_the_container_serves_on_the_port_its_probes_ask() -> None:
    container = _container()
    args = container["args"]
    port = int(args[args.index("--port") + 1])
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"http": port}
    assert args[args.index("--host") + 1] == "0.0.0.0"  # reachable from the kubelet and the Service
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] == "http"


def test_the_probes_answer_as_the_manifest_expects(advisor: Advisor) -> None:
    """Every probe path answers 200 within its timeout; a worker's answers never wait behind them."""
    container = _container()
    with TestClient(create_app(advisor=advisor)) as client:
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            spec = container[probe]
            response = client.get(spec["httpGet"]["path"])
            assert response.status_code == 200, probe
            assert 1 <= spec["timeoutSeconds"] <= spec["periodSeconds"]
        ready = client.get("/readyz").json()
        assert ready["status"] == "ready" and ready["kb_version"] == advisor.version


def test_the_dockerfile_builds_from_the_locks_and_runs_unprivileged() -> None:
    text = (PROJECT_ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert text.count("FROM ") == 2  # a build stage with the compiler, a slim one that serves
    assert "--require-hashes -r requirements-build.lock" in text
    assert "--require-hashes --no-build-isolation -r requirements.lock" in text
    assert "USER 10001:10001" in text
    image_args = text.split("CMD ", 1)[1]
    assert '"--port", "8000"' in image_args and "8000" in str(_container()["args"])


def _docker_unavailable() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return "no docker command on this machine"
    found = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=30, check=False)
    return None if found.returncode == 0 else "no Docker daemon answers (`docker info` failed)"


DOCKER_PROBLEM = _docker_unavailable()
"""why the image cannot be built here (None: it can)"""


@pytest.mark.skipif(DOCKER_PROBLEM is not None, reason=str(DOCKER_PROBLEM))
def test_the_image_builds() -> None:
    built = subprocess.run(
        ["docker", "build", "-q", "-t", "gpu-advisor:test", str(PROJECT_ROOT)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-2000:]
