"""Slurm's partition time limits (the scenario's ``time_limits``, sim/time_limits.py), worked out by hand
after slurm.conf(5) (https://slurm.schedmd.com/slurm.conf.html): ``PartitionName`` ``MaxTime`` ("maximum run
time limit for jobs"), ``DefaultTime`` ("run time limit used for jobs that don't specify a value. If not set
then MaxTime will be used"), ``EnforcePartLimits`` (NO, the default: a job over a partition limit is accepted
and stays pending — reason PartitionTimeLimit; ALL/ANY/YES: rejected at submission), and a job reaching its
time limit is ended (state TIMEOUT, ``OverTimeLimit`` 0).

World: four nodes of 1 CPU; every job one 1-CPU pod submitted at 0, so each starts at 0 on its own node.
Partition ``short``: MaxTime 50 s, DefaultTime 30 s; partition ``long``: no limit."""

from __future__ import annotations

from typing import Any

from builders import by_job, scenario
from fleetlab.experiment.run import profile_for
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator

NODES = {"name": "p", "count": 4, "cpu": "1", "memory": "8Gi", "price_per_hour": 1.0}
LIMITS = {"partitions": [{"name": "short", "max_time_s": 50, "default_time_s": 30}, {"name": "long"}]}


def _job(job_id: str, partition: str, runtime: float) -> dict[str, Any]:
    return {"id": job_id, "runtime": runtime, "labels": {"fleetlab.io/partition": partition},
            "requests": {"cpu": "1", "memory": "1Gi"}}  # fmt: skip


def _run(enforce: bool = False, **scheduler: Any) -> tuple[Simulator, SimulationResult]:
    jobs = [_job("A", "short", 45), _job("B", "short", 35), _job("C", "short", 10), _job("D", "long", 100)]
    resolved = scenario(
        [NODES], jobs, time_limits={**LIMITS, "enforce_at_submit": enforce},
        recorded={"walltime_s": {"A": 40, "C": 60}}, scheduler={"tie_break": "first", **scheduler},
    )  # fmt: skip
    sim = Simulator(resolved, profile_for(resolved, None))
    return sim, sim.run()


def test_jobs_end_at_their_limit_and_a_request_over_max_time_stays_pending() -> None:
    """A asked 40 s and needs 45: ended at 40 (TIMEOUT, failed). B asked nothing: the DefaultTime 30 s is
    its limit, it needs 35: ended at 30. C asked 60 s > MaxTime 50: pending to the end (PartitionTimeLimit),
    although it needs 10 s and a node is free. D (partition long, no limit) runs its 100 s."""
    sim, result = _run()
    state = by_job(result, "state")
    assert (state["A"], state["B"], state["D"]) == ("failed", "failed", "completed")
    assert state["C"] == "pending"
    assert by_job(result, "completion_s")["D"] == 100
    feature = sim.features.time_limits
    assert feature is not None and feature.timeouts == 2 and feature.held == [2]
    assert [(p.job_id, p.blocked_by) for p in result.pending] == [("C", "PartitionTimeLimit")]


def test_enforce_part_limits_refuses_the_job_at_submit() -> None:
    """EnforcePartLimits=ALL: C is rejected at submission (cancelled, never started); A, B, D as before."""
    sim, result = _run(enforce=True)
    assert by_job(result, "state")["C"] == "cancelled"
    feature = sim.features.time_limits
    assert feature is not None and feature.refused == 1 and not result.pending


def test_backfill_plans_with_the_partition_default_time() -> None:
    """EASY backfill plans each job with its limit: A its 40 s request, B its partition's DefaultTime
    30 s, D (no limit anywhere) its own runtime 100 s."""
    sim, _ = _run(queueing="easy-backfill")
    discipline = sim.features.discipline
    assert discipline is not None
    assert [discipline.plan_ms[j] for j in (0, 1, 3)] == [40_000, 30_000, 100_000]


def test_without_kill_at_limit_jobs_run_their_whole_runtime() -> None:
    """``kill_at_limit: false``: A and B run their 45 and 35 s and complete."""
    jobs = [_job("A", "short", 45), _job("B", "short", 35)]
    resolved = scenario(
        [NODES], jobs, time_limits={**LIMITS, "kill_at_limit": False}, recorded={"walltime_s": {"A": 40}}
    )
    result = Simulator(resolved, profile_for(resolved, None)).run()
    assert by_job(result, "completion_s") == {"A": 45, "B": 35}
