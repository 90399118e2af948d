"""``fleetlab snapshot`` never stores a secret: a fake Kubernetes API client returns objects that hide
credentials in every place real clusters do, and none of them reaches the snapshot file."""

from __future__ import annotations

import copy
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from fleetlab.kube.capture import capture, write_list
from fleetlab.kube.redact import REDACTED, redact
from fleetlab.spec.kube_snapshot import load_snapshot

SECRETS = (
    "hunter2", "s3cr3t-token", "db-password-secret", "AKIAFAKEKEY", "pull-secret-name", "tls-key",
    "Bearer-probe-token", "owner-free-text", "yaml-annotation-secret", "panic-with-dsn-secret",
    "csi-attribute-secret", "storage-class-password", "cifs-mount-password",
)  # fmt: skip

CONTAINER: dict[str, Any] = {
    "name": "main",
    "image": "trainer:1",
    "command": ["python", "train.py", "--api-key=hunter2"],
    "args": ["--token", "s3cr3t-token"],
    "env": [
        {"name": "PASSWORD", "value": "hunter2"},
        {"name": "DB", "valueFrom": {"secretKeyRef": {"name": "db-password-secret", "key": "password"}}},
    ],
    "envFrom": [{"secretRef": {"name": "db-password-secret"}}],
    "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}},
    "livenessProbe": {
        "httpGet": {"path": "/healthz", "port": 8080,
                    "httpHeaders": [{"name": "Authorization", "value": "Bearer-probe-token"}]},
    },
    "lifecycle": {"preStop": {"httpGet": {"path": "/stop", "port": 8080,
                                          "httpHeaders": [{"name": "X-Key", "value": "Bearer-probe-token"}]}}},
}  # fmt: skip
LAST_APPLIED = json.dumps(
    {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"env": [{"value": "AKIAFAKEKEY"}]}]}}
)
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "train-0",
        "namespace": "ml",
        "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": LAST_APPLIED,
            "example.com/owner": "owner-free-text",
            "example.com/config": "user: admin\npassword: yaml-annotation-secret\n",
            "kueue.x-k8s.io/pod-group-name": "train",
            "gpu-fraction": "0.5",
        },
        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:env": {}}}],
    },
    "spec": {
        "containers": [CONTAINER],
        "initContainers": [{"name": "init", "image": "busybox", "args": ["hunter2"]}],
        "imagePullSecrets": [{"name": "pull-secret-name"}],
        "volumes": [
            {"name": "tls", "secret": {"secretName": "tls-key", "items": [{"key": "tls-key", "path": "k"}]}},
        ],
    },
    "status": {
        "phase": "Running",
        "containerStatuses": [
            {"name": "main", "restartCount": 1,
             "state": {"running": {"startedAt": "2024-05-01T10:00:00Z"}},
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                          "message": "panic: postgres://u:panic-with-dsn-secret@db"}}},
        ],
    },
}  # fmt: skip
NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "gpu-0", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
    "status": {
        "allocatable": {"cpu": "95", "memory": "1000Gi", "pods": "110", "nvidia.com/gpu": "8"},
        "capacity": {"cpu": "96", "memory": "1024Gi", "pods": "110", "nvidia.com/gpu": "8"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}
WORKLOAD: dict[str, Any] = {
    "metadata": {"name": "job-train", "namespace": "ml"},
    "spec": {
        "queueName": "team-a",
        "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [CONTAINER]}}}],
    },
}


PV: dict[str, Any] = {
    "metadata": {"name": "pv-0"},
    "spec": {
        "csi": {"driver": "x.csi", "nodePublishSecretRef": {"name": "tls-key", "namespace": "ml"},
                "volumeHandle": "vol-1", "volumeAttributes": {"storageAccountKey": "csi-attribute-secret"}},
        "mountOptions": ["ro", "username=admin,password=cifs-mount-password"],
    },
}  # fmt: skip
STORAGE_CLASS: dict[str, Any] = {
    "metadata": {"name": "fast"},
    "provisioner": "x.csi",
    "parameters": {
        "csi.storage.k8s.io/provisioner-secret-name": "db-password-secret",
        "type": "ssd",
        "password": "storage-class-password",
    },
}


class FakeApiException(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status
        self.reason = "Not Found"


class FakeCore:
    def __init__(self, _api: Any) -> None:
        pass

    def list_node(self) -> Any:
        return types.SimpleNamespace(items=[copy.deepcopy(NODE)])

    def list_pod_for_all_namespaces(self) -> Any:
        return types.SimpleNamespace(items=[copy.deepcopy(POD)])

    def list_persistent_volume(self) -> Any:
        return types.SimpleNamespace(items=[copy.deepcopy(PV)])

    def list_persistent_volume_claim_for_all_namespaces(self) -> Any:
        return types.SimpleNamespace(items=[])


class FakeStorage:
    def __init__(self, _api: Any) -> None:
        pass

    def list_storage_class(self) -> Any:
        return types.SimpleNamespace(items=[copy.deepcopy(STORAGE_CLASS)])


class FakeCustom:
    def __init__(self, _api: Any) -> None:
        pass

    def list_cluster_custom_object(self, group: str, version: str, plural: str) -> dict[str, Any]:
        if version != "v1beta2":
            raise FakeApiException(404)
        return {"items": [copy.deepcopy(WORKLOAD)] if plural == "workloads" else []}


class FakeApiClient:
    def sanitize_for_serialization(self, obj: Any) -> Any:
        return copy.deepcopy(obj)


@pytest.fixture
def fake_kubernetes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Install a fake ``kubernetes`` package that the capture imports by name."""
    root = types.ModuleType("kubernetes")
    client = types.ModuleType("kubernetes.client")
    client.ApiClient = FakeApiClient  # type: ignore[attr-defined]
    client.CoreV1Api = FakeCore  # type: ignore[attr-defined]
    client.CustomObjectsApi = FakeCustom  # type: ignore[attr-defined]
    client.StorageV1Api = FakeStorage  # type: ignore[attr-defined]
    rest = types.ModuleType("kubernetes.client.rest")
    rest.ApiException = FakeApiException  # type: ignore[attr-defined]
    config = types.ModuleType("kubernetes.config")
    config.load_kube_config = lambda context=None: None  # type: ignore[attr-defined]
    config_exception = types.ModuleType("kubernetes.config.config_exception")
    config_exception.ConfigException = type("ConfigException", (Exception,), {})  # type: ignore[attr-defined]
    for name, module in {
        "kubernetes": root,
        "kubernetes.client": client,
        "kubernetes.client.rest": rest,
        "kubernetes.config": config,
        "kubernetes.config.config_exception": config_exception,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)


def test_snapshot_from_a_fake_api_stores_no_secret(fake_kubernetes: None, tmp_path: Path) -> None:
    items = capture()
    out = tmp_path / "snap.json"
    write_list(items, out)
    text = out.read_text()
    for secret in SECRETS:
        assert secret not in text, secret
    assert "managedFields" not in text
    data = json.loads(text)
    pod = next(i for i in data["items"] if i["kind"] == "Pod")
    main = pod["spec"]["containers"][0]
    assert main["env"][0] == {"name": "PASSWORD", "value": REDACTED}
    assert main["env"][1]["valueFrom"]["secretKeyRef"] == {"name": REDACTED, "key": REDACTED}
    assert main["command"] == ["python", REDACTED, REDACTED]  # the program stays, its arguments go
    assert main["args"] == [REDACTED, REDACTED]
    # Annotations are kept only by an allow-list (what fleetlab reads); every other value is replaced.
    assert pod["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": REDACTED,
        "example.com/owner": REDACTED,
        "example.com/config": REDACTED,
        "kueue.x-k8s.io/pod-group-name": "train",
        "gpu-fraction": "0.5",
    }
    assert main["livenessProbe"]["httpGet"]["httpHeaders"] == [{"name": "Authorization", "value": REDACTED}]
    last = pod["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["message"], last["reason"], last["exitCode"]) == (REDACTED, "Error", 1)
    volume = next(i for i in data["items"] if i["kind"] == "PersistentVolume")["spec"]
    assert volume["csi"]["volumeAttributes"] == {"storageAccountKey": REDACTED}
    assert volume["csi"]["volumeHandle"] == "vol-1" and volume["mountOptions"] == ["ro", REDACTED]
    assert pod["spec"]["volumes"][0]["secret"]["secretName"] == REDACTED
    storage = next(i for i in data["items"] if i["kind"] == "StorageClass")
    assert storage["parameters"] == {
        "csi.storage.k8s.io/provisioner-secret-name": REDACTED, "type": "ssd", "password": REDACTED,
    }  # fmt: skip
    workload = next(i for i in data["items"] if i["kind"] == "Workload")
    template = workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    assert template["env"][0]["value"] == REDACTED
    # What diagnosis needs survives: the reader still sees the pod's GPU request and the node.
    snap = load_snapshot([out])
    assert snap.pods[0].requests == {"nvidia.com/gpu": 8}
    assert snap.nodes[0].allocatable["nvidia.com/gpu"] == 8


def test_annotations_are_kept_by_allow_list_only() -> None:
    obj = {
        "metadata": {
            "annotations": {
                "tool.example/config": '{"password": "x"}',
                "other/yaml": "apiVersion: v1\nkind: Secret\n",
                "plain": "true",
                "kueue.x-k8s.io/pod-group-total-count": "4",
                "kueue.x-k8s.io/pod-group-name": "x" * 300,  # a kept key holding a document is not kept
            }
        }
    }
    redact(obj)
    assert obj["metadata"]["annotations"] == {
        "tool.example/config": REDACTED,
        "other/yaml": REDACTED,
        "plain": REDACTED,
        "kueue.x-k8s.io/pod-group-total-count": "4",
        "kueue.x-k8s.io/pod-group-name": REDACTED,
    }


def test_redaction_handles_deep_nesting_without_recursion() -> None:
    deep: dict[str, Any] = {"env": [{"name": "A", "value": "hunter2"}]}
    for _ in range(5000):
        deep = {"template": deep}
    redact(deep)
    while "template" in deep:
        deep = deep["template"]
    assert deep["env"][0]["value"] == REDACTED
