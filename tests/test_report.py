"""The procurement report (engine/answer/report.py, charts.py): one self-contained HTML page with the
answer's own figures, its charts drawn as inline SVG, text escaped; served by POST /report and
written by `gpu-advisor report`. The browser test opens it in headless Chromium."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cli.main import main
from engine.answer.chart_data import Point, break_even, pareto_front
from engine.answer.charts import break_even_chart
from engine.answer.report import STYLE, report_html
from engine.models.request import RecommendRequest
from engine.recommend import Advisor

SERVE_70B = {
    "workload": {"task": "inference", "model": "llama-3-1-70b"},
    "constraints": {"acquisition": "any"},
}
TRAIN = {"workload": {"task": "lora", "model": "llama-3-1-8b", "training_tokens_b": 0.5}}


def _report(advisor: Advisor, body: dict[str, object]) -> str:
    return advisor.report(RecommendRequest.model_validate(body))


def test_the_page_holds_every_section_and_three_charts(advisor: Advisor) -> None:
    page = _report(advisor, SERVE_70B)
    for heading in (
        "The question as asked",
        "The decision and its runners-up",
        "Charts",
        "How the rules decided",
        "Ruled out",
        "Assumptions",
    ):
        assert f"<h2>{heading}</h2>" in page
    assert page.count("<svg") == 3, "cost-time, break-even and memory charts"
    assert "<script" not in page, "no scripts: the page works offline and archived"
    assert "@media print" in page and "break-before: page" in page


def test_the_tables_show_the_answers_own_figures(advisor: Advisor) -> None:
    request = RecommendRequest.model_validate(SERVE_70B)
    answer = advisor.recommend(request)
    page = advisor.report(request)
    best = answer.recommendations[0]
    assert best.gpu_name in page
    assert f"{best.memory.per_gpu_gb:.1f} / {best.capacity_gb:g}" in page
    assert answer.summary in page.replace("&#x27;", "'")
    assert f"Knowledge base {answer.kb_version}" in page
    for step in answer.trace:
        assert f'id="step-{step.step}"' in page


def test_each_rule_in_the_trace_shows_its_rationale_and_linked_sources(advisor: Advisor) -> None:
    page = _report(advisor, TRAIN)
    rule = advisor.rules_by_id["default-precision-bf16"]
    assert rule.title in page
    linked = [c for c in rule.citations if c.url]
    assert linked and all(f'href="{c.url}"' in page for c in linked)


def test_text_is_escaped(advisor: Advisor) -> None:
    request = RecommendRequest.model_validate(TRAIN)
    answer = advisor.recommend(request)
    hostile = answer.model_copy(update={"summary": "<script>alert(1)</script>", "warnings": ["<b>x</b>"]})
    page = report_html(request, hostile, advisor.rules_by_id)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>x</b>" not in page


def test_the_pareto_front_keeps_only_options_nothing_beats() -> None:
    points = [
        Point("a", 1, 10, "rent"),
        Point("b", 2, 5, "rent"),
        Point("c", 3, 7, "buy"),
        Point("d", 4, 1, "buy"),
    ]
    assert [p.label for p in pareto_front(points)] == ["a", "b", "d"]


def test_the_break_even_month_is_capex_over_the_monthly_saving(advisor: Advisor) -> None:
    request = RecommendRequest.model_validate({**SERVE_70B, "top_k": 20})
    answer = advisor.recommend(request)
    found = break_even(answer, request.constraints.horizon_months)
    assert found is not None
    bought, rented, month = found
    saving = rented.cost.monthly_usd - bought.cost.monthly_usd
    if month is not None:
        assert month == pytest.approx(bought.cost.capex_usd / saving)
        assert month <= request.constraints.horizon_months
    else:
        assert saving <= 0 or bought.cost.capex_usd / saving > request.constraints.horizon_months


def test_the_break_even_legend_names_each_line_as_its_table_row_does(advisor: Advisor) -> None:
    """A reviewer reads "#2 1 x NVIDIA RTX PRO 6000 Blackwell ..." in the legend, not a KB id."""
    request = RecommendRequest.model_validate({**SERVE_70B, "top_k": 20})
    answer = advisor.recommend(request)
    found = break_even(answer, request.constraints.horizon_months)
    chart = break_even_chart(answer, request.constraints.horizon_months)
    assert found is not None and chart is not None
    bought, rented, _ = found
    layers = chart.get("layer", [chart])  # one layer when the lines never cross
    names = {row["option"] for layer in layers for row in layer["data"]["values"] if "option" in row}
    assert names == {
        f"buy: #{bought.rank} {bought.gpu_count} x {bought.gpu_name} ({bought.provider or 'buy'})",
        f"rent: #{rented.rank} {rented.gpu_count} x {rented.gpu_name} ({rented.provider})",
    }


def test_post_report_is_an_html_page(client: TestClient) -> None:
    response = client.post("/report", json=TRAIN)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.text.startswith("<!DOCTYPE html>")
    assert client.post("/report", json={"workload": {"task": "inference"}}).status_code == 422


def test_the_command_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.html"
    assert main(["report", "--task", "lora", "--model", "llama-3-1-8b", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (
        main(["report", "--task", "lora", "--model", "llama-3-1-8b", "-o", str(tmp_path / "no" / "r.html")])
        == 2
    )
    assert "cannot write it" in capsys.readouterr().err


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.browser
def test_the_charts_render_in_a_real_browser(advisor: Advisor, tmp_path: Path) -> None:
    """Headless Chromium (Debian's package, driven by Playwright with executable_path) opens the page:
    each chart is a non-empty SVG with its marks, nothing is logged to the console as an error, and a
    screenshot is saved in the test's folder."""
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if CHROMIUM is None:
        pytest.skip("no Chromium to open the report in: install Debian's `chromium` package")
    page_file = tmp_path / "report.html"
    page_file.write_text(_report(advisor, SERVE_70B), encoding="utf-8")
    errors: list[str] = []
    with playwright.sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        except Exception as exc:  # a browser that cannot start here is a skip, not a failure
            pytest.skip(f"Chromium did not start: {exc}")
        page = browser.new_page(viewport={"width": 1100, "height": 1400})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_file.as_uri())
        figures = {
            name: page.locator(f'figure[data-chart="{name}"] svg')
            for name in ("cost-time", "break-even", "memory")
        }
        for name, svg in figures.items():
            assert svg.count() == 1, name
            box = svg.bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 100, name
        # the marks Vega draws: points on the cost-time chart, lines on the break-even, bars on the memory
        assert (
            page.locator(
                'figure[data-chart="cost-time"] svg path.mark-symbol, '
                'figure[data-chart="cost-time"] svg g.mark-symbol path'
            ).count()
            > 0
        )
        assert page.locator('figure[data-chart="break-even"] svg g.mark-line path').count() >= 2
        assert page.locator('figure[data-chart="memory"] svg g.mark-rect path').count() > 0
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert not errors, errors
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert re.search(r"<svg[^>]*>", page_file.read_text(encoding="utf-8"))


GOLDEN_REPORTS = ("serve-70b-fp16", "budget-too-small", "high-utilization-buys")
"""golden requests whose report is recorded in tests/golden/<name>.report.html"""


def _comparable(page: str) -> str:
    """The page less what changes on every call or with the chart renderer's version (the request id
    and KB version, each chart's SVG: its marks are checked by the browser test) and less the
    stylesheet, which is the same on every page (engine/answer/report.py STYLE)."""
    page = page.replace(f"<style>{STYLE}</style>", "<style/>")
    page = re.sub(r"Knowledge base [0-9a-f]+", "Knowledge base KB", page)
    page = re.sub(r"Request [0-9a-f]{32}", "Request ID", page)
    return re.sub(r"<svg.*?</svg>", "<svg/>", page, flags=re.DOTALL)


@pytest.mark.parametrize("name", GOLDEN_REPORTS)
def test_report_matches_the_recording(name: str, request: pytest.FixtureRequest) -> None:
    """`python3 scripts/dev.py golden` rewrites the recordings; the diff is the review."""
    from tests.golden_support import GOLDEN, advisor, golden_request

    page = _comparable(advisor().report(golden_request(name)))
    path = GOLDEN / f"{name}.report.html"
    if request.config.getoption("--update-golden"):
        path.write_text(page, encoding="utf-8")
    assert path.exists(), f"no recording for {name}: run python3 scripts/dev.py golden"
    assert page == path.read_text(encoding="utf-8")


PRETRAIN_1B_BUY = {
    "workload": {"task": "pretrain", "params_b": 1, "training_tokens_b": 20},
    "constraints": {"acquisition": "buy", "budget_usd": 40000},
}
"""issue 25's second page: its only Pareto point was unlabelled, its chart plotted another cost"""


def page_problems(page: str) -> list[str]:
    """What on the page refers to an option its tables do not show: a rank (`#N`) in any text or chart
    that no table row has, a chart's option label (`#N k x gpu (where)`) whose GPU count or provider
    differs from that row's, and a dollar figure in the summary's first sentence (about #1) that
    neither #1's table row nor its why gives."""
    page = re.sub(r"<style>.*?</style>", "", page, flags=re.DOTALL)
    tables = re.findall(r"<table.*?</table>", page, flags=re.DOTALL)
    rows = {
        int(rank): cells
        for table in tables
        if "<th>#</th>" in table
        for rank, cells in re.findall(r"<tr><td>(\d+)</td>(.*?)</tr>", table, flags=re.DOTALL)
    }
    text = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<table.*?</table>", " ", page, flags=re.DOTALL)))
    problems = [f"#{n} is named but in no table" for n in re.findall(r"#(\d+)\b", text) if int(n) not in rows]
    for rank, count, where in re.findall(r"#(\d+) (\d+) x [\w.-]+ \(([^)]*)\)", text):
        cells = html.unescape(rows.get(int(rank), ""))
        if f"<td>{count} x " not in cells or where not in cells:
            problems.append(f"the chart's #{rank} ({count} GPUs, {where}) is not that table row")
    summary = html.unescape(re.search(r'<p class="summary">(.*?)</p>', page, flags=re.DOTALL).group(1))
    why = re.search(r"<p><strong>#1\.</strong>(.*?)</p>", page, flags=re.DOTALL)
    first = html.unescape(rows.get(1, "") + (why.group(1) if why else ""))
    for figure in re.findall(r"\$[\d,]+(?:\.\d+)?", summary.split(". Next:")[0]):
        if figure not in first:
            problems.append(f"the summary's {figure} is in neither #1's row nor its why")
    return problems


@pytest.mark.parametrize(
    "body", [SERVE_70B, PRETRAIN_1B_BUY, TRAIN], ids=["serve-70b", "pretrain-1b-buy", "lora"]
)
def test_every_option_and_figure_on_the_page_is_in_its_tables(
    advisor: Advisor, body: dict[str, object]
) -> None:
    page = _report(advisor, body)
    assert page.count("<svg") >= 2  # a page with bought options only has no buy-or-rent chart
    assert page_problems(page) == []


def test_the_page_check_finds_an_option_the_tables_do_not_show(advisor: Advisor) -> None:
    page = _report(advisor, SERVE_70B).replace("</body>", "<p>Compare #99.</p></body>")
    assert page_problems(page) == ["#99 is named but in no table"]
