"""The procurement report's charts, as Vega-Lite specifications built with Vega-Altair and rendered to
SVG by vl-convert (no browser, no network: the page works offline). Each chart reads only the
answer's own figures (`RecommendResponse`), so what the page shows is what the API returned.

- cost-time: every ranked option's cost against its time (a training run's hours, or for serving the
  milliseconds each token takes), the Pareto front (no other option both cheaper and faster) drawn
  as a line;
- buy-vs-rent: the cumulative cost of the best bought and the best rented option over the horizon,
  the month they cross marked;
- memory: each option's memory per GPU, stacked by what holds it, against the GPU's capacity.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import vl_convert

from engine.answer.chart_data import (
    MEMORY_PARTS,
    break_even,
    cost_time_points,
    option_label,
    pareto_front,
)
from engine.models.response import Recommendation, RecommendResponse

WIDTH = 560
ON_FRONT = "none is both cheaper and faster"
BEATEN = "another is cheaper and faster"
"""the cost-time chart's two kinds of point, in words rather than 'Pareto front: true/false'"""
LINE_BREAK = "|"
LINES = f"split(datum.label, '{LINE_BREAK}')"
"""a Vega label expression drawing a label's parts as lines"""


def wrapped_label(rec: Recommendation) -> str:
    """`option_label` in two lines: the rank and GPUs, then where they come from."""
    where = rec.provider or rec.acquisition
    return f"#{rec.rank} {rec.gpu_count} x {rec.gpu}{LINE_BREAK}({where})"


def named_label(rec: Recommendation) -> str:
    """An option by the name its table row gives (a legend has room for it; an axis label does not)."""
    where = rec.provider or rec.acquisition
    return f"#{rec.rank} {rec.gpu_count} x {rec.gpu_name} ({where})"


def _data(values: list[dict[str, Any]]) -> Any:
    """Inline rows for a chart (altair's `Data` is untyped)."""
    return alt.Data(values=values)  # type: ignore[no-untyped-call]


def cost_time_chart(answer: RecommendResponse, months: float, labelled: int = 5) -> dict[str, Any] | None:
    """The chart; the `labelled` best-ranked options and every option on the Pareto front carry their
    rank beside their point, as the report's tables number them (whole names overprint each other
    where the front is crowded; the tooltip has them)."""
    points, x_title, y_title = cost_time_points(answer, months)
    if not points:
        return None
    front = {p.label for p in pareto_front(points)}
    rows = [
        {
            "option": p.label,
            "time": p.time,
            "cost": p.cost,
            "acquisition": p.acquisition,
            "pareto": p.label in front,
            "standing": ON_FRONT if p.label in front else BEATEN,
            "named": 0 < p.rank <= labelled or p.label in front,
            "rank": f"#{p.rank}",
        }
        for p in points
    ]
    base = alt.Chart(_data(rows)).properties(width=WIDTH, height=300, title="Cost and time of every option")
    dots = base.mark_point(filled=True, size=80).encode(
        x=alt.X("time:Q", title=x_title, scale=alt.Scale(zero=False)),
        y=alt.Y("cost:Q", title=y_title, scale=alt.Scale(zero=False)),
        color=alt.Color("acquisition:N", title="how"),
        shape=alt.Shape("standing:N", title=None, sort=[ON_FRONT, BEATEN]),
        tooltip=["option:N", "time:Q", "cost:Q"],
    )
    line = (
        base.transform_filter("datum.pareto")
        .mark_line(color="#444", strokeDash=[4, 3])
        .encode(x="time:Q", y="cost:Q", order="time:Q")
    )
    labels = (
        base.transform_filter("datum.named")
        .mark_text(align="left", dx=6, dy=-6, fontSize=10)
        .encode(x="time:Q", y="cost:Q", text="rank:N")
    )
    return dict((line + dots + labels).to_dict())


def break_even_chart(answer: RecommendResponse, months: float) -> dict[str, Any] | None:
    found = break_even(answer, months)
    if found is None:
        return None
    bought, rented, month = found
    steps = [months * i / 24 for i in range(25)]
    rows = [
        {
            "month": m,
            "cost": bought.cost.capex_usd + bought.cost.monthly_usd * m,
            "option": "buy: " + named_label(bought),
        }
        for m in steps
    ] + [
        {"month": m, "cost": rented.cost.monthly_usd * m, "option": "rent: " + named_label(rented)}
        for m in steps
    ]
    lines = (
        alt.Chart(_data(rows))
        .mark_line()
        .encode(
            x=alt.X("month:Q", title="months of use at the stated utilisation"),
            y=alt.Y("cost:Q", title="cumulative cost, USD"),
            color=alt.Color(
                "option:N", title=None, legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0)
            ),
        )
        .properties(width=WIDTH, height=260, title="Buy or rent: cumulative cost over the horizon")
    )
    if month is None:
        return dict(lines.to_dict())
    cross = [{"month": month, "label": f"break-even at month {month:.1f}"}]
    rule = alt.Chart(_data(cross)).mark_rule(color="#b00", strokeDash=[4, 3]).encode(x="month:Q")
    text = (
        alt.Chart(_data(cross))
        .mark_text(align="left", dx=4, dy=-110, color="#b00")
        .encode(x="month:Q", text="label:N")
    )
    return dict((lines + rule + text).to_dict())


def memory_chart(answer: RecommendResponse) -> dict[str, Any] | None:
    rows: list[dict[str, Any]] = []
    capacity: list[dict[str, Any]] = []
    for rec in answer.recommendations:
        label, name_in_full = wrapped_label(rec), option_label(rec)
        memory = rec.memory.model_dump()
        rows += [
            {"option": label, "name": name_in_full, "part": name, "gb": memory[key]}
            for name, key in MEMORY_PARTS
            if memory[key] > 0
        ]
        capacity.append({"option": label, "gb": rec.capacity_gb})
    if not rows:
        return None
    bars = (
        alt.Chart(_data(rows))
        .mark_bar()
        .encode(
            # each label on two lines, whole (Vega draws an array as lines; a cut label is unreadable)
            y=alt.Y("option:N", title=None, sort=None, axis=alt.Axis(labelExpr=LINES, labelLimit=0)),
            x=alt.X("gb:Q", title="GB per GPU", stack="zero"),
            color=alt.Color("part:N", title="held by", sort=[name for name, _ in MEMORY_PARTS]),
            tooltip=["name:N", "part:N", "gb:Q"],
        )
    )
    ticks = (
        alt.Chart(_data(capacity))
        .mark_tick(color="black", thickness=2, size=22)
        .encode(y=alt.Y("option:N", sort=None), x="gb:Q")
    )
    chart = (bars + ticks).properties(
        width=WIDTH, height=34 * len(capacity), title="Memory per GPU against the GPU's capacity (black tick)"
    )
    return dict(chart.to_dict())


def report_specs(
    answer: RecommendResponse, months: float, shown: int
) -> list[tuple[str, dict[str, Any] | None]]:
    """The report's three charts by name: every option the answer ranks on the cost-time chart (the
    `shown` first labelled, and the Pareto front), the `shown` first on the break-even and memory
    charts (the page's table); None for a chart with nothing to plot."""
    top = answer.model_copy(update={"recommendations": answer.recommendations[:shown]})
    return [
        ("cost-time", cost_time_chart(answer, months, labelled=shown)),
        ("break-even", break_even_chart(top, months)),
        ("memory", memory_chart(top)),
    ]


def svg(spec: dict[str, Any]) -> str:
    """The chart drawn as an SVG element, fonts and all, to inline in a page."""
    return str(vl_convert.vegalite_to_svg(spec))
