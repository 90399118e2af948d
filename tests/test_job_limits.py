"""Job-count limits (scenario ``job_limits``, sim/job_limits.py): Slurm MaxJobs / MaxJobsPU / GrpJobs and
MaxSubmit as an admission gate in front of Kueue and the scheduling queue — worked out by hand on one 8-GPU
node, every job one GPU (so the node itself never holds a job back)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import by_job, job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.model.scenario import Scenario
from fleetlab.sim.result import SimulationResult
from test_kueue_sim import _objects


def _starts(result: SimulationResult) -> dict[str, float]:
    waits, submits = by_job(result, "queue_wait_so_far_s"), by_job(result, "submit_s")
    return {k: submits[k] + waits[k] for k in waits}


def _user(job_id: str, user: str, submit: float, runtime: float, **extra: Any) -> dict[str, Any]:
    return job(job_id, gpus=1, submit_s=submit, runtime=runtime, user=user, **extra)


def test_max_running_per_user_runs_a_users_jobs_one_at_a_time() -> None:
    """MaxJobsPU 1: u1's x1, x2, x3 (100 s each, submitted at 0, 1, 2) run 0 → 100, 100 → 200, 200 → 300;
    u2's y1 at 3 is not held back by u1's limit: it starts at once."""
    jobs = [_user("x1", "u1", 0, 100), _user("x2", "u1", 1, 100), _user("x3", "u1", 2, 100),
            _user("y1", "u2", 3, 100)]  # fmt: skip
    run = run_one(scenario([pool()], jobs, job_limits=[{"per": "user", "max_running": 1}]))
    assert _starts(run.result) == {"x1": 0, "x2": 100, "x3": 200, "y1": 3}


def test_max_submitted_refuses_a_job_and_counts_it_cancelled() -> None:
    """MaxSubmit 2 with MaxJobs 1 for u1: x1 runs, x2 waits, x3 (a third job while two are in) is refused at
    its submit (2 s): cancelled, its wait 0 s. When x1 ends, x2 runs 100 → 200."""
    jobs = [_user("x1", "u1", 0, 100), _user("x2", "u1", 1, 100), _user("x3", "u1", 2, 100)]
    limits = [{"per": "user", "name": "u1", "max_running": 1, "max_submitted": 2}]
    run = run_one(scenario([pool()], jobs, job_limits=limits))
    assert by_job(run.result, "state") == {"x1": "completed", "x2": "completed", "x3": "cancelled"}
    assert _starts(run.result) == {"x1": 0, "x2": 100, "x3": 2}
    assert summarize(run.result).jobs_cancelled == 1


def test_a_job_waits_behind_every_limit_that_covers_it() -> None:
    """Per user 2 running, the cluster 3. a1 (100 s), a2 (300 s), a3 (100 s) of u1 at 0; b1 (150 s) of u2 at 1,
    b2 (100 s) of u2 at 2.

    * 0: a1, a2 admitted (u1: 2, cluster: 2); a3 waits behind u1's limit.
    * 1: b1 admitted (cluster: 3). 2: b2 is within u2's limit but the cluster is full: it waits.
    * 100: a1 ends (u1: 1, cluster: 2): a3 is offered first (behind u1) and admitted (cluster: 3).
    * 151: b1 (1 + 150 s) ends (cluster: 2): b2 admitted."""
    jobs = [_user("a1", "u1", 0, 100), _user("a2", "u1", 0, 300), _user("a3", "u1", 0, 100),
            _user("b1", "u2", 1, 150), _user("b2", "u2", 2, 100)]  # fmt: skip
    limits = [{"per": "user", "max_running": 2}, {"per": "cluster", "max_running": 3}]
    run = run_one(scenario([pool()], jobs, job_limits=limits))
    assert _starts(run.result) == {"a1": 0, "a2": 0, "a3": 100, "b1": 1, "b2": 151}


def test_a_job_withdrawn_while_held_frees_its_turn() -> None:
    """MaxJobsPU 1; x2 (held behind x1) is withdrawn at 50: x3 runs after x1, 100 → 200 (not 200 → 300)."""
    jobs = [_user("x1", "u1", 0, 100), _user("x2", "u1", 1, 100), _user("x3", "u1", 2, 100)]
    run = run_one(scenario([pool()], jobs, job_limits=[{"per": "user", "max_running": 1}],
                           recorded={"withdraw_s": {"x2": 50}}))  # fmt: skip
    assert _starts(run.result) == {"x1": 0, "x2": 50, "x3": 100}
    assert by_job(run.result, "state")["x2"] == "cancelled"


def test_the_gate_hands_admitted_jobs_on_to_kueue() -> None:
    """MaxJobsPU 1 in front of a Kueue ClusterQueue with room for both: x2 (submitted at 1) is held by the
    gate until x1 ends at 100, then admitted by Kueue at once: it runs 100 → 200. Kueue counts its quota
    wait from the submit (99 s): the workload existed, waiting, all along."""
    jobs = [_user("x1", "u1", 0, 100, queue="q", namespace="a"), _user("x2", "u1", 1, 100, queue="q",
            namespace="a")]  # fmt: skip
    run = run_one(
        scenario([pool()], jobs, kueue=_objects(None), job_limits=[{"per": "user", "max_running": 1}])
    )
    assert _starts(run.result) == {"x1": 0, "x2": 100}
    assert by_job(run.result, "quota_wait_s") == {"x1": 0.0, "x2": 99.0}


def test_limits_are_checked() -> None:
    base: dict[str, Any] = {"cluster": {"pools": [pool()]}, "workload": {"jobs": [job("j")]}}
    for limits, message in (
        ([{"per": "user"}], "needs max_running, max_submitted or both"),
        ([{"per": "user", "max_running": 3, "max_submitted": 2}], "must be at least max_running"),
        ([{"per": "cluster", "name": "x", "max_running": 1}], "names no one"),
        ([{"per": "user", "max_running": 1}, {"per": "user", "max_running": 2}], "a second limit per user"),
        ([{"per": "user", "max_running": 0}], "greater than or equal to 1"),
    ):
        with pytest.raises(ValueError, match=message):
            Scenario.model_validate({**base, "job_limits": limits})
