"""Parse launch specs with SkyPilot's and dstack's own parsers; run by tests/test_launch_tools.py with
the Python of .venv-launch, where those tools live apart from the service's packages. Standard library,
the two tools and PyYAML only: it imports nothing of gpu-advisor.

    python launch_tools_check.py SPEC...   # a SkyPilot spec ends in .sky.yaml, a dstack one in .dstack.yml

Prints one JSON list: per spec, what the tool read from it, or its error."""

from __future__ import annotations

import json
import sys
from typing import Any

import sky
import yaml
from dstack._internal.core.models.configurations import parse_run_configuration


def skypilot(path: str) -> dict[str, Any]:
    task = sky.Task.from_yaml(path)  # what `sky launch task.yaml` reads
    (resources,) = task.resources
    return {
        "cloud": str(resources.cloud).lower() if resources.cloud else None,
        "instance_type": resources.instance_type,
        "accelerators": resources.accelerators,
        "use_spot": resources.use_spot,
        "num_nodes": task.num_nodes,
    }


def dstack(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as file:
        configuration = parse_run_configuration(yaml.safe_load(file))  # what `dstack apply -f` reads
    gpu = configuration.resources.gpu
    return {
        "type": configuration.type,
        "gpu": list(gpu.name or []),
        "gpu_count": [gpu.count.min, gpu.count.max],
        "backends": [b.value for b in configuration.backends or []],
        "spot_policy": configuration.spot_policy.value if configuration.spot_policy else None,
        "nodes": getattr(configuration, "nodes", 1),
    }


def main(paths: list[str]) -> None:
    results = []
    for path in paths:
        try:
            read = skypilot(path) if path.endswith(".sky.yaml") else dstack(path)
        except Exception as exc:  # the tool's refusal, whatever its type, is the result
            results.append({"path": path, "error": f"{type(exc).__name__}: {exc}"[:500]})
        else:
            results.append({"path": path, "read": read})
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
