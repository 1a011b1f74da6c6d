"""Every launch spec the golden requests produce, read by the launch tools' own parsers: SkyPilot 0.14.1's
`sky.Task.from_yaml` (what `sky launch task.yaml` reads) and dstack 0.22.5's `parse_run_configuration`
(what `dstack apply -f` reads). The tools live in .venv-launch (requirements-launch.lock), apart from the
service's packages: SkyPilot pins uvicorn<0.36 and click<8.2. `python3 scripts/dev.py test` creates it;
without it the test is skipped, saying so."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.knowledge.kb import KB
from engine.knowledge.paths import PROJECT_ROOT
from engine.models.request import RecommendRequest
from engine.models.response import Recommendation
from engine.recommend import Advisor
from tests.golden_support import GOLDEN, golden_names

LAUNCH_PYTHON = PROJECT_ROOT / ".venv-launch" / ("Scripts" if os.name == "nt" else "bin") / "python"
CHECK = Path(__file__).with_name("launch_tools_check.py")

pytestmark = pytest.mark.skipif(
    not (PROJECT_ROOT / ".venv-launch" / ".installed").exists(),
    reason="SkyPilot and dstack live in .venv-launch, which `python3 scripts/dev.py test` creates "
    "(requirements-launch.lock)",
)

WIDE = {"workload": {"task": "inference", "model": "llama-3-1-70b"}, "constraints": {"acquisition": "rent"}}
"""rented serving of a 70B model, every option the ranking keeps: the golden requests rent on few clouds"""


def _rented(advisor: Advisor) -> list[Recommendation]:
    bodies = [json.loads((GOLDEN / f"{name}.request.json").read_text()) for name in golden_names()]
    found: dict[tuple[str | None, str | None], Recommendation] = {}
    for body in [
        *bodies,
        {**WIDE, "top_k": 20},
        {**WIDE, "top_k": 20, "constraints": {**WIDE["constraints"], "interruptible": True}},
    ]:
        for option in advisor.recommend(RecommendRequest.model_validate(body)).recommendations:
            if option.acquisition == "rent" and option.launch is not None:
                found.setdefault((option.launch.skypilot, option.launch.dstack), option)
    return list(found.values())


def _read(paths: list[Path]) -> list[dict[str, Any]]:
    ran = subprocess.run(
        [str(LAUNCH_PYTHON), str(CHECK), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, "SKYPILOT_DISABLE_USAGE_COLLECTION": "1", "HOME": str(paths[0].parent)},
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(ran.stdout.splitlines()[-1])
    return results


def test_every_launch_spec_is_read_by_the_tool_it_is_for(advisor: Advisor, kb: KB, tmp_path: Path) -> None:
    options = _rented(advisor)
    specs: list[tuple[Path, Recommendation]] = []
    for i, option in enumerate(options):
        assert option.launch is not None
        for text, suffix in ((option.launch.skypilot, "sky.yaml"), (option.launch.dstack, "dstack.yml")):
            if text is not None:
                path = tmp_path / f"{i}.{suffix}"
                path.write_text(text, encoding="utf-8")
                specs.append((path, option))
    # what the KB's names were before they were taken from the tools' own lists: refused
    wrong = tmp_path / "hyperstack.sky.yaml"
    wrong.write_text("resources:\n  cloud: hyperstack\n  accelerators: H100:1\nrun: echo\n", encoding="utf-8")
    results = {Path(r["path"]): r for r in _read([*(p for p, _ in specs), wrong])}
    assert "hyperstack" in results.pop(wrong)["error"].lower()

    refused = {p.name: r["error"] for p, r in results.items() if "error" in r}
    assert not refused, refused
    clouds = set()
    for path, option in specs:
        read, written = results[path]["read"], yaml.safe_load(path.read_text(encoding="utf-8"))
        provider = kb.providers[option.provider or ""]
        if path.name.endswith(".sky.yaml"):
            assert read["cloud"] == provider.skypilot_cloud
            assert read["instance_type"] == written["resources"].get("instance_type")
            assert read["use_spot"] == (option.pricing == "spot")
            clouds.add(read["cloud"])
        else:
            assert read["backends"] == [provider.dstack_backend]
            assert read["spot_policy"] == ("spot" if option.pricing == "spot" else "on-demand")
    assert len(specs) >= 20 and len(clouds) >= 4, (len(specs), clouds)
