"""Stage (a) on real platform shapes: GPU machines recognised from cloud labels, MIG named only where a
GPU is partitioned, GFD product strings mapped to models, and a node table whose totals add up.

The node shapes are the builders in kube_builders.py (GKE, EKS with Karpenter, AKS, GPU Operator), each
citing the public page its labels and taints come from. The product-string forms (``-SHARED`` with
``renameByDefault: false``, ``-MIG-<profile>`` under the single strategy, both together) are those listed in
shared/reference/kube-scheduler/semantics.md section 6.4 (GPU Feature Discovery README, "Generated Labels").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.kube.diagnose import Diagnosis
from fleetlab.model.gpu_products import model_for_instance_type, parse_product
from fleetlab.model.gpus import GPU_MODELS
from fleetlab.model.resources import GPU
from kube_builders import (
    aks_gpu_node,
    container,
    diagnose_items,
    gke_gpu_node,
    gpu_operator_node,
    karpenter_gpu_node,
    node,
    pod,
)

run = diagnose_items


def by_node(d: Diagnosis) -> dict[str, Any]:
    return {g.node: g for g in d.gpu_nodes}


# -- product strings ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "model", "mig", "shared"),
    [
        ("A100-SXM4-40GB", "A100-40GB", None, False),  # drivers before R470: no NVIDIA- prefix
        ("NVIDIA-A100-SXM4-40GB", "A100-40GB", None, False),
        ("NVIDIA-A100-80GB-PCIe", "A100-80GB", None, False),
        ("NVIDIA-A100-SXM4-80GB", "A100-80GB", None, False),
        ("NVIDIA-A10G", "A10G", None, False),
        ("NVIDIA-A10", "A10", None, False),
        ("NVIDIA-H20", "H20", None, False),
        ("NVIDIA-L40S", "L40S", None, False),
        ("NVIDIA-GH200-480GB", "GH200", None, False),
        ("Tesla-K80", "K80", None, False),
        ("Tesla-P40", "P40", None, False),
        ("Tesla-T4", "T4", None, False),
        ("Tesla-T4-SHARED", "T4", None, True),  # time-slicing with renameByDefault: false
        ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "A100-40GB", "1g.5gb", False),  # MIG single strategy
        ("A100-SXM4-40GB-MIG-1g.5gb-SHARED", "A100-40GB", "1g.5gb", True),  # MIG single, also shared
        ("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "H100", "1g.10gb", False),
        ("nvidia-l4", "L4", None, False),  # case differs
        ("NVIDIA-RTX-PRO-6000-Blackwell", None, None, False),
    ],
)
def test_product_strings_map_to_models(label: str, model: str | None, mig: str | None, shared: bool) -> None:
    product = parse_product(label)
    assert (product.model, product.mig_profile, product.shared) == (model, mig, shared)


def test_new_models_have_memory_and_own_product() -> None:
    # K80 12 GB per GK210 GPU, P40 24 GB, A10G 24 GB, H20 96 GB, GH200 96 GB HBM3 (sources in gpus.py)
    expected = {"K80": 12, "P40": 24, "A10G": 24, "L40S": 48, "H20": 96, "GH200": 96}
    assert {m: GPU_MODELS[m].memory_gib for m in expected} == expected
    for name in expected:
        assert parse_product(GPU_MODELS[name].product).model == name


@pytest.mark.parametrize(
    ("instance_type", "model"),
    [
        ("g4dn.xlarge", "T4"),
        ("g5.12xlarge", "A10G"),
        ("g6e.xlarge", "L40S"),
        ("p4d.24xlarge", "A100-40GB"),
        ("p5.48xlarge", "H100"),
        ("a2-highgpu-1g", "A100-40GB"),
        ("a3-ultragpu-8g", "H200"),
        ("g2-standard-8", "L4"),
        ("Standard_NC6s_v3", "V100"),
        ("Standard_NC24ads_A100_v4", "A100-80GB"),
        ("m5.xlarge", None),
        ("n2-standard-8", None),
    ],
)
def test_gpu_instance_types(instance_type: str, model: str | None) -> None:
    assert model_for_instance_type(instance_type) == model


# -- MIG only where a GPU is partitioned ----------------------------------------------------------------


def test_mig_strategy_label_alone_is_not_mig(tmp_path: Path) -> None:
    """GFD writes mig.strategy=single on a T4 (mig.capable=false) and on an A100 with MIG off."""
    d = run(
        tmp_path,
        [
            gpu_operator_node("t4-0", "Tesla-T4", gpus=1, mig_capable=False),
            gpu_operator_node(
                "a100-off-0", "NVIDIA-A100-SXM4-40GB", extra_labels={"nvidia.com/mig.config": "all-disabled"}
            ),
        ],
    )
    nodes = by_node(d)
    assert nodes["t4-0"].mig is None and nodes["a100-off-0"].mig is None
    assert nodes["t4-0"].model == "T4" and nodes["a100-off-0"].model == "A100-40GB"


def test_real_mig_single_mixed_and_config(tmp_path: Path) -> None:
    d = run(
        tmp_path,
        [
            # single strategy: nvidia.com/gpu counts instances, the product names the profile (8 GPUs x 7)
            gpu_operator_node(
                "mig-single-0",
                "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
                gpus=56,
                extra_labels={"nvidia.com/mig.config": "all-1g.5gb"},
            ),
            # mixed strategy: nvidia.com/gpu 0, one resource per profile, count labels
            gpu_operator_node(
                "mig-mixed-0",
                "NVIDIA-H100-80GB-HBM3",
                gpus=0,
                extra_labels={"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig-1g.10gb.count": "14"},
                extra_resources={"nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "4"},
            ),
            # mig-parted asked for a layout the device plugin has not advertised yet
            gpu_operator_node(
                "mig-pending-0",
                "NVIDIA-A100-SXM4-80GB",
                extra_labels={"nvidia.com/mig.config": "all-balanced"},
            ),
        ],
    )
    nodes = by_node(d)
    assert nodes["mig-single-0"].mig is not None and "1g.5gb" in nodes["mig-single-0"].mig
    assert nodes["mig-mixed-0"].mig == "MIG mixed: mig-1g.10gb x 14, mig-3g.40gb x 4"
    assert not nodes["mig-mixed-0"].problems  # gpu 0 but MIG resources: not a driver fault
    assert nodes["mig-pending-0"].mig == "MIG config all-balanced requested (nvidia.com/mig.config)"


def test_gpu_operator_mps_example(tmp_path: Path) -> None:
    """The GPU Operator docs' MPS example (shared/reference/kube-scheduler/semantics.md section 6.4):
    4 x T4, replicas 4, gpu.count=4, product Tesla-T4-SHARED, capacity nvidia.com/gpu 16."""
    labels = {
        "nvidia.com/gpu.count": "4",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "mps",
    }
    d = run(
        tmp_path,
        [gpu_operator_node("mps-0", "Tesla-T4-SHARED", gpus=16, mig_capable=False, extra_labels=labels)],
    )
    g = by_node(d)["mps-0"]
    assert g.sharing == "mps: nvidia.com/gpu counts 4 GPUs x 4 replicas; memory and faults are shared"
    assert g.mig is None and g.model == "T4"
    assert [(r.advertised, r.healthy) for r in g.resources] == [(16, 16)]


def test_time_slicing_shared_product(tmp_path: Path) -> None:
    d = run(
        tmp_path,
        [
            gpu_operator_node(
                "ts-0",
                "Tesla-T4-SHARED",
                gpus=4,
                mig_capable=False,
                extra_labels={"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "1"},
            )
        ],
    )
    g = by_node(d)["ts-0"]
    assert g.mig is None and g.model == "T4"
    assert g.sharing is not None and "1 GPUs x 4 replicas" in g.sharing


# -- GPU machines without a device plugin ---------------------------------------------------------------


def test_cloud_gpu_machines_without_device_plugin(tmp_path: Path) -> None:
    d = run(
        tmp_path,
        [
            karpenter_gpu_node("ip-10-0-1-17.ec2.internal"),  # g4dn.xlarge, no nvidia.com/gpu
            gke_gpu_node("gke-gpu-pool-1-abcd", gpus=None),
            aks_gpu_node("aks-gpunp-0", gpus=None),
            node("plain-0", gpus=None),  # a CPU node: not a GPU node at all
        ],
    )
    nodes = by_node(d)
    assert set(nodes) == {"ip-10-0-1-17.ec2.internal", "gke-gpu-pool-1-abcd", "aks-gpunp-0"}
    eks = nodes["ip-10-0-1-17.ec2.internal"]
    assert eks.model == "T4" and eks.expected_gpus == 1
    assert eks.problems == [
        "GPU machine (karpenter.k8s.aws/instance-gpu-count=1) advertises no nvidia.com/gpu: the NVIDIA "
        "device plugin (or the driver it needs) is not running on this node"
    ]
    assert "cloud.google.com/gke-accelerator=nvidia-tesla-t4" in nodes["gke-gpu-pool-1-abcd"].problems[0]
    assert nodes["gke-gpu-pool-1-abcd"].model == "T4"
    assert "accelerator=nvidia" in nodes["aks-gpunp-0"].problems[0]
    assert nodes["aks-gpunp-0"].model == "V100"  # Standard_NC6s_v3
    # header: 0 of 3 GPU nodes healthy, no GPUs anywhere
    assert (d.gpus_advertised, d.gpus_allocatable, d.gpus_allocated, d.gpus_free) == (0, 0, 0, 0)
    assert any("no node advertises nvidia.com/gpu" in n for n in d.notes)


# -- node table totals ----------------------------------------------------------------------------------


def test_node_table_totals_by_resource(tmp_path: Path) -> None:
    """Three GPU nodes; totals worked by hand.

    gke-0: 4 advertised, 4 healthy; pods a (2) and b (1) bound -> 3 allocated, 1 free.
    op-0:  8 advertised, 6 healthy (two unhealthy); pod c (6) bound -> 6 allocated, 0 free; pod d (2)
           Succeeded -> holds nothing.
    eks-0: no nvidia.com/gpu (no device plugin).
    Header: advertised 4+8 = 12, healthy 4+6 = 10, allocated 3+6 = 9, free 1+0 = 1.
    """
    gke = gke_gpu_node("gke-0", accelerator="nvidia-l4", gpus=4)
    op = gpu_operator_node("op-0", "NVIDIA-H100-80GB-HBM3", gpus=6)
    op["status"]["capacity"][GPU] = "8"

    def bound(name: str, gpus: int, where: str, phase: str = "Running") -> dict[str, Any]:
        return pod(name, [container("c", {"cpu": "1"}, {GPU: str(gpus)})], node=where, phase=phase)

    d = run(
        tmp_path,
        [
            gke,
            op,
            karpenter_gpu_node("eks-0"),
            bound("a", 2, "gke-0"),
            bound("b", 1, "gke-0"),
            bound("c", 6, "op-0"),
            bound("d", 2, "op-0", phase="Succeeded"),
        ],
    )
    rows = {
        g.node: [(r.resource, r.advertised, r.healthy, r.allocated, r.free) for r in g.resources]
        for g in d.gpu_nodes
    }
    assert rows == {
        "gke-0": [(GPU, 4, 4, 3, 1)],
        "op-0": [(GPU, 8, 6, 6, 0)],
        "eks-0": [],
    }
    assert (d.gpus_advertised, d.gpus_allocatable, d.gpus_allocated, d.gpus_free) == (12, 10, 9, 1)
    out = CliRunner().invoke(cli.app, ["diagnose", "--snapshot", str(tmp_path / "snap.json")]).output
    assert "nvidia.com/gpu: 12 advertised, 10 healthy (10 on schedulable nodes), 9 allocated, 1 free" in out
    assert "1 of 3 GPU node(s) without problems" in out
    for name in ("gke-0", "op-0", "eks-0"):
        assert name in out  # every GPU node is listed, not only those with a note
    assert "gpu: 12/10/9/1" in out


def test_unknown_product_is_named_in_a_note(tmp_path: Path) -> None:
    d = run(tmp_path, [gpu_operator_node("rtx-0", "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", gpus=8)])
    assert any("'NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition' on 1 node(s) (rtx-0)" in n for n in d.notes)


# -- kubectl describe text ------------------------------------------------------------------------------

DESCRIBE = """Name:               gke-gpu-pool-1-abcd
Roles:              <none>
Labels:             cloud.google.com/gke-accelerator=nvidia-tesla-t4
                    kubernetes.io/hostname=gke-gpu-pool-1-abcd
Annotations:        node.alpha.kubernetes.io/ttl: 0
CreationTimestamp:  Mon, 30 Nov 2026 09:00:00 +0000
Taints:             nvidia.com/gpu=present:NoSchedule
Unschedulable:      false
"""


def test_describe_output_gets_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "describe.txt"
    path.write_text(DESCRIBE)
    result = CliRunner().invoke(cli.app, ["diagnose", "--nodes", str(path)])
    assert result.exit_code == 2
    assert "looks like `kubectl describe` output" in result.output
    assert "kubectl get nodes -o json" in result.output
    assert "has no `kind`" not in result.output


def test_pending_gpu_pod_names_the_machines_without_a_plugin(tmp_path: Path) -> None:
    """Karpenter launched a g4dn.xlarge for the pod, but no device plugin runs there: the pod's verdict
    points at that machine, not at a generic 'no node has it'."""
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    p = pod("train", [container("c", {"cpu": "1"}, {GPU: "1"})], tolerations=[toleration])
    d = run(tmp_path, [karpenter_gpu_node("ip-10-0-1-17.ec2.internal"), node("cpu-0", gpus=None), p])
    (entry,) = d.pending
    assert entry.blocked_by == "not-advertised"
    assert entry.detail == (
        "no node advertises nvidia.com/gpu: 1 GPU machine(s) run no NVIDIA device plugin (or driver): "
        "ip-10-0-1-17.ec2.internal; install or fix it there"
    )


def test_totals_row_sums_every_gpu_resource(tmp_path: Path) -> None:
    """A mixed-MIG node: 14 x 1g.10gb, two held by a running pod -> 14/14/2/12 in the totals row."""
    mig = gpu_operator_node(
        "mig-0", "NVIDIA-H100-80GB-HBM3", gpus=0, extra_resources={"nvidia.com/mig-1g.10gb": "14"}
    )
    running = pod(
        "r", [container("c", {"cpu": "1"}, {"nvidia.com/mig-1g.10gb": "2"})], node="mig-0", phase="Running"
    )
    run(tmp_path, [mig, running])  # writes snap.json
    out = CliRunner().invoke(cli.app, ["diagnose", "--snapshot", str(tmp_path / "snap.json")]).output
    assert "gpu: 0/0/0/0" in out and "mig-1g.10gb: 14/14/2/12" in out
