"""The hashed lock files pin every requirement pyproject.toml declares, at a version it allows.

scripts/dev.py installs only what the locks list (pip --no-deps --require-hashes), so a dependency
added to pyproject.toml without `python3 scripts/dev.py lock` would be missing from .venv.
"""

from __future__ import annotations

import tomllib
from collections import defaultdict

import pytest
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from engine.knowledge.paths import PROJECT_ROOT

PYPROJECT = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
BUILD_LOCK = "requirements-build.lock"
DEV_LOCK = "requirements-dev.lock"


def pins(lock: str) -> dict[NormalizedName, set[Version]]:
    """Each locked package's versions (a universal lock may pin one per Python version)."""
    found: dict[NormalizedName, set[Version]] = defaultdict(set)
    for line in (PROJECT_ROOT / lock).read_text().splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            requirement = Requirement(line.removesuffix("\\").strip())
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", line
            found[canonicalize_name(requirement.name)].add(Version(specifier.version))
    return found


DECLARED = {
    BUILD_LOCK: ["pip", *PYPROJECT["build-system"]["requires"]],
    DEV_LOCK: [
        *PYPROJECT["build-system"]["requires"],
        *PYPROJECT["project"]["dependencies"],
        *PYPROJECT["project"]["optional-dependencies"]["dev"],
    ],
}
CASES = [(lock, text) for lock, texts in DECLARED.items() for text in texts]


@pytest.mark.parametrize(("lock", "declared"), CASES, ids=[f"{lock}:{text}" for lock, text in CASES])
def test_every_declared_requirement_is_locked_at_an_allowed_version(lock: str, declared: str) -> None:
    requirement = Requirement(declared)
    locked = pins(lock).get(canonicalize_name(requirement.name))
    assert locked, f"{requirement.name} is not in {lock}: run `python3 scripts/dev.py lock`"
    allowed = {version for version in locked if requirement.specifier.contains(version, prereleases=True)}
    assert allowed == locked, f"{lock} pins {requirement.name} at {locked}, outside {requirement.specifier}"


def test_the_build_tools_are_locked_at_the_same_versions_in_both_files() -> None:
    build, dev = pins(BUILD_LOCK), pins(DEV_LOCK)
    assert {name: dev.get(name) for name in build} == build


def test_the_launch_tools_are_locked_at_the_versions_the_kb_cites() -> None:
    """requirements-launch.lock (scripts/dev.py LAUNCH_TOOLS) pins the SkyPilot and dstack whose cloud
    and backend names kb/providers cites, so tests/test_launch_tools.py parses with those releases."""
    locked = pins("requirements-launch.lock")
    assert locked[canonicalize_name("skypilot")] == {Version("0.14.1")}
    assert locked[canonicalize_name("dstack")] == {Version("0.22.5")}
    cited = " ".join(p.read_text() for p in (PROJECT_ROOT / "kb" / "providers").glob("*.yaml"))
    assert "pypi.org/project/skypilot/0.14.1/" in cited and "dstack 0.22.5" in cited
