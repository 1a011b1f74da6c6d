#!/usr/bin/env python3
"""Set up and run gpu-advisor with nothing but python3 (3.11 or 3.12), pip and a C compiler.

    python3 scripts/dev.py run     # create .venv from the lock, serve the embedded KB on 127.0.0.1:8000
    python3 scripts/dev.py test    # create .venv from the lock, run lint + type checks + tests
    python3 scripts/dev.py golden  # rewrite every recorded answer (answers, reports, comparisons, chat)
    python3 scripts/dev.py lock    # re-resolve the lock files from pyproject.toml (installs uv first)
    python3 scripts/dev.py lock --upgrade   # the same, moving every pin to its newest allowed version

Every package comes from hashed lock files written by `uv pip compile --universal
--generate-hashes`, so one lock serves Linux, macOS and Windows on Python 3.11 and 3.12, and pip
refuses any file whose hash is not in it:

- requirements-build.lock: pip, setuptools and wheel. They are installed first because durable-rules
  ships only as an sdist that is compiled on install, and the project itself is built by setuptools;
  both builds run with --no-build-isolation so that pip does not fetch an unpinned setuptools for them.
- requirements-dev.lock: the runtime dependencies, the dev extra and the build tools again, resolved
  together so that the two files can never pin different versions of one package.
- requirements.lock: the runtime dependencies alone, at the versions requirements-dev.lock pins: what
  the service image installs (Dockerfile), without the test and lint tools.
- requirements-launch.lock: SkyPilot and dstack, resolved on their own: their pins (SkyPilot 0.14.1
  wants uvicorn<0.36 and click<8.2) would hold the service back, so `test` installs them into
  .venv-launch, apart, for the test that parses every launch spec with the tools' own parsers.

The lock files sit beside pyproject.toml, as the project's layout asks. .venv is deleted and made
anew whenever pyproject.toml or a lock file changes, so it holds exactly the lock. Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".installed"
PYPROJECT = "pyproject.toml"
BUILD_LOCK = "requirements-build.lock"
DEV_LOCK = "requirements-dev.lock"
RUNTIME_LOCK = "requirements.lock"
LAUNCH_LOCK = "requirements-launch.lock"
LAUNCH_TOOLS = ("skypilot==0.14.1", "dstack==0.22.5")
"""the launch tools whose parsers tests/test_launch_tools.py runs (the versions kb/providers cites)"""
LAUNCH_VENV = ROOT / ".venv-launch"
LAUNCH_STAMP = LAUNCH_VENV / ".installed"
SUPPORTED = ((3, 11), (3, 12))  # durable-rules 2.0.28 does not import on 3.13 (see pyproject.toml)

# uv is needed only to refresh the lock. It is pinned so that two people refreshing the same
# pyproject.toml get the same resolver and the same file layout; move it forward deliberately.
UV_VERSION = "0.13.9"
LOCK_VENV = ROOT / ".venv-lock"
LOCK_BIN = LOCK_VENV / ("Scripts" if os.name == "nt" else "bin")
COMPILE = (
    "pip",
    "compile",
    "--universal",
    "--generate-hashes",
    "--python-version",
    f"{SUPPORTED[0][0]}.{SUPPORTED[0][1]}",  # resolve for the oldest supported Python
    "--custom-compile-command",
    "python3 scripts/dev.py lock",
    "--quiet",
)


def _python_for_venv() -> str:
    """A supported interpreter from outside any virtual environment, since .venv may be re-created."""
    if sys.version_info[:2] in SUPPORTED:
        return getattr(sys, "_base_executable", sys.executable)  # what a running venv was made from
    for name in ("python3.12", "python3.11"):
        found = shutil.which(name)
        if found:
            return str(Path(found).resolve())  # through a venv's link to the interpreter itself
    sys.exit(
        f"gpu-advisor needs Python 3.11 or 3.12 (found {sys.version.split()[0]}); "
        "install python3.12 or python3.11 and run this again"
    )


def _run(*args: str | Path, stdin: str | None = None) -> None:
    command = [str(a) for a in args]
    result = subprocess.run(command, cwd=ROOT, check=False, input=stdin, text=True)
    if result.returncode != 0:
        sys.exit(result.returncode)


def _lock_digest() -> str:
    """What .venv was installed from: pyproject.toml and both lock files."""
    digest = hashlib.sha256()
    for name in (PYPROJECT, BUILD_LOCK, DEV_LOCK):
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()


def _pip(*args: str) -> None:
    _run(BIN / "python", "-m", "pip", "install", "--quiet", "--no-deps", *args)


def ensure_venv() -> None:
    """Create .venv from the lock files, unless it was made from the current ones."""
    wanted = _lock_digest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    if VENV.exists():
        print("pyproject.toml or a lock file changed: re-creating .venv ...", flush=True)
        shutil.rmtree(VENV)
    else:
        print("creating .venv ...", flush=True)
    _run(_python_for_venv(), "-m", "venv", VENV)
    print("installing the locked packages into .venv (the first run compiles durable-rules) ...", flush=True)
    _pip("--require-hashes", "-r", BUILD_LOCK)
    _pip("--require-hashes", "--no-build-isolation", "-r", DEV_LOCK)
    _pip("--no-build-isolation", "-e", ".")
    STAMP.write_text(wanted)


def ensure_launch_tools() -> None:
    """Create .venv-launch from requirements-launch.lock with uv (from the dev lock; seconds, where pip
    takes over a minute of CPU for its hundred packages), unless it was made from the current lock."""
    wanted = hashlib.sha256((ROOT / LAUNCH_LOCK).read_bytes()).hexdigest()
    if LAUNCH_STAMP.exists() and LAUNCH_STAMP.read_text() == wanted:
        return
    print("installing SkyPilot and dstack into .venv-launch (for the launch-spec test) ...", flush=True)
    shutil.rmtree(LAUNCH_VENV, ignore_errors=True)
    _run(BIN / "uv", "venv", "--quiet", "--python", _python_for_venv(), LAUNCH_VENV)
    launch_python = LAUNCH_VENV / ("Scripts" if os.name == "nt" else "bin") / "python"
    _run(
        BIN / "uv",
        "pip",
        "install",
        "--quiet",
        "--python",
        launch_python,
        "--require-hashes",
        "-r",
        LAUNCH_LOCK,
    )
    LAUNCH_STAMP.write_text(wanted)


def run() -> None:
    _run(BIN / "gpu-advisor", "serve", "--host", "127.0.0.1", "--port", os.environ.get("PORT", "8000"))


BROWSERS = ("chromium", "chromium-browser", "google-chrome")
"""what the report's browser test (tests/test_report.py, marker `browser`) opens the page in"""


POLICY_RC_D = Path("/usr/sbin/policy-rc.d")


@contextlib.contextmanager
def _no_service_starts() -> Iterator[None]:
    """While packages install, Debian's invoke-rc.d asks /usr/sbin/policy-rc.d whether it may start
    their services; exit status 101 forbids it (Debian's policy-rc.d interface, invoke-rc.d(8)). Without
    one, installing nginx would start a server on port 80 of the machine running the tests. One already
    there is the machine's own policy and is left as it is."""
    if POLICY_RC_D.exists():
        yield
        return
    try:
        POLICY_RC_D.write_text("#!/bin/sh\n# scripts/dev.py: no service starts while it installs\nexit 101\n")
        POLICY_RC_D.chmod(0o755)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        POLICY_RC_D.unlink(missing_ok=True)


def _debian_package(package: str, present: Callable[[], object], purpose: str) -> None:
    """Install a Debian package a test needs when it is not here and apt can (as root); else say that
    the test will be skipped. Never fails the run: such tests skip, saying why, without it."""
    if present():
        return
    apt = shutil.which("apt-get")
    if apt and hasattr(os, "geteuid") and os.geteuid() == 0:
        print(f"installing Debian's {package} for {purpose} ...", flush=True)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired), _no_service_starts():
            subprocess.run(
                [apt, "install", "-y", "-q", package],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                timeout=600,
                check=False,
            )
        if present():
            return
    print(f"no {package} could be installed: {purpose} will be skipped", flush=True)


def ensure_browser() -> None:
    """Debian's Chromium for the report's browser test (tests/test_report.py, marker `browser`)."""
    _debian_package("chromium", lambda: any(shutil.which(name) for name in BROWSERS), "the browser test")


NGINX_PATHS = ("/usr/sbin/nginx", "/usr/local/sbin/nginx")
"""where nginx lies when the PATH leaves out the sbin folders"""


def ensure_nginx() -> None:
    """Debian's nginx for the replicas test (tests/test_replicas.py, marker `replicas`)."""
    _debian_package(
        "nginx",
        lambda: shutil.which("nginx") or any(os.access(path, os.X_OK) for path in NGINX_PATHS),
        "the replicas test",
    )


def test() -> None:
    _run(BIN / "ruff", "check", ".")
    _run(BIN / "ruff", "format", "--check", ".")
    _run(BIN / "mypy")
    _run(BIN / "gpu-advisor", "kb", "lint")
    ensure_browser()
    ensure_nginx()
    ensure_launch_tools()
    _run(BIN / "python", "-m", "pytest", *_spread())


MAX_TEST_WORKERS = 4
"""pytest-xdist workers at most: past 4 the suite's longest files (tests/test_reload.py, about a minute
each of several) set its time, and each worker holds its own advisor and KB."""


def _spread() -> tuple[str, ...]:
    """pytest-xdist options spreading the suite over this machine's cores (none on one core). Work is
    handed out as workers free up (`worksteal`): a few tests take a minute, most a few milliseconds."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = min(cores, MAX_TEST_WORKERS)
    return () if workers < 2 else ("-n", str(workers), "--dist", "worksteal")


GOLDEN_TESTS = (
    "tests/test_golden.py",
    "tests/test_compare.py",
    "tests/test_chat_formats.py",
    "tests/test_report.py",
)
"""every test file that keeps recordings (each reads `--update-golden`): answers, comparisons, the chat
formats and the reports"""


def golden() -> None:
    """Rewrite every recording from the current code, then show which changed: the diff is the review."""
    _run(BIN / "python", "-m", "pytest", "-q", "--update-golden", *GOLDEN_TESTS)
    _run("git", "status", "--short", "tests/golden", "tests/golden_compare")


def lock(*options: str) -> None:
    """Re-resolve both lock files; existing pins are kept unless `--upgrade` is given."""
    if not LOCK_VENV.exists():
        _run(_python_for_venv(), "-m", "venv", LOCK_VENV)
    _run(LOCK_BIN / "python", "-m", "pip", "install", "--quiet", f"uv=={UV_VERSION}")
    uv: tuple[str | Path, ...] = (LOCK_BIN / "uv", *COMPILE, *options)
    build_system = tomllib.loads((ROOT / PYPROJECT).read_text())["build-system"]
    build_tools = "\n".join(["pip", *build_system["requires"]])
    # One resolution for everything, then the build tools alone at the versions it chose.
    _run(*uv, PYPROJECT, "-", "--extra", "dev", "--output-file", DEV_LOCK, stdin=build_tools)
    _run(*uv, "-", "--constraint", DEV_LOCK, "--output-file", BUILD_LOCK, stdin=build_tools)
    _run(*uv, PYPROJECT, "--constraint", DEV_LOCK, "--output-file", RUNTIME_LOCK)
    _run(*uv, "-", "--output-file", LAUNCH_LOCK, stdin="\n".join(LAUNCH_TOOLS))
    print(
        f"wrote {BUILD_LOCK}, {DEV_LOCK}, {RUNTIME_LOCK} and {LAUNCH_LOCK}; "
        "the next run or test re-creates .venv"
    )


TASKS = {"run": run, "test": test, "golden": golden}
LOCK_OPTIONS = {"--upgrade"}

if __name__ == "__main__":
    task, options = (sys.argv[1] if len(sys.argv) > 1 else ""), sys.argv[2:]
    if task == "lock" and set(options) <= LOCK_OPTIONS:
        lock(*options)
    elif task in TASKS and not options:
        ensure_venv()
        TASKS[task]()
    else:
        sys.exit("usage: python3 scripts/dev.py {run|test|golden|lock [--upgrade]}")
