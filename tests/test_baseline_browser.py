"""baseline.html and calibration.html in a real browser (headless Chromium via playwright): the tables
render, there is no script at all, no network request, and hostile names from the history stay text."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.spec.history.store import write_history
from history_builders import HAND_JOBS, HAND_NODES, history
from test_experiment_browser import CHROMIUM_ARGS, _chromium

HOSTILE = "<img src=x onerror=alert(1)>"


def test_baseline_and_calibration_pages_render_as_text_in_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    chromium = _chromium()
    jobs = [{**HAND_JOBS[0], "team": HOSTILE}, *HAND_JOBS[1:]]
    write_history(history(jobs, HAND_NODES), tmp_path / "h")
    runner = CliRunner()
    assert runner.invoke(app, ["baseline", str(tmp_path / "h"), "--out", str(tmp_path / "bl")]).exit_code == 0
    assert (
        runner.invoke(app, ["calibrate", str(tmp_path / "h"), "--out", str(tmp_path / "cal")]).exit_code == 0
    )
    blocked: list[str] = []
    problems: list[str] = []
    dialogs: list[str] = []
    found: dict[str, object] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            context.route(
                "**/*",
                lambda r: (
                    r.continue_()
                    if r.request.url.startswith("file://")
                    else (blocked.append(r.request.url), r.abort())
                ),  # type: ignore[func-returns-value]
            )
            page = context.new_page()
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            for name, file in (("baseline", tmp_path / "bl" / "baseline.html"),
                               ("calibration", tmp_path / "cal" / "calibration.html")):  # fmt: skip
                page.goto(file.as_uri(), wait_until="load")
                found[name] = page.evaluate(
                    """() => ({rows: document.querySelectorAll('tbody tr').length,
                               scripts: document.querySelectorAll('script').length,
                               imgs: document.querySelectorAll('img').length,
                               text: document.body.innerText})"""
                )
        finally:
            browser.close()
    assert blocked == [] and problems == [] and dialogs == []
    base, cal = found["baseline"], found["calibration"]
    assert isinstance(base, dict) and isinstance(cal, dict)
    assert (
        base["rows"] == 8 and base["scripts"] == 0 and base["imgs"] == 0
    )  # all, 2 classes, 3 teams, 2 queues
    assert f"team={HOSTILE}" in str(base["text"])
    assert (
        cal["scripts"] == 0
        and "Verdict on the fit part:" in str(cal["text"])
        and "Why jobs waited" in str(cal["text"])
        and "wait_ks" in str(cal["text"])
    )
