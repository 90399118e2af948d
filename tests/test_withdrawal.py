"""Pending jobs withdrawn at their recorded instant (``recorded.withdraw_s``, sim/withdrawal.py): out of the
scheduling queue and Kueue, cancelled and never started, their waits censored there — worked out by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import by_job, job, pool, scenario
from fleetlab.experiment.run import profile_for, run_one
from fleetlab.metrics.censoring import censor
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.survival import kaplan_meier
from fleetlab.metrics.tables import job_columns
from fleetlab.model.scenario import Scenario
from fleetlab.sim.simulator import Simulator
from test_kueue_sim import _cq, _objects


def _recorded(withdraw: dict[str, float]) -> dict[str, Any]:
    return {"recorded": {"withdraw_s": withdraw}}


def test_a_pending_job_leaves_at_its_withdrawal_a_started_one_runs() -> None:
    """One 8-GPU node, scheduling latency 30 s (a job reaches the scheduler 30 s after its submit).

    * j1 (8 GPUs, 100 s) submitted at 0: arrives 30, runs 30 → 130.
    * j2 (8 GPUs) submitted at 10, withdrawn at 50: arrived at 40, waiting behind j1: leaves at 50,
      cancelled, its wait 50 - 10 = 40 s censored.
    * j3 (8 GPUs, 100 s) submitted at 20, withdrawn at 150: starts at 130 (before 150: the bind cancels the
      timer), runs 130 → 230; wait 110 s.
    * j4 submitted at 5, withdrawn at 20: before it arrives (35): never reaches the queue; wait 15 s.

    Jobs by state: 2 completed, 2 cancelled; the known waits are 30 and 110 s; Kaplan–Meier over the four
    (15 and 40 censored): at 30 s one of 3 at risk starts (S = 2/3), at 110 s one of 1 (S = 0): median 110 s.
    """
    jobs = [
        job("j1", gpus=8, runtime=100),
        job("j2", gpus=8, submit_s=10, runtime=100),
        job("j3", gpus=8, submit_s=20, runtime=100),
        job("j4", gpus=8, submit_s=5, runtime=100),
    ]
    resolved = scenario(
        [pool()], jobs, scheduler={"scheduling_latency_s": 30}, **_recorded({"j2": 50, "j3": 150, "j4": 20})
    )
    sim = Simulator(resolved, profile_for(resolved, None))
    result = sim.run()
    assert sim.features.withdrawal is not None
    cols = job_columns(result)
    state = dict(zip(cols["job_id"], cols["state"], strict=True))
    assert state == {"j1": "completed", "j2": "cancelled", "j3": "completed", "j4": "cancelled"}
    assert by_job(result, "queue_wait_so_far_s") == {"j1": 30.0, "j2": 40.0, "j3": 110.0, "j4": 15.0}
    waits = by_job(result, "queue_wait_s")
    assert (waits["j1"], waits["j3"]) == (30.0, 110.0) and np.isnan(waits["j2"]) and np.isnan(waits["j4"])
    assert by_job(result, "completion_s")["j3"] == 210.0
    assert result.end_ms == 230_000
    counts = censor(result.jobs, result.end_ms)
    assert (counts.completed, counts.cancelled, counts.pending, counts.running) == (2, 2, 0, 0)
    summary = summarize(result)
    assert summary.jobs_cancelled == 2 and summary.jobs_pending_at_end == 0
    assert summary.queue_wait_mean_s == 70.0  # (30 + 110) / 2: the censored waits are not known
    assert summary.queue_wait_mean_s_lower_bound == pytest.approx((30 + 40 + 110 + 15) / 4)
    started = result.jobs.last_bound_ms >= 0
    km = kaplan_meier(result.jobs.queue_wait_ms / 1000.0, started)
    assert km.quantile(0.5).value == 110.0


def test_a_withdrawal_after_the_run_would_end_still_happens_a_stale_one_does_not() -> None:
    """j1 (8 GPUs, 100 s) runs 0 → 100; j2 (16 GPUs: never fits the 8-GPU node) withdrawn at 500: the run
    goes on to 500 (the job was waiting until then), j2 cancelled with a wait of 500 s. j1's own timer at 900
    is stale (j1 ran): it does not stretch the run."""
    jobs = [job("j1", gpus=8, runtime=100), job("j2", gpus=16, runtime=100)]
    run = run_one(scenario([pool(gpus=16, count=0), pool("b")], jobs, **_recorded({"j2": 500, "j1": 900})))
    assert by_job(run.result, "queue_wait_so_far_s") == {"j1": 0.0, "j2": 500.0}
    assert run.result.end_ms == 500_000
    assert summarize(run.result).jobs_cancelled == 1


def test_kueue_drops_a_withdrawn_pending_workload_and_releases_an_admitted_ones_quota() -> None:
    """team-a's ClusterQueue holds 8 GPUs of quota on one 8-GPU node.

    * a1 (8 GPUs, 100 s) admitted at 0, runs 0 → 100.
    * a2 (8 GPUs) submitted at 1, pending for quota, withdrawn at 50: leaves the ClusterQueue.
    * a3 (8 GPUs, 100 s) submitted at 2: admitted when a1 ends (100), runs 100 → 200 — not 200 → 300 as
      it would behind a2.

    With 16 GPUs of quota on the same node, a2 is admitted at 1 and its pods wait for the node; its
    withdrawal at 50 gives the quota back: a3, waiting for quota since 2, is admitted at 50 (quota wait 48 s)
    and waits for the node until 100."""
    jobs = [
        job("a1", gpus=8, runtime=100, queue="q", namespace="a"),
        job("a2", gpus=8, submit_s=1, runtime=100, queue="q", namespace="a"),
        job("a3", gpus=8, submit_s=2, runtime=100, queue="q", namespace="a"),
    ]
    for quota, quota_waits in ((8, {"a1": 0.0, "a3": 98.0}), (16, {"a1": 0.0, "a3": 48.0})):
        objects = _objects(None)
        objects[1] = _cq("team-a", quota, None)
        run = run_one(scenario([pool()], jobs, kueue=objects, **_recorded({"a2": 50})))
        assert by_job(run.result, "completion_s") == {"a1": 100.0, "a2": pytest.approx(np.nan, nan_ok=True),
                                                      "a3": 198.0}  # fmt: skip
        quota_wait = by_job(run.result, "quota_wait_s")
        assert {k: quota_wait[k] for k in ("a1", "a3")} == quota_waits
        assert job_columns(run.result)["state"][1] == "cancelled"
        assert run.result.pending == []


def test_withdrawal_times_must_name_jobs_of_the_workload() -> None:
    with pytest.raises(ValueError, match=r"recorded.withdraw_s names job\(s\) not in the workload: ghost"):
        Scenario.model_validate(
            {"cluster": {"pools": [pool()]}, "workload": {"jobs": [job("j1")]}, **_recorded({"ghost": 5})}
        )
    with pytest.raises(ValueError, match=r"recorded\.withdraw_s"):
        Scenario.model_validate(
            {"cluster": {"pools": [pool()]}, "workload": {"jobs": [job("j1")]}, **_recorded({"j1": -1})}
        )
