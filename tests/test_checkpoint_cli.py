"""``fleetlab cost checkpoint``: Young's and Daly's intervals against the published worked values
(Daly 2006, as tabulated in /work/shared/reference/pricing.md §4.2), and clear errors for bad input."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.cost.checkpoint import daly_interval, lost_per_interruption, overhead_fraction, young_interval

runner = CliRunner()
MIN, HOUR = 60.0, 3600.0


@pytest.mark.parametrize(("mtbi", "daly_min"), [(24 * HOUR, 116.7), (6 * HOUR, 56.7), (15 * MIN, 9.1)])
def test_daly_interval_matches_dalys_worked_values(mtbi: float, daly_min: float) -> None:
    """Daly's own figures for R = 10 min, δ = 5 min: M = 24 h → 116.7 min, 6 h → 56.7, 15 min → 9.1."""
    assert daly_interval(5 * MIN, mtbi) / MIN == pytest.approx(daly_min, abs=0.05)


def test_young_interval_and_the_write_longer_than_two_mtbi_case() -> None:
    assert young_interval(5 * MIN, 24 * HOUR) / MIN == pytest.approx(120.0)
    assert daly_interval(3 * HOUR, 1 * HOUR) == 1 * HOUR  # δ ≥ 2M: checkpoint every M


@pytest.mark.parametrize(
    ("write", "mtbi", "interval_min", "overhead"),
    [(1 * MIN, 1 * HOUR, 10.3, 0.426), (5 * MIN, 6 * HOUR, 56.7, 0.220), (5 * MIN, 24 * HOUR, 116.7, 0.096)],
)
def test_overhead_at_dalys_interval_matches_the_reference_table(
    write: float, mtbi: float, interval_min: float, overhead: float
) -> None:
    interval = daly_interval(write, mtbi)
    assert interval / MIN == pytest.approx(interval_min, abs=0.05)
    assert overhead_fraction(interval, write, 10 * MIN, mtbi) == pytest.approx(overhead, abs=0.0006)


def test_overhead_is_smallest_near_dalys_interval() -> None:
    best = daly_interval(5 * MIN, 6 * HOUR)
    at = overhead_fraction(best, 5 * MIN, 2 * MIN, 6 * HOUR)
    for factor in (0.5, 0.8, 1.25, 2.0):
        assert overhead_fraction(best * factor, 5 * MIN, 2 * MIN, 6 * HOUR) > at


def test_lost_per_interruption_is_half_an_interval_plus_the_write() -> None:
    assert lost_per_interruption(30 * MIN, 0) == 15 * MIN
    assert lost_per_interruption(30 * MIN, 5 * MIN) == pytest.approx((450 + 150) / 35 * MIN)


def test_checkpoint_command_prints_both_intervals_and_the_table() -> None:
    result = runner.invoke(
        cli.app,
        [
            "cost",
            "checkpoint",
            "--write-time",
            "5m",
            "--mtbi",
            "6h",
            "--restart-time",
            "10m",
            "--price-per-hour",
            "17.6289",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Young √(2CM) = 60.0m, Daly = 56.7m" in result.output
    assert "22.0%" in result.output and "Daly" in result.output and "4 × Young" in result.output
    assert "$21.51" in result.output  # 17.6289 × 1.220


def test_rate_per_hour_is_the_same_as_its_mtbi() -> None:
    by_rate = runner.invoke(cli.app, ["cost", "checkpoint", "--write-time", "1m", "--rate-per-hour", "0.5"])
    by_mtbi = runner.invoke(cli.app, ["cost", "checkpoint", "--write-time", "1m", "--mtbi", "2h"])
    assert by_rate.exit_code == 0 and by_rate.output == by_mtbi.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--write-time", "0", "--mtbi", "6h"], "--write-time '0': must be a duration > 0"),
        (["--write-time", "-5m", "--mtbi", "6h"], "--write-time '-5m': must not be negative"),
        (["--write-time", "5m", "--mtbi", "soon"], "--mtbi 'soon': 'soon' is not a duration"),
        (["--write-time", "5m", "--mtbi", "0s"], "--mtbi '0s': must be a duration > 0"),
        # rich markup in the user's text is shown as typed, not parsed (an unmatched tag used to crash)
        (["--write-time", "5m", "--mtbi", "[/x]"], "--mtbi '[/x]': '[/x]' is not a duration"),
        (["--write-time", "5m"], "give exactly one of --mtbi"),
        (["--write-time", "5m", "--mtbi", "6h", "--rate-per-hour", "1"], "give exactly one of --mtbi"),
        (
            ["--write-time", "5m", "--rate-per-hour", "0"],
            "--rate-per-hour 0: allowed 1.14e-06 (one interruption in 100",
        ),
        # 1e-308 an hour is one interruption in 10^300 years: intervals were inf and overheads nan.
        (["--write-time", "5m", "--rate-per-hour", "1e-308"], "--rate-per-hour 1e-308: allowed 1.14e-06"),
        (["--write-time", "5m", "--rate-per-hour", "1e-308", "--json"], "--rate-per-hour 1e-308: allowed"),
        (
            ["--write-time", "5m", "--mtbi", "6h", "--restart-time", "-1s"],
            "--restart-time '-1s': must not be",
        ),
    ],
)
def test_bad_input_is_a_clear_error_with_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(cli.app, ["cost", "checkpoint", *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
