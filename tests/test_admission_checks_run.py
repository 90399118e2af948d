"""Kueue provisioning AdmissionChecks in a run (sim/admission_checks.py): a workload reserves quota, waits
for its ProvisioningRequest, and the wait is its own bucket — worked out by hand on small worlds.

The autoscaler looks at a request in its loops, every 10 s (``scan_interval``) from 0; a request made at t
is first looked at in the loop at or after t. Kueue's retry strategy after a Failed request: a new request
after ``backoffBaseSeconds · 2^(n−1)`` while attempts ≤ ``backoffLimitCount``, then the workload is
rejected (admission/provisioning.py, Kueue v0.13 provisioning controller).
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import by_job, job, kueue_queue, pool, provisioning_check, scenario
from fleetlab.experiment.run import profile_for
from fleetlab.metrics.summary import summarize
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator

API = "kueue.x-k8s.io/v1beta2"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"


def _kueue(
    gpus: int, provisioning_class: str, preemption: dict[str, str] | None = None, **config: Any
) -> list[dict[str, Any]]:
    """One flavor, a ClusterQueue of ``gpus`` GPUs whose admission check ``prov`` makes
    ProvisioningRequests of ``provisioning_class`` (config ``p``), and its LocalQueue ``lq``."""
    prc = {"provisioningClassName": provisioning_class, **config}
    return [
        *kueue_queue(gpus, admissionChecks=["prov"], preemption=preemption or {}),
        provisioning_check(),
        {"apiVersion": API, "kind": "ProvisioningRequestConfig", "metadata": {"name": "p"}, "spec": prc},
    ]


def _run(
    pools: list[dict[str, Any]], jobs: list[dict[str, Any]], kueue: list[dict[str, Any]]
) -> tuple[Simulator, SimulationResult]:
    resolved = scenario(pools, jobs, kueue=kueue)
    sim = Simulator(resolved, profile_for(resolved, None))
    return sim, sim.run()


def test_check_capacity_waits_until_the_cluster_has_room() -> None:
    """One node of 8 GPUs; a ClusterQueue of 16 GPUs reserves quota for ``a`` and ``b`` (8 GPUs each) at
    0. The autoscaler's loop at 0 finds room for ``a`` (Provisioned; its capacity is booked) but none for
    ``b``: a's booked pod takes the node. ``b``'s request is looked at again every 10 s; a runs 0 → 100 s,
    and the loop at 100 s finds the node free: ``b`` is admitted at 100 and runs 100 → 150 s.
    ``b``: quota wait 0, provisioning wait 100 s, node wait 0; the mean provisioning wait is 50 s."""
    jobs = [job("a", gpus=8, runtime=100, queue="lq"), job("b", gpus=8, runtime=50, queue="lq")]
    sim, result = _run([pool("gpu")], jobs, _kueue(16, CHECK_CAPACITY))
    assert by_job(result, "quota_wait_s") == {"a": 0.0, "b": 0.0}
    assert by_job(result, "provisioning_wait_s") == {"a": 0.0, "b": 100.0}
    assert by_job(result, "node_wait_s") == {"a": 0.0, "b": 0.0}
    assert by_job(result, "completion_s") == {"a": 100.0, "b": 150.0}
    assert summarize(result).provisioning_wait_mean_s == 50.0
    checks = sim.features.admission_checks
    assert checks is not None and (checks.requests, checks.provisioned) == (2, 2)


def test_check_capacity_never_satisfied_is_pending_with_the_autoscalers_words() -> None:
    """``big`` asks 16 GPUs in one pod; the node has 8. Its request is never Provisioned; with nothing
    else to happen the autoscaler's looks do not keep the run going: it ends at 0 with ``big`` pending,
    quota reserved, blocked by provisioning with the autoscaler's message."""
    _, result = _run([pool("gpu")], [job("big", gpus=16, runtime=10, queue="lq")], _kueue(16, CHECK_CAPACITY))
    (row,) = result.pending
    assert (row.job_id, row.blocked_by) == ("big", "provisioning")
    assert row.message == 'admission check "prov": Capacity is not found, CA will try to find it later.'
    assert row.detail == "quota reserved; 1 ProvisioningRequest(s)"


def test_atomic_scale_up_adds_the_nodes_and_the_pods_wait_for_them_to_boot() -> None:
    """No node at first; pool ``auto`` scales 0 → 2 (boot 120 s). Gang ``g`` (2 pods × 8 GPUs, 100 s)
    reserves 16 GPUs at 0; the loop at 0 finds no room and scales ``auto`` up by the 2 nodes both pods
    need, atomically: Provisioned at once (the scale-up is requested), so ``g`` is admitted at 0 with
    provisioning wait 0; its pods wait for the nodes (node wait 120 s) and run 120 → 220 s."""
    auto = pool("auto", count=0, boot_time_s=120, autoscaling={"min": 0, "max": 2})
    gang = job("g", gpus=8, runtime=100, pods=2, gang=True, queue="lq")
    _, result = _run([auto], [gang], _kueue(16, ATOMIC))
    assert by_job(result, "provisioning_wait_s") == {"g": 0.0}
    assert by_job(result, "node_wait_s") == {"g": 120.0}
    assert by_job(result, "completion_s") == {"g": 220.0}


def test_a_failed_request_is_retried_then_the_workload_is_rejected_and_its_quota_freed() -> None:
    """One fixed node of 8 GPUs and pool ``auto`` of at most 1 node; a ClusterQueue of 24 GPUs; the
    request has noRetry, and Kueue retries once (backoffLimitCount 1) after 60 s. Gang ``g`` (3 × 8 GPUs)
    reserves all 24 at 0: one pod fits the fixed node, the other two need 2 new nodes but ``auto`` may add
    one, so nothing is added and the request Fails. Kueue makes a second request at 60 s, which fails the
    same way: attempt 2 > 1, ``g`` is rejected (deactivated) at 60 s and its quota released. ``c`` (8 GPUs,
    10 s), waiting for quota behind ``g`` since 0, reserves at 60 s, fits at once (the loop at 60 s) and
    runs 60 → 70 s: quota wait 60 s, provisioning wait 0."""
    auto = pool("auto", count=0, boot_time_s=120, autoscaling={"min": 0, "max": 1})
    gang = job("g", gpus=8, runtime=100, pods=3, gang=True, queue="lq")
    retry = {"backoffLimitCount": 1, "backoffBaseSeconds": 60, "backoffMaxSeconds": 600}
    kueue = _kueue(24, ATOMIC, parameters={"noRetry": "true"}, retryStrategy=retry)
    sim, result = _run([pool("gpu"), auto], [gang, job("c", gpus=8, runtime=10, queue="lq")], kueue)
    assert by_job(result, "quota_wait_s")["c"] == 60.0
    assert by_job(result, "provisioning_wait_s")["c"] == 0.0
    assert by_job(result, "completion_s")["c"] == 70.0
    (row,) = result.pending
    assert (row.job_id, row.blocked_by) == ("g", "provisioning")
    assert row.message == 'admission check "prov" rejected the workload: CA could not find requested capacity'
    assert row.detail == "deactivated by its admission check; 2 ProvisioningRequest(s)"
    checks = sim.features.admission_checks
    assert checks is not None and (checks.requests, checks.provisioned) == (3, 1)


@pytest.mark.parametrize("managed", [["example.com/tpu"], []])
def test_a_check_whose_managed_resources_the_job_does_not_ask_is_ready_at_once(managed: list[str]) -> None:
    """``managedResources``: Kueue makes a ProvisioningRequest only for a workload asking one of them (none
    listed: every workload). With ``example.com/tpu`` managed, ``b`` (GPUs only) is admitted at 0 without a
    request and just waits for the node (node wait 100 s); with none listed it waits in provisioning."""
    jobs = [job("a", gpus=8, runtime=100, queue="lq"), job("b", gpus=8, runtime=50, queue="lq")]
    _, result = _run([pool("gpu")], jobs, _kueue(16, CHECK_CAPACITY, managedResources=managed))
    if managed:
        assert by_job(result, "provisioning_wait_s") == {"a": 0.0, "b": 0.0}
        assert by_job(result, "node_wait_s")["b"] == 100.0
    else:
        assert by_job(result, "provisioning_wait_s")["b"] == 100.0
        assert by_job(result, "node_wait_s")["b"] == 0.0


def test_a_reservation_preempted_while_it_waits_counts_its_provisioning_wait_up_to_the_eviction() -> None:
    """``busy`` (no queue, 8 GPUs) holds the only node 0 → 1000 s. ``low`` (8 GPUs, priority 0) reserves
    the ClusterQueue's 8 GPUs at 0 and waits for capacity. ``high`` (8 GPUs, priority 10, 10 s) arrives at
    30 s: Kueue preempts ``low``'s reservation (withinClusterQueue: LowerPriority), so ``low`` waited 30 s
    in provisioning and waits for quota again from 30 s. ``high`` reserves at 30 s and waits for capacity
    until the loop at 1000 s (busy ended at 1000): admitted, it runs 1000 → 1010 s. ``low`` reserves again
    at 1010 s, fits at once and runs from 1010 s. ``low``: provisioning 30 s, quota 1010 − 30 = 980 s,
    node 0, queue wait 1010 s; ``high``: provisioning 970 s, quota 0."""
    jobs = [
        job("busy", gpus=8, runtime=1000),
        job("low", gpus=8, runtime=10, queue="lq"),
        job("high", gpus=8, submit_s=30, runtime=10, priority=10, queue="lq"),
    ]
    kueue = _kueue(8, CHECK_CAPACITY, preemption={"withinClusterQueue": "LowerPriority"})
    _, result = _run([pool("gpu")], jobs, kueue)
    assert by_job(result, "provisioning_wait_s") == {"busy": 0.0, "low": 30.0, "high": 970.0}
    assert by_job(result, "quota_wait_s") == {"busy": 0.0, "low": 980.0, "high": 0.0}
    assert by_job(result, "node_wait_s") == {"busy": 0.0, "low": 0.0, "high": 0.0}
    assert by_job(result, "queue_wait_s")["low"] == 1010.0


def test_a_request_waiting_on_a_pool_at_max_size_reads_the_cluster_only_when_it_changed() -> None:
    """Pool ``auto`` is at its max size of 1 node (8 GPUs). ``a`` (8 GPUs, 10,000 s) and ``b`` (8 GPUs,
    50 s) reserve quota at 0. The loop at 0 Provisions ``a`` (its pod takes the node once bound) and finds
    nothing for ``b``: no room, and no scale-up past the max. ``b``'s request is due a look every 10 s,
    0, 10, …, 10,000 s: 1,001 looks. Only three read the cluster: 0 (first), 10 (a's pod was bound at 0
    after b's look) and 10,000 (a's end freed the node: Provisioned). The 998 between meet the same
    cluster, bookings and back-offs, so they are skipped: 1 + 3 looks for a and b, 998 skipped. The
    answer is as if each look read the cluster: b is admitted at 10,000 (provisioning wait 10,000 s) and
    runs 10,000 → 10,050 s."""
    auto = pool("auto", count=1, autoscaling={"min": 0, "max": 1})
    jobs = [job("a", gpus=8, runtime=10_000, queue="lq"), job("b", gpus=8, runtime=50, queue="lq")]
    sim, result = _run([auto], jobs, _kueue(16, ATOMIC))
    assert by_job(result, "provisioning_wait_s") == {"a": 0.0, "b": 10_000.0}
    assert by_job(result, "completion_s") == {"a": 10_000.0, "b": 10_050.0}
    checks = sim.features.admission_checks
    assert checks is not None
    assert (checks.looks, checks.skipped_looks) == (4, 998)


def _stocked_out(others: list[dict[str, Any]]) -> tuple[Simulator, SimulationResult]:
    """Pool ``auto`` (0 nodes, at most 1, boot 60 s) stocked out from 0 to 100 s, a CPU pool, and ``g``
    (8 GPUs, 50 s) in LocalQueue ``lq`` behind an atomic scale-up check, with ``others`` beside it."""
    stockout = {"windows": [{"start_s": 0, "end_s": 100}]}
    auto = pool("auto", count=0, boot_time_s=60, autoscaling={"min": 0, "max": 1, "stockout": stockout})
    jobs = [job("g", gpus=8, runtime=50, queue="lq"), *others]
    return _run([auto, pool("cpu", gpus=0)], jobs, _kueue(8, ATOMIC))


def test_a_skipped_look_still_wakes_when_the_pools_back_off_ends() -> None:
    """Pool ``auto`` (0 nodes, at most 1, boot 60 s) is stocked out from 0 to 100 s; ``keep`` runs on a
    CPU node 0 → 1,000 s so the run goes on. ``g`` (8 GPUs, 50 s) reserves quota at 0; the loop at 0 asks
    for a node: stockout, the pool backs off 5 min (to 300 s). The look at 10 finds it backed off and
    changes nothing; the looks at 20 … 290 meet the same cluster and are skipped (28), but not the one at
    300: the back-off has ended (nothing else changed) and so has the stockout window, so the scale-up is
    requested and ``g`` is Provisioned at 300 s (provisioning wait 300 s); its node boots 300 → 360 s and
    it runs 360 → 410 s. Looks that read the cluster: 0, 10 and 300."""
    sim, result = _stocked_out([job("keep", gpus=0, runtime=1000)])
    assert by_job(result, "provisioning_wait_s") == {"g": 300.0, "keep": 0.0}
    assert by_job(result, "completion_s") == {"g": 410.0, "keep": 1000.0}
    checks = sim.features.admission_checks
    assert checks is not None
    assert (checks.looks, checks.skipped_looks) == (3, 28)


def test_a_run_with_nothing_else_left_does_not_end_before_the_look_at_the_back_off_end() -> None:
    """The world of the test above without ``keep``: nothing else runs, so from 10 s the only events left
    are ``g``'s looks. The back-off ends at 300 s, the instant of a look: that look must still run (it
    requests the scale-up), so the run does not end at 300 s with ``g`` pending. As above: Provisioned at
    300 s, the node boots 300 → 360 s, ``g`` runs 360 → 410 s."""
    _, result = _stocked_out([])
    assert by_job(result, "provisioning_wait_s") == {"g": 300.0}
    assert by_job(result, "completion_s") == {"g": 410.0}
