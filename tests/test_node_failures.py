"""Node failures: evictions through the shared eviction path, repair billed as down, blast radius."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from builders import job, pool, scenario
from fleetlab.cost.billing import node_costs
from fleetlab.experiment.run import run_one
from fleetlab.sim.result import SimulationResult


def _run(
    pools: list[dict[str, Any]], jobs: list[dict[str, Any]], policy: str = "scenario"
) -> SimulationResult:
    return run_one(scenario(pools, jobs, scheduler={"tie_break": "first"}), policy).result


def test_trace_failure_evicts_pods_loses_work_and_bills_the_repair_as_down() -> None:
    """gpu-0 fails at 1000 s under an 8-GPU pod (no checkpoint): 1 pod evicted, 8 × 1000 s = 2.22 GPU-h
    lost; the pod restarts on gpu-1; gpu-0 is down 600 s, billed in the down bucket."""
    failures = {"trace": [{"node": "gpu-0", "at_s": 1000, "repair_s": 600}]}
    result = _run([pool("gpu", count=2, failures=failures)], [job("a", gpus=8, runtime=3600)])
    assert result.lifecycle is not None
    [record] = result.lifecycle.failures
    assert (record.t_ms, record.node, record.pods_evicted) == (1_000_000, "gpu-0", 1)
    assert abs(record.gpu_hours_lost - 8 * 1000 / 3600) < 1e-12
    assert int(result.jobs.evictions[0]) == 1
    assert result.pods.node[0] == 1 and result.jobs.end_ms[0] == 4_600_000
    cost = node_costs(result)
    assert cost.dollars["down"][0] == Fraction(8 * 600, 3600)
    assert cost.dollars["lost"][0] == Fraction(8 * 1000, 3600)
    for i, billed in enumerate(cost.billed):
        assert sum(cost.dollars[b][i] for b in cost.dollars) == billed


def test_gang_peers_elsewhere_count_in_the_blast_radius() -> None:
    """A 2-pod gang spans both nodes; one node failing evicts both pods (the whole gang)."""
    failures = {"trace": [{"node": "gpu-0", "at_s": 100, "repair_s": 60}]}
    jobs = [job("g", gpus=8, pods=2, gang=True, runtime=600)]
    result = _run([pool("gpu", count=2, failures=failures)], jobs)
    assert result.lifecycle is not None
    assert result.lifecycle.failures[0].pods_evicted == 2


def _mtbf_world() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    failures = {"mtbf": "6h", "repair_time": "30m"}
    pools = [pool("gpu", count=4, failures=failures)]
    jobs = [job(f"j{i}", gpus=2, runtime=7200, submit_s=60 * i, preemptible=True) for i in range(12)]
    return pools, jobs


def test_mtbf_failures_are_seeded_per_node_and_the_same_under_every_policy() -> None:
    """Each node has its own stream: pack and spread see failures at the same times on the same nodes
    (until a repair, whose duration is fixed here) and differ only in what they hit."""
    pools, jobs = _mtbf_world()
    pack = _run(pools, jobs, "most-allocated")
    spread = _run(pools, jobs, "least-allocated")
    again = _run(pools, jobs, "most-allocated")
    assert pack.lifecycle is not None and spread.lifecycle is not None and again.lifecycle is not None
    times = [(f.t_ms, f.node) for f in pack.lifecycle.failures]
    assert times and times == [(f.t_ms, f.node) for f in spread.lifecycle.failures]
    assert pack.lifecycle.failures == again.lifecycle.failures
    assert np.array_equal(pack.pods.end_ms, again.pods.end_ms)


def test_failures_do_not_keep_a_finished_run_alive() -> None:
    """A 1-year MTBF: the run still ends when the last job does, not at the next failure."""
    result = _run([pool("gpu", count=1, failures={"mtbf": "365d"})], [job("a", gpus=8, runtime=600)])
    assert result.end_ms == 600_000
