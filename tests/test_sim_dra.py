"""Dynamic Resource Allocation in a simulation run, on small worlds worked out by hand.

The NVIDIA GPU DRA driver publishes each GPU as a device ``gpu-<minor>`` with ``productName`` (NVML's name:
"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"); the DeviceClass ``gpu.nvidia.com`` selects its whole
GPUs. Pools are 64-CPU nodes at $8/h (tests/builders.py); a node's bill is split by its GPUs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import assert_cost_split_exact, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.tables import job_columns, node_columns, pod_columns
from fleetlab.model.scenario import Scenario
from fleetlab.sim.result import SimulationResult

H100 = "NVIDIA H100 80GB HBM3"
GPU_CLASS = "gpu.nvidia.com"


def template(name: str, count: int, product: str | None = None, namespace: str = "default") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": GPU_CLASS, "count": count}
    if product is not None:
        expression = f"device.attributes['gpu.nvidia.com'].productName == '{product}'"
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": exactly}]}}},
    }


def claim_job(job_id: str, source: dict[str, str], runtime: float = 3600, **extra: Any) -> dict[str, Any]:
    """A job whose pods ask 1 CPU and 1Gi and get their GPUs through one claim entry ``gpu``."""
    return {
        "id": job_id,
        "requests": {"cpu": "1", "memory": "1Gi"},
        "runtime": runtime,
        "resourceClaims": [{"name": "gpu", **source}],
        **extra,
    }


def two_nodes() -> list[dict[str, Any]]:
    """One A100-80GB node and one H100 node, 2 GPUs each, both under the NVIDIA DRA driver."""
    return [pool("a100", gpu_model="A100-80GB", gpus=2), pool("h100", gpus=2)]


DRIVER = {"nvidiaDriver": [{"pool": "a100"}, {"pool": "h100"}]}


def run(pools: list[dict[str, Any]], jobs: list[dict[str, Any]], **extra: Any) -> SimulationResult:
    return run_one(scenario(pools, jobs, **extra)).result


def test_cel_selector_sends_the_claim_to_the_h100_node() -> None:
    """2 GPUs with productName H100 on a cluster where a100-0's GPUs are A100s: only h100-0's 2 devices
    match, so the pod runs there, holding gpu-0 and gpu-1. Its GPUs count like nvidia.com/gpu ones:
    gpus_per_pod 2, and the job pays h100-0's whole bill for its hour: $8/h × 1 h × 2/2 GPUs = $8;
    h100-0 allocated 2 devices for 1 h = 2 device-hours, a100-0 none."""
    dra = {"objects": [template("two-h100", 2, H100)], **DRIVER}
    result = run(two_nodes(), [claim_job("j", {"resourceClaimTemplateName": "two-h100"})], dra=dra)
    pods, jobs, nodes = pod_columns(result), job_columns(result), node_columns(result)
    assert pods["node"] == ["h100-0"]
    assert pods["dra_devices"] == ["gpu.nvidia.com/h100-0/gpu-0;gpu.nvidia.com/h100-0/gpu-1"]
    assert jobs["state"] == ["completed"] and jobs["gpus_per_pod"].tolist() == [2]
    assert jobs["cost_usd"].tolist() == pytest.approx([8.0])
    assert nodes["node"] == ["a100-0", "h100-0"]
    assert nodes["dra_devices"].tolist() == [2, 2]
    assert nodes["dra_device_hours"].tolist() == [0.0, 2.0]
    assert nodes["gpu_hours_compute"].tolist() == pytest.approx([0.0, 2.0])
    assert_cost_split_exact(result)


def test_devices_are_reserved_until_the_pod_ends() -> None:
    """Two such jobs at t=0: the first takes both H100s; the second's claim fits no node until the first
    releases them at 3600 s (A100s never match), so it waits 3600 s and ends at 7200 s."""
    dra = {"objects": [template("two-h100", 2, H100)], **DRIVER}
    jobs = [claim_job(f"j{i}", {"resourceClaimTemplateName": "two-h100"}) for i in range(2)]
    result = run(two_nodes(), jobs, dra=dra)
    columns = job_columns(result)
    assert columns["queue_wait_s"].tolist() == [0.0, 3600.0]
    assert columns["completion_s"].tolist() == [3600.0, 7200.0]
    assert pod_columns(result)["node"] == ["h100-0", "h100-0"]


def test_a_claim_no_node_can_meet_is_pending_with_the_plugins_reason() -> None:
    """3 H100 GPUs: h100-0 has 2, so no node can allocate the claim. kube-scheduler's message counts both
    nodes under DynamicResources' "cannot allocate all claims", and the pending table blames the claim:
    2 devices in the cluster match the request, both free."""
    dra = {"objects": [template("three-h100", 3, H100)], **DRIVER}
    result = run(two_nodes(), [claim_job("j", {"resourceClaimTemplateName": "three-h100"})], dra=dra)
    (pending,) = result.pending
    assert pending.message == "0/2 nodes are available: 2 cannot allocate all claims."
    assert pending.blocked_by == "dra"
    assert "2 node(s) pass every other filter, but: cannot allocate all claims" in pending.detail
    assert "-gpu/gpus asks 3 x gpu.nvidia.com: 2 matching device(s) in the cluster, 2 free" in pending.detail


def test_device_plugin_pods_never_get_a_gpu_dra_holds() -> None:
    """The DRA job holds both of h100-0's GPUs for 1 h; a device-plugin pod asking nvidia.com/gpu: 1 with a
    nodeSelector for h100-0 waits until they are released (the node's nvidia.com/gpu column counts DRA's
    GPUs as allocated), then runs 3600 → 4600 s."""
    dra = {"objects": [template("two-h100", 2, H100)], **DRIVER}
    plugin_job = {
        "id": "plugin",
        "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1},
        "runtime": 1000,
        "nodeSelector": {"kubernetes.io/hostname": "h100-0"},
    }
    jobs = [claim_job("dra", {"resourceClaimTemplateName": "two-h100"}), plugin_job]
    result = run(two_nodes(), jobs, dra=dra)
    columns = job_columns(result)
    assert columns["queue_wait_s"].tolist() == [0.0, 3600.0]
    assert columns["completion_s"].tolist() == [3600.0, 4600.0]
    timeline = result.timeline
    at_start = int(np.searchsorted(timeline.t_ms, 0, side="right")) - 1
    assert int(timeline.allocated_gpus[at_start]) == 2  # DRA's 2 GPUs in the cluster's allocated count
    assert int(timeline.usage["busy_gpu_milli"][at_start]) == 2000  # and busy while its pod computes


def test_a_shared_claim_is_allocated_once_for_every_pod_naming_it() -> None:
    """Two one-pod jobs name the same ResourceClaim (1 H100): the first pod's binding allocates gpu-0 on
    h100-0, the second pod shares it (same node, same device) and both run at once. The device is held
    from 0 to 3600 s: 1 device-hour. Shared devices belong to no pod: the jobs' gpus_per_pod stay 0."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "default"},
        "spec": template("x", 1, H100)["spec"]["spec"],
    }
    jobs = [claim_job(f"j{i}", {"resourceClaimName": "shared"}) for i in range(2)]
    result = run(two_nodes(), jobs, dra={"objects": [claim], **DRIVER})
    pods = pod_columns(result)
    assert pods["node"] == ["h100-0", "h100-0"]
    assert pods["dra_devices"] == ["gpu.nvidia.com/h100-0/gpu-0"] * 2
    columns = job_columns(result)
    assert columns["completion_s"].tolist() == [3600.0, 3600.0]
    assert columns["gpus_per_pod"].tolist() == [0, 0]
    assert node_columns(result)["dra_device_hours"].tolist() == [0.0, 1.0]


def test_a_gang_of_claims_gets_distinct_devices() -> None:
    """A gang of 2 pods, each with its own 1-GPU claim from the template, on one 2-GPU H100 node: the
    gang's trial binds reserve devices too, so the pods hold gpu-0 and gpu-1, not the same GPU twice."""
    dra = {"objects": [template("one-gpu", 1)], "nvidiaDriver": [{"pool": "h100"}]}
    job = claim_job("g", {"resourceClaimTemplateName": "one-gpu"}, pods=2, gang=True)
    result = run([pool("h100", gpus=2)], [job], dra=dra)
    pods = pod_columns(result)
    assert pods["node"] == ["h100-0", "h100-0"]
    assert sorted(pods["dra_devices"]) == ["gpu.nvidia.com/h100-0/gpu-0", "gpu.nvidia.com/h100-0/gpu-1"]
    assert job_columns(result)["gpus_per_pod"].tolist() == [1]


def test_eviction_frees_the_devices() -> None:
    """h100-0 fails at 600 s (repaired at 4200 s): the pod holding its 2 GPUs is evicted and its claim
    deallocated; h100-1's 2 GPUs are free, so it runs again there from 600 s (no checkpoint: the 600 s
    done are lost) and ends at 4200 s. Device-hours: 2 × 600 s on h100-0, 2 × 3600 s on h100-1. A preferred
    node affinity for h100-0 breaks the tie between the two empty nodes."""
    dra = {"objects": [template("two", 2)], "nvidiaDriver": [{"pool": "h100"}]}
    failures = {"trace": [{"node": "h100-0", "at_s": 600, "repair_s": 3600}]}
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["h100-0"]}]}
    prefer = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": term}]
        }
    }
    result = run(
        [pool("h100", count=2, gpus=2, failures=failures)],
        [claim_job("j", {"resourceClaimTemplateName": "two"}, affinity=prefer)],
        dra=dra,
    )
    columns = job_columns(result)
    assert columns["evictions"].tolist() == [1]
    assert columns["completion_s"].tolist() == [4200.0]
    assert pod_columns(result)["dra_devices"] == ["gpu.nvidia.com/h100-1/gpu-0;gpu.nvidia.com/h100-1/gpu-1"]
    hours = node_columns(result)["dra_device_hours"].tolist()
    assert hours == pytest.approx([2 * 600 / 3600, 2 * 3600 / 3600])


KUEUE_DRA = {"resources": {"deviceClassMappings": [{"name": "gpus", "deviceClassNames": [GPU_CLASS]}]}}


def kueue_objects(quota: int) -> list[dict[str, Any]]:
    """One ClusterQueue covering cpu, memory and the DRA-mapped resource ``gpus`` (quota ``quota``)."""
    resources = [
        {"name": "cpu", "nominalQuota": "100"},
        {"name": "memory", "nominalQuota": "1Ti"},
        {"name": "gpus", "nominalQuota": quota},
    ]
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "any"}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "gpus"],
                        "flavors": [{"name": "any", "resources": resources}],
                    }
                ]
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        },
    ]


def test_kueue_charges_claims_as_the_mapped_resource() -> None:
    """deviceClassMappings count gpu.nvidia.com devices as quota resource ``gpus`` (quota 2). Each job's
    pod asks 2 GPUs through its template, so the second workload waits for quota (not for nodes: 4 GPUs
    are free) until the first finishes at 3600 s: quota_wait 3600 s."""
    dra = {"objects": [template("two", 2)], "nvidiaDriver": [{"pool": "h100"}]}
    jobs = [claim_job(f"j{i}", {"resourceClaimTemplateName": "two"}, queue="q") for i in range(2)]
    result = run(
        [pool("h100", count=2, gpus=2)], jobs, dra=dra, kueue=kueue_objects(2), kueue_configuration=KUEUE_DRA
    )
    columns = job_columns(result)
    assert columns["quota_wait_s"].tolist() == [0.0, 3600.0]
    assert columns["completion_s"].tolist() == [3600.0, 7200.0]


def test_kueue_refuses_a_claim_it_cannot_charge() -> None:
    """A pod naming a ResourceClaim directly cannot be charged (Kueue charges only claims made from
    templates): the workload is inadmissible with that reason and never runs."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "mine", "namespace": "default"},
        "spec": template("x", 1)["spec"]["spec"],
    }
    dra = {"objects": [claim], "nvidiaDriver": [{"pool": "h100"}]}
    jobs = [claim_job("j", {"resourceClaimName": "mine"}, queue="q")]
    result = run([pool("h100", gpus=2)], jobs, dra=dra, kueue=kueue_objects(2), kueue_configuration=KUEUE_DRA)
    (pending,) = result.pending
    assert pending.blocked_by == "quota"
    assert pending.message == (
        'spec.resourceClaims[0]: ResourceClaim "mine" is named directly; Kueue charges only claims made '
        "from a ResourceClaimTemplate"
    )


def test_a_job_naming_an_unknown_template_is_refused() -> None:
    """The API server would take the pod, but it could never be scheduled: the scenario is refused."""
    with pytest.raises(ValueError, match="names ResourceClaimTemplate default/nope"):
        Scenario.model_validate(
            {
                "cluster": {"pools": [pool("h100", gpus=2)]},
                "workload": {"jobs": [claim_job("j", {"resourceClaimTemplateName": "nope"})]},
                "dra": {"nvidiaDriver": [{"pool": "h100"}]},
            }
        )
