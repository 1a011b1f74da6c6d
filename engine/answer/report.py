"""The procurement report: one self-contained HTML page a reviewer can read, print to PDF and archive.

The question as asked, the decision and its runners-up, three charts (engine/answer/charts.py, inline
SVG), the rule trace as a numbered list with each rule's title, rationale and sources, the options
ruled out and why, the assumptions, the warnings, the knowledge-base version and the price dates.
Every figure is the answer's (`RecommendResponse`); nothing here computes a new one. Text is escaped
(`html.escape`), control characters included (`_html`): a request or KB value never becomes markup,
and never reorders or hides what is shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape

from engine.answer.chart_data import break_even, cost_time_points
from engine.answer.explain import money
from engine.answer.svg_render import RENDERER
from engine.knowledge.text import shown as escape_controls
from engine.models.request import RecommendRequest
from engine.models.response import Recommendation, RecommendResponse
from engine.models.rule import Rule

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; max-width: 980px;
  margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 1.6em; }
table { border-collapse: collapse; width: 100%; margin: 0.6em 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 4px 6px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.summary { font-size: 1.1em; background: #f7f9fc; border-left: 4px solid #3a6ea5; padding: 0.6em 1em; }
.meta { color: #555; font-size: 12px; } .warn { background: #fff8e6; border-left: 4px solid #d89b00;
  padding: 0.4em 0.8em; margin: 0.3em 0; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 12px; }
ol.trace li { margin-bottom: 0.5em; } .rationale { color: #444; } .sources { font-size: 12px; }
@media print {
  body { margin: 0; max-width: none; font-size: 11pt; } a { color: inherit; }
  h2 { page-break-after: avoid; break-after: avoid; }
  figure, table, .summary, ol.trace li { page-break-inside: avoid; break-inside: avoid; }
  section.charts, section.trace { page-break-before: always; break-before: page; }
}
"""


def report_html(
    request: RecommendRequest,
    answer: RecommendResponse,
    rules: Mapping[str, Rule],
    *,
    plotted: Sequence[Recommendation] = (),
) -> str:
    """The page for `answer` to `request`. Everything on it refers to the options the answer shows,
    except the cost-time chart, which also plots the further options of `plotted` (the same ranking
    with a larger `top_k`): those are listed in a table of their own, so every rank the page names
    is in one of its tables."""
    months = request.constraints.horizon_months
    top = answer.recommendations
    shown = len(top)
    further = [rec for rec in plotted if rec.rank > shown]
    plotted_answer = answer.model_copy(update={"recommendations": [*top, *further]})
    charts = RENDERER.draw(plotted_answer, months, shown)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>gpu-advisor report: {_html(answer.summary[:80])}</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>Hardware recommendation</h1>",
        _meta(answer),
        f'<p class="summary">{_html(answer.summary)}</p>',
        *[f'<p class="warn">{_html(w)}</p>' for w in answer.warnings],
        "<h2>The question as asked</h2>",
        # json.dumps writes every control character inside a string as an escape (ensure_ascii);
        # the line breaks left are its own indentation
        f"<pre>{escape(json.dumps(request.model_dump(mode='json', exclude_defaults=True), indent=2))}</pre>",
        "<h2>The decision and its runners-up</h2>",
        _options_table(top) if top else "<p>No option meets every constraint.</p>",
        *[_why(rec) for rec in top],
        _relaxation(answer),
        '<section class="charts"><h2>Charts</h2>',
        *[_figure(name, drawn, answer, months) for name, drawn in charts],
        _further_table(plotted_answer, months, shown),
        "</section>",
        '<section class="trace"><h2>How the rules decided</h2>',
        _trace(answer, rules),
        "</section>",
        "<h2>Ruled out</h2>",
        _rejected(answer),
        "<h2>Assumptions</h2>",
        _assumptions(answer),
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


def _html(text: str) -> str:
    """Text as HTML: markup escaped, and control characters written as visible escapes: a bidi
    override (U+202E) would reorder what the reviewer reads, a NUL or ESC is not text
    (engine/knowledge/text.py)."""
    return escape(escape_controls(text))


def _meta(answer: RecommendResponse) -> str:
    oldest = (
        f"; the oldest price used is from {_html(answer.oldest_price_as_of)}"
        if answer.oldest_price_as_of
        else ""
    )
    return (
        f'<p class="meta">Knowledge base {_html(answer.kb_version)}; cloud prices as of '
        f"{_html(answer.prices_as_of)}{oldest}. Request {_html(answer.request_id)}.</p>"
    )


def _money(value: float | None) -> str:
    return "-" if value is None else money(value)


def _options_table(recs: Sequence[Recommendation]) -> str:
    """The options shown, one row each; the run's share only when some option runs a job of a size
    (a training run), not for a service."""
    runs = any(rec.cost.run_cost_usd is not None for rec in recs)
    head = (
        "<tr><th>#</th><th>GPUs</th><th>how</th><th>plan</th><th>GB per GPU, of what its driver reports</th>"
        "<th>tokens/s</th>"
        "<th>capex</th><th>per hour</th><th>running, per month</th>"
        + ("<th>the run's share</th>" if runs else "")
        + "<th>over the horizon</th><th>prices as of</th></tr>"
    )
    rows = []
    for rec in recs:
        plan = " + ".join([rec.method, rec.precision, *rec.parallelism])
        run = f"<td class=num>{_money(rec.cost.run_cost_usd)}</td>" if runs else ""
        rows.append(
            f"<tr><td>{rec.rank}</td><td>{_gpus(rec)}</td><td>{_html(_how(rec))}</td>"
            f"<td>{_html(plan)}</td>"
            f"<td class=num>{rec.memory.per_gpu_gb:.1f} / {rec.capacity_gb:g}</td>"
            f"<td class=num>{rec.shown_tokens_per_s:,.0f}</td><td class=num>{_capex(rec)}</td>"
            f"<td class=num>{_hourly(rec)}</td><td class=num>{_money(rec.cost.monthly_usd)}</td>{run}"
            f"<td class=num>{_money(rec.cost.horizon_cost_usd)}</td>"
            f"<td>{_html(rec.price_as_of or 'owned')}</td></tr>"
        )
    return f"<table>{head}{''.join(rows)}</table>"


def _capex(rec: Recommendation) -> str:
    """What buying costs up front; nothing for a rental or hardware already owned."""
    if rec.acquisition != "buy":
        return "-"
    capex = _money(rec.cost.capex_usd)
    low, high = rec.cost.capex_low_usd, rec.cost.capex_high_usd
    if low is not None and high is not None and low != high:
        capex += f" ({_money(low)} to {_money(high)})"
    return capex


def _hourly(rec: Recommendation) -> str:
    """What an hour costs: the rental's price, or owned hardware's power; a purchase is paid up front."""
    if rec.acquisition == "buy":
        return "-"
    figure = money(rec.cost.hourly_usd) if rec.cost.hourly_usd >= 100 else f"${rec.cost.hourly_usd:,.2f}"
    return figure + (" power" if rec.acquisition == "owned" else "")


def _further_table(plotted: RecommendResponse, months: float, shown: int) -> str:
    """The options the cost-time chart plots beyond the table above, by rank, with the two figures
    the chart plots them by (chart_data.cost_time_points, as the chart reads them)."""
    points, time_title, cost_title = cost_time_points(plotted, months)
    by_rank = {rec.rank: rec for rec in plotted.recommendations}
    rows = [
        f"<tr><td>{p.rank}</td><td>{_gpus(by_rank[p.rank])}</td><td>{_html(_how(by_rank[p.rank]))}</td>"
        f"<td class=num>{p.time:,.1f}</td><td class=num>{money(p.cost)}</td></tr>"
        for p in sorted(points, key=lambda p: p.rank)
        if p.rank > shown
    ]
    if not rows:
        return ""
    titles = f"<th>{_html(time_title)}</th><th>{_html(cost_title)}</th>"
    head = f"<tr><th>#</th><th>GPUs</th><th>how</th>{titles}</tr>"
    return (
        "<p>Also on the cost-time chart: the options ranked after those above.</p>"
        f'<table class="further">{head}{"".join(rows)}</table>'
    )


def _gpus(rec: Recommendation) -> str:
    return f"{rec.gpu_count} x {_html(rec.gpu_name)}"


def _how(rec: Recommendation) -> str:
    return (
        rec.acquisition if rec.provider is None else f"{rec.acquisition} ({rec.provider} {rec.instance_type})"
    )


def _why(rec: Recommendation) -> str:
    return f"<p><strong>#{rec.rank}.</strong> {_html(rec.why)}</p>"


def _relaxation(answer: RecommendResponse) -> str:
    if answer.relaxation is None:
        return ""
    return f'<p class="warn">Way out: {_html(answer.relaxation.message)}</p>'


def _figure(name: str, drawn: str | None, answer: RecommendResponse, months: float) -> str:
    if drawn is None:
        reason = {
            "cost-time": "no option has a time to plot",
            "break-even": "the answer has no bought and rented option to compare",
            "memory": "no option to plot",
        }[name]
        return f'<figure data-chart="{name}"><figcaption>No {name} chart: {reason}.</figcaption></figure>'
    caption = ""
    if name == "break-even":
        found = break_even(answer, months)
        if found is not None:
            month = found[2]
            caption = (
                f"Buying pays for itself after {month:.1f} months at the stated use."
                if month is not None
                else f"Buying does not pay for itself within the {months:g}-month horizon at the stated use."
            )
    return f'<figure data-chart="{name}">{drawn}<figcaption>{_html(caption)}</figcaption></figure>'


def _trace(answer: RecommendResponse, rules: Mapping[str, Rule]) -> str:
    items = []
    for step in answer.trace:
        rule = rules.get(step.rule)
        rationale = f'<div class="rationale">{_html(rule.rationale)}</div>' if rule else ""
        sources = []
        for citation in rule.citations if rule else ():
            text = _html(citation.source)
            sources.append(f'<a href="{_html(citation.url)}">{text}</a>' if citation.url else text)
        cited = f'<div class="sources">Sources: {"; ".join(sources)}</div>' if sources else ""
        items.append(
            f'<li id="step-{step.step}"><strong>{_html(step.title)}</strong> '
            f"<code>{_html(step.rule)}</code><div>{_html(step.message)}</div>{rationale}{cited}</li>"
        )
    return f'<ol class="trace">{"".join(items)}</ol>'


def _rejected(answer: RecommendResponse) -> str:
    if not answer.rejected:
        return "<p>Nothing notable was ruled out.</p>"
    rows = "".join(
        f"<tr><td>{r.gpu_count} x {_html(r.gpu)}</td><td>{_html(r.acquisition)}</td>"
        f"<td>{_html(r.reason)}</td><td><code>{_html(r.rule)}</code></td></tr>"
        for r in answer.rejected
    )
    return f"<table><tr><th>option</th><th>how</th><th>why not</th><th>rule</th></tr>{rows}</table>"


def _assumptions(answer: RecommendResponse) -> str:
    rows = "".join(
        f"<tr><td><code>{_html(str(k))}</code></td><td>{_html(str(v))}</td></tr>"
        for k, v in sorted(answer.assumptions.items())
    )
    return f"<table><tr><th>assumption</th><th>value</th></tr>{rows}</table>"
