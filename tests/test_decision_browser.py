"""The decision report in a real browser (headless Chromium via playwright): every chart drawn, every
table filled, legends clear of the axis titles, no script error, no network request, hostile names kept
as text; at 1400 and 1920 px the page never scrolls sideways (wide tables scroll inside their box), the
placement YAML is collapsed, the title says what was compared. Skips without Chromium or playwright."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from report_sweeps import HOSTILE_VARIANT, kueue_sweep
from test_experiment_browser import CHROMIUM_ARGS, _chromium, offline_page

TABLES = ("measurements", "baseline", "classes", "costs", "prices")
#: Page width, visible width, and the measurements table's box: its width and the width of what it holds.
WIDTHS = """() => { const box = document.querySelector("table[data-table=measurements]").closest(".scroll");
    return {page: document.documentElement.scrollWidth, view: document.documentElement.clientWidth,
            box: box ? box.clientWidth : null, table: box ? box.scrollWidth : null}; }"""


def _overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (
        a["right"] <= b["left"]
        or b["right"] <= a["left"]
        or a["bottom"] <= b["top"]
        or b["bottom"] <= a["top"]
    )


def test_decision_report_renders_every_chart_and_table_in_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright not installed (pip install -e '.[dev]')"
    )
    chromium = _chromium()
    from fleetlab.spec.history.folder import write_history_folder
    from history_builders import HAND_BILL, HAND_JOBS, HAND_NODES, history

    sweep = kueue_sweep(tmp_path / "sweep")
    write_history_folder(history(HAND_JOBS, HAND_NODES, HAND_BILL), tmp_path / "history")
    measured = CliRunner().invoke(
        cli.app, ["baseline", str(tmp_path / "history"), "--out", str(tmp_path / "baseline")]
    )
    assert measured.exit_code == 0, measured.output
    groups = json.loads((tmp_path / "baseline" / "baseline.json").read_text())["rows"]
    args = ["report", str(sweep), "--out", str(tmp_path / "out"), "--baseline", str(tmp_path / "baseline")]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    page_file = tmp_path / "out" / "report" / "index.html"
    blocked: list[str] = []
    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = offline_page(browser, blocked, problems)
            page.set_viewport_size({"width": 1400, "height": 900})
            page.goto(page_file.as_uri(), wait_until="load")
            charts = page.evaluate("document.querySelectorAll('.chart').length")
            try:
                page.wait_for_function(
                    f"document.querySelectorAll('.chart .js-plotly-plot svg.main-svg').length >= {charts}",
                    timeout=10_000,
                )
            except sync_api.Error as exc:
                problems.append(f"charts not drawn: {exc}")
            drawn = page.evaluate(
                """() => Array.from(document.querySelectorAll('.chart')).map(c => {
                    const box = e => { if (!e) return null; const r = e.getBoundingClientRect();
                        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
                    return {key: c.dataset.chart, traces: c.querySelectorAll('g.trace').length,
                            legend: box(c.querySelector('g.legend')), xtitle: box(c.querySelector('.xtitle'))};
                })"""
            )
            rows = page.evaluate(
                """() => Object.fromEntries(Array.from(document.querySelectorAll('table[data-table]')).map(
                    t => [t.dataset.table, t.querySelectorAll('tr').length - 1]))"""
            )
            recommend = page.inner_text(".recommend")
            verdict = page.inner_text("#decision")
            placement = page.text_content("#placement") or ""
            collapsed = page.evaluate(
                "Array.from(document.querySelectorAll('#placement details')).map(d => d.open)"
            )
            baseline = page.inner_text("#baseline")
            measurements = page.inner_text("#measurements")
            title, meta = page.title(), page.inner_text(".meta")
            widths = {1400: page.evaluate(WIDTHS)}
            page.screenshot(path=str(tmp_path / "decision.png"), full_page=True)
            page.set_viewport_size({"width": 1920, "height": 1080})
            widths[1920] = page.evaluate(WIDTHS)
        finally:
            browser.close()
    assert blocked == [] and problems == []
    assert {d["key"] for d in drawn} >= {
        "queue_wait_cdf",
        "completion_by_class",
        "cost_split",
        "queue_borrowing",
    }
    for chart in drawn:
        assert chart["traces"] >= 1, chart
        if chart["legend"] is not None and chart["xtitle"] is not None:
            assert not _overlaps(chart["legend"], chart["xtitle"]), chart
    for table in TABLES:
        assert rows.get(table, 0) >= 1, (table, rows)
    assert recommend.startswith("Recommended: ")
    assert HOSTILE_VARIANT in verdict  # the variant name is shown as text, never run as markup
    assert "ClusterQueue" in placement and "KubeSchedulerConfiguration" in placement
    assert collapsed and not any(collapsed)  # the YAML is there, folded away until opened
    # The page itself never scrolls sideways; the measurements table scrolls inside its own box.
    for width, w in widths.items():
        assert w["page"] <= w["view"], (width, w)
        assert w["box"] is not None and w["box"] <= w["view"], (width, w)
    assert title.startswith("<b>queues</b>: base vs ") and "(2 paired seeds)" in title  # what was compared
    assert "Report date " in meta and "fleetlab " in meta
    # The measured baseline is a column beside the variants, with a warning: it is another cluster.
    assert "measured (history)" in measurements
    assert "the measured baseline is another cluster or workload" in verdict
    # The measured baseline's section: one row per group, counts by state beside the averages, and the
    # censored waits marked as lower bounds, as on the standalone baseline.html.
    assert rows["baseline"] == len(groups)  # body rows (the header row is not counted)
    assert "done / failed / cancelled" in baseline and "running / pending" in baseline
    overall = next(g for g in groups if g["group_by"] == "all")
    assert f"{overall['completed']} / {overall['failed']} / {overall['cancelled']}" in baseline
    assert overall["wait_p99_lower_bound"] and "≥ " in baseline
    assert (tmp_path / "decision.png").stat().st_size > 10_000
