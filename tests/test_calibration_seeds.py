"""Calibration under several seeds (``experiment.calibration_seeds``): a replay that draws a delay per job
differs by seed, so each part is judged on the mean over the seeds and says how many pass — worked out
from the draws themselves; a replay that draws nothing runs once."""

from __future__ import annotations

import numpy as np
import pytest

from fleetlab.experiment import calibration
from fleetlab.experiment.calibration import calibrate
from fleetlab.experiment.calibration_compare import MetricRow
from fleetlab.experiment.calibration_seeds import mean_rows
from fleetlab.experiment.delay_fit import UNEXPLAINED
from fleetlab.model.history import History
from fleetlab.model.scheduling_delay import SchedulingDelay
from fleetlab.report.baseline_files import calibration_payload
from fleetlab.sim.scheduling_delay import drawn_delays_s
from history_builders import history


def _world(n: int = 150) -> History:
    """One 64-CPU node, job k (user u<k>, 1 CPU) submitted at 100 k s waits 0 s (k even) or 1,000 s (odd)
    and runs 10 s: never short of room, so a replayed job's wait is exactly its drawn delay."""
    jobs = []
    for k in range(n):
        wait = 0.0 if k % 2 == 0 else 1000.0
        jobs.append({"job_id": f"j{k:03d}", "user": f"u{k}", "state": "completed", "submit_s": 100.0 * k,
                     "scheduled_s": 100.0 * k + wait, "running_s": 100.0 * k + wait,
                     "end_s": 100.0 * k + wait + 10.0, "cpu_per_pod": 1.0})  # fmt: skip
    return history(jobs, [{"node": "n1", "cpu": 64.0}], end_s=100.0 * n + 2000)


def _ks_by_hand(draws: np.ndarray) -> float:
    """The measured waits are half 0 s and half 1,000 s: CDF 0.5 on [0, 1000), 1 from 1,000 s. The
    replayed CDF steps at each draw; the sup of the gap is reached at a draw or just before 1,000 s."""
    times = np.union1d(draws, [0.0, 1000.0])
    replayed = np.array([np.mean(draws <= t) for t in times])
    measured = np.where(times >= 1000.0, 1.0, 0.5)
    return float(np.max(np.abs(replayed - measured)))


def test_the_validation_is_the_mean_over_seeds_with_its_pass_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # The search's own seeds are another test's (below): here candidates are scored on one seed, to keep
    # the test short; the validation is replayed under four.
    monkeypatch.setattr(calibration, "FIT_SEEDS", 1)
    c = calibrate(_world(), seeds=4)
    assert c.knobs.scheduling_delay == UNEXPLAINED
    delay = c.scenario.scheduler.scheduling_delay
    assert delay is not None
    assert [r.seed for r in c.seed_replays] == [0, 1, 2, 3]
    # The validation part is jobs 100..149 (submitted at or after 10,000 s, 2/3 of the submissions); on
    # seed k each replays with the delay drawn for (k, its position): the KS is worked out from the draws.
    by_hand = [_ks_by_hand(drawn_delays_s(delay, k, np.arange(100, 150))) for k in range(4)]
    per_seed = [
        next(r.error for r in s.validation or [] if (r.job_class, r.metric) == ("all", "wait_ks"))
        for s in c.seed_replays
    ]
    assert per_seed == pytest.approx(by_hand)
    assert len(set(np.round(by_hand, 6))) > 1  # the seeds really differ
    mean = sum(by_hand) / 4
    row = (
        next(r for r in c.validation.rows if (r.job_class, r.metric) == ("all", "wait_ks"))
        if c.validation
        else None
    )
    assert row is not None and row.error == pytest.approx(mean) and row.within == (mean <= 0.10)
    passing = sum(ks <= 0.10 for ks in by_hand)
    payload = calibration_payload(c)
    summary = next(
        s
        for s in payload["seed_summary"]
        if (s["part"], s["job_class"], s["metric"]) == ("validation", "all", "wait_ks")
    )
    assert summary["within_seeds"] == passing and summary["seeds"] == [0, 1, 2, 3]
    assert (summary["min"], summary["max"]) == pytest.approx((min(by_hand), max(by_hand)))
    line = next(x for x in payload["seed_verdict"] if x.startswith("validation:"))
    assert (
        f"KS mean {mean:.3f} ({min(by_hand):.3f}–{max(by_hand):.3f}), {passing} of 4 seed(s) within 0.100"
        in line
    )
    # The scenario's record carries the mean, the error `report` and `compare` show as the model's.
    record = c.scenario.calibration
    assert record is not None
    recorded = next(
        e for e in record.errors if (e.source, e.job_class, e.metric) == ("validation", "all", "wait_ks")
    )
    assert recorded.error == pytest.approx(mean)
    # Seed 0's rows are those of the replay kept (replay/), the same as a calibration with one seed.
    one = calibrate(_world(), seeds=1)
    assert (
        [r.error for r in one.validation.rows] == [r.error for r in c.seed_replays[0].validation or []]
        if one.validation
        else False
    )
    assert any("replayed under 4 seeds (0..3)" in n for n in c.notes)


def test_a_replay_that_draws_nothing_runs_once_and_says_so() -> None:
    c = calibrate(_world(), seeds=5, fit=False)
    assert [r.seed for r in c.seed_replays] == [0]
    assert any(
        n.startswith("replayed once: nothing in the calibrated scenario is drawn at random") for n in c.notes
    )
    # No spread to show: each part's line gives the one replay's figure. Every job replays with no wait
    # against waits half 0 s and half 1,000 s: KS 0.5 on both parts, not within 0.10.
    lines = calibration_payload(c)["seed_verdict"]
    assert lines[0].startswith("fit: KS 0.500 (one replay), not within 0.100")
    assert lines[1].startswith("validation: KS 0.500 (one replay), not within 0.100")


def _row(error: float | None, within: bool | None, simulated: float) -> MetricRow:
    return MetricRow("all", "wait_p95_s", 1000.0, simulated, error, "abs_s", 250.0, within)


def test_mean_rows_by_hand() -> None:
    # Errors 100, 300, 200 s against a tolerance of max(60, 0.25 x 1000) = 250 s: mean 200 s, within; the
    # simulated p95s 1100, 700, 1200 average 1000. The second seed alone is out, which the mean does not hide
    # in the pass count (seed_summary) but does not judge on.
    rows = mean_rows([[_row(100.0, True, 1100.0)], [_row(300.0, False, 700.0)], [_row(200.0, True, 1200.0)]])
    assert rows[0].error == pytest.approx(200.0) and rows[0].simulated == pytest.approx(1000.0)
    assert rows[0].within is True
    # A seed with no judgeable error (None) is left out of the mean: (300 + 400) / 2 = 350 > 250, out.
    rows = mean_rows([[_row(None, None, 900.0)], [_row(300.0, False, 700.0)], [_row(400.0, False, 600.0)]])
    assert rows[0].error == pytest.approx(350.0) and rows[0].within is False


def test_a_candidate_that_draws_at_random_is_scored_on_the_mean_over_seeds() -> None:
    # Fitted on the whole record (--fit-until 1): by rolling origin the candidates are scored on jobs
    # 100..149 (waits half 0 s, half 1,000 s), the delay read from jobs 0..99 as they stood at 10,000 s:
    # 50 of 0 s, 45 of 1,000 s and 91, 93, ..., 99 censored at 900..100 s, so its 95 points are 47 zeros,
    # 444.444 s and 47 x 1,000 s (test_delay_calibration). Never short of room, each scored job replays
    # with exactly its drawn delay; the candidate draws at random, so it is scored on seeds 0 and 1.
    c = calibrate(_world(), seeds=2, fit_until=1.0)
    assert c.fit_scoring is not None and c.fit_scoring.read_until_s == 10_000.0
    drawn = next(r for r in c.fit if (r["knob"], r["value"]) == ("scheduling_delay", UNEXPLAINED))
    delay = SchedulingDelay(quantiles_s=(0.0,) * 47 + (444.444,) + (1000.0,) * 47, source="inner")
    by_hand = [_ks_by_hand(drawn_delays_s(delay, k, np.arange(100, 150))) for k in range(2)]
    assert drawn["seeds"] == 2 and drawn["wait_ks"] == pytest.approx(sum(by_hand) / 2)
    # The score is the worse of the mean KS over 0.10 and the mean p95 relative error over 0.25.
    p95 = drawn.get("wait_p95_rel", 0.0)
    assert drawn["score"] == pytest.approx(max(sum(by_hand) / 2 / 0.10, p95 / 0.25))
    # A constant latency draws nothing: one replay, no seed count.
    constant = next(r for r in c.fit if (r["knob"], r["value"]) == ("scheduling_latency_s", 0.0))
    assert "seeds" not in constant and constant["wait_ks"] == pytest.approx(0.5)
