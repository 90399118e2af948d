"""``fleetlab export`` for real clusters: flavors select nodes by labels the cluster has (from a snapshot),
the profiles run as a second scheduler (ServiceAccount, RBAC, ConfigMap, Deployment as in Kubernetes'
"Configure Multiple Schedulers" task), and Kueue objects in v1beta1 on request.

Core objects pass ``kubernetes-validate`` (strict) for the scenario's Kubernetes version; the embedded
KubeSchedulerConfiguration passes the v1 field-name check of test_export; Kueue v1beta1 objects pass the
v1beta2 CRD schemas vendored in tests/data/kueue_crds with v1beta1's field names put back, as the v1beta1
versions of the same CRDs spell them (kubernetes-sigs/kueue config/components/crd/bases
kueue.x-k8s.io_clusterqueues.yaml @00b014c1: ``spec.cohort``, fungibility ``Borrow``/``Preempt`` listed as
deprecated names of ``MayStopSearch``; kueue.x-k8s.io_cohorts.yaml @014d9490: ``spec.parent``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.export.write import ExportOptions, export_scenario
from fleetlab.model.queues import queue_config_from_objects
from fleetlab.model.scenario import Scenario
from fleetlab.spec.kube_snapshot import load_snapshot
from kube_builders import gke_gpu_node, gpu_operator_node, node, write_list
from test_export import CRD_FILES, DATA, PLATFORM, documents, strict, walk

V1BETA1_RENAMES = {"ClusterQueue": ("cohortName", "cohort"), "Cohort": ("parentName", "parent")}


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    from fleetlab.spec.loader import load_scenario

    return load_scenario(str(PLATFORM))[0]


def test_second_scheduler_objects_are_valid_and_consistent(scenario: Scenario, tmp_path: Path) -> None:
    out = tmp_path / "config"
    result = export_scenario(scenario, out)
    docs = documents(out / "fleetlab-scheduler.yaml")
    kinds = [d["kind"] for d in docs]
    assert kinds == [
        "ServiceAccount",
        "ClusterRoleBinding",
        "ClusterRoleBinding",
        "RoleBinding",
        "ConfigMap",
        "Deployment",
    ]
    version = scenario.scheduler.kubernetes_version
    for doc in docs:
        assert kubernetes_validate.validate(doc, version, strict=True) == version
    roles = sorted(d["roleRef"]["name"] for d in docs if "roleRef" in d)
    assert roles == [
        "extension-apiserver-authentication-reader",
        "system:kube-scheduler",
        "system:volume-scheduler",
    ]
    config_map = docs[4]
    (key,) = config_map["data"]
    config = yaml.safe_load(config_map["data"][key])
    reference = json.loads((DATA / "kube_scheduler_v1_types.json").read_text())
    assert list(walk(config, config["kind"], reference["types"], "")) == []
    names = [p["schedulerName"] for p in config["profiles"]]
    assert names == ["fleetlab-scheduler", "fleetlab-batch", "fleetlab-inference"]  # classes sorted
    assert config["leaderElection"] == {"leaderElect": False}
    deployment = docs[5]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == f"registry.k8s.io/kube-scheduler:v{version}.0"
    mount = container["volumeMounts"][0]["mountPath"]
    assert container["command"][1] == f"--config={mount}/{key}"
    assert pod["volumes"][0]["configMap"]["name"] == config_map["metadata"]["name"]
    assert pod["serviceAccountName"] == docs[0]["metadata"]["name"]
    assert any("managed control plane" in n for n in result.notes)


def snapshot_nodes(tmp_path: Path) -> Path:
    """The platform's pools as a real cluster: GKE a3-highgpu-8g H100 nodes (no GFD labels), GPU-Operator
    A100-80GB nodes (MIG mixed: the product keeps no -MIG- suffix), an H200 in MIG single, CPU nodes."""
    h100 = [gke_gpu_node(f"gke-h100-{i}", accelerator="nvidia-h100-80gb", gpus=8) for i in range(4)]
    for n in h100:
        n["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "a3-highgpu-8g"
        n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] = "h100-pool"
    a100 = [
        gpu_operator_node(
            f"dgx-a100-{i}", "NVIDIA-A100-SXM4-80GB", extra_labels={"nvidia.com/mig.strategy": "mixed"}
        )
        for i in range(2)
    ]
    h200 = gpu_operator_node("hgx-h200-0", "NVIDIA-H200-MIG-1g.18gb", gpus=56)
    cpu = [node(f"cpu-{i}", gpus=None) for i in range(2)]
    return write_list(tmp_path / "nodes.json", [*h100, *a100, h200, *cpu])


def test_flavors_select_real_node_labels_from_a_snapshot(scenario: Scenario, tmp_path: Path) -> None:
    """h100: the GKE nodes carry no GPU product label; the instance type a3-highgpu-8g is shared by the
    four H100 nodes and no other, so it is the selector. a100-mig: the GFD product is unique."""
    snap = load_snapshot([snapshot_nodes(tmp_path)])
    out = tmp_path / "config"
    result = export_scenario(scenario, out, ExportOptions(snapshot=snap))
    flavors = {
        d["metadata"]["name"]: d["spec"]
        for d in documents(out / "kueue.yaml")
        if d["kind"] == "ResourceFlavor"
    }
    assert flavors["h100"]["nodeLabels"] == {"node.kubernetes.io/instance-type": "a3-highgpu-8g"}
    assert flavors["a100-mig"]["nodeLabels"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    assert any(
        "ResourceFlavor h100 selects pool h100 by node.kubernetes.io/instance-type=a3-highgpu-8g: the 4 snapshot node(s)"
        in n
        for n in result.notes
    )
    for labels in (flavors["h100"]["nodeLabels"], flavors["a100-mig"]["nodeLabels"]):
        matched = [n for n in snap.nodes if all(n.labels.get(k) == v for k, v in labels.items())]
        assert len(matched) in (4, 2)  # exactly the pool's nodes


def test_pool_with_no_telling_label_keeps_the_pool_label_and_says_so(
    scenario: Scenario, tmp_path: Path
) -> None:
    """Two pools of the same GPU and no instance type cannot be told apart by platform labels."""
    twin = scenario.cluster.pools[0].model_copy(update={"name": "h100-b"})
    cluster = scenario.cluster.model_copy(update={"pools": (*scenario.cluster.pools, twin)})
    result = export_scenario(scenario.model_copy(update={"cluster": cluster}), tmp_path / "c")
    flavors = {
        d["metadata"]["name"]: d["spec"]
        for d in documents(tmp_path / "c" / "kueue.yaml")
        if d["kind"] == "ResourceFlavor"
    }
    assert flavors["h100"]["nodeLabels"] == {"fleetlab.io/pool": "h100"}
    assert any("no label on the cluster tells pool h100's nodes apart" in n for n in result.notes)


def v1beta1_validator(kind: str) -> jsonschema.Draft7Validator:
    schema = yaml.safe_load((DATA / "kueue_crds" / CRD_FILES[kind]).read_text())
    spec = schema["properties"]["spec"]
    if kind in V1BETA1_RENAMES:
        new, old = V1BETA1_RENAMES[kind]
        spec["properties"][old] = spec["properties"].pop(new)
    fungibility = spec["properties"].get("flavorFungibility")
    if fungibility is not None:
        fungibility["properties"]["whenCanBorrow"]["enum"].append("Borrow")
        fungibility["properties"]["whenCanPreempt"]["enum"].append("Preempt")
    return jsonschema.Draft7Validator(strict(schema))


def test_kueue_v1beta1_on_request(scenario: Scenario, tmp_path: Path) -> None:
    export_scenario(scenario, tmp_path / "b2")
    export_scenario(scenario, tmp_path / "b1", ExportOptions(kueue_api="kueue.x-k8s.io/v1beta1"))
    beta2 = [d for d in documents(tmp_path / "b2" / "kueue.yaml") if d["kind"] != "Topology"]
    beta1 = [d for d in documents(tmp_path / "b1" / "kueue.yaml") if d["kind"] != "Topology"]
    assert {d["apiVersion"] for d in beta1} == {"kueue.x-k8s.io/v1beta1"}
    for doc in beta1:
        errors = [e.message for e in v1beta1_validator(doc["kind"]).iter_errors(doc)]
        assert errors == [], (doc["metadata"]["name"], errors)
    cq = next(d for d in beta1 if d["kind"] == "ClusterQueue" and "cohort" in d["spec"])
    assert "cohortName" not in cq["spec"]
    child = next(d for d in beta1 if d["kind"] == "Cohort" and "parent" in d["spec"])
    assert "parentName" not in child["spec"]
    # the v1beta2 spelling is refused by the v1beta1 schema, so the check can fail
    wrong = copy.deepcopy(cq)
    wrong["spec"]["cohortName"] = wrong["spec"].pop("cohort")
    assert list(v1beta1_validator("ClusterQueue").iter_errors(wrong))
    # both read back to the same configuration
    one, two = queue_config_from_objects(beta1), queue_config_from_objects(beta2)
    assert [c.spec for c in one.cluster_queues] == [c.spec for c in two.cluster_queues]
    assert [c.spec for c in one.cohorts] == [c.spec for c in two.cohorts]


def test_cli_snapshot_and_kueue_api(tmp_path: Path) -> None:
    nodes = snapshot_nodes(tmp_path)
    out = tmp_path / "cfg"
    args = ["export", str(PLATFORM), "--out", str(out), "--snapshot", str(nodes), "--kueue-api", "v1beta1"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 0, result.output
    assert "fleetlab-scheduler.yaml" in result.output
    assert "kueue.x-k8s.io/v1beta1" in (out / "kueue.yaml").read_text()
    bad = CliRunner().invoke(cli.app, ["export", str(PLATFORM), "--out", str(out), "--kueue-api", "v1"])
    assert bad.exit_code == 2 and "expected v1beta2 or v1beta1" in bad.output
