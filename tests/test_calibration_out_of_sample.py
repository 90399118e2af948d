"""Calibration that carries over to later weeks, on small worlds worked out by hand: an inferred limit only
where the group's own waits show one (``policy_evidence.limit_level``), candidates scored out of sample
inside the fit part (``calibration.fit_scoring``: rolling origin), and a replayed p95 that never cleared
its backlog counted as the error it at least is."""

from __future__ import annotations

import pytest

from fleetlab.experiment.calibration import calibrate, fit_scoring, p95_rel_error
from fleetlab.experiment.calibration_compare import MetricRow
from fleetlab.experiment.history_batch import inferred_job_limits
from fleetlab.experiment.history_policy import inferred_policy
from fleetlab.metrics.policy_evidence import (
    CEILING_RESOURCES,
    JobSpans,
    group_labels,
    level_while_waiting,
    limit_level,
    peak_while_waiting,
)
from history_builders import history
from test_calibration_policy import GiB

JOBS, CPUS = CEILING_RESOURCES.index("jobs"), CEILING_RESOURCES.index("cpu")
NODE = [{"node": "n1", "cpu": 16.0, "memory": 64 * GiB}]


def _job(job_id: str, user: str, submit: float, start: float, end: float) -> dict[str, object]:
    return {"job_id": job_id, "user": user, "state": "completed", "submit_s": submit, "scheduled_s": start,
            "running_s": start, "end_s": end, "cpu_per_pod": 4.0, "memory_per_pod": GiB}  # fmt: skip


# u1: a runs 0..100; b waits 10..100 while a runs (1 job, 4 CPUs held while waiting).
# u2: c waits 0..50 holding nothing of its own, runs 50..60: its wait is not a limit of its own.
# u3: d waits 0..100 holding nothing, runs 100..200; e waits 150..200 while d runs, runs 200..300.
#     Waiting 150 s: 100 s holding 0 jobs, 50 s holding 1 (a third of it).
WORLD = [
    _job("a", "u1", 0.0, 0.0, 100.0), _job("b", "u1", 10.0, 100.0, 200.0),
    _job("c", "u2", 0.0, 50.0, 60.0),
    _job("d", "u3", 0.0, 100.0, 200.0), _job("e", "u3", 150.0, 200.0, 300.0),
]  # fmt: skip


def test_a_limit_is_read_only_from_what_a_group_held_while_it_waited() -> None:
    h = history(WORLD, NODE, end_s=300.0)
    spans = JobSpans.of(h)
    users = group_labels(h, "user")
    u1, u2, u3 = (users == u for u in ("u1", "u2", "u3"))
    # u1 held 1 job / 4 CPUs all 90 s of its waiting: level and peak 1 job, 4 CPUs.
    assert limit_level(spans, u1, JOBS, 0.5) == 1.0 and limit_level(spans, u1, CPUS, 0.9) == 4.0
    # u2 held nothing while c waited: peak 0, no limit of its own at any level.
    assert peak_while_waiting(spans, u2, JOBS) == 0.0
    assert limit_level(spans, u2, JOBS, 1.0) is None and limit_level(spans, u2, CPUS, 0.75) is None
    # u3: held 0 jobs for 100 of its 150 s of waiting, 1 for 50. The time-weighted 0.5 level is 0 (2/3 of
    # the waiting at 0 >= 0.5), the 0.75 level 1; a level of 0 is no cap: the most it held while waiting, 1.
    assert level_while_waiting(spans, u3, JOBS, 0.5) == 0.0
    assert level_while_waiting(spans, u3, JOBS, 0.75) == 1.0
    assert limit_level(spans, u3, JOBS, 0.5) == 1.0 and peak_while_waiting(spans, u3, JOBS) == 1.0


def test_groups_whose_waits_show_no_limit_get_neither_a_job_cap_nor_a_quota() -> None:
    h = history(WORLD, NODE, end_s=300.0)
    names = {u: f"user-{u}" for u in ("u1", "u2", "u3")}
    _, levels = inferred_job_limits(h, "user", 0.5, names)
    assert levels == {"u1": 1.0, "u3": 1.0}  # u2 never ran a job while another of its jobs waited
    policy = inferred_policy(h, "user", 0.5, job_quantile=0.5)
    quotas = {
        o["metadata"]["name"]: {r["name"]: r for r in o["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
        for o in policy.objects if o["kind"] == "ClusterQueue"
    }  # fmt: skip
    # u1 and u3: 4 CPUs (their level while waiting, never below their 4-CPU jobs), lent to no one;
    # u2: the whole node, nothing limited.
    assert quotas["user-u1"]["cpu"] == {"name": "cpu", "nominalQuota": "4000m", "borrowingLimit": "0"}
    assert quotas["user-u3"]["cpu"]["nominalQuota"] == "4000m"
    assert quotas["user-u2"]["cpu"] == {"name": "cpu", "nominalQuota": "16000m"}


def _serial(jobs: int) -> list[dict[str, object]]:
    """u1's job k (k >= 1) is submitted at 100 k - 50 s and waits 50 s for job k - 1 to end at 100 k, with
    12 of 16 CPUs free: a limit of one 4-CPU job, not capacity. u2 runs one job at 0."""
    rows = [_job("u1-0", "u1", 0.0, 0.0, 100.0), _job("u2-0", "u2", 0.0, 0.0, 50.0)]
    rows += [_job(f"u1-{k}", "u1", 100.0 * k - 50, 100.0 * k, 100.0 * k + 100) for k in range(1, jobs)]
    return rows


def test_candidates_are_scored_on_the_fit_parts_later_jobs_with_limits_read_before_them() -> None:
    h = history(_serial(100), NODE, end_s=10_000.0)
    c = calibrate(h)
    # 101 submissions sorted: 0, 0, 50, 150, ...; position i >= 1 is job k = i - 1 at 100 k - 50. The split
    # is position ceil(2/3 * 101) = 68: job 67 at 6,650 s; the fit part holds jobs 0..66 and u2's (68).
    # Inside it the rolling origin is position ceil(2/3 * 68) = 46: job 45 at 4,450 s, and jobs 45..66
    # (22 >= 20 with measured waits) score each candidate, with limits read from jobs 0..44 and u2's.
    assert c.fit_until_s == 6650.0
    assert c.fit_scoring is not None
    assert (c.fit_scoring.method, c.fit_scoring.read_until_s, c.fit_scoring.scored_jobs) == (
        "rolling-origin", 4450.0, 22,
    )  # fmt: skip
    first = {row["value"]: row for row in c.fit if row["knob"] == "limit_quantile"}
    # No limit: the 22 scored jobs start at once (0 s against 50 s measured): KS 1, p95 off by 100 %,
    # score max(1 / 0.1, 1 / 0.25) = 10. One job at a time (u1's 4 CPUs) replays every wait: 0.
    assert first[None]["wait_ks"] == pytest.approx(1.0) and first[None]["score"] == pytest.approx(10.0)
    assert first[1.0]["score"] == pytest.approx(0.0)
    assert c.knobs.limit_quantile == 1.0
    assert c.validation is not None
    later = {r.metric: r for r in c.validation.rows if r.job_class == "all"}
    assert later["wait_ks"].error == pytest.approx(0.0) and later["wait_p95_s"].simulated == 50.0


def test_scoring_stays_in_sample_without_enough_later_waits_or_without_an_inferred_policy() -> None:
    # 30 u1 jobs + u2's: the fit part would be scored on fewer than 20 later jobs.
    h = history(_serial(30), NODE, end_s=3_100.0)
    small = fit_scoring(h, inferred=True)
    # 31 submissions: the origin is position ceil(2/3 * 31) = 21 (job 20 at 1,950 s); jobs 20..29: 10 < 20.
    assert (small.method, small.read_until_s, small.scored_jobs) == ("in-sample", None, 31)
    assert "fewer than 20 measured waits" in small.reason
    assert fit_scoring(history(_serial(100), NODE, end_s=10_000.0), inferred=False).method == "in-sample"


def _p95(
    measured: float, simulated: float, simulated_bound: bool = False, measured_bound: bool = False
) -> float | None:
    row = MetricRow("all", "wait_p95_s", measured, simulated, abs(simulated - measured), "abs_s", 60.0, None,
                    measured_bound, simulated_bound)  # fmt: skip
    return p95_rel_error(row)


def test_a_backlog_that_never_clears_counts_by_how_far_past_the_measured_p95_it_is() -> None:
    # Both exact: |150 - 100| / 100 = 0.5 either way.
    assert _p95(100.0, 150.0) == pytest.approx(0.5) and _p95(100.0, 50.0) == pytest.approx(0.5)
    # The replay left more than 5 % waiting at its end, 1,000 s after submit: the p95 is at least 1,000,
    # so at least (1000 - 100) / 100 = 9 off (before: not counted, and such a backlog could win on KS).
    assert _p95(100.0, 1000.0, simulated_bound=True) == pytest.approx(9.0)
    # A replayed bound below the measured p95 says nothing of the error; nor does a measured bound.
    assert _p95(100.0, 80.0, simulated_bound=True) is None
    assert _p95(100.0, 150.0, measured_bound=True) is None
    assert _p95(0.0, 0.0) == 0.0 and _p95(0.0, 5.0) == 1.0
