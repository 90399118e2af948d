"""Kueue TAS objects round-trip: snapshot → scenario → export, and the exported Topology and TAS
ResourceFlavor pass their v1beta2 CRD schemas (tests/data/kueue_crds, unknown fields refused); the
snapshot's PodSet annotation stays the gang's topology and the run honours it. The CRD's CEL rules are
the models' own checks (cases from the kubebuilder markers of kubernetes-sigs/kueue
``apis/kueue/v1beta2/topology_types.go`` and ``resourceflavor_types.go`` @1f6b5c71)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from fleetlab.experiment.run import run_one
from fleetlab.export.write import render
from fleetlab.kube.to_scenario import snapshot_pools, snapshot_scenario
from fleetlab.metrics.tables import pod_columns
from fleetlab.model.kueue_extra import Topology
from fleetlab.model.queue_objects import ResourceFlavor
from fleetlab.model.scenario import Scenario
from fleetlab.spec.kube_snapshot import load_snapshot
from fleetlab.spec.loader import resolve
from kube_builders import container, node, pod, write_list
from test_export import DATA, strict

RACK = "example.com/rack"
LEVELS = [{"nodeLabel": RACK}, {"nodeLabel": "kubernetes.io/hostname"}]
CRD_FILES = {"Topology": "topologies.v1beta2.yaml", "ResourceFlavor": "resourceflavors.v1beta2.yaml"}


def kueue_items() -> list[dict[str, Any]]:
    quota = [
        {"name": "cpu", "nominalQuota": "1000"},
        {"name": "memory", "nominalQuota": "10Ti"},
        {"name": "nvidia.com/gpu", "nominalQuota": 64},
    ]
    group = {
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
        "flavors": [{"name": "tas", "resources": quota}],
    }
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "racks"},
         "spec": {"levels": LEVELS}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "tas"},
         "spec": {"nodeLabels": {"example.com/gpu": "h100"}, "topologyName": "racks"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [group]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
         "metadata": {"name": "q", "namespace": "default"}, "spec": {"clusterQueue": "cq"}},
    ]  # fmt: skip


def snapshot_items() -> list[dict[str, Any]]:
    """Racks r1 (n0, n1) and r2 (n2, n3, n4) of 8-GPU nodes; a pending Kueue pod group of 3 asking for one
    rack through podset-required-topology."""
    nodes = []
    for i, rack in enumerate(["r1", "r1", "r2", "r2", "r2"]):
        n = node(f"n{i}")
        n["metadata"]["labels"].update({RACK: rack, "example.com/gpu": "h100"})
        nodes.append(n)
    pods = []
    for i in range(3):
        p = pod(f"w{i}", [container("c", {"nvidia.com/gpu": "8", "cpu": "1", "memory": "1Gi"})])
        p["metadata"]["labels"] = {
            "kueue.x-k8s.io/queue-name": "q",
            "kueue.x-k8s.io/pod-group-name": "train",
            "kueue.x-k8s.io/pod-group-total-count": "3",
        }
        p["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-required-topology": RACK}
        pods.append(p)
    return nodes + pods


def test_topology_and_tas_flavor_round_trip_and_pass_the_crds(tmp_path: Path) -> None:
    """The snapshot's Topology and TAS flavor come back out of export with their levels and topologyName,
    valid for the CRDs; the gang keeps topology_required; the nodes of each rack become their own pool (so
    the rack label survives), and simulating the snapshot puts all 3 pods in r2, the only rack with 3
    nodes."""
    snap = load_snapshot(
        [write_list(tmp_path / "snap.json", snapshot_items())],
        kueue_paths=[write_list(tmp_path / "kueue.json", kueue_items())],
    )
    resolved = snapshot_scenario(snap)
    scenario = resolved.scenario
    (gang,) = [j for j in scenario.workload.jobs or () if j.pods == 3]
    assert (gang.gang, gang.topology_required) == (True, RACK)
    docs = [d for d in yaml.safe_load_all(render(scenario)["kueue.yaml"]) if d is not None]
    found = {d["kind"]: d for d in docs if d["kind"] in CRD_FILES}
    assert found["Topology"]["spec"] == {"levels": LEVELS}
    assert found["ResourceFlavor"]["spec"]["topologyName"] == "racks"
    for kind, doc in found.items():
        errors = [e.message for e in crd_validator_for(kind).iter_errors(doc)]
        assert errors == [], (kind, errors)
    back = Scenario.model_validate({**scenario.model_dump(by_alias=True, exclude={"kueue"}), "kueue": docs})
    assert back.kueue is not None and scenario.kueue is not None
    assert back.kueue.topologies == scenario.kueue.topologies
    assert [f.spec.topology_name for f in back.kueue.resource_flavors] == ["racks"]
    result = run_one(resolve(scenario)).result
    pods = pod_columns(result)
    node_of = snapshot_pools(snap).node_of  # snapshot node → simulated node (one pool per rack)
    placed = sorted(n for j, n in zip(pods["job_id"], pods["node"], strict=True) if j == gang.id)
    assert placed == sorted(node_of[n] for n in ("n2", "n3", "n4"))


def crd_validator_for(kind: str) -> jsonschema.Draft7Validator:
    """The vendored v1beta2 schema of ``kind`` with unknown fields refused."""
    schema = yaml.safe_load((DATA / "kueue_crds" / CRD_FILES[kind]).read_text())
    return jsonschema.Draft7Validator(strict(schema))


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ([{"nodeLabel": RACK}, {"nodeLabel": RACK}], "levels must be unique"),
        (
            [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": RACK}],
            "can only be used at the lowest level",
        ),
        ([{"nodeLabel": "bad label"}], "nodeLabel"),
        ([{"nodeLabel": f"l{i}"} for i in range(17)], "at most 16"),
    ],
)
def test_topology_crd_rules(levels: list[dict[str, str]], message: str) -> None:
    doc = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "t"},
        "spec": {"levels": levels},
    }
    with pytest.raises(ValidationError, match=message):
        Topology.model_validate(doc)


def test_a_tas_flavor_needs_node_labels() -> None:
    """ResourceFlavor CRD rule: ``!has(self.topologyName) || self.nodeLabels.size() >= 1``."""
    with pytest.raises(ValidationError, match="topologyName needs at least one nodeLabels entry"):
        ResourceFlavor.model_validate({"metadata": {"name": "f"}, "spec": {"topologyName": "t"}})
