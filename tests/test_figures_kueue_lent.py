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


@pytest.mark.parametrize("horizon_h", [0.5, 1.5, 3.0])
def test_lent_over_the_samples_matches_the_tree_in_a_two_level_cohort(horizon_h: float) -> None:
    """lent is computed from the recorded usage of every node at the end (vectorised); at the last
    sample it equals the tree's own scalar figure in a root cohort with two child cohorts of 5 queues."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
    from bench_admission import scenario as bench_scenario
    from fleetlab.experiment.run import profile_for
    from fleetlab.sim.simulator import Simulator
    from fleetlab.spec.loader import resolve

    scen = bench_scenario(jobs=300, nodes=8, queues=10).model_copy(update={"horizon_s": horizon_h * 3600})
    resolved = resolve(scen)
    sim = Simulator(resolved, profile_for(resolved, None))
    result = sim.run()
    samples = result.queue_samples
    assert sim.features.kueue is not None and samples is not None
    tree = sim.features.kueue.manager.tree
    last = [tree.lent(node, fr) for node, fr in sim.features.kueue._columns]
    assert samples.lent[-1].tolist() == last
    assert samples.lent.max() > 0 or horizon_h < 3  # by 3 h queues do lend in this world
