"""The headline of a pending pod is the constraint whose removal would let it in (and says when two must
change); storage location is a cause of its own, from PVs/PVCs/StorageClasses or the cluster's event.

Node shapes are the GKE / Karpenter / GPU Operator builders of kube_builders.py (sources cited there).
PV shapes follow the AWS EBS CSI driver's dynamically provisioned volumes (spec.nodeAffinity on
``topology.kubernetes.io/zone``; kubernetes-sigs/aws-ebs-csi-driver docs) and the Kubernetes storage
docs ("Storage Classes": volumeBindingMode, allowedTopologies).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleetlab.kube.diagnose import Diagnosis, PendingPod
from fleetlab.model.resources import GPU
from fleetlab.spec.errors import SpecError
from kube_builders import (
    container,
    diagnose_items,
    gke_gpu_node,
    gpu_operator_node,
    karpenter_gpu_node,
    node,
    pod,
)

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


run = diagnose_items


def one(d: Diagnosis, name: str) -> PendingPod:
    return next(p for p in d.pending if p.pod == f"default/{name}")


def gpu_pod(name: str, **spec: Any) -> dict[str, Any]:
    return pod(name, [container("c", {"cpu": "1"}, {GPU: "1"})], **spec)


def test_zone_no_node_has_is_the_selector_not_the_taint(tmp_path: Path) -> None:
    """spot-0 (zone a) carries GKE's spot taint the pod does not tolerate; od-0 (zone b) has only the GPU
    taint, tolerated. The pod selects zone f, which no node has. Per node: spot-0 fails taint and
    selector, od-0 fails the selector only -> lifting the selector alone opens od-0; the taint is not it."""
    spot = gke_gpu_node("spot-0")
    spot["metadata"]["labels"]["cloud.google.com/gke-spot"] = "true"
    spot["spec"]["taints"].append(
        {"key": "cloud.google.com/gke-spot", "value": "true", "effect": "NoSchedule"}
    )
    on_demand = gke_gpu_node("od-0")
    on_demand["metadata"]["labels"]["topology.kubernetes.io/zone"] = "us-central1-b"
    p = gpu_pod(
        "train", tolerations=[GPU_TOLERATION], nodeSelector={"topology.kubernetes.io/zone": "us-central1-f"}
    )
    d = run(tmp_path, [spot, on_demand, p])
    got = one(d, "train")
    assert got.blocked_by == "selector/affinity"
    assert (
        "topology.kubernetes.io/zone=us-central1-f matches no node (values present: us-central1-a, us-central1-b)"
        in got.detail
    )
    assert "lifting the selector/affinity rule alone opens 1 node(s)" in got.detail


def test_selected_l4_not_tolerated_is_the_taint(tmp_path: Path) -> None:
    """The pod selects GKE's L4 node (gke-accelerator=nvidia-l4) but does not tolerate its
    nvidia.com/gpu=present taint; two untainted bare-metal A100 nodes fail its selector. kube-scheduler
    counts 2 selector + 1 taint; the fix is the toleration (lifting it opens the L4 node the pod chose)."""
    l4 = gke_gpu_node("l4-0", accelerator="nvidia-l4")
    a100 = [gpu_operator_node(f"a100-{i}", "NVIDIA-A100-SXM4-80GB") for i in range(2)]
    p = gpu_pod("infer", nodeSelector={"cloud.google.com/gke-accelerator": "nvidia-l4"})
    d = run(tmp_path, [l4, *a100, p])
    got = one(d, "infer")
    assert got.message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 node(s) didn't match Pod's node affinity/selector."
    )
    assert got.blocked_by == "taint"
    assert "lifting the taint rule alone opens 1 node(s)" in got.detail
    assert "nvidia.com/gpu=present:NoSchedule (1)" in got.detail


def test_two_rules_must_change(tmp_path: Path) -> None:
    """Both GPU nodes are Karpenter spot nodes tainted nvidia.com/gpu:NoSchedule, the pod tolerates
    nothing and selects capacity-type on-demand: every node fails both -> both must change."""
    nodes = [karpenter_gpu_node(f"g4-{i}", gpus=1) for i in range(2)]
    for n in nodes:
        n["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot"
    p = gpu_pod("batch", nodeSelector={"karpenter.sh/capacity-type": "on-demand"})
    got = one(run(tmp_path, [*nodes, p]), "batch")
    assert got.blocked_by == "selector/affinity"  # on-demand exists on no node: it must change in any case
    assert "no single rule is enough: taint and selector/affinity must both change (2 node(s))" in got.detail


# -- storage ---------------------------------------------------------------------------------------------


def pvc(name: str, sc: str, volume: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": sc,
            "resources": {"requests": {"storage": "100Gi"}},
        },
        "status": {"phase": "Bound" if volume else "Pending"},
    }
    if volume:
        out["spec"]["volumeName"] = volume
    return out


def ebs_pv(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "100Gi"},
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0abc"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
                            ]
                        }
                    ]
                }
            },
            "storageClassName": "gp3",
        },
        "status": {"phase": "Bound"},
    }


def storage_class(name: str, mode: str, zones: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "ebs.csi.aws.com",
        "volumeBindingMode": mode,
    }
    if zones:
        out["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": zones}]}
        ]
    return out


def claim_pod(name: str, claim: str) -> dict[str, Any]:
    return gpu_pod(
        name,
        tolerations=[GPU_TOLERATION],
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
    )


def test_volume_node_affinity_conflict(tmp_path: Path) -> None:
    """The only GPU node is in us-east-1a (Karpenter builder); the claim's EBS volume lives in us-east-1b."""
    items = [
        karpenter_gpu_node("g4-0", gpus=1),
        claim_pod("train", "data"),
        pvc("data", "gp3", volume="pv-data"),
        ebs_pv("pv-data", "us-east-1b"),
        storage_class("gp3", "WaitForFirstConsumer"),
    ]
    got = one(run(tmp_path, items), "train")
    assert got.blocked_by == "storage"
    assert "volume node affinity conflict: PVC default/data is bound to PV pv-data" in got.detail
    assert "topology.kubernetes.io/zone In [us-east-1b]" in got.detail
    assert "the 1 node(s) with room for the pod (g4-0)" in got.detail
    assert got.placed_on is None


def test_immediate_unbound_claim_and_missing_claim(tmp_path: Path) -> None:
    items = [
        karpenter_gpu_node("g4-0", gpus=2),
        claim_pod("a", "scratch"),
        claim_pod("b", "nope"),
        pvc("scratch", "standard"),
        storage_class("standard", "Immediate"),
    ]
    d = run(tmp_path, items)
    assert one(d, "a").blocked_by == "storage" and "binds Immediate" in one(d, "a").detail
    assert one(d, "b").blocked_by == "storage" and "default/nope not found" in one(d, "b").detail


def test_wait_for_first_consumer_respects_allowed_topologies(tmp_path: Path) -> None:
    """Unbound WaitForFirstConsumer claims are provisioned where the pod lands: fine in us-east-1a,
    blocking when the class only provisions in us-east-1c."""
    items = [
        karpenter_gpu_node("g4-0", gpus=2),
        claim_pod("ok", "anywhere"),
        claim_pod("stuck", "elsewhere"),
        pvc("anywhere", "gp3"),
        pvc("elsewhere", "gp3-1c"),
        storage_class("gp3", "WaitForFirstConsumer"),
        storage_class("gp3-1c", "WaitForFirstConsumer", zones=["us-east-1c"]),
    ]
    d = run(tmp_path, items)
    assert one(d, "ok").placed_on == "g4-0"
    stuck = one(d, "stuck")
    assert (
        stuck.blocked_by == "storage"
        and "provisions only on nodes with topology.kubernetes.io/zone In [us-east-1c]" in stuck.detail
    )


def test_volume_conflict_from_the_event_alone(tmp_path: Path) -> None:
    """Without PV/PVC objects, the FailedScheduling event names the volume filter."""
    p = claim_pod("train", "data")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "train.1", "namespace": "default", "creationTimestamp": "2026-11-30T09:05:00Z"},
        "involvedObject": {"kind": "Pod", "name": "train", "namespace": "default"},
        "reason": "FailedScheduling",
        "message": "0/1 nodes are available: 1 node(s) had volume node affinity conflict. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        "lastTimestamp": "2026-11-30T09:05:00Z",
    }
    got = one(
        run(tmp_path, [karpenter_gpu_node("g4-0", gpus=1), node("cpu-0", gpus=None), p, event]), "train"
    )
    assert got.blocked_by == "storage" and "volume node affinity conflict" in got.detail


def test_storage_objects_of_odd_shapes_do_not_crash(tmp_path: Path) -> None:
    """Hostile storage objects: a PV nodeAffinity that is not a selector and a class whose
    allowedTopologies is a string are ignored (no verdict from them); a claim whose metadata is a list is
    refused with one paragraph naming it, as every object of a wrong shape is. Never a traceback."""
    odd_pvc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": ["x"],
        "spec": "?",
    }
    bad_pv = ebs_pv("pv-data", "us-east-1a")
    bad_pv["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": "zone-a"}}
    odd_sc = storage_class("gp3", "WaitForFirstConsumer")
    odd_sc["allowedTopologies"] = "us-east-1a"
    items = [
        karpenter_gpu_node("g4-0", gpus=2),
        claim_pod("a", "data"),
        claim_pod("b", "fresh"),
        pvc("data", "gp3", volume="pv-data"),
        pvc("fresh", "gp3"),
        bad_pv,
        odd_sc,
    ]
    d = run(tmp_path, items)
    assert {p.pod: p.placed_on for p in d.pending} == {"default/a": "g4-0", "default/b": "g4-0"}
    with pytest.raises(SpecError, match="PersistentVolumeClaim `metadata` is a list; it must be a mapping"):
        run(tmp_path, [*items, odd_pvc])
