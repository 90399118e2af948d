"""``fleetlab snapshot``: the serialisation of the Kubernetes client's own model objects into a v1 List that
the snapshot reader reads back, env values redacted, atomic write; and clear errors without a cluster."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.kube.capture import REDACTED, CaptureError, capture, to_plain, write_list
from fleetlab.spec.kube_snapshot import load_snapshot

HAVE_CLIENT = importlib.util.find_spec("kubernetes") is not None
needs_client = pytest.mark.skipif(not HAVE_CLIENT, reason="the optional kubernetes client is not installed")


@needs_client
def test_client_models_round_trip_through_the_reader(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from kubernetes import client  # type: ignore[import-untyped]

    node = client.V1Node(
        metadata=client.V1ObjectMeta(
            name="gpu-0",
            labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            managed_fields=[client.V1ManagedFieldsEntry(manager="kubelet", operation="Update")],
        ),
        spec=client.V1NodeSpec(
            taints=[client.V1Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")]
        ),
        status=client.V1NodeStatus(
            allocatable={"cpu": "95", "memory": "1000Gi", "pods": "110", "nvidia.com/gpu": "8"},
            capacity={"cpu": "96", "memory": "1024Gi", "pods": "110", "nvidia.com/gpu": "8"},
            conditions=[
                client.V1NodeCondition(
                    type="Ready", status="True", last_transition_time=datetime(2026, 11, 30, 9, tzinfo=UTC)
                )
            ],
        ),
    )
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="train-0", namespace="ml"),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(
                    name="main",
                    image="trainer:1",
                    env=[client.V1EnvVar(name="HF_TOKEN", value="hf_secret_value")],
                    resources=client.V1ResourceRequirements(limits={"nvidia.com/gpu": "8"}),
                )
            ],
            tolerations=[client.V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")],
        ),
        status=client.V1PodStatus(phase="Pending"),
    )
    serialize = client.ApiClient().sanitize_for_serialization
    items = [to_plain(serialize, "Node", "v1", node), to_plain(serialize, "Pod", "v1", pod)]
    out = tmp_path / "snap.json"
    write_list(items, out)
    text = out.read_text()
    assert "hf_secret_value" not in text and REDACTED in text and "managedFields" not in text
    assert json.loads(text)["kind"] == "List"
    assert not list(tmp_path.glob(".snap.json.*"))  # the temporary file was renamed into place
    snap = load_snapshot([out])
    assert snap.nodes[0].allocatable["nvidia.com/gpu"] == 8 and snap.nodes[0].ready == "True"
    assert snap.nodes[0].taints[0].key == "nvidia.com/gpu"
    assert snap.pods[0].requests == {"nvidia.com/gpu": 8}
    assert snap.newest is not None and snap.newest.hour == 9


@pytest.mark.skipif(HAVE_CLIENT, reason="the kubernetes client is installed")
def test_missing_client_says_how_to_install() -> None:
    with pytest.raises(CaptureError, match=r"fleetlab\[kube\]"):
        capture()


@needs_client
def test_no_kubeconfig_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    result = CliRunner().invoke(cli.app, ["snapshot", "--out", str(tmp_path / "s.json")])
    assert result.exit_code == 2, result.output
    assert "kubeconfig" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "s.json").exists()


def test_write_list_into_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="does not exist"):
        write_list([], tmp_path / "nope" / "s.json")
