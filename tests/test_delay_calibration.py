"""Calibration's delay drawn per job (``experiment.delay_fit``): read from the waits the record leaves
unexplained, judged against the constant latency by the same out-of-sample score, kept only when it scores
more than 2 % lower, and flagged with the share of the waiting it absorbs — worked out by hand."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from fleetlab.experiment.calibration import calibrate
from fleetlab.experiment.delay_fit import UNEXPLAINED, product_limit, unexplained_delay, weighted_quantiles
from fleetlab.experiment.history_split import history_until
from fleetlab.model.history import History
from fleetlab.sim.scheduling_delay import drawn_delays_s
from history_builders import history


def _world(wait_of: Callable[[int], float], n: int = 150) -> History:
    """One 64-CPU node; job k (user u<k>, 1 CPU) is submitted at 100 k s, waits ``wait_of(k)`` and runs
    10 s: never short of room, and no user has two jobs, so every wait is unexplained."""
    jobs = [
        {"job_id": f"j{k:03d}", "user": f"u{k}", "state": "completed", "submit_s": 100.0 * k,
         "scheduled_s": 100.0 * k + wait_of(k), "running_s": 100.0 * k + wait_of(k),
         "end_s": 100.0 * k + wait_of(k) + 10.0, "cpu_per_pod": 1.0}
        for k in range(n)
    ]  # fmt: skip
    return history(jobs, [{"node": "n1", "cpu": 64.0}], end_s=100.0 * n + 2000)


def _mixed(k: int) -> float:
    return 0.0 if k % 2 == 0 else 1000.0


def test_the_product_limit_estimate_by_hand() -> None:
    # Waits 0, 10, 20, 30 s of started jobs and 15 s of one still waiting (censored), in any order.
    waits = np.array([20.0, 15.0, 0.0, 30.0, 10.0])
    started = np.array([True, False, True, True, True])
    values, masses = product_limit(waits, started)
    # At 0 s one of 5 starts: S = 4/5, mass 1/5. At 10 s one of 4: S = 3/5, mass 1/5. The censored 15 s
    # leaves (S stays 3/5). At 20 s one of the 2 left: S = 3/10, mass 3/10. At 30 s the last: mass 3/10.
    assert values.tolist() == [0.0, 10.0, 20.0, 30.0]
    assert masses == pytest.approx([0.2, 0.2, 0.3, 0.3])
    # Levels: mass before each value over the mass before the last (0.7): 0, 2/7, 4/7, 1. The median lies
    # between 10 s (2/7) and 20 s (4/7): 10 + (1/2 − 2/7) / (2/7) x 10 = 17.5 s — dropping the censored
    # wait would have given 15 s (four equal masses).
    q = weighted_quantiles(values, masses, np.array([0.0, 2 / 7, 0.5, 1.0]))
    assert q == pytest.approx([0.0, 10.0, 17.5, 30.0])
    # Equal masses are numpy's linear quantiles.
    equal = np.full(4, 0.25)
    assert weighted_quantiles(values, equal, np.array([0.5, 0.9])) == pytest.approx(
        np.quantile(values, [0.5, 0.9])
    )
    # A tie: a start and a censored wait at 10 s; the start comes first (5 at risk), and the longest wait
    # (40 s) being censored keeps what survives it: 0 (1/5), 10 (1/5), 20 (3/5 x 1/2 = 3/10), 40 (3/10).
    values, masses = product_limit(np.array([0.0, 10.0, 10.0, 20.0, 40.0]),
                                   np.array([True, False, True, True, False]))  # fmt: skip
    assert values.tolist() == [0.0, 10.0, 20.0, 40.0] and masses == pytest.approx([0.2, 0.2, 0.3, 0.3])


def test_the_delay_is_read_from_the_unexplained_waits_with_the_censored_ones() -> None:
    # The fit part (2/3 of 150 submissions: before 10,000 s) holds jobs 0..99; jobs 91, 93, ..., 99 (wait
    # 1000 s) had not started at 10,000 s: they waited at least 900, 700, 500, 300, 100 s (censored). 50
    # started at once, 45 after 1000 s. Product limit: at 0 s 50 of 100 start (S = 1/2, 0.01 each); the
    # five censored leave, S stays 1/2; at 1000 s the 45 left all start: 1/90 each. Dropping the censored
    # would have given 50/95 and 45/95.
    fit = history_until(_world(_mixed), 10_000.0)
    delay, words = unexplained_delay(fit, "user")
    assert delay is not None
    # 95 points at levels i/94. Value k sits at (mass before it) / (mass before the last value), the last
    # being 1/2 + 44/90 = 44.5/45: the last 0 at 0.49 x 45/44.5 = 0.4955, the first 1000 at 22.5/44.5 =
    # 0.5056. So i = 0..46 give 0; i = 47 (level 1/2) gives 1000 x (22.25 − 22.05)/0.45 = 444.444 s; the
    # other 47 give 1000 s.
    assert delay.quantiles_s == (0.0,) * 47 + (444.444,) + (1000.0,) * 47
    assert "the 95 started job(s) submitted before 10000 s" in words
    assert "and the 5 such job(s) not started by then, censored" in words
    assert "(the longest 900 s): a product-limit estimate" in words
    # Fewer than 20 such waits: none is drawn, and the words say why. Before 1,500 s: jobs 0..14, of which
    # the 8 even ones and 1, 3, 5 (started at 1,100, 1,300, 1,500 s) had started: 11.
    none, why = unexplained_delay(history_until(_world(_mixed), 1_500.0), "user")
    assert none is None and "11 started job(s)" in why and "at least 20" in why


def test_a_drawn_delay_replaces_a_constant_latency_that_cannot_make_both_zero_and_long_waits() -> None:
    c = calibrate(_world(_mixed))
    assert c.fit_scoring is not None and c.fit_scoring.method == "rolling-origin"
    assert (c.fit_scoring.read_until_s, c.fit_scoring.scored_jobs) == (6_700.0, 33)
    tried = {(r["knob"], r["value"]): r for r in c.fit}
    # Scored on jobs 67..99 (33): 16 waited 0 s (68, 70, ..., 98), 17 waited 1000 s. A constant 0 gives
    # KS 17/33 and p95 0 against 1000 (error 1): score max(0.515 / 0.1, 1 / 0.25) = 5.15; a constant
    # 1000 s gives KS 16/33 and the p95 exactly: 4.85. No constant makes both the zeros and the 1000s.
    assert tried[("scheduling_latency_s", 0.0)]["wait_ks"] == pytest.approx(17 / 33)
    assert tried[("scheduling_latency_s", 1000.0)]["score"] == pytest.approx(10 * 16 / 33)
    # The delay drawn from the inner part's 63 started jobs (34 of 0 s, 29 of 1000 s) and 59, 61, 63, 65
    # (not yet started at 6,700 s: censored) scores far lower, and replaces the constant (latency back to 0).
    drawn = tried[("scheduling_delay", UNEXPLAINED)]["score"]
    assert drawn < 0.98 * tried[("scheduling_delay", None)]["score"] and drawn < 1.5
    assert (c.knobs.scheduling_delay, c.knobs.scheduling_latency_s) == (UNEXPLAINED, 0.0)
    assert any("63 started job(s) submitted before 6700 s" in n and "it replaces" in n for n in c.notes)
    # The calibrated scenario carries the fit part's delay, a field a person can read.
    delay = c.scenario.scheduler.scheduling_delay
    assert delay is not None and delay.quantiles_s == (0.0,) * 47 + (444.444,) + (1000.0,) * 47
    # Flagged with the share it absorbs: the replay's own draws for the fit part's jobs (positions 0..99,
    # seed 0) over their measured waiting, 50 x 1000 s.
    share = drawn_delays_s(delay, 0, np.arange(100)).sum() / 50_000
    flag = next(f for f in c.flags if f.startswith("scheduling_delay"))
    assert f"absorbs {100 * share:.1f} % of the fit part's measured waiting" in flag
    assert "not capacity and not a policy the record shows" in flag and "median 444 s, p95 1,000 s" in flag
    assert c.scenario.calibration is not None and flag in c.scenario.calibration.flags
    # Out of sample: the later 50 jobs (25 zeros) replayed with their own draws come within KS 0.1.
    later = {r.metric: r for r in c.validation.rows if r.job_class == "all"} if c.validation else {}
    assert later["wait_ks"].error is not None and later["wait_ks"].error <= 0.1


def test_a_constant_wait_keeps_the_simpler_constant_latency() -> None:
    # Every job waits 30 s: the constant 30 s scores 0, and so does the delay drawn from sixty-seven 30 s
    # waits; a tie keeps the earlier, simpler value.
    c = calibrate(_world(lambda k: 30.0))
    tried = {(r["knob"], r["value"]): r["score"] for r in c.fit}
    assert tried[("scheduling_latency_s", 30.0)] == 0.0 and tried[("scheduling_delay", UNEXPLAINED)] == 0.0
    assert (c.knobs.scheduling_latency_s, c.knobs.scheduling_delay) == (30.0, None)
    assert c.scenario.scheduler.scheduling_delay is None
    assert not any(f.startswith("scheduling_delay") for f in c.flags)
    assert any("the constant latency is kept" in n for n in c.notes)
