"""baseline.html and calibration.html in a real browser (headless Chromium via playwright): the tables
render, there is no script at all, no network request, and hostile names from the history stay text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.model.scheduling_delay import SchedulingDelay
from fleetlab.sim.scheduling_delay import drawn_delays_s
from fleetlab.spec.history.store import write_history
from fleetlab.spec.loader import load_scenario
from history_builders import HAND_JOBS, HAND_NODES, history
from test_calibration_seeds import _ks_by_hand as ks_by_hand
from test_calibration_seeds import _world as seeds_world
from test_experiment_browser import CHROMIUM_ARGS, _chromium

HOSTILE = "<img src=x onerror=alert(1)>"


def payload_delay(folder: Path) -> SchedulingDelay:
    """The drawn delay the calibrated scenario carries (scenario.yaml beside calibration.html)."""
    delay = load_scenario(str(folder / "scenario.yaml"))[0].scheduler.scheduling_delay
    assert delay is not None
    return delay


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


def test_calibration_page_shows_each_seeds_error_and_how_many_pass_in_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    chromium = _chromium()
    write_history(seeds_world(), tmp_path / "h")
    args = ["calibrate", str(tmp_path / "h"), "--seeds", "2", "--out", str(tmp_path / "cal")]
    assert CliRunner().invoke(app, args).exit_code == 0
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto((tmp_path / "cal" / "calibration.html").as_uri(), wait_until="load")
            found = page.evaluate(
                """() => ({
                  rows: [...document.querySelectorAll('table')[1].querySelectorAll('tbody tr')].map(
                    tr => [...tr.querySelectorAll('td')].map(td => td.innerText)),
                  head: [...document.querySelectorAll('table')[1].querySelectorAll('th')].map(th => th.innerText),
                  seeds: document.getElementById('seeds').innerText})"""
            )
        finally:
            browser.close()
    # The validation table: beside the mean, each seed's error and how many seeds are within. The world's
    # validation jobs (100..149) replay with exactly the delays drawn for (seed, position): each seed's KS
    # is worked out from its draws (test_calibration_seeds), within when at most 0.10.
    payload = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    delay = payload_delay(tmp_path / "cal")
    by_hand = [ks_by_hand(drawn_delays_s(delay, k, np.arange(100, 150))) for k in range(2)]
    assert found["head"][-2:] == ["error per seed", "seeds within"]
    ks = next(r for r in found["rows"] if r[:2] == ["all", "wait_ks"])
    assert ks[4] == f"{sum(by_hand) / 2:.3f}"
    assert ks[-2] == " · ".join(f"{k}: {e:.3f}" for k, e in enumerate(by_hand))
    assert ks[-1] == f"{sum(e <= 0.1 for e in by_hand)} of 2"
    assert payload["seed_verdict"][1] in found["seeds"] and "of 2 seed(s) within" in found["seeds"]
