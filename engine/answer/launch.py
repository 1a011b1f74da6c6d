"""A rented recommendation as specs the engineer launches as they are: a SkyPilot task YAML and a dstack
task run configuration, each as YAML text (`Launch`).

- SkyPilot task YAML, https://docs.skypilot.co/en/latest/reference/yaml-spec.html: `name`,
  `num_nodes` (several nodes), `resources.cloud`, `resources.instance_type`,
  `resources.accelerators` ("<name>:<count>", the GPUs of *each* node), `resources.use_spot`, `run`.
- dstack task, https://dstack.ai/docs/reference/dstack.yml/task/: `type: task`, `name`, `nodes`
  (several nodes), `commands`, `resources.gpu` ("<name>[:<memory>]:<count>", each node's GPUs),
  `backends`, `spot_policy` (spot | on-demand).

The tools' names come from the KB, in one place each: a cloud's from `Provider.skypilot_cloud` and
`Provider.dstack_backend`, a GPU's from `Gpu.skypilot_name` and `Gpu.dstack_name` (cited there). Where
one is missing, that tool's spec is absent and `Launch.unavailable` says why.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.knowledge.text import shown
from engine.models.kb import Gpu, Provider
from engine.models.response import Launch, LaunchTool

COMMAND_WORDS = {
    "inference": "serving",
    "pretrain": "training",
    "full_finetune": "fine-tuning",
    "lora": "LoRA fine-tuning",
    "qlora": "QLoRA fine-tuning",
}
# dstack run names: lowercase letters, digits and hyphens, starting with a letter, at most 41 characters
# (dstack's validate_dstack_resource_name, ^[a-z][a-z0-9-]{1,40}$); SkyPilot takes any such name too.
NAME_MAX = 41


# A string YAML reads back as that string when written plain: a word starting with a letter, and not one
# of YAML 1.1's booleans or null (https://yaml.org/type/bool.html, https://yaml.org/type/null.html).
_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9._/-]*$")
_RESERVED = frozenset(["y", "n", "yes", "no", "on", "off", "true", "false", "null"])


def _scalar(value: str | int | bool) -> str:
    """A YAML scalar: booleans and integers plain, a plain word plain, any other string double-quoted (a
    JSON string is a YAML double-quoted scalar, so "H100:8" never reads as a time or a mapping)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if _PLAIN.match(value) and value.lower() not in _RESERVED:
        return value
    return json.dumps(value, ensure_ascii=False)


def _dump(header: str, spec: dict[str, Any]) -> str:
    """The spec as block YAML, written directly (yaml.dump costs about a millisecond a spec, a fifth of
    a whole recommendation): mappings one level deep, lists of scalars, and a string ending in a newline
    as a literal block (`run: |`). yaml.safe_load reads it back to `spec` (tests/test_launch.py)."""
    lines = [f"# {header}"]
    for key, value in spec.items():
        if isinstance(value, dict):
            lines.append(f"{key}:")
            lines.extend(f"  {k}: {_scalar(v)}" for k, v in value.items())
        elif isinstance(value, list):
            lines.append(f"{key}:")
            lines.extend(f"  - {_scalar(v)}" for v in value)
        elif isinstance(value, str) and value.endswith("\n"):
            lines.append(f"{key}: |")
            lines.extend(f"  {line}" for line in value.splitlines())
        else:
            lines.append(f"{key}: {_scalar(value)}")
    return "\n".join(lines) + "\n"


def run_name(method: str, gpu: str, model: str | None) -> str:
    """A name both tools accept: the model (or the method) and the GPU, kebab-case."""
    raw = f"{model or method}-{gpu}".lower()
    name = re.sub(r"[^a-z0-9]+", "-", raw).strip("-")
    if not name[:1].isalpha():
        name = f"job-{name}"
    return name[:NAME_MAX].rstrip("-")


def command_comment(method: str, precision: str, gpu_count: int, gpu_name: str, model: str | None) -> str:
    """The placeholder command: a comment saying what to run, on one line whatever the names hold. It
    is a shell line (SkyPilot's `run`, dstack's `commands`): a line break in a GPU or model name would
    end the comment and make the rest a command, so control characters are escaped
    (engine/knowledge/text.py), as lint refuses them in KB names in the first place."""
    what = COMMAND_WORDS.get(method, method)
    of = f" of {model}" if model else ""
    return shown(f"# your {what} command{of} here: {precision}, {gpu_count} x {gpu_name}")


def launch(
    *,
    gpu: Gpu,
    provider: Provider | None,
    instance_type: str,
    gpu_count: int,
    nodes: int,
    spot: bool,
    method: str,
    precision: str,
    model: str | None,
) -> Launch:
    """The specs of one rented option: `gpu_count` GPUs over `nodes` instances of `instance_type`."""
    per_node = gpu_count // max(1, nodes)
    name = run_name(method, gpu.id, model)
    command = command_comment(method, precision, gpu_count, gpu.name, model) + "\n"
    unavailable: dict[LaunchTool, str] = {}
    provider_name = provider.name if provider else "this cloud"

    skypilot = None
    if provider is None or provider.skypilot_cloud is None:
        unavailable["skypilot"] = f"SkyPilot does not support {provider_name} as a cloud"
    elif gpu.skypilot_name is None:
        unavailable["skypilot"] = f"SkyPilot has no accelerator name for {gpu.name}"
    else:
        spec: dict[str, Any] = {"name": name}
        if nodes > 1:
            spec["num_nodes"] = nodes
        spec["resources"] = {
            "cloud": provider.skypilot_cloud,
            "instance_type": instance_type,
            "accelerators": f"{gpu.skypilot_name}:{per_node}",
            "use_spot": spot,
        }
        spec["run"] = command
        skypilot = _dump("SkyPilot task: sky launch task.yaml", spec)

    dstack = None
    if provider is None or provider.dstack_backend is None:
        unavailable["dstack"] = f"dstack has no backend for {provider_name}"
    elif gpu.dstack_name is None:
        unavailable["dstack"] = f"dstack has no GPU name for {gpu.name}"
    else:
        spec = {"type": "task", "name": name}
        if nodes > 1:
            spec["nodes"] = nodes
        spec["commands"] = [command.rstrip("\n")]
        spec["resources"] = {"gpu": f"{gpu.dstack_name}:{per_node}"}
        spec["backends"] = [provider.dstack_backend]
        spec["spot_policy"] = "spot" if spot else "on-demand"
        dstack = _dump("dstack task: dstack apply -f .dstack.yml", spec)

    return Launch(skypilot=skypilot, dstack=dstack, unavailable=unavailable)
