"""A decision on a calibrated scenario carries its calibration: the banner (failed or passed), the fitted
values with their plausibility, the model error per metric (from calibration.json's rows today, from its
``validation`` when a calibration measured one out of sample), effects under it called "within model
error", and a warning on a what-if that changes a fitted value; price assumptions and the page's date."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.experiment.calibration_context import calibration_from, read_calibration
from fleetlab.experiment.pricing import parse_prices, pool_prices, unpriced_warning
from fleetlab.report.decision import report_date
from fleetlab.report.measured_column import measured_column
from fleetlab.spec.catalog import snapshot_date
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load_scenario
from test_cli import SMALL

runner = CliRunner()

#: A failed calibration as `fleetlab calibrate` writes it: the fit put the scheduling latency at 48 min
#: (2880 s) to absorb waits the replay cannot make, and the mean wait is still 2.27 h (8172 s) off.
FAILED = {
    "verdict": "fail",
    "fitted": {"scheduling_latency_s": 2880.0},
    "rows": [
        {"job_class": "all", "metric": "wait_p50_s", "error": 300.0, "within": False},
        {"job_class": "all", "metric": "wait_p95_s", "error": 8172.0, "within": False},
        {"job_class": "all", "metric": "wait_ks", "error": 0.4, "within": False},
        {"job_class": "all", "metric": "gpu_hours_allocated", "error": 0.01, "within": True},
        {"job_class": "all", "metric": "cost", "error": 0.25, "within": False},
        {"job_class": "batch", "metric": "wait_p95_s", "error": 9.0, "within": True},
    ],
}


def test_calibration_rows_become_model_errors_and_an_implausible_fit_is_named() -> None:
    found = calibration_from(FAILED, "cal/calibration.json")
    assert found is not None and found.verdict == "fail"
    assert found.failing == (
        "cost",
        "wait_ks",
        "wait_p50_s",
        "wait_p95_s",
    )  # class "all" rows outside tolerance
    errors = found.model_errors
    # p95 wait and p95 completion: the wait p95 error (completion = wait + measured runtime); mean wait: the
    # larger of the p50 and p95 errors (300 s, 8172 s); cost per job: the relative cost error, 25 %.
    assert errors["queue_wait_p95_s"].absolute == errors["completion_p95_s"].absolute == 8172.0
    assert errors["queue_wait_mean_s"].absolute == 8172.0
    assert errors["cost_per_completed_job_window"].relative == 0.25
    assert errors["cost_per_completed_job_window"].of(8.0) == 2.0
    assert found.error_source == "rows"
    [fit] = found.fitted
    assert not fit.plausible and fit.value == 2880.0  # a scheduler takes seconds, not 48 minutes
    banner = found.banner()
    assert banner.startswith("CALIBRATION FAILED (cal/calibration.json)")
    assert "Implausible fit: scheduling_latency_s = 2880 s (implausible" in banner


def test_out_of_sample_validation_errors_take_precedence() -> None:
    validated = {**FAILED, "validation": {"metrics": {
        "queue_wait_mean_s": {"relative": 0.12, "source": "week 3 held out"},
        "cost_per_completed_job": {"absolute": 0.5},
        "bad": {"relative": "x"},
    }}}  # fmt: skip
    found = calibration_from(validated, "c.json")
    assert found is not None and found.error_source == "validation"
    assert found.model_errors["queue_wait_mean_s"].of(1000.0) == 120.0
    assert found.model_errors["queue_wait_mean_s"].source == "week 3 held out"
    assert found.model_errors["cost_per_completed_job_window"].absolute == 0.5  # the window cost too
    assert "bad" not in found.model_errors and "queue_wait_p95_s" not in found.model_errors


@pytest.fixture()
def calibrated(tmp_path: Path) -> Path:
    """SMALL as a calibrated scenario: calibration.json beside it."""
    (tmp_path / "scenario.yaml").write_text(SMALL, encoding="utf-8")
    (tmp_path / "calibration.json").write_text(json.dumps(FAILED), encoding="utf-8")
    return tmp_path


def test_compare_on_a_calibrated_scenario_shows_the_banner_and_uses_the_model_error(calibrated: Path) -> None:
    args = ["compare", str(calibrated / "scenario.yaml"), "--policy", "default", "--policy", "bin-packing"]
    result = runner.invoke(cli.app, [*args, "--seeds", "2"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("CALIBRATION FAILED")
    assert "fitted by calibration: scheduling_latency_s = 2880 s (implausible" in result.stdout
    payload = json.loads(runner.invoke(cli.app, [*args, "--seeds", "2", "--json"]).stdout)
    assert (
        payload["calibration"]["verdict"] == "fail" and not payload["calibration"]["fitted"][0]["plausible"]
    )
    assert payload["model_errors"]["queue_wait_mean_s"]["absolute"] == 8172.0
    [verdict] = payload["verdict"]
    wait = next(f for f in verdict["findings"] if f["metric"] == "queue_wait_mean_s")
    assert wait["model_error"] == 8172.0 and wait["verdict"] not in ("better", "worse")
    assert read_calibration(calibrated / "scenario.yaml") is not None
    (calibrated / "calibration.json").write_text("{broken", encoding="utf-8")
    broken = read_calibration(calibrated / "scenario.yaml")
    assert broken is not None and "unreadable" in broken.banner()


def test_a_what_if_that_changes_a_fitted_value_is_warned(calibrated: Path, tmp_path: Path) -> None:
    experiment = calibrated / "what-if.yaml"
    experiment.write_text(
        "name: what-if\nbase: scenario.yaml\nseeds: [1, 2]\nvariants:\n  - name: as-measured\n"
        "  - name: faster-admission\n    scheduler: {scheduling_latency_s: 0}\n"
    )
    out = tmp_path / "exp"
    ran = runner.invoke(cli.app, ["experiment", "run", str(experiment), "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    assert "CALIBRATION FAILED" in ran.stdout
    assert (
        "warning: faster-admission changes scheduling_latency_s, which calibration fitted to 2880 s"
        in ran.stdout
    )
    html = runner.invoke(cli.app, ["experiment", "report", str(out), "--html", str(tmp_path / "e.html")])
    assert html.exit_code == 0 and "CALIBRATION FAILED" in html.stdout
    assert "class='banner fail'" in (tmp_path / "e.html").read_text()
    report = runner.invoke(
        cli.app, ["report", str(out), "--out", str(tmp_path / "rep"), "--date", "2026-01-02"]
    )
    assert report.exit_code == 0, report.output
    page = (tmp_path / "rep" / "report" / "index.html").read_text()
    assert "class='banner fail'" in page and "CALIBRATION FAILED" in page and "2880" in page
    assert "Report date 2026-01-02 (--date)" in page and "fleetlab " in page
    assert "changes scheduling_latency_s, which calibration fitted" in report.stdout


def test_prices_name_their_source_date_and_the_unpriced_pools() -> None:
    scenario, _, _ = load_scenario(None)
    prices = {p.pool: p for p in pool_prices(scenario)}
    # h100 is written as 55.04 in the scenario: the built-in AWS catalog's p5.48xlarge on-demand row.
    assert prices["h100"].per_hour == 55.04 and prices["h100"].billing_mode == "on-demand"
    assert "built-in aws catalog line" in prices["h100"].source and prices["h100"].date == snapshot_date()
    assert prices["cpu"].source == "scenario price_per_hour (as written)"
    given = parse_prices(["h100=40", "cpu=0"])
    from fleetlab.experiment.pricing import with_prices

    priced = {p.pool: p for p in pool_prices(with_prices(scenario, given), given)}
    assert priced["h100"].per_hour == 40.0 and priced["h100"].source == "--price (command line)"
    assert priced["cpu"].unpriced and "cpu have no price and cost $0" in (
        unpriced_warning(list(priced.values())) or ""
    )
    for bad in ("h100", "h100=-1", "=3", "h100=abc"):
        with pytest.raises(SpecError, match="--price"):
            parse_prices([bad])
    result = runner.invoke(cli.app, ["compare", "--seeds", "2", "--price", "nope=1"])
    assert result.exit_code == 2 and "no pool named nope" in result.output


def test_compare_flags_an_unpriced_pool_wherever_a_cost_is_shown(tmp_path: Path) -> None:
    path = tmp_path / "free.yaml"
    path.write_text(SMALL.replace("price_per_hour: 1}", "price_per_hour: 0}"), encoding="utf-8")
    result = runner.invoke(
        cli.app, ["compare", str(path), "--seeds", "2", "--policy", "default", "--policy", "bin-packing"]
    )
    assert result.exit_code == 0, result.output
    assert "cpu: NO PRICE ($0)" in result.stdout
    assert "warning: pool(s) cpu have no price and cost $0 in every figure" in result.stdout


def test_report_date_comes_from_the_option_the_environment_or_the_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    older, newer = tmp_path / "a.json", tmp_path / "b.json"
    older.write_text("{}")
    newer.write_text("{}")
    os.utime(older, (86400 * 10, 86400 * 10))  # 1970-01-11
    os.utime(newer, (86400 * 40, 86400 * 40))  # 1970-02-10
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert report_date(None, [older, newer]) == ("1970-02-10", "modified date of b.json, the newest input")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(86400 * 365))
    assert report_date(None, [older, newer]) == ("1971-01-01", "SOURCE_DATE_EPOCH")
    assert report_date("2026-03-04", [older]) == ("2026-03-04", "--date")
    with pytest.raises(SpecError, match="--date"):
        report_date("yesterday", [])


def test_the_measured_column_warns_when_it_is_another_cluster() -> None:
    """The issue's mismatch: 6 nodes / 260 jobs measured beside 24 nodes / 922 jobs simulated."""
    baseline = {
        "rows": [{"group_by": "all", "jobs_submitted": 260, "completed": 250, "wait_mean_s": 17100.0,
                  "wait_mean_lower_bound": True, "cost_per_completed_job": 8.0}],
        "cluster": {"nodes": 6, "history_end_s": 7200.0, "cost_total": 2000.0, "gpu_allocation_ratio": 0.5},
    }  # fmt: skip
    column = measured_column(baseline, (24, 24), 922, 7200.0)
    assert column is not None
    assert column.values["queue_wait_mean_s"] == (17100.0, True)  # censored: a lower bound, shown "≥"
    assert column.values["cost_rate_per_hour"] == (1000.0, False)  # $2000 over 2 h
    assert column.values["cost_per_month"] == (730_000.0, False)
    [warning] = column.warnings
    assert "another cluster or workload (6 nodes, 260 jobs measured; 24 nodes, 922 jobs simulated)" in warning
    same = measured_column({**baseline, "rows": [{**baseline["rows"][0], "jobs_submitted": 922}],
                            "cluster": {**baseline["cluster"], "nodes": 24}}, (24, 24), 922, 3600.0)  # fmt: skip
    assert same is not None and len(same.warnings) == 1 and "covers 0–2.00 h" in same.warnings[0]
    assert measured_column({"summary": {}}, (1, 1), 1, None) is None


def test_out_of_sample_validation_rows_of_calibrate_are_the_model_error() -> None:
    """calibration.json as `calibrate --fit-until` writes it: the fit passed (wait p95 off by 100 s), the
    later part failed (wait p95 off by 30,738 s, p50 by 6,271 s). The model error is the validation's
    (out of sample), not the fit's, and a failed validation fails the calibration as a whole."""
    payload = {
        "verdict": "pass",
        "fitted": {"scheduling_latency_s": 401.0},
        "rows": [{"job_class": "all", "metric": "wait_p95_s", "error": 100.0, "within": True}],
        "validation": {
            "verdict": "fail",
            "jobs": 1056,
            "rows": [
                {"job_class": "all", "metric": "wait_p50_s", "error": 6271.0, "within": False},
                {"job_class": "all", "metric": "wait_p95_s", "error": 30738.0, "within": False},
                {"job_class": "batch", "metric": "wait_p95_s", "error": 1.0, "within": True},
            ],
        },
    }
    found = calibration_from(payload, "cal/calibration.json")
    assert found is not None and found.verdict == "fail" and found.error_source == "validation"
    assert found.failing == ("wait_p50_s", "wait_p95_s")
    assert found.model_errors["queue_wait_p95_s"].absolute == 30738.0
    assert found.model_errors["queue_wait_mean_s"].absolute == 30738.0  # max(6271, 30738)
    assert "CALIBRATION FAILED" in found.banner()


def test_the_calibrated_scenarios_own_record_gives_the_validation_error(tmp_path: Path) -> None:
    """A calibrated scenario copied away from its calibration.json still carries its record: errors of
    source ``validation`` win over those of source ``fit``."""
    record = {
        "verdict": "pass",
        "validation_verdict": "pass",
        "errors": [
            {"metric": "wait_p95_s", "job_class": "all", "source": "fit", "kind": "absolute",
             "error": 50.0, "tolerance": 60.0, "within": True},
            {"metric": "wait_p95_s", "job_class": "all", "source": "validation", "kind": "absolute",
             "error": 55.0, "tolerance": 60.0, "within": True},
        ],
    }  # fmt: skip
    found = read_calibration(tmp_path / "scenario.yaml", {"calibration": record})
    assert found is not None and found.verdict == "pass" and found.error_source == "validation"
    assert found.model_errors["queue_wait_p95_s"].absolute == 55.0
    assert found.model_errors["completion_p95_s"].absolute == 55.0
