"""Calibration on real logs from ../shared/traces (skipped when absent): why the HPC2N "Seth" log and the
Alibaba 2023 pod list waited, and the HPC2N replay on its real 120 x 2-CPU nodes. Figures are those
docs/calibration.md quotes; the full fits (about 170 s and 50 s) run with FLEETLAB_SLOW_TESTS=1."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fleetlab.experiment.calibration import calibrate, fit_scoring
from fleetlab.experiment.calibration_compare import Measured
from fleetlab.experiment.delay_fit import UNEXPLAINED, unexplained_delay
from fleetlab.experiment.history_split import history_until, split_instant
from fleetlab.metrics.policy_evidence import group_labels
from fleetlab.metrics.wait_causes import diagnose_waits, free_waits
from fleetlab.model.history import History
from fleetlab.report.calibration_text import cause_lines
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.history.swf import SwfNodes
from shared_data import shared_path

HPC2N = shared_path("traces", "pwa-hpc2n", "hpc2n-seth-2002-first3170.swf")
OPENB = shared_path("traces", "alibaba-gpu-v2023")
needs_hpc2n = pytest.mark.skipif(not HPC2N.is_file(), reason="shared HPC2N log absent")
needs_openb = pytest.mark.skipif(not (OPENB / "openb_pod_list_default.csv").is_file(), reason="openb absent")


@pytest.fixture(scope="module")
def seth() -> History:
    """The log on its real machine: 120 nodes of 2 CPUs (the archive's Alea machine file)."""
    return import_sources([str(HPC2N)], swf_nodes=SwfNodes(120, 2))


@needs_hpc2n
def test_hpc2n_waits_are_not_capacity_waits(seth: History) -> None:
    causes = diagnose_waits(seth)
    row = causes.row()
    assert row is not None and (row.jobs, row.waited) == (3170, 3071)
    assert row.wait_hours == pytest.approx(15_502.9, abs=0.1)
    # For 4.0 % of the waiting the running jobs left no room; the same user ran something for 75 %.
    assert row.capacity_explained_wait_share == pytest.approx(0.0403, abs=5e-4)
    assert row.same_user_running_share == pytest.approx(0.7505, abs=5e-4)
    assert row.nothing_running_share == pytest.approx(0.0698, abs=5e-4)
    assert causes.concentration["user"] == (6, 17) and causes.wider_than_any_node == 2930
    words = "\n".join(cause_lines(causes.as_dict()))
    assert "capacity explains 4.0 % of it" in words and "not capacity waits" in words


@needs_hpc2n
def test_hpc2n_replays_every_job_on_its_real_nodes(seth: History) -> None:
    # One pod of 64 processors fits no 2-CPU node; as a gang of 32 node-sized pods it runs (the replay
    # before gangs left 92.5 % of the jobs never started).
    c = calibrate(seth, fit=False)
    rows = {(r.job_class, r.metric): r for r in c.rows}
    assert rows[("all", "never_started_share")].simulated == 0.0
    assert rows[("all", "cpu_hours_allocated")].error == pytest.approx(0.0, abs=1e-9)
    assert rows[("all", "gpu_hours_allocated")].within is None  # no GPU work: not compared
    assert c.validation is not None and c.validation.jobs == 1056
    # Capacity alone: the later part's waits are far shorter than measured.
    later = {(r.job_class, r.metric): r for r in c.validation.rows}
    assert later[("all", "wait_ks")].error == pytest.approx(0.516, abs=0.01)


@needs_hpc2n
@pytest.mark.skipif(os.environ.get("FLEETLAB_SLOW_TESTS") != "1", reason="set FLEETLAB_SLOW_TESTS=1 (~170 s)")
def test_hpc2n_fit_and_out_of_sample_validation(seth: History) -> None:
    c = calibrate(seth)
    # Candidates are scored on the fit part's later third (704 jobs) with limits read from its earlier two
    # thirds (rolling origin): the in-sample levels (0.9 CPU, 0.75 jobs: fit KS 0.198) let a backlog grow
    # on jobs they were not read from (p95 11.9 x the measured), so the hard CPU ceilings win (quantile 1).
    assert c.fit_scoring is not None and c.fit_scoring.method == "rolling-origin"
    assert (c.fit_scoring.read_until_s, c.fit_scoring.scored_jobs) == (2_569_660.0, 704)
    tried = {(r["knob"], r["value"]): r for r in c.fit}
    # The best constant latency (401 s) scores 3.20 (one replay: it draws nothing); a delay drawn per job
    # from the 286 unexplained waits of the inner part (room on their nodes, no job of the same user
    # running; none censored) 2.74 on the mean over seeds 0..4: it replaces it. Then strict FIFO (2.46);
    # the limits again, now scored on the mean over seeds: CPU level 0.75 (2.32, 5 % better than 1's
    # 2.46) and a running-job ceiling at level 1 (2.24, 3 % better than none).
    assert tried[("scheduling_delay", None)]["score"] == pytest.approx(3.20, abs=0.01)
    assert "seeds" not in tried[("scheduling_delay", None)]
    drawn = tried[("scheduling_delay", UNEXPLAINED)]
    assert drawn["score"] == pytest.approx(2.74, abs=0.01) and drawn["seeds"] == 5
    knobs = c.knobs
    assert (knobs.limit_quantile, knobs.job_limit_quantile, knobs.scheduling_latency_s) == (0.75, 1.0, 0.0)
    assert knobs.scheduling_delay == UNEXPLAINED and knobs.queueing == "fifo"
    assert c.policy is not None and c.policy.grouping == "user"
    delay = c.scenario.scheduler.scheduling_delay
    assert delay is not None and "the 422 started job(s)" in delay.source and "censored" not in delay.source
    flag = next(f for f in c.flags if f.startswith("scheduling_delay"))
    assert "absorbs 31.2 % of the fit part's measured waiting" in flag
    # Replayed under seeds 0..4, each part judged on the mean (docs/calibration.md): validation KS 0.119,
    # 0.155, 0.091, 0.112, 0.097 (mean 0.115: issue 27's 0.15 met), p95 119,000, 115,232, 116,282,
    # 115,512, 130,511 s against 92,738 measured (+24 % to +41 %, within 30 % on 4 of 5 seeds; mean error
    # 26,569 s = 28.6 %: met); the makespan is within 5 % on every seed.
    assert [r.seed for r in c.seed_replays] == [0, 1, 2, 3, 4]
    first = {(r.job_class, r.metric): r for r in c.seed_replays[0].validation or []}
    assert first[("all", "wait_ks")].error == pytest.approx(0.119, abs=0.01)
    assert first[("all", "wait_p95_s")].simulated == pytest.approx(119_000, rel=0.02)
    earlier = {(r.job_class, r.metric): r for r in c.rows}
    assert earlier[("all", "wait_ks")].error == pytest.approx(0.156, abs=0.01)
    later = {(r.job_class, r.metric): r for r in c.validation.rows} if c.validation else {}
    assert later[("all", "wait_ks")].error == pytest.approx(0.115, abs=0.01)
    assert later[("all", "wait_ks")].error <= 0.15
    assert later[("all", "wait_p95_s")].error == pytest.approx(26_569, rel=0.03)
    assert later[("all", "wait_p95_s")].error <= 0.30 * 92_738 and later[("all", "makespan_s")].within
    ks = [next(r.error for r in s.validation or [] if (r.job_class, r.metric) == ("all", "wait_ks"))
          for s in c.seed_replays]  # fmt: skip
    assert later[("all", "wait_ks")].error == pytest.approx(sum(e or 0.0 for e in ks) / 5)
    p95 = [next(r for r in s.validation or [] if (r.job_class, r.metric) == ("all", "wait_p95_s"))
           for s in c.seed_replays]  # fmt: skip
    assert sum(abs((r.simulated or 0.0) / 92_738 - 1) <= 0.30 for r in p95) == 4


@needs_hpc2n
def test_hpc2n_drawn_delay_reads_the_censored_waits(seth: History) -> None:
    # At the fit part's end (3,846,134 s) 12 jobs had not started; each had another job of its user
    # running for 89-100 % of its wait, so none is in the sample: the 422 started waits carry it alone,
    # masses 1/422 (the product limit with nothing censored). At the inner point (2,569,660 s) likewise
    # 286 started and none of the 32 waiting (all with a job of their user running).
    split = split_instant(seth, None)
    for instant, started in ((split, 422), (split_instant(history_until(seth, split), None), 286)):
        free = free_waits(history_until(seth, instant), "user")
        assert free is not None and (int(free[1].sum()), int((~free[1]).sum())) == (started, 0)
    delay, words = unexplained_delay(history_until(seth, split), "user")
    assert delay is not None and "the 422 started job(s)" in words and "censored" not in words


@needs_hpc2n
def test_hpc2n_half_split_scores_its_candidates_on_a_quiet_stretch(seth: History) -> None:
    # docs/calibration.md, "Split robustness": with --fit-until 0.5 the split is at 2,771,806 s (1,585 jobs
    # on each side), the rolling origin at the fit part's own two-thirds point, 2,427,614 s: candidates
    # score on the 529 jobs submitted between the two (1,056 before them).
    split = split_instant(seth, 0.5)
    fit = history_until(seth, split)
    scoring = fit_scoring(fit, inferred=True)
    assert (split, scoring.read_until_s, scoring.scored_jobs) == (2_771_806.0, 2_427_614.0, 529)
    m = Measured.of(seth)
    assert bool(m.started.all())  # every wait measured in full: plain quantiles describe them
    stretches = {
        "before": m.submit < 2_427_614.0,
        "scored": (m.submit >= 2_427_614.0) & (m.submit < split),
        "later": m.submit >= split,
    }
    figures = {
        name: (int(mask.sum()), *np.quantile(m.waits[mask], [0.5, 0.95]).round(), float(np.mean(m.waits[mask] > 3600)))
        for name, mask in stretches.items()
    }  # fmt: skip
    # The scored stretch waited a fifth as long at the 95th percentile as the jobs on either side of it.
    assert figures["before"][:3] == (1056, 3612.0, 87_898.0)
    assert figures["scored"][:3] == (529, 1009.0, 18_728.0)
    assert figures["later"][:3] == (1585, 5062.0, 86_160.0)
    assert [round(f[3], 3) for f in figures.values()] == [0.501, 0.329, 0.553]
    # The later half's users unseen in the earlier: 164 jobs, 165.5 of its 8,938.9 h of waiting (1.9 %).
    users = group_labels(seth, "user")
    known = set(group_labels(fit, "user").tolist())
    unseen = stretches["later"] & ~np.isin(users, list(known))
    assert sorted(set(users[unseen].tolist())) == [f"user-{u}" for u in (17, 18, 28, 33, 36, 40)]
    assert int(unseen.sum()) == 164
    assert m.waits[unseen].sum() / 3600 == pytest.approx(165.5, abs=0.1)
    assert m.waits[stretches["later"]].sum() / 3600 == pytest.approx(8938.9, abs=0.1)


@needs_openb
def test_alibaba_waits_are_not_capacity_waits_and_the_record_lacks_the_rest() -> None:
    history = import_sources(
        [str(OPENB / "openb_pod_list_default.csv"), str(OPENB / "openb_node_list_gpu_node.csv")]
    )
    causes = diagnose_waits(history)
    row = causes.row()
    assert row is not None and row.capacity_explained_wait_share is not None
    assert row.capacity_explained_wait_share <= 0.10
    assert row.cancelled_pending_jobs == 897
    assert causes.peak_use_share == pytest.approx(65.6 / 6212, abs=1e-3)
    words = "\n".join(cause_lines(causes.as_dict(), {"source": "inferred"}))
    assert "the measured waits are not capacity waits" in words
    assert (
        "the record lacks its queueing policy" in words
        and "never held more than 1.1 % of the nodes' GPUs" in words
    )


@needs_openb
@pytest.mark.skipif(os.environ.get("FLEETLAB_SLOW_TESTS") != "1", reason="set FLEETLAB_SLOW_TESTS=1 (~60 s)")
def test_alibaba_held_out_check_keeps_its_verdict_and_does_not_get_worse() -> None:
    history = import_sources(
        [str(OPENB / "openb_pod_list_default.csv"), str(OPENB / "openb_node_list_gpu_node.csv")]
    )
    c = calibrate(history)
    assert c.wait_causes is not None
    row = c.wait_causes.row()
    assert row is not None and row.capacity_explained_wait_share is not None
    assert row.capacity_explained_wait_share <= 0.10
    # Per-team limits scored out of sample keep none; the later part's wait KS 0.553 (0.622 when scored in
    # sample); capacity still explains none of the waiting. The delay drawn from the 1,285 unexplained
    # waits of the inner part (98.5 % of them at most 1 s: a longer wait nearly always overlaps a job of
    # the same team; 5 more censored, cancelled while pending) scores 7.67 on the mean over seeds 0..4
    # against the 4 s latency's 5.16: the constant is kept.
    assert (c.knobs.limit_quantile, c.knobs.job_limit_quantile) == (None, None)
    assert (c.knobs.scheduling_latency_s, c.knobs.scheduling_delay) == (4.0, None)
    assert any("1285 started job(s)" in n and "the constant latency is kept" in n for n in c.notes)
    later = {(r.job_class, r.metric): r for r in c.validation.rows} if c.validation else {}
    assert later[("all", "wait_ks")].error == pytest.approx(0.553, abs=0.01)
    # A constant latency and no drawn part: the replay is the same under every seed, so it runs once.
    assert [r.seed for r in c.seed_replays] == [0]
    assert any(n.startswith("replayed once: nothing in the calibrated scenario") for n in c.notes)
