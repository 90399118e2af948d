"""Kueue's time-weighted ``lent`` integrates every change of the quota usage (it was refreshed at most
once a simulated minute, so a cohort member lending 8 GPUs for an hour could read 0)."""

from __future__ import annotations

import pytest

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.queues import queue_rows
from test_kueue_sim import _cq, _objects


def _lend_after(b_runtime_s: float) -> float:
    """team-a and team-b (8 GPUs nominal each) in one cohort, 2 nodes of 8 GPUs. b0 (8 GPUs, team-b) runs
    0 → b_runtime_s; a0 (2 pods × 8 GPUs, team-a) needs 16, is admitted when b0 ends, borrowing team-b's
    8, and runs 1 h. Returns team-b's lent GPU mean."""
    objects = _objects()
    objects[1], objects[2] = _cq("team-a", 8), _cq("team-b", 8)
    jobs = [
        job("b0", gpus=8, runtime=b_runtime_s, queue="q", namespace="b"),
        job("a0", gpus=8, pods=2, runtime=3600, queue="q", namespace="a"),
    ]
    result = run_one(scenario([pool(count=2)], jobs, kueue=objects), "default").result
    assert result.end_ms == int((b_runtime_s + 3600) * 1000)
    [row] = [
        r for r in queue_rows(result) if r.cluster_queue == "team-b" and r.flavor_resource.endswith("gpu")
    ]
    return row.lent_mean


def test_lent_counts_a_loan_that_starts_within_a_minute_of_the_last_change() -> None:
    """b0 ends at 30 s: team-b lends 8 GPUs from 30 s to 3630 s of a 3630 s run → 8 × 3600 / 3630 = 7.934
    (it read 0: the loan began 30 s after the last refresh and nothing changed again until the end)."""
    assert _lend_after(30) == pytest.approx(8 * 3600 / 3630)


def test_moving_a_change_by_seconds_moves_lent_by_seconds() -> None:
    """b0 ends at 90 s: 8 × 3600 / 3690 = 7.805; the figure moves smoothly with the submit times."""
    assert _lend_after(90) == pytest.approx(8 * 3600 / 3690)
