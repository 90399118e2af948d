"""The HTML report in a real browser (headless Chromium via playwright): every chart renders, no script
error, no network request (plotly.js is inlined), hostile names stay text. Skips without Chromium or
playwright."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from fleetlab.report.experiment_html import write_html_report
from report_sweeps import kueue_sweep

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHARTS = (
    "queue_wait_cdf",
    "completion_by_class",
    "gpu_allocation",
    "fragmentation",
    "cost_split",
    "queue_borrowing",
)


def _chromium() -> str:
    path = "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else shutil.which("chromium")
    if path is None:
        pytest.skip("Chromium not installed (Debian: apt-get install -y chromium)")
    return path


def offline_page(browser: Any, blocked: list[str], problems: list[str]) -> Any:
    """A 1280×900 page that may load file:// URLs only (others are recorded in ``blocked`` and aborted);
    console errors and page errors are recorded in ``problems``."""

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if url.startswith("file://"):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    return page


def test_report_renders_every_chart_offline_in_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright not installed (pip install -e '.[dev]')"
    )
    chromium = _chromium()
    report = tmp_path / "report.html"
    write_html_report(kueue_sweep(tmp_path / "sweep"), report)
    blocked: list[str] = []
    problems: list[str] = []
    dialogs: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = offline_page(browser, blocked, problems)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            started = time.perf_counter()
            page.goto(report.as_uri(), wait_until="load")
            try:  # on a timeout the assertions below say what went wrong
                page.wait_for_function(
                    f"document.querySelectorAll('.chart .js-plotly-plot svg.main-svg').length >= {len(CHARTS)}",
                    timeout=10_000,
                )
            except sync_api.Error as exc:
                problems.append(f"charts not drawn: {exc}")
            render_s = time.perf_counter() - started
            drawn = page.evaluate(
                """() => Array.from(document.querySelectorAll('.chart')).map(c => ({
                    key: c.dataset.chart,
                    svgs: c.querySelectorAll('svg.main-svg').length,
                    traces: c.querySelectorAll('g.trace').length,
                    height: c.getBoundingClientRect().height}))"""
            )
            notes = page.inner_text("#slo_attainment")
            headings = page.inner_text("h1")
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert blocked == [] and problems == [] and dialogs == []
    assert [d["key"] for d in drawn] == list(CHARTS)
    for chart in drawn:
        assert chart["svgs"] >= 1 and chart["traces"] >= 1 and chart["height"] > 100, chart
    assert "no services in this experiment" in notes
    assert headings.startswith("<b>queues</b>")  # shown as text, not markup
    assert render_s < 10.0
    assert (tmp_path / "report.png").stat().st_size > 10_000
