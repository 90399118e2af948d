"""DRA objects round-trip: snapshot -> scenario -> export, and every exported object passes the Kubernetes
v1.35 schema (``kubernetes-validate``, strict: unknown fields refused) as the API server would take it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from fleetlab.export.write import render, render_with_notes
from fleetlab.kube.to_scenario import snapshot_scenario
from fleetlab.model.scenario import Scenario
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_snapshot import load_snapshot
from fleetlab.spec.nvidia_dra import device_classes, node_slices
from kube_builders import node

VERSION = "1.35"
TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "two-h100", "namespace": "ml"},
    "spec": {"spec": {"devices": {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2, "selectors": [
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].productName.contains('H100')"}}]}}],
        "constraints": [{"requests": ["gpus"], "matchAttribute": "gpu.nvidia.com/pcieRoot"}]}}},
}  # fmt: skip
CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "mig-slice", "namespace": "ml", "uid": "u1", "resourceVersion": "42"},
    "spec": {"devices": {"requests": [{"name": "mig", "firstAvailable": [
        {"name": "big", "deviceClassName": "mig.nvidia.com", "selectors": [
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}}]},
        {"name": "small", "deviceClassName": "mig.nvidia.com", "count": 2}]}]}},
    "status": {"allocation": {"devices": {"results": [
        {"request": "mig/big", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0-mig-9-0-4"}]}}},
}  # fmt: skip


def dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def snapshot_file(tmp_path: Path, extra: list[dict[str, Any]] | None = None) -> Path:
    items = [
        node("n1", gpus=None),
        *[dump(c) for c in device_classes()],
        *[dump(s) for s in node_slices("n1", "H100", 8, True)],
    ]
    items += [TEMPLATE, CLAIM, *(extra or [])]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_every_kind_round_trips_and_validates(tmp_path: Path) -> None:
    snap = load_snapshot([snapshot_file(tmp_path)])
    assert (len(snap.dra.classes), len(snap.dra.templates), len(snap.dra.claims)) == (2, 1, 1)
    assert len(snap.dra.slices) == 9  # 8 device slices (one per GPU with its MIG partitions) + counters
    resolved = snapshot_scenario(snap)
    scenario = Scenario.model_validate(json.loads(resolved.scenario.model_dump_json(by_alias=True)))
    assert scenario.dra is not None and len(scenario.dra.objects) == 2 + 1 + 1 + 9
    assert not any("dra:" in w for w in resolved.warnings)  # simulate allocates DRA devices now
    docs = list(yaml.safe_load_all(render(scenario)["dra.yaml"]))
    assert [d["kind"] for d in docs] == [
        "DeviceClass",
        "DeviceClass",
        "ResourceClaimTemplate",
        "ResourceClaim",
    ]
    for doc in docs:
        assert kubernetes_validate.validate(doc, VERSION, strict=True) == VERSION
    claim = docs[-1]
    assert "status" not in claim and claim["metadata"] == {"name": "mig-slice", "namespace": "ml"}
    assert claim["spec"] == CLAIM["spec"] | {"devices": {"requests": [{"name": "mig", "firstAvailable": [
        {"name": "big", "deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount", "count": 1,
         "selectors": CLAIM["spec"]["devices"]["requests"][0]["firstAvailable"][0]["selectors"]},
        {"name": "small", "deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount", "count": 2}]}]}}  # fmt: skip


def test_slices_from_the_nvidia_driver_validate() -> None:
    for s in node_slices("n1", "H100", 8, True) + node_slices("n2", "L4", 2):
        assert kubernetes_validate.validate(dump(s), VERSION, strict=True) == VERSION


def test_bad_selector_is_refused_with_its_place(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(TEMPLATE))
    bad["metadata"]["name"] = "broken"
    bad["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"] = "device.("
    with pytest.raises(
        SpecError, match=r"ResourceClaimTemplate ml/broken: spec\.spec\.devices\.requests\[0\]\.exactly"
    ):
        load_snapshot([snapshot_file(tmp_path, [bad])])


def test_older_api_version_is_refused(tmp_path: Path) -> None:
    old = {
        **TEMPLATE,
        "apiVersion": "resource.k8s.io/v1beta1",
        "metadata": {"name": "old", "namespace": "ml"},
    }
    with pytest.raises(SpecError, match=r"apiVersion resource\.k8s\.io/v1beta1 is not read"):
        load_snapshot([snapshot_file(tmp_path, [old])])


def test_slices_carried_into_the_scenario_validate(tmp_path: Path) -> None:
    """ResourceSlices are published by drivers, so export leaves them out (a note says so); the ones a
    snapshot carries into the scenario still pass the v1.35 schema as the scenario holds them."""
    scenario = snapshot_scenario(load_snapshot([snapshot_file(tmp_path)])).scenario
    assert scenario.dra is not None
    slices = [dump(o) for o in scenario.dra.objects if o.kind == "ResourceSlice"]
    assert len(slices) == 9
    for doc in slices:
        assert kubernetes_validate.validate(doc, VERSION, strict=True) == VERSION
    assert any("ResourceSlices in the scenario" in note for note in render_with_notes(scenario)[1])
