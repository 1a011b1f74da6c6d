"""The candidate attributes rules may filter and prefer on (`require` / `exclude` / `prefer`
`where:`): the one registry. The rule schema (`models/rule.CandidateAttribute`), the policy's split
between what the hardware says and what the plan says (`reasoning/policy.PLAN_ATTRIBUTES`), and the
tables in docs/rule-facts.md (`gpu-advisor kb docs`) are all read from it; `tests/test_attributes.py`
checks that the producer named sets every attribute it lists.

To add an attribute: a line here, and the value in its producer (`planning/candidates.Option.attrs`
for what the hardware option says, `planning/planner.Planner` for what the plan says).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Known = Literal["option", "plan"]


@dataclass(frozen=True)
class Attribute:
    name: str
    known: Known
    """`option`: known before sizing, from the KB and the request; `plan`: known once sized"""
    values: str
    """what it holds, as docs/rule-facts.md shows it"""
    producer: str
    """the module that sets it"""


_OPTION = "planning/candidates.py"
_PLAN = "planning/planner.py"


def _option(names: str, values: str) -> tuple[Attribute, ...]:
    return tuple(Attribute(name, "option", values, _OPTION) for name in names.split())


def _plan(names: str, values: str) -> tuple[Attribute, ...]:
    return tuple(Attribute(name, "plan", values, _PLAN) for name in names.split())


ATTRIBUTES: tuple[Attribute, ...] = (
    *_option(
        "gpu gpu_class vendor sold_as form_factor",
        "from the KB (`gpu_class`: consumer, workstation, datacenter, apple-silicon, cpu)",
    ),
    *_option("platform", "`cuda`, `rocm`, `mps`, `mlx`, `cpu`, ... the stack it runs on"),
    *_option(
        "training_maturity serving_maturity",
        "how ready the platform's software is for that work on this device class (kb/stacks/ "
        "`maturity`): `production`, `maturing`, `limited`, `unrated`",
    ),
    *_option(
        "interconnect",
        "kind of the GPU-to-GPU link: `nvlink`, `nvswitch`, `pcie`, `infiniband`, `unified`, `none`, ...",
    ),
    *_option("tensor_parallel_suitable", "the link is NVLink class"),
    *_option("compute_capability", "number (8.9), NVIDIA only"),
    *_option("bf16_native fp8_native", "hardware support"),
    *_option("vram_per_gpu_gb nodes", "numbers"),
    *_option("acquisition", "`buy`, `rent`, `owned`"),
    *_option("price_kind", "`new`, `used` (buy), `on_demand`, `spot` (rent), `owned`"),
    *_option("pricing", "`owned`, `on_demand`, `spot`"),
    *_option(
        "provider provider_hosts provider_kind",
        "rented options: provider id; `provider`, `community`, `mixed`, `upstream`; `hyperscaler`, "
        "`neocloud`, `marketplace`, `aggregator`, `notebook`",
    ),
    *_option(
        "vendor_allowed provider_allowed usable_from_os",
        "`true` when the option passes `constraints.vendors` / `constraints.providers` / runs from the "
        "user's OS",
    ),
    *_option("class_allowed", "`true` when the option's GPU class passes `constraints.gpu_classes`"),
    *_option(
        "within_host_power",
        "`true` unless the cards go into the user's own machine and need a larger power supply than "
        "`constraints.existing_host.psu_watts`",
    ),
    *_plan("method precision", "the plan's method and weights precision"),
    *_plan("method_changed precision_changed", "`true` when they differ from the request"),
    *_plan(
        "precision_native",
        "the GPU supports the plan's precision in hardware (weight-only int8/int4: `true`)",
    ),
    *_plan(
        "strategy",
        "`single`, `replicas`, `ddp`, `zero-3`, `fsdp-full-shard`, `tensor-parallel`, `pipeline-parallel`, "
        "`offload`",
    ),
    *_plan("tp_degree", "number"),
    *_plan("offload", "`true` when states live in host memory"),
    *_plan("fits", "per-GPU memory within the GPU's memory less the headroom"),
    *_plan(
        "within_budget",
        "capex (buy), rental spend (rent) within `constraints.budget_usd`; owned: `true`",
    ),
    *_plan(
        "strategy_allowed",
        "the plan's strategy is in `constraints.parallelism` (or none was stated)",
    ),
    *_plan(
        "finishes_in_time",
        "training: the run's estimated hours are within `sizing.deadline_hours` (`true` when there is none)",
    ),
    *_plan("run_hours", "training: the run's estimated wall-clock hours (0 when unknown, and for serving)"),
    *_plan(
        "fast_enough_per_user",
        "inference: each sequence decodes at least `sizing.per_user_tokens_per_s` (`true` when there is "
        "no such need)",
    ),
    # Known before sizing, unless a serving fleet adds copies: listed with the plan.
    *_plan("gpu_count", "number of GPUs, serving copies included"),
    *_plan(
        "within_max_gpus matches_gpu_count",
        "`true` when the option respects `constraints.max_gpus` / `constraints.gpu_count`",
    ),
)

ATTRIBUTE_NAMES: tuple[str, ...] = tuple(a.name for a in ATTRIBUTES)
PLAN_ATTRIBUTES: frozenset[str] = frozenset(a.name for a in ATTRIBUTES if a.known == "plan")
"""Attributes known only once a plan is sized (a filter on any of them is checked per plan); the rest
are the option's. A serving fleet's size, hence `gpu_count`, is known only then."""


def attribute_tables() -> str:
    """docs/rule-facts.md's tables of the attributes, as Markdown (attributes with the same values
    share a row)."""
    parts: list[str] = []
    for known, heading in (("option", ""), ("plan", "Attributes of a plan (known once sized):\n\n")):
        rows: list[tuple[list[str], str]] = []
        for attribute in ATTRIBUTES:
            if attribute.known != known:
                continue
            if rows and rows[-1][1] == attribute.values:
                rows[-1][0].append(attribute.name)
            else:
                rows.append(([attribute.name], attribute.values))
        lines = ["| attribute | values |", "|---|---|"]
        lines += [f"| {', '.join(f'`{n}`' for n in names)} | {values} |" for names, values in rows]
        parts.append(heading + "\n".join(lines) + "\n")
    return "\n".join(parts)
