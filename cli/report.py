"""A response as a person at a terminal reads it: the summary, a ranked table, each option's why,
the warnings and, on request, the rule trace. Rendering only; every figure comes from the response."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from engine.models.compare import ComparedChoice, CompareResponse
from engine.models.response import Recommendation, RecommendResponse

BRAND_WORDS = frozenset({"NVIDIA", "GeForce", "AMD", "Radeon", "Instinct", "Intel", "Apple"})


def render(response: RecommendResponse, *, show_trace: bool = False) -> Group:
    parts: list[RenderableType] = [Text(response.summary, style="bold"), Text("")]
    if response.recommendations:
        parts += [options_table(response), *capacity_note(response.recommendations)]
        parts += [Text(""), *why_lines(response)]
    else:
        parts += infeasible_lines(response)
    if response.warnings:
        parts += [Text(""), Text("Warnings", style="bold yellow")]
        parts += [Text(f"  - {warning}") for warning in response.warnings]
    if show_trace:
        parts += [Text(""), trace_table(response)]
    parts.append(Text(f"\nkb {response.kb_version} · prices as of {response.prices_as_of}", style="dim"))
    return Group(*parts)


def options_table(response: RecommendResponse) -> Table:
    table = _options_columns("#")
    for option in response.recommendations:
        table.add_row(
            str(option.rank), f"{option.gpu_count} x {short_name(option.gpu_name)}", *_figures(option)
        )
    return table


def _options_columns(first: str) -> Table:
    """The columns of an options table: `first`, the GPUs, how they are got, the plan, its figures."""
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
    table.add_column(first, justify="right")
    table.add_column("GPUs", ratio=3)
    table.add_column("Get", ratio=2)
    table.add_column("Plan", ratio=2)
    for name in ("GB/GPU", "tok/s", "Cost", "Total"):
        table.add_column(name, justify="right", no_wrap=True)
    return table


def _figures(option: Recommendation) -> list[str]:
    """An option's row after its GPUs: how they are got, the plan, GB per GPU, tokens/s, cost, total."""
    return [
        _acquired(option),
        _plan(option),
        f"{option.memory.per_gpu_gb:.1f}/{option.capacity_gb:g}",
        f"{option.shown_tokens_per_s:,.0f}",
        _price(option),
        _usd(option.cost.horizon_cost_usd, cents=option.cost.horizon_cost_usd < 100),
    ]


def capacity_note(options: Sequence[Recommendation]) -> list[Text]:
    """A line under the table where some card's capacity in it is not the size in its name."""
    renamed = [o for o in options if abs(o.capacity_gb - o.vram_per_gpu_gb) >= 0.5]
    if not renamed:
        return []
    first = renamed[0]
    return [
        Text(
            f"GB/GPU: of what each GPU's driver reports, in 10^9 bytes ({short_name(first.gpu_name)}: "
            f"{first.capacity_gb:g}).",
            style="dim",
        )
    ]


def short_name(name: str) -> str:
    """A GPU's name without the vendor's brand words, which the table has no room for."""
    words = [word for word in name.split() if word not in BRAND_WORDS]
    return " ".join(words) or name


def why_lines(response: RecommendResponse) -> list[RenderableType]:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column()
    for option in response.recommendations:
        grid.add_row(f"{option.rank}.", option.why)
    return [Text("Why", style="bold"), grid]


def infeasible_lines(response: RecommendResponse) -> list[Text]:
    lines: list[Text] = []
    if response.relaxation is not None:
        lines.append(Text(f"To make it feasible: {response.relaxation.message}"))
    if response.rejected:
        lines.append(Text("Ruled out", style="bold"))
        for rejected in response.rejected:
            lines.append(
                Text(f"  - {rejected.gpu_count} x {rejected.gpu} ({rejected.acquisition}): {rejected.reason}")
            )
    return lines


def trace_table(response: RecommendResponse) -> Table:
    table = Table(title="Trace (rules in firing order)", title_justify="left", header_style="bold")
    table.add_column("Step", justify="right")
    table.add_column("Rule")
    table.add_column("Matched")
    table.add_column("Said")
    for step in response.trace:
        matched = ", ".join(f"{name}={value}" for name, value in step.matched.items())
        table.add_row(str(step.step), step.rule, matched, step.message)
    return table


def print_response(response: RecommendResponse, *, show_trace: bool, console: Console | None = None) -> None:
    (console or Console()).print(render(response, show_trace=show_trace))


def render_comparison(response: CompareResponse) -> Group:
    """A comparison: the summary, the choices side by side in the order asked, each one's verdict and
    why, the warnings."""
    verdicts = Table.grid(padding=(0, 1))
    why = Table.grid(padding=(0, 1))
    for grid in (verdicts, why):
        grid.add_column(no_wrap=True)
        grid.add_column()
    for choice in response.choices:
        verdicts.add_row(f"{_choice_label(choice)}:", choice.verdict)
        why.add_row(f"{_choice_label(choice)}:", choice.fit.why)
    parts: list[RenderableType] = [Text(response.summary, style="bold"), Text(""), comparison_table(response)]
    parts += [Text(""), Text("Verdicts", style="bold"), verdicts, Text(""), Text("Why", style="bold"), why]
    if response.warnings:
        parts += [Text(""), Text("Warnings", style="bold yellow")]
        parts += [Text(f"  - {warning}") for warning in response.warnings]
    parts.append(Text(f"\nkb {response.kb_version} · prices as of {response.prices_as_of}", style="dim"))
    return Group(*parts)


def comparison_table(response: CompareResponse) -> Table:
    """One row per choice, in the order asked: its rank among those that run (- for none), GPUs, how
    they are got, the plan and its figures (where no plan runs, the memory per GPU it needs as asked)."""
    table = _options_columns("Rank")
    for choice in response.choices:
        option = choice.option
        if option is None:
            memory = f"{choice.fit.per_gpu_gb:.1f}/{choice.fit.capacity_gb:g}"
            table.add_row("-", _choice_label(choice), choice.acquisition or "any", "-", memory, "-", "-", "-")
        else:
            table.add_row(str(option.rank), _choice_label(choice), *_figures(option))
    return table


def _choice_label(choice: ComparedChoice) -> str:
    return f"{choice.count} x {short_name(choice.gpu_name)}"


def print_comparison(response: CompareResponse, console: Console | None = None) -> None:
    (console or Console()).print(render_comparison(response))


def _acquired(option: Recommendation) -> str:
    if option.acquisition == "rent":
        spot = " spot" if option.pricing == "spot" else ""
        return f"rent{spot} {option.provider} {option.instance_type or ''}".rstrip()
    if option.acquisition == "owned":
        return "owned"
    return f"buy {option.price_kind}"


def _plan(option: Recommendation) -> str:
    words = [option.precision, *option.parallelism]
    if option.method != "inference":
        words.insert(0, option.method)
    if option.tp_degree > 1 and "tensor-parallel" not in option.parallelism:
        words.append(f"tp{option.tp_degree}")
    return " ".join(words)


def _price(option: Recommendation) -> str:
    """What the option costs in the unit it is paid in: up front when bought, per hour when rented."""
    if option.acquisition == "rent":
        return f"{_usd(option.cost.hourly_usd, cents=True)}/h"
    if option.acquisition == "owned":
        return "owned"
    return _usd(option.cost.capex_usd)


def _usd(value: float, *, cents: bool = False) -> str:
    return f"${value:,.2f}" if cents else f"${value:,.0f}"
