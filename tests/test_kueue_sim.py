"""Kueue in the simulation loop: quota before nodes, borrowing in a cohort, flavor injection."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.queues import queue_rows
from fleetlab.metrics.tables import job_columns
from fleetlab.model.job_table import JobTable
from fleetlab.model.scenario import Scenario
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import resolve


def _cq(name: str, gpus: int, cohort: str | None = "research", flavor: str = "h100") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [
                            {"name": "cpu", "nominalQuota": "512"},
                            {"name": "memory", "nominalQuota": "4Ti"},
                            {"name": "nvidia.com/gpu", "nominalQuota": gpus},
                        ],
                    }
                ],
            }
        ]
    }
    if cohort:
        spec["cohortName"] = cohort
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def _objects(cohort: str | None = "research") -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "h100"},
            "spec": {"nodeLabels": {"fleetlab.io/pool": "gpu"}},
        },
        _cq("team-a", 16, cohort),
        _cq("team-b", 16, cohort),
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "a"},
            "spec": {"clusterQueue": "team-a"},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "b"},
            "spec": {"clusterQueue": "team-b"},
        },
    ]


def _team_a_burst(cohort: str | None) -> Any:
    jobs = [job(f"a{i}", gpus=8, runtime=1000, queue="q", namespace="a") for i in range(4)]
    return scenario([pool(count=4)], jobs, kueue=_objects(cohort))


def test_borrowing_in_a_cohort_uses_the_idle_queues_quota() -> None:
    """Kueue: team-a may borrow team-b's unused nominal quota in the cohort (queues.md §1.2, W1)."""
    run = run_one(_team_a_burst("research"), "default")
    assert int(run.result.timeline.allocated_gpus.max()) == 32
    rows = {(r.cluster_queue, r.flavor_resource): r for r in queue_rows(run.result)}
    assert rows[("team-a", "h100/nvidia.com/gpu")].borrowed_max == 16
    assert rows[("team-b", "h100/nvidia.com/gpu")].lent_mean > 0
    cols = job_columns(run.result)
    assert np.nanmax(cols["quota_wait_s"]) == 0


def test_without_a_cohort_jobs_wait_for_quota_not_nodes() -> None:
    """No cohort: team-a stops at its nominal 16 GPUs although 16 more sit idle; the wait is for quota."""
    run = run_one(_team_a_burst(None), "default")
    assert int(run.result.timeline.allocated_gpus.max()) == 16
    cols = job_columns(run.result)
    assert sorted(cols["quota_wait_s"].tolist()) == [0, 0, 1000, 1000]
    assert np.nanmax(cols["node_wait_s"]) == 0
    assert cols["cluster_queue"] == ["team-a"] * 4


def test_flavor_node_labels_steer_pods() -> None:
    """On admission Kueue adds the flavor's nodeLabels to the pods' nodeSelector."""
    objects = _objects()
    objects[0]["spec"]["nodeLabels"] = {"fleetlab.io/pool": "b"}
    resolved = scenario(
        [pool(name="a", count=2), pool(name="b", count=2)],
        [job("x", gpus=1, queue="q", namespace="a")],
        kueue=objects,
    )
    result = run_one(resolved, "least-allocated").result
    assert result.nodes.pool[int(result.pods.node[0])] == "b"


def test_same_pod_spec_admitted_on_two_flavors_gets_each_flavors_labels() -> None:
    """Two jobs with one pod spec: the ClusterQueue's first flavor (pool a, 1 GPU of quota) takes the first,
    the second flavor (pool b) the other; each job's pods carry their own flavor's nodeLabels."""
    flavors = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {"nodeLabels": {"fleetlab.io/pool": name}},
        }
        for name in ("a", "b")
    ]
    queue = _cq("team-a", 1, None, flavor="a")
    first = queue["spec"]["resourceGroups"][0]["flavors"][0]
    queue["spec"]["resourceGroups"][0]["flavors"].append({**first, "name": "b"})
    objects = [*flavors, queue, _objects()[3]]
    resolved = scenario(
        [pool(name="a", count=1), pool(name="b", count=1)],
        [job(f"x{i}", gpus=1, runtime=100, queue="q", namespace="a") for i in range(2)],
        kueue=objects,
    )
    result = run_one(resolved, "least-allocated").result
    assert [result.nodes.pool[int(n)] for n in result.pods.node] == ["a", "b"]


def test_jobs_of_one_shape_with_different_pod_counts_ask_for_their_own_quota() -> None:
    """One pod shape (1 GPU), 2 + 1 + 2 pods at t=0, 3 GPUs of nominal quota, no cohort: the first two fit
    (2 + 1 = 3 GPUs), the third waits for quota until both end at 1000 s (quota_wait_s 0, 0, 1000)."""
    objects = _objects(None)
    objects[1] = _cq("team-a", 3, None)
    resolved = scenario([pool(count=1)], [job("x0", runtime=1000, queue="q", namespace="a")], kueue=objects)
    template = resolved.jobs.templates[0]
    # One template shared by the three jobs, as a generator or trace reader builds it (pods per job).
    table = JobTable(
        pa.array(["x0", "x1", "x2"]),
        np.zeros(3),
        np.full(3, 1000.0),
        np.array([2, 1, 2], np.int32),
        np.zeros(3, np.int32),
        [template],
        [()],
    )
    run = run_one(resolved.model_copy(update={"jobs": table}), "default")
    assert job_columns(run.result)["quota_wait_s"].tolist() == [0, 0, 1000]


def test_unknown_local_queue_is_a_clear_error() -> None:
    """A job naming a LocalQueue that does not exist in its namespace is refused with the job id."""
    with pytest.raises(ValueError, match=r"ghost.*a/nope"):
        Scenario.model_validate(
            {
                "cluster": {"pools": [pool()]},
                "workload": {"jobs": [job("ghost", queue="nope", namespace="a")]},
                "kueue": _objects(),
            }
        )


def test_bad_kueue_object_names_object_and_field(tmp_path: Any) -> None:
    """A ClusterQueue naming an undefined flavor is reported with the object and the field."""
    import yaml

    objects = _objects()
    objects[1]["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "h100-typo"
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump({"cluster": {"pools": [pool()]}, "workload": {"jobs": [job("x")]}, "kueue": objects})
    )
    from fleetlab.spec.loader import load

    with pytest.raises(SpecError, match=r'ClusterQueue "team-a".*h100-typo'):
        load(str(path))


def test_generated_jobs_checked_against_local_queues() -> None:
    """Queues named by generated jobs are checked when the workload is materialised."""
    data = {
        "cluster": {"pools": [pool()]},
        "kueue": _objects(),
        "workload": {
            "generator": {
                "classes": [
                    {
                        "name": "g",
                        "class": "batch",
                        "arrivals_per_hour": 1,
                        "count": 2,
                        "queue": "missing",
                        "duration": {"kind": "fixed", "median": 60},
                    }
                ]
            }
        },
    }
    with pytest.raises(SpecError, match="missing"):
        resolve(Scenario.model_validate(data))


def test_reclaim_evicts_borrowed_gang_and_accounts_lost_work() -> None:
    """reclaimWithinCohort: team-b reclaims its lent quota; team-a's borrowed gang is evicted whole and
    loses the compute since its last checkpoint (queues.md §1.5, classic preemption)."""
    objects = _objects()
    for cq in objects[1:3]:
        cq["spec"]["preemption"] = {"reclaimWithinCohort": "Any"}
    jobs = [
        job("a-own", gpus=8, pods=2, gang=True, runtime=7200, queue="q", namespace="a"),
        job(
            "a-borrow",
            gpus=8,
            pods=2,
            gang=True,
            runtime=7200,
            queue="q",
            namespace="a",
            checkpoint_interval_s=600,
        ),
        job("b-late", gpus=8, pods=2, gang=True, submit_s=1000, runtime=600, queue="q", namespace="b"),
    ]
    run = run_one(scenario([pool(count=4)], jobs, kueue=objects), "default")
    cols = job_columns(run.result)
    idx = {j: i for i, j in enumerate(cols["job_id"])}
    evicted = [j for j in ("a-own", "a-borrow") if cols["evictions"][idx[j]] == 2]
    assert len(evicted) == 1  # exactly one of team-a's gangs was borrowing and is reclaimed
    assert cols["quota_wait_s"][idx["b-late"]] == 0
    lost = cols["lost_gpu_hours"][idx[evicted[0]]]
    expected = 16 * (1000 if evicted[0] == "a-own" else 1000 - 600) / 3600
    assert lost == pytest.approx(expected)
    assert all(cols["state"][i] == "completed" for i in idx.values())


def test_wait_for_pods_ready_evicts_half_placed_gang_and_requeues_with_backoff() -> None:
    """waitForPodsReady: with gang scheduling off, a gang admitted by quota but only half placed is evicted
    after the timeout, frees the GPUs it held, and is requeued after 60 s (backoff base, queues.md §1.7)."""
    objects = _objects()
    jobs = [
        job("blocker", gpus=8, runtime=900, nodeSelector={"kubernetes.io/hostname": "gpu-1"}),
        job("train", gpus=8, pods=2, gang=True, submit_s=1, runtime=100, queue="q", namespace="a"),
    ]
    resolved = scenario(
        [pool(count=2)],
        jobs,
        kueue=objects,
        scheduler={"gang_scheduling": False},
        kueue_configuration={"waitForPodsReady": {"timeout": "5m"}},
    )
    run = run_one(resolved, "default")
    cols = job_columns(run.result)
    idx = {j: i for i, j in enumerate(cols["job_id"])}
    # Admitted at 1 s; the lone placed pod is evicted at 301 s, requeued after 60 s, evicted again at
    # 661 s, requeued after 120 s (781 s), and both pods run once the blocker ends at 900 s.
    assert cols["evictions"][idx["train"]] == 2
    assert cols["completion_s"][idx["train"]] == pytest.approx(999)
    assert summary_of(run).gpu_hours_wait == pytest.approx(8 * (300 + 300 + 119) / 3600)


def summary_of(run: Any) -> Any:
    from fleetlab.metrics.summary import summarize

    return summarize(run.result)


def _loop_world(reclaim: str, data_size: str | None = None) -> Any:
    """Two ClusterQueues of 8 GPUs in a cohort; in each a small low-priority job and a big high-priority
    gang that can only run by borrowing the other queue's whole quota."""
    objects = _objects()
    for cq in objects[1:3]:
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = 8
        cq["spec"]["preemption"] = {
            "reclaimWithinCohort": reclaim,
            "withinClusterQueue": "LowerPriority",
            "borrowWithinCohort": {"policy": "LowerPriority"},  # lets the big gangs preempt to borrow
        }
    shapes = {
        "a-big": {"gpus": 8, "pods": 2, "gang": True, "namespace": "a", "priority": 1},
        "a-small": {"gpus": 8, "namespace": "a", "priority": 0},
        "b-big": {"gpus": 8, "pods": 2, "gang": True, "namespace": "b", "priority": 1},
        "b-small": {"gpus": 4, "namespace": "b", "priority": 0},
    }
    jobs = [job(n, submit_s=10 * i, runtime=3600, queue="q", **s) for i, (n, s) in enumerate(shapes.items())]
    if data_size is not None:
        for entry in jobs:
            entry["data_size"] = data_size  # downloaded at every start, so each retry takes time
    return scenario([pool(count=2)], jobs, kueue=objects)


def test_preemption_loop_is_stopped_and_named() -> None:
    """KEP-1337's warning made concrete: a-big preempts a-small within its queue while borrowing (allowed
    only because borrowWithinCohort is set: upstream canPreemptWhileBorrowing), b-small reclaims from the
    borrower, b-big does the same in b, a-small
    reclaims... Upstream Kueue loops forever here; the run stops and says which workloads loop."""
    result = run_one(_loop_world("Any"), "default").result
    [warning] = result.warnings
    assert "Kueue preemption loop" in warning
    assert "a-big, a-small, b-big, b-small" in warning
    assert not result.jobs.completed.any()
    assert int(result.jobs.evictions.max()) >= 50


def test_lower_priority_reclaim_breaks_the_loop() -> None:
    """With reclaimWithinCohort: LowerPriority the small jobs cannot reclaim from the big borrowers, so
    every job runs to completion."""
    result = run_one(_loop_world("LowerPriority"), "default").result
    assert result.warnings == []
    assert result.jobs.completed.all()


def test_endless_retrying_without_completions_stops_with_a_warning(monkeypatch: Any) -> None:
    """The last resorts, with the loop detector out of the way: a run in which nothing completes for
    max(STALL_MIN_MS, 20 × the longest runtime) stops and says so instead of running forever; so does
    one whose clock stops moving."""
    import fleetlab.sim.guards as guards
    import fleetlab.sim.kueue_bridge as bridge

    monkeypatch.setattr(bridge, "PREEMPTION_LOOP_LIMIT", 10**9)
    monkeypatch.setattr(guards, "STALL_MIN_MS", 3_600_000)
    result = run_one(_loop_world("Any", data_size="20Gi"), "default").result
    [warning] = result.warnings
    assert warning.startswith("stopped at 20.") and "no job completed for 20 h" in warning
    assert not result.jobs.completed.any()
    # The warning names what it cut off: every job here, none left unsubmitted, the first few by id.
    n = len(result.jobs.ids)
    assert f"Cut off: {n} unfinished job(s), 0 of them never submitted" in warning
    named = warning.split("never submitted (")[1].split(")")[0].split(" and ")[0].split(", ")
    assert len(named) == min(5, n) and set(named) <= set(result.jobs.ids)
    # Without a download, every retry happens at the same instant.
    result = run_one(_loop_world("Any"), "default").result
    [warning] = result.warnings
    assert "without the clock moving" in warning


def test_readmitted_job_reruns_only_its_unfinished_pods() -> None:
    """A Kueue-suspended Job keeps its succeeded pods: after preemption and re-admission only the pod that
    was running starts again, and the job ends when that one does."""
    objects = _objects(cohort=None)
    objects[1]["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    jobs = [
        job("lo", gpus=8, pods=2, runtime=100, queue="q", namespace="a"),
        job("hi", gpus=8, pods=2, submit_s=150, runtime=100, priority=1, queue="q", namespace="a"),
    ]
    run = run_one(scenario([pool(count=1)], jobs, kueue=objects), "default")
    cols = job_columns(run.result)
    idx = {j: i for i, j in enumerate(cols["job_id"])}
    assert cols["state"][idx["lo"]] == "completed" and cols["state"][idx["hi"]] == "completed"
    assert cols["evictions"][idx["lo"]] == 1
    # lo: pod 0 runs 0–100 s, pod 1 100–150 s (evicted); hi 150–350 s; lo's pod 1 again 350–450 s.
    seg = run.result.segments
    stays = sorted(
        (int(p), int(b), int(e)) for p, b, e in zip(seg.pod, seg.bound_ms, seg.end_ms, strict=True)
    )
    assert [s for s in stays if s[0] < 2] == [(0, 0, 100_000), (1, 100_000, 150_000), (1, 350_000, 450_000)]
    assert run.result.end_ms == 450_000
