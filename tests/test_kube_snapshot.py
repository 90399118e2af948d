"""The kubectl snapshot reader: effective pod requests as kube-scheduler computes them, what a node offers,
which pods hold resources, and bad input (truncated JSON, Secret dumps, wrong kinds, YAML documents).

Upstream rules: resourcehelper.PodRequests (k8s.io/component-helpers/resource, v1.35) for
max(sum of app containers + sidecars, each init container + the sidecars started before it) + overhead;
core/v1 SetDefaults_Pod for limit-only containers; the scheduler cache skipping Succeeded/Failed pods.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleetlab.kube.cluster import build_live_cluster
from fleetlab.model.resources import GPU
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_objects import read_objects
from fleetlab.spec.kube_requests import pod_requests
from fleetlab.spec.kube_snapshot import load_snapshot, parse_pod
from kube_builders import container, node, pod, write_list

FIXTURES = Path(__file__).parent / "fixtures" / "kube"
GI = 1024**3
MI = 1024**2


def requests_of(spec: dict[str, Any]) -> dict[str, int]:
    return pod_requests(spec, "Pod x.spec", "test")[0]


# -- effective requests ---------------------------------------------------------------------------------


def test_init_container_larger_than_app_containers_wins_per_resource() -> None:
    """PodRequests: per resource, max(sum of app containers, largest init container); overhead added."""
    spec = {
        "initContainers": [container("migrate", {"cpu": "4", "memory": "1Gi"})],
        "containers": [
            container("etl", {"cpu": "1", "memory": "2Gi"}),
            container("log", {"cpu": "100m", "memory": "64Mi"}),
        ],
        "overhead": {"cpu": "250m", "memory": "160Mi"},
    }
    reqs = requests_of(spec)
    assert reqs["cpu"] == 4000 + 250  # the init container's 4 CPUs beat 1.1 of the app containers
    assert reqs["memory"] == 2 * GI + 64 * MI + 160 * MI  # the app containers' 2Gi+64Mi beat 1Gi


def test_sidecar_init_container_runs_alongside_app_and_later_init_containers() -> None:
    """A restartPolicy: Always init container (KEP-753 sidecar) adds to the app containers' sum and to
    every init container after it, not to those before it."""
    spec = {
        "initContainers": [
            container("early", {"cpu": "3"}),  # runs before the sidecar starts: 3
            container("proxy", {"cpu": "500m"}, restartPolicy="Always"),
            container("late", {"cpu": "2"}),  # 2 + the sidecar 0.5 = 2.5
        ],
        "containers": [container("main", {"cpu": "1"})],  # 1 + 0.5 = 1.5
    }
    assert requests_of(spec)["cpu"] == 3000
    spec["initContainers"][0] = container("early", {"cpu": "1"})
    assert requests_of(spec)["cpu"] == 2500


def test_limits_only_container_gets_requests_equal_to_limits() -> None:
    """SetDefaults_Pod copies a limit-only key into requests (GPUs are usually given as limits only)."""
    reqs = requests_of({"containers": [container("nb", limits={GPU: "1", "memory": "4Gi"})]})
    assert reqs == {GPU: 1, "memory": 4 * GI}
    mixed = requests_of({"containers": [container("c", {"cpu": "1"}, {"cpu": "2", GPU: "2"})]})
    assert mixed == {"cpu": 1000, GPU: 2}  # an explicit request is kept, the missing key is copied


def test_fixture_pod_requests() -> None:
    """The fixture's sandboxed ETL pod (init container, two app containers, gVisor overhead)."""
    snap = load_snapshot([FIXTURES / "snapshot.json"])
    pods = {p.key: p for p in snap.pods}
    etl = pods["web/sandboxed-etl-0"]
    assert etl.requests["cpu"] == 4250
    assert etl.requests["memory"] == 2 * GI + 224 * MI
    notebook = pods["analytics/notebook-gpu-0"]
    assert notebook.requests == {GPU: 1}
    reranker = pods["inference/l4-reranker-84f-zxcvb"]
    assert reranker.requests[GPU] == 1  # request missing, limit 1 → 1
    limits_only = pods["web/api-5c8f-limitsonly"]
    assert limits_only.requests == {"cpu": 2000, "memory": 4 * GI}


# -- what nodes offer and which pods hold it ------------------------------------------------------------


def test_nodes_offer_allocatable_not_capacity() -> None:
    """The scheduler reads status.allocatable only; capacity is kept for the driver-fault diagnosis."""
    snap = load_snapshot([FIXTURES / "nodes.json", FIXTURES / "pods.json"])
    nodes = {n.name: n for n in snap.nodes}
    h100 = nodes["gpu-h100-a-0"]
    assert h100.allocatable["cpu"] == 207_500 and h100.capacity["cpu"] == 208_000
    assert h100.allocatable["memory"] == 1952802152 * 1024
    faulted = nodes["gpu-h100-c-2"]
    assert faulted.allocatable[GPU] == 0 and faulted.capacity[GPU] == 8
    live = build_live_cluster(snap)
    i = live.index["gpu-h100-a-0"]
    assert live.state.allocatable[i, live.state.cpu_col] == 207_500


def test_terminated_pods_hold_nothing_and_daemonset_pods_count_on_their_node() -> None:
    """Succeeded/Failed pods are skipped (scheduler cache); DaemonSet pods are charged to their node."""
    snap = load_snapshot([FIXTURES / "snapshot.json"])
    live = build_live_cluster(snap)
    state = live.state
    a0 = live.index["gpu-h100-a-0"]  # finetune-00 (4 GPUs) running, eval-done (4 GPUs) Succeeded
    assert state.requested[a0, state.gpu_col] == 4
    b1 = live.index["gpu-h100-b-1"]  # 4 + 3 running, eval-crashed (2) Failed
    assert state.requested[b1, state.gpu_col] == 7
    cpu0 = live.index["cpu-pool-0"]  # kube-proxy DaemonSet pod 100m + api 2 CPUs (limits only)
    assert state.requested[cpu0, state.cpu_col] == 2100
    assert state.pod_count[cpu0] == 2


def test_mig_and_time_sliced_resources_are_plain_integers() -> None:
    """Mixed-strategy MIG advertises nvidia.com/mig-1g.10gb; time-slicing multiplies nvidia.com/gpu."""
    snap = load_snapshot([FIXTURES / "snapshot.json"])
    nodes = {n.name: n for n in snap.nodes}
    assert nodes["gpu-a100-mig-0"].allocatable["nvidia.com/mig-1g.10gb"] == 7
    assert GPU not in nodes["gpu-a100-mig-0"].allocatable
    assert nodes["gpu-l4-shared-0"].allocatable[GPU] == 40
    live = build_live_cluster(snap)
    col = live.state.column["nvidia.com/mig-1g.10gb"]
    assert live.state.free[live.index["gpu-a100-mig-0"], col] == 6


def test_ready_condition_and_cordon_are_read() -> None:
    snap = load_snapshot([FIXTURES / "nodes.json"])
    nodes = {n.name: n for n in snap.nodes}
    assert nodes["gpu-h100-c-0"].ready == "Unknown"
    assert nodes["gpu-h100-c-1"].unschedulable
    assert nodes["gpu-h100-a-0"].ready == "True" and not nodes["gpu-h100-a-0"].unschedulable


def test_pod_group_and_gates_are_read(tmp_path: Path) -> None:
    obj = pod("w-0", [container("c", {"cpu": "1"})], schedulingGates=[{"name": "kueue.x-k8s.io/admission"}])
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/pod-group-name": "train"}
    obj["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": "4"}
    parsed = parse_pod(obj, "test")
    assert (parsed.group, parsed.group_size, parsed.gates) == ("train", 4, ("kueue.x-k8s.io/admission",))


def test_newest_timestamp_is_the_default_now() -> None:
    snap = load_snapshot([FIXTURES / "snapshot.json"])
    assert snap.newest is not None and snap.newest.isoformat() == "2026-11-30T09:58:40+00:00"


# -- bad input ------------------------------------------------------------------------------------------


def test_truncated_json_names_line_and_column(tmp_path: Path) -> None:
    text = (FIXTURES / "nodes.json").read_text()
    cut = tmp_path / "nodes.json"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(SpecError) as info:
        load_snapshot([cut])
    message = str(info.value)
    assert str(cut) in message and "line " in message and "column " in message and "truncated" in message


def test_secret_dump_is_refused_without_echoing_data(tmp_path: Path) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db-creds", "namespace": "prod"},
        "data": {"password": "c3VwZXJzZWNyZXQ="},
        "stringData": {"token": "supersecret-token"},
    }
    for i, doc in enumerate(
        [
            secret,
            {"apiVersion": "v1", "kind": "List", "items": [secret]},
            {"apiVersion": "v1", "kind": "SecretList", "items": [secret]},
        ]
    ):
        path = tmp_path / f"s{i}.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(SpecError) as info:
            load_snapshot([path])
        message = str(info.value)
        assert "Secret" in message
        assert "c3VwZXJzZWNyZXQ=" not in message and "supersecret" not in message


def test_secret_inside_yaml_multi_doc_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(
        "kind: Node\nmetadata: {name: n}\n---\nkind: Secret\nmetadata: {name: s}\ndata: {k: aGlkZGVu}\n"
    )
    with pytest.raises(SpecError) as info:
        read_objects(path)
    assert "aGlkZGVu" not in str(info.value) and "document 2" in str(info.value)


def test_wrong_kinds_are_named(tmp_path: Path) -> None:
    path = write_list(
        tmp_path / "deploy.json",
        [
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "b"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}},
        ],
    )
    with pytest.raises(SpecError) as info:
        load_snapshot([path])
    message = str(info.value)
    assert "1 ConfigMap, 2 Deployment" in message and "Node and Pod" in message


def test_yaml_multi_document_snapshot(tmp_path: Path) -> None:
    import yaml

    docs = [node("n0"), pod("p0", [container("c", limits={GPU: "2"})], node="n0", phase="Running")]
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    snap = load_snapshot([path])
    assert [n.name for n in snap.nodes] == ["n0"] and snap.pods[0].requests == {GPU: 2}


def test_invalid_yaml_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: Node\nmetadata:\n  name: [unclosed\n")
    with pytest.raises(SpecError) as info:
        load_snapshot([path])
    assert "line " in str(info.value)


def test_env_values_never_appear_in_errors(tmp_path: Path) -> None:
    """A pod with a bad quantity is reported by field; its env values stay out of the message."""
    bad = pod("p", [container("c", {"cpu": "lots"}, env=[{"name": "TOKEN", "value": "hunter2-secret"}])])
    path = write_list(tmp_path / "pods.json", [node("n0"), bad])
    with pytest.raises(SpecError) as info:
        load_snapshot([path])
    message = str(info.value)
    assert "containers[0].resources.requests[cpu]" in message and "hunter2" not in message


def test_no_nodes_and_duplicate_nodes(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no Node objects"):
        load_snapshot([write_list(tmp_path / "p.json", [pod("p", [container("c")])])])
    with pytest.raises(SpecError, match="appears twice"):
        load_snapshot([write_list(tmp_path / "n.json", [node("n0"), node("n0")])])


def test_big_list_reads_in_linear_time(tmp_path: Path) -> None:
    """A ~20 MB `kubectl get pods -A -o json` reads in a few seconds (no quadratic steps)."""
    import time

    template = json.loads((FIXTURES / "pods.json").read_text())["items"]
    running = [p for p in template if p["status"].get("phase") == "Running"]
    texts = []
    for base in running:  # each pod once as text with placeholders, then stamped out
        base["metadata"]["name"] = "@NAME@"
        base["spec"]["nodeName"] = "@NODE@"
        base["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "10m"}}
        texts.append(json.dumps(base, indent=2))
    parts = [json.dumps(node(f"n{i}")) for i in range(500)]
    count = size = 0
    while size < 21_000_000:
        text = texts[count % len(texts)].replace("@NAME@", f"p{count}").replace("@NODE@", f"n{count % 500}")
        parts.append(text)
        size += len(text)
        count += 1
    path = tmp_path / "big.json"
    path.write_text('{"apiVersion": "v1", "kind": "List", "items": [' + ",\n".join(parts) + "]}")
    size = path.stat().st_size
    assert size > 20_000_000
    start = time.perf_counter()
    snap = load_snapshot([path])
    live = build_live_cluster(snap)
    elapsed = time.perf_counter() - start
    assert len(snap.pods) == count and live.state.n == 500
    print(f"{size / 1e6:.1f} MB, {count} pods: read and charged in {elapsed:.2f} s")
    assert elapsed < 20, f"{size / 1e6:.0f} MB took {elapsed:.1f} s"


def test_wrong_shapes_are_named_by_object_not_value(tmp_path: Path) -> None:
    bad_pod = pod("p", [container("c")])
    bad_pod["spec"]["containers"] = {"c": {"env": [{"name": "K", "value": "leaky-value"}]}}
    bad_node = node("n1")
    bad_node["metadata"]["labels"] = ["not", "a", "mapping"]
    for name, items in {"pod": [node("n0"), bad_pod], "node": [bad_node]}.items():
        path = write_list(tmp_path / f"{name}.json", items)
        with pytest.raises(SpecError) as info:
            load_snapshot([path])
        message = str(info.value)
        expected = (
            "Pod default/p.spec.containers: expected a list of containers"
            if name == "pod"
            else "Node n1: `metadata.labels` must map strings to strings"
        )
        assert expected in message and "leaky-value" not in message, name


def test_priority_classes_fill_pods_without_spec_priority(tmp_path: Path) -> None:
    """The Priority admission plugin: priorityClassName's value, else the globalDefault class; a pod
    that already carries spec.priority (every pod the API server admitted) keeps it."""
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "urgent"},
            "value": 100000,
            "preemptionPolicy": "Never",
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "batch"},
            "value": 10,
            "globalDefault": True,
        },
    ]
    named = pod("named", [container("c")], priorityClassName="urgent")
    plain = pod("plain", [container("c")])
    admitted = pod("admitted", [container("c")], priorityClassName="urgent", priority=7)
    snap_file = write_list(tmp_path / "s.json", [node("n0"), named, plain, admitted])
    class_file = write_list(tmp_path / "pc.json", classes)
    pods = {p.name: p for p in load_snapshot([snap_file], priority_paths=[class_file]).pods}
    assert (pods["named"].priority, pods["named"].preemption_policy) == (100000, "Never")
    assert pods["plain"].priority == 10
    assert pods["admitted"].priority == 7
    missing = write_list(
        tmp_path / "m.json", [node("n0"), pod("x", [container("c")], priorityClassName="gold")]
    )
    with pytest.raises(SpecError, match="priorityClassName gold not found"):
        load_snapshot([missing], priority_paths=[class_file])
