"""Namespace ResourceQuota and LimitRange in a run (sim/namespace_quota.py, sim/limit_range_defaults.py):
the API server refuses pods over the quota at creation, the controller retries with its work queue's
backoff, and the wait is its own bucket — worked out by hand on small worlds.

Job controller backoff (kubernetes/kubernetes pkg/controller/job/job_controller.go at 6ae037f1,
``DefaultJobApiBackOff`` 1 s, ``MaxJobApiBackOff`` 1 min): the n-th failed sync in a row waits
1 s · 2^(n−1), at most 60 s, so after a refusal at t0 the syncs come at t0 + 1, 3, 7, 15, 31, 63 s
(six failures: 1 + 2 + 4 + 8 + 16 + 32), then every 60 s: t0 + 123, 183, … A pod event of the job (one of
its pods created, bound, started or gone) brings the sync to 1 s after it (``syncJobBatchPeriod``).
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import by_job, job, kueue_queue, pool, scenario
from fleetlab.experiment.run import profile_for
from fleetlab.metrics.summary import summarize
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator


def _quota(hard: dict[str, str], name: str = "team-gpus", namespace: str = "default") -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta, "spec": {"hard": hard}}


def _limits(*items: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    meta = {"name": "defaults", "namespace": namespace}
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta, "spec": {"limits": list(items)}}


def _run(
    jobs: list[dict[str, Any]], policies: list[dict[str, Any]], **extra: Any
) -> tuple[Simulator, SimulationResult]:
    resolved = scenario([pool("gpu")], jobs, namespace_policies=policies, **extra)
    sim = Simulator(resolved, profile_for(resolved, None))
    return sim, sim.run()


GPU_QUOTA = _quota({"requests.nvidia.com/gpu": "4"})


def test_a_pod_over_the_quota_is_refused_and_created_at_the_first_retry_after_room_frees() -> None:
    """One node of 8 GPUs, a quota of 4 GPUs. ``a`` (4 GPUs, 100 s) is created at 0 and uses all 4; ``b``
    (2 GPUs, 50 s) is refused at 0 although the node has room. Its job's syncs come at 1, 3, 7, 15, 31,
    63 s (``a`` still runs: refused again) and 63 + 60 = 123 s, after ``a`` ended at 100 s and gave the
    quota back (``a``'s end is no event of ``b``'s job): created and placed at once. ``b`` waits 123 s, all
    of it refused at creation (node wait 0), and ends at 173 s; 7 refused syncs in all."""
    sim, result = _run([job("a", gpus=4, runtime=100), job("b", gpus=2, runtime=50)], [GPU_QUOTA])
    assert by_job(result, "namespace_quota_wait_s") == {"a": 0.0, "b": 123.0}
    assert by_job(result, "queue_wait_s") == {"a": 0.0, "b": 123.0}
    assert by_job(result, "node_wait_s") == {"a": 0.0, "b": 0.0}
    assert by_job(result, "completion_s") == {"a": 100.0, "b": 173.0}
    assert sim.features.namespace_quota is not None and sim.features.namespace_quota.refusals == 7
    assert summarize(result).namespace_quota_wait_mean_s == pytest.approx(123.0 / 2)
    assert result.pending == []


def test_refused_pods_at_the_end_show_the_api_servers_message() -> None:
    """With a 110 s horizon ``b`` is still refused at the end (its next sync is at 123 s): pending,
    blocked by the namespace quota, with the API server's words and the backoff after its 7th failed sync
    (60 s, the cap); its wait so far is the whole 110 s."""
    _, result = _run(
        [job("a", gpus=4, runtime=100), job("b", gpus=2, runtime=50)], [GPU_QUOTA], horizon_s=110
    )
    (row,) = result.pending
    assert row.job_id == "b" and row.blocked_by == "quota (namespace)" and row.pods_pending == 1
    assert row.message == (
        'pods "b" is forbidden: exceeded quota: team-gpus, requested: requests.nvidia.com/gpu=2, '
        "used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4"
    )
    assert row.detail == (
        "1 pod(s) refused at creation; 7 failed sync(s) in a row: its controller retries after 60 s"
    )
    assert by_job(result, "queue_wait_so_far_s")["b"] == 110.0


def test_a_gang_is_queued_only_when_all_its_pods_exist_and_holds_what_it_was_given() -> None:
    """Quota 3 GPUs; gang ``g`` of 2 pods × 2 GPUs (100 s): its first pod is created (2 GPUs charged), the
    second refused (2 + 2 > 3), so the gang is never queued. ``c`` (1 GPU, 10 s, at 5 s) still fits the
    quota (2 + 1 = 3) and runs 5 → 15 s. Nothing else can free the quota, so the retries alone do not keep
    the run going: it ends at 15 s with ``g`` pending, 1 pod refused."""
    gang = job("g", gpus=2, runtime=100, pods=2, gang=True)
    _, result = _run(
        [gang, job("c", gpus=1, submit_s=5, runtime=10)], [_quota({"requests.nvidia.com/gpu": "3"})]
    )
    assert result.end_ms == 15_000
    assert by_job(result, "completion_s")["c"] == 10.0
    (row,) = result.pending
    assert (row.job_id, row.blocked_by, row.pods_pending) == ("g", "quota (namespace)", 1)
    assert "used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=3" in row.message


def test_limit_range_defaults_change_requests_and_its_bounds_refuse_for_good() -> None:
    """LimitRange of namespace ``team``: containers get a 2Gi memory request by default and need at least
    1 CPU. ``d`` (2 pods, no memory request) gets 2Gi per pod — the scheduler, Kueue and the quota see
    2Gi — and a quota of 3Gi of requests.memory admits one pod: the second is refused at 0 and its syncs
    (1, 3, 7, 15, 31, 63 s, next 123 s) fail until the first pod ends at 100 s. That end is an event of
    ``d``'s own pod: the Job controller syncs 1 s later, at 101 s, and creates the second pod, which runs
    101 → 201 s. ``e`` asks 500m CPU: below the minimum, refused at every creation and never retried; it
    stays pending with LimitRanger's reason."""
    d = job("d", gpus=0, runtime=100, pods=2, namespace="team")
    d["requests"] = {"cpu": "1"}
    e = job("e", gpus=0, runtime=10, namespace="team")
    e["requests"] = {"cpu": "500m", "memory": "1Gi"}
    policies = [
        _limits(
            {"type": "Container", "defaultRequest": {"memory": "2Gi"}, "min": {"cpu": "1"}}, namespace="team"
        ),
        _quota({"requests.memory": "3Gi"}, name="mem", namespace="team"),
    ]
    sim, result = _run([d, e], policies)
    (template,) = [t for t in sim.job_table.templates if t.id == "d"]
    assert template.requests["memory"] == 2 * 1024**3
    assert by_job(result, "namespace_quota_wait_s")["d"] == 101.0
    assert by_job(result, "completion_s")["d"] == 201.0
    (row,) = result.pending
    assert (row.job_id, row.blocked_by) == ("e", "limit-range")
    assert row.message == 'pods "e" is forbidden: minimum cpu usage per Container is 1, but request is 0.5'
    assert row.detail == "1 pod(s) refused at creation"


def test_kueue_admits_then_the_api_server_refuses_each_wait_in_its_own_bucket() -> None:
    """The first world under Kueue: a ClusterQueue of 8 GPUs admits ``a`` and ``b`` at once (4 + 2 ≤ 8),
    so their Kueue quota wait is 0; ``b``'s pod is then refused by the namespace quota exactly as without
    Kueue: 123 s in the namespace-quota bucket, 0 for quota and node."""
    jobs = [job("a", gpus=4, runtime=100, queue="lq"), job("b", gpus=2, runtime=50, queue="lq")]
    _, result = _run(jobs, [GPU_QUOTA], kueue=kueue_queue(8))
    assert by_job(result, "quota_wait_s") == {"a": 0.0, "b": 0.0}
    assert by_job(result, "namespace_quota_wait_s") == {"a": 0.0, "b": 123.0}
    assert by_job(result, "node_wait_s") == {"a": 0.0, "b": 0.0}


def test_the_quota_is_not_preemption() -> None:
    """Quota 8 GPUs. ``low`` (8 GPUs, priority 0, 1000 s) runs from 0; ``high`` (8 GPUs, priority 10) arrives
    at 10 s and is refused: ``low`` holds the quota although preemption could free the node — quota is not
    preemption. Its syncs at 10 + 1, 3, 7, 15, 31, 63 s and then every 60 s (133, 193, …, 973 s) are
    refused until ``low`` ends at 1000 s: the next, 133 + 15 · 60 = 1033 s, creates it (wait 1023 s)."""
    jobs = [job("low", gpus=8, runtime=1000), job("high", gpus=8, submit_s=10, runtime=10, priority=10)]
    _, result = _run(jobs, [_quota({"requests.nvidia.com/gpu": "8"})])
    assert by_job(result, "evictions") == {"low": 0, "high": 0}
    assert by_job(result, "namespace_quota_wait_s")["high"] == 1023.0


def test_an_evicted_pod_gives_its_charge_back_and_is_created_again() -> None:
    """Quota 10 GPUs, one node of 8. ``low`` (6 GPUs, 1000 s) runs from 0 (charged 6). ``high`` (4 GPUs,
    priority 10) arrives at 10 s: 6 + 4 = 10 is admitted, but the node has 2 free, so DefaultPreemption
    evicts ``low``. The evicted pod is deleted — its 6 go back (used 4) — and its controller creates it
    again at once: 4 + 6 = 10, admitted, pending until ``high`` ends at 20 s. ``low`` then runs 20 →
    1020 s (no checkpoint: all 10 s computed are lost). No refusal anywhere; all charges are back at 0."""
    jobs = [job("low", gpus=6, runtime=1000), job("high", gpus=4, submit_s=10, runtime=10, priority=10)]
    sim, result = _run(jobs, [_quota({"requests.nvidia.com/gpu": "10"})])
    assert by_job(result, "evictions") == {"low": 1, "high": 0}
    assert by_job(result, "completion_s") == {"low": 1020.0, "high": 10.0}
    assert by_job(result, "namespace_quota_wait_s") == {"low": 0.0, "high": 0.0}
    quota = sim.features.namespace_quota
    assert quota is not None and quota.refusals == 0
    assert quota.used == {"default": {"team-gpus": {"requests.nvidia.com/gpu": 0}}}
