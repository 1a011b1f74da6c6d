"""Launch specs (`Recommendation.launch`): each rented recommendation as a SkyPilot task YAML and a dstack
task run configuration that validate against the tools' documented fields, name the plan's GPU and count
per node, follow its pricing and nodes, and say why when a tool cannot run it.

Neither tool publishes a JSON Schema of these files, so the models below are strict (extra="forbid") and
hold exactly the fields the specs use, as the tools' reference pages define them:
- SkyPilot task YAML: https://docs.skypilot.co/en/latest/reference/yaml-spec.html (`name`, `num_nodes`,
  `resources.cloud`, `resources.instance_type`, `resources.accelerators` "<name>:<count per node>",
  `resources.use_spot`, `run`);
- dstack task: https://dstack.ai/docs/reference/dstack.yml/task/ (`type: task`, `name`, `nodes`,
  `commands`, `resources.gpu` "<name>[:<memory>]:<count per node>", `backends`, `spot_policy`), with run
  names as dstack's validate_dstack_resource_name checks them (^[a-z][a-z0-9-]{1,40}$).
"""

from __future__ import annotations

import csv
from typing import Any, Literal

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from cli.launch import launch_spec
from cli.main import EXIT_OK, EXIT_PROBLEMS, main
from engine.answer.launch import _dump, launch
from engine.knowledge.kb import KB
from engine.knowledge.paths import PROJECT_ROOT
from engine.models.request import RecommendRequest
from engine.models.response import Recommendation, RecommendResponse
from engine.recommend import Advisor

RUN_NAME = r"^[a-z][a-z0-9-]{1,40}$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SkyResources(Strict):
    cloud: str
    instance_type: str
    accelerators: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*:[1-9]\d*$")
    use_spot: bool


class SkyTask(Strict):
    name: str = Field(pattern=RUN_NAME)
    num_nodes: PositiveInt | None = None
    resources: SkyResources
    run: str


class DstackResources(Strict):
    gpu: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(:\d+GB)?:[1-9]\d*$")


class DstackTask(Strict):
    type: Literal["task"]
    name: str = Field(pattern=RUN_NAME)
    nodes: PositiveInt | None = None
    commands: list[str] = Field(min_length=1)
    resources: DstackResources
    backends: list[str] = Field(min_length=1, max_length=1)
    spot_policy: Literal["spot", "on-demand"]


def parse(text: str) -> Any:
    return yaml.safe_load(text)


def answer(advisor: Advisor, body: dict[str, Any]) -> RecommendResponse:
    return advisor.recommend(RecommendRequest.model_validate(body))


def rented(response: RecommendResponse) -> list[Recommendation]:
    return [r for r in response.recommendations if r.acquisition == "rent"]


def check(option: Recommendation, kb: KB) -> None:
    """Every spec of a rented option validates and agrees with the plan."""
    assert option.launch is not None
    gpu = kb.gpus[option.gpu]
    assert option.provider is not None
    provider = kb.providers[option.provider]
    per_node = option.gpu_count // option.nodes
    assert per_node * option.nodes == option.gpu_count
    several = option.nodes if option.nodes > 1 else None
    if option.launch.skypilot is not None:
        sky = SkyTask.model_validate(parse(option.launch.skypilot))
        assert sky.resources.accelerators == f"{gpu.skypilot_name}:{per_node}"
        assert sky.resources.cloud == provider.skypilot_cloud
        assert sky.resources.instance_type == option.instance_type
        assert sky.resources.use_spot is (option.pricing == "spot")
        assert sky.num_nodes == several
        assert sky.run.startswith("# your ")
    else:
        assert "skypilot" in option.launch.unavailable
    if option.launch.dstack is not None:
        dstack = DstackTask.model_validate(parse(option.launch.dstack))
        assert dstack.resources.gpu == f"{gpu.dstack_name}:{per_node}"
        assert dstack.backends == [provider.dstack_backend]
        assert dstack.spot_policy == ("spot" if option.pricing == "spot" else "on-demand")
        assert dstack.nodes == several
        assert dstack.commands[0].startswith("# your ")
    else:
        assert "dstack" in option.launch.unavailable


BOTH_TOOLS = ["aws", "azure", "gcp", "lambda", "nebius", "runpod", "vast", "verda"]
"""providers both SkyPilot and dstack launch on (kb/providers: skypilot_cloud and dstack_backend)"""


def test_rented_recommendations_carry_specs_that_validate(advisor: Advisor, kb: KB) -> None:
    response = answer(
        advisor,
        {
            "workload": {"task": "inference", "model": "llama-3-1-70b"},
            "constraints": {"acquisition": "rent"},
            "top_k": 5,
        },
    )
    options = rented(response)
    assert options
    for option in options:
        check(option, kb)
    # among clouds both tools launch on, the first option on a GPU both tools name
    both = [
        option
        for option in rented(
            answer(
                advisor,
                {
                    "workload": {"task": "inference", "model": "llama-3-1-70b"},
                    "constraints": {"acquisition": "rent", "providers": BOTH_TOOLS},
                    "top_k": 5,
                },
            )
        )
        if kb.gpus[option.gpu].skypilot_name and kb.gpus[option.gpu].dstack_name
    ]
    first = both[0]
    assert first.launch is not None and first.launch.skypilot and first.launch.dstack
    assert first.launch.unavailable == {}


def test_bought_recommendations_have_no_launch(advisor: Advisor) -> None:
    response = answer(
        advisor,
        {"workload": {"task": "inference", "model": "mistral-7b"}, "constraints": {"acquisition": "buy"}},
    )
    assert response.recommendations
    assert all(r.launch is None for r in response.recommendations)


def test_spot_pricing_is_use_spot_and_spot_policy(advisor: Advisor, kb: KB) -> None:
    response = answer(
        advisor,
        {
            "workload": {"task": "lora", "model": "llama-3-1-8b"},
            "constraints": {"acquisition": "rent", "interruptible": True, "providers": ["aws"]},
            "top_k": 10,
        },
    )
    spot = [r for r in rented(response) if r.pricing == "spot"]
    assert spot, [r.pricing for r in rented(response)]
    for option in spot:
        check(option, kb)
        assert option.launch is not None and option.launch.skypilot
        assert parse(option.launch.skypilot)["resources"]["use_spot"] is True
        if option.launch.dstack:  # absent for a GPU dstack has no name for (B300)
            assert parse(option.launch.dstack)["spot_policy"] == "spot"


def test_several_nodes_give_num_nodes_and_nodes(kb: KB) -> None:
    spec = launch(
        gpu=kb.gpus["nvidia-h100-sxm"],
        provider=kb.providers["aws"],
        instance_type="p5.48xlarge",
        gpu_count=16,
        nodes=2,
        spot=False,
        method="pretrain",
        precision="bf16",
        model=None,
    )
    assert spec.skypilot and spec.dstack
    sky = SkyTask.model_validate(parse(spec.skypilot))
    dstack = DstackTask.model_validate(parse(spec.dstack))
    assert (sky.num_nodes, sky.resources.accelerators) == (2, "H100:8")
    assert (dstack.nodes, dstack.resources.gpu) == (2, "H100:8")
    assert sky.resources.use_spot is False and dstack.spot_policy == "on-demand"


def test_several_nodes_in_an_answer(advisor: Advisor, kb: KB) -> None:
    response = answer(
        advisor,
        {
            "workload": {"task": "full_finetune", "model": "llama-3-1-70b"},
            "constraints": {"acquisition": "rent"},
            "top_k": 10,
        },
    )
    several = [r for r in rented(response) if r.nodes > 1]
    assert several  # 16 x Gaudi2 on Shadeform, 16 x H200 on Prime Intellect, ... over 2 nodes
    for option in rented(response):
        check(option, kb)  # num_nodes / nodes equal the plan's nodes, the GPUs per node its count
    with_sky = [r for r in several if r.launch is not None and r.launch.skypilot]
    assert with_sky and parse(with_sky[0].launch.skypilot)["num_nodes"] == with_sky[0].nodes  # type: ignore[union-attr]


def test_a_provider_neither_tool_supports_has_no_specs_and_says_why(kb: KB) -> None:
    spec = launch(
        gpu=kb.gpus["nvidia-h100-sxm"],
        provider=kb.providers["coreweave"],
        instance_type="NVIDIA HGX H100 (8x H100 80GB)",
        gpu_count=8,
        nodes=1,
        spot=False,
        method="inference",
        precision="bf16",
        model="llama-3-1-70b",
    )
    assert spec.skypilot is None and spec.dstack is None
    assert set(spec.unavailable) == {"skypilot", "dstack"}
    assert "CoreWeave" in spec.unavailable["skypilot"] and "CoreWeave" in spec.unavailable["dstack"]


def test_one_tool_missing_keeps_the_other(kb: KB) -> None:
    spec = launch(
        gpu=kb.gpus["nvidia-h100-sxm"],
        provider=kb.providers["lambda"],
        instance_type="gpu_8x_h100_sxm5",
        gpu_count=8,
        nodes=1,
        spot=False,
        method="inference",
        precision="fp8",
        model=None,
    )
    assert spec.skypilot and spec.dstack and not spec.unavailable
    no_dstack_name = launch(
        gpu=kb.gpus["nvidia-b300"],
        provider=kb.providers["verda"],
        instance_type="1B300.30V",
        gpu_count=1,
        nodes=1,
        spot=False,
        method="inference",
        precision="bf16",
        model=None,
    )
    assert no_dstack_name.skypilot and no_dstack_name.dstack is None
    assert "B300" in no_dstack_name.unavailable["dstack"]


def test_an_answer_through_an_unsupported_provider_says_why(advisor: Advisor, kb: KB) -> None:
    response = answer(
        advisor,
        {
            "workload": {"task": "inference", "model": "llama-3-1-8b"},
            "constraints": {"acquisition": "rent", "providers": ["coreweave"]},
        },
    )
    options = rented(response)
    assert options
    for option in options:
        check(option, kb)
        assert option.launch is not None and option.launch.skypilot is None and option.launch.dstack is None


def test_every_skypilot_name_is_one_skypilot_uses_for_that_gpu(kb: KB) -> None:
    """Gpu.skypilot_name is a name of the catalog snapshot (gpu-name-map.csv, or the import's `names`)."""
    data = PROJECT_ROOT / "data"
    with (data / "cloud-catalog" / "gpu-name-map.csv").open(encoding="utf-8") as rows:
        names = {row["skypilot_accelerator_name"] for row in csv.DictReader(rows)}
    names |= set(yaml.safe_load((data / "catalog-import.yaml").read_text(encoding="utf-8"))["names"])
    for gpu in kb.gpus.values():
        if gpu.skypilot_name is not None:
            assert gpu.skypilot_name in names, gpu.id


SKYPILOT_CLOUDS = frozenset(
    (
        "aws",
        "azure",
        "gcp",
        "ibm",
        "lambda",
        "scp",
        "oci",
        "kubernetes",
        "runpod",
        "vast",
        "vsphere",
        "cudo",
        "fluidstack",
        "paperspace",
        "primeintellect",
        "do",
        "nebius",
        "ssh",
        "slurm",
        "hyperbolic",
        "seeweb",
        "shadeform",
        "yotta",
        "mithril",
        "verda",
    )
)
"""SkyPilot 0.14.1's sky/skylet/constants.py ALL_CLOUDS: what a task YAML's `cloud:` accepts (its schema,
sky/utils/schemas.py, rejects anything else: "'hyperstack' is not one of ['aws', ...]")"""
DSTACK_BACKENDS = frozenset(
    (
        "amddevcloud",
        "aws",
        "azure",
        "cloudrift",
        "crusoe",
        "cudo",
        "datacrunch",
        "daytona",
        "digitalocean",
        "dstack",
        "gcp",
        "hotaisle",
        "jarvislabs",
        "kubernetes",
        "lambda",
        "lium",
        "remote",
        "nebius",
        "oci",
        "runpod",
        "seeweb",
        "tensordock",
        "vastai",
        "verda",
        "vultr",
        "slurm",
    )
)
"""dstack 0.22.5's BackendType (dstack/_internal/core/models/backends/base.py): what `backends:` accepts"""


def test_every_launch_name_is_one_the_tool_accepts(kb: KB) -> None:
    """The KB's cloud names are the tools' own (kb/providers cite the versions): a name taken from
    SkyPilot's catalog folders once gave hyperstack, jarvislabs and lium specs SkyPilot rejects."""
    for provider in kb.providers.values():
        assert provider.skypilot_cloud is None or provider.skypilot_cloud in SKYPILOT_CLOUDS, provider.id
        assert provider.dstack_backend is None or provider.dstack_backend in DSTACK_BACKENDS, provider.id
    assert {p.id for p in kb.providers.values() if p.catalog_name and p.skypilot_cloud is None} == {
        "hyperstack",
        "jarvislabs",
        "lium",
    }


def test_launch_picks_the_best_option_the_tool_can_launch_and_names_those_skipped(advisor: Advisor) -> None:
    response = answer(
        advisor,
        {"workload": {"task": "inference", "model": "llama-3-1-8b"}, "constraints": {"acquisition": "rent"}},
    )
    first, second = [r for r in rented(response) if r.launch and r.launch.skypilot][:2]
    assert first.launch is not None and second.launch is not None
    unlaunchable = first.launch.model_copy(
        update={"skypilot": None, "unavailable": {"skypilot": "SkyPilot does not support X as a cloud"}}
    )
    edited = [first.model_copy(update={"launch": unlaunchable}), second]
    text, note = launch_spec(response.model_copy(update={"recommendations": edited}), "skypilot")
    assert text == second.launch.skypilot
    assert note == (
        f"skipped #{first.rank} ({first.gpu_count} x {first.gpu} on {first.provider}: SkyPilot does not "
        f"support X as a cloud); launching #{second.rank}"
    )


def test_every_rented_gpu_and_catalog_cloud_has_skypilot_names(kb: KB) -> None:
    for provider in kb.providers.values():
        if provider.catalog_name is not None and provider.skypilot_cloud is not None:
            assert provider.skypilot_cloud == provider.catalog_name, provider.id
    for offer in kb.offers.values():
        if kb.providers[offer.provider].skypilot_cloud is not None:
            assert kb.gpus[offer.gpu].skypilot_name is not None, offer.id


def test_cli_launch_prints_the_first_rented_spec(capsys: pytest.CaptureFixture[str], kb: KB) -> None:
    argv = ["recommend", "--model", "llama-3-1-70b", "--task", "inference", "--acquisition", "rent"]
    argv += ["--providers", ",".join(BOTH_TOOLS)]
    assert main([*argv, "--launch", "skypilot"]) == EXIT_OK
    sky = SkyTask.model_validate(parse(capsys.readouterr().out))
    assert main([*argv, "--launch", "dstack"]) == EXIT_OK
    dstack = DstackTask.model_validate(parse(capsys.readouterr().out))
    assert main([*argv, "--json"]) == EXIT_OK
    options = rented(RecommendResponse.model_validate_json(capsys.readouterr().out))
    # each tool's spec is that of the best option the tool can launch (a GPU it has a name for)
    first_sky = next(o for o in options if kb.gpus[o.gpu].skypilot_name)
    first_dstack = next(o for o in options if kb.gpus[o.gpu].dstack_name)
    per_node = f"{first_sky.gpu_count // first_sky.nodes}"
    assert sky.resources.accelerators == f"{kb.gpus[first_sky.gpu].skypilot_name}:{per_node}"
    per_node = f"{first_dstack.gpu_count // first_dstack.nodes}"
    assert dstack.resources.gpu == f"{kb.gpus[first_dstack.gpu].dstack_name}:{per_node}"


def test_cli_launch_without_a_rented_option_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "recommend",
            "--model",
            "mistral-7b",
            "--task",
            "inference",
            "--acquisition",
            "buy",
            "--launch",
            "skypilot",
        ]
    )
    captured = capsys.readouterr()
    assert code == EXIT_PROBLEMS
    assert captured.out == ""
    assert "no recommendation is rented" in captured.err


def test_cli_launch_with_the_tool_unavailable_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "recommend",
            "--model",
            "llama-3-1-8b",
            "--task",
            "inference",
            "--acquisition",
            "rent",
            "--providers",
            "coreweave",
            "--launch",
            "dstack",
        ]
    )
    captured = capsys.readouterr()
    assert code == EXIT_PROBLEMS
    assert "no dstack spec" in captured.err and "CoreWeave" in captured.err


@pytest.mark.parametrize(
    "value", ["yes", "No", "on", "null", "1:30", "H100:8", "a: b", "# c", "x'y\"z", "ü", "p5.48xlarge", "-x"]
)
def test_written_yaml_reads_back_as_written(value: str) -> None:
    spec = {"name": value, "resources": {"a": value, "n": 2, "b": False}, "list": [value], "run": "# x\n"}
    text = _dump("header", spec)
    assert text.startswith("# header\n")
    assert yaml.safe_load(text) == spec
