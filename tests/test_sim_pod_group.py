"""The Kubernetes v1.36 Workload API as a scenario's front end for a gang: a job that names a PodGroup in
``schedulingGroup.podGroupName`` (as its pods would) runs as that group's gang, kept to one domain of the
group's topology constraint; worked out by hand on small worlds, and written back by ``export`` in the
shape the v1.36 schema takes."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
import yaml
from pydantic import ValidationError

from builders import pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.export.write import render
from fleetlab.metrics.tables import job_columns, pod_columns
from fleetlab.model.scenario import Scenario
from fleetlab.sim.result import SimulationResult
from fleetlab.spec.workload_api import gang_request, read_workload_api

RACK = "example.com/rack"
API = "scheduling.k8s.io/v1alpha2"
GPU8 = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 8}


def group_objects(min_count: int = 3, key: str | None = RACK, basic: bool = False) -> list[dict[str, Any]]:
    """Workload ``train`` with template ``workers`` and the PodGroup ``train-workers`` made from it."""
    policy: dict[str, Any] = {"basic": {}} if basic else {"gang": {"minCount": min_count}}
    constraints = {"schedulingConstraints": {"topology": [{"key": key}]}} if key else {}
    template = {"name": "workers", "schedulingPolicy": policy, **constraints}
    ref = {"workload": {"workloadName": "train", "podGroupTemplateName": "workers"}}
    return [
        {"apiVersion": API, "kind": "Workload", "metadata": {"name": "train", "namespace": "default"},
         "spec": {"podGroupTemplates": [template]}},
        {"apiVersion": API, "kind": "PodGroup", "metadata": {"name": "train-workers", "namespace": "default"},
         "spec": {"podGroupTemplateRef": ref, "schedulingPolicy": policy, **constraints}},
    ]  # fmt: skip


def racks() -> list[dict[str, Any]]:
    """Rack r1: 2 nodes; rack r2: 3 nodes; 8 GPUs each."""
    return [pool("r1", count=2, labels={RACK: "r1"}), pool("r2", count=3, labels={RACK: "r2"})]


def hold() -> dict[str, Any]:
    """A pod holding r2-0's 8 GPUs from 0 to 3600 s."""
    return {
        "id": "hold",
        "requests": GPU8,
        "runtime": 3600,
        "nodeSelector": {"kubernetes.io/hostname": "r2-0"},
    }


def member(**extra: Any) -> dict[str, Any]:
    """Three 8-GPU pods for 1 h, submitted at 1 s, joining PodGroup train-workers."""
    return {"id": "train", "submit_s": 1, "pods": 3, "requests": GPU8, "runtime": 3600,
            "schedulingGroup": {"podGroupName": "train-workers"}, **extra}  # fmt: skip


def run(jobs: list[dict[str, Any]], objects: list[dict[str, Any]]) -> SimulationResult:
    return run_one(scenario(racks(), jobs, workload_api=objects)).result


def test_the_group_makes_the_job_a_gang_in_one_rack() -> None:
    """r2-0 is held until 3600 s, so at 1 s r1 has 2 free nodes and r2 has 2: no rack holds the gang of 3
    (minCount 3, one rack), and it binds nothing until the hold ends; then r2 has 3 → r2-0, r2-1, r2-2,
    3600 → 7200 s; it waited 3600 − 1 = 3599 s."""
    result = run([hold(), member()], group_objects())
    pods = pod_columns(result)
    assert sorted(n for j, n in zip(pods["job_id"], pods["node"], strict=True) if j == "train") == [
        "r2-0",
        "r2-1",
        "r2-2",
    ]
    jobs = job_columns(result)
    assert jobs["queue_wait_s"].tolist() == [0.0, 3599.0]
    assert jobs["completion_s"].tolist() == [3600.0, 7200.0 - 1.0]


def test_without_the_group_the_pods_start_at_once() -> None:
    """The same job without schedulingGroup: three independent pods take the 4 free nodes at 1 s."""
    job = member()
    del job["schedulingGroup"]
    result = run([hold(), job], group_objects())
    assert job_columns(result)["queue_wait_s"].tolist() == [0.0, 0.0]


def test_a_group_without_topology_is_a_plain_gang() -> None:
    """No topology constraint: the gang of 3 fits across racks at 1 s (r1's 2 free and r2's 2 free)."""
    result = run([hold(), member()], group_objects(key=None))
    assert job_columns(result)["queue_wait_s"].tolist() == [0.0, 0.0]


def test_the_job_takes_the_groups_gang_and_topology() -> None:
    resolved = Scenario.model_validate(
        {"cluster": {"pools": racks()}, "workload": {"jobs": [member()]}, "workload_api": group_objects()}
    )
    (job,) = resolved.workload.jobs or ()
    assert job.scheduling_group is not None and job.scheduling_group.pod_group_name == "train-workers"
    assert (job.gang, job.topology_required) == (True, RACK)


@pytest.mark.parametrize(
    ("job", "objects", "message"),
    [
        (member(), [], "'train-workers' is not a PodGroup of workload_api in namespace 'default'"),
        (member(namespace="team-a"), group_objects(), "in namespace 'team-a'"),
        (member(), group_objects(min_count=4), "gang minCount 4 exceeds the job's 3 pod"),
        (member(), group_objects(basic=True), "basic (one-by-one) PodGroup's topology constraint"),
        (member(gang=False), group_objects(), "the group is a gang but the job says gang: false"),
        (member(gang=True, topology_preferred=RACK), group_objects(), "give the topology in one place"),
    ],
)
def test_contradictions_are_refused(job: dict[str, Any], objects: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Scenario.model_validate(
            {"cluster": {"pools": racks()}, "workload": {"jobs": [job]}, "workload_api": objects}
        )


def test_a_pod_group_naming_a_missing_template_is_refused() -> None:
    objects = group_objects()
    objects[1]["spec"]["podGroupTemplateRef"]["workload"]["podGroupTemplateName"] = "ps"
    with pytest.raises(
        ValidationError, match='names template "ps", which Workload default/train does not have'
    ):
        Scenario.model_validate(
            {"cluster": {"pools": racks()}, "workload": {"jobs": [member()]}, "workload_api": objects}
        )


def test_export_writes_the_groups_back_as_the_v136_schema_takes_them() -> None:
    """The scenario's Workload and PodGroup come back as given (no generated pair for the job that joins
    them); kubernetes-validate 1.36 takes both and fleetlab reads the same gang request back."""
    given = Scenario.model_validate(
        {"cluster": {"pools": racks()}, "workload": {"jobs": [member()]}, "workload_api": group_objects()}
    )
    docs = list(yaml.safe_load_all(render(given)["workload-api.yaml"]))
    assert docs == group_objects()
    for doc in docs:
        assert kubernetes_validate.validate(doc, "1.36", strict=True) == "1.36"
    (group,) = read_workload_api(docs, "workload-api.yaml").pod_groups.values()
    request = gang_request(group)
    assert (request.min_count, request.topology_key) == (3, RACK)
