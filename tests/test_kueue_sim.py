"""Kueue in the simulation loop: quota before nodes, borrowing in a cohort, flavor injection."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.queues import queue_rows
from fleetlab.metrics.tables import job_columns
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
