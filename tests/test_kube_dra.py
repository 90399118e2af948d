"""DRA in ``diagnose``: a snapshot with NVIDIA's GPU DRA driver objects, ResourceClaims and the pods that use
them is placed by the DynamicResources plugin, and a pod whose claims cannot be met is ``dra``.

Hand case: node n1 publishes 8 H100 (``gpu.nvidia.com``, 80Gi each) and no ``nvidia.com/gpu`` resource. A
running pod holds claim ``big`` with 7 of them (allocated: gpu-0..gpu-6). Pod ``two`` asks for 2 H100 with
at least 40Gi: 8 devices match and at most 1 is free, so no node can allocate its claim -> "cannot
allocate all claims". Pod ``one`` asks for 1 and comes first in queue order (equal priority and creation,
then name): gpu-7 fits, the joint pass binds it to n1 and reserves gpu-7, so for ``two`` 0 are free.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fleetlab.kube.cluster import build_live_cluster
from fleetlab.kube.diagnose import diagnose
from fleetlab.spec.kube_snapshot import load_snapshot
from fleetlab.spec.nvidia_dra import device_classes, node_slices
from kube_builders import container, node, pod

H100_40 = "device.attributes['gpu.nvidia.com'].productName.contains('H100') && " \
          "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"  # fmt: skip


def dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def claim(
    name: str, count: int, allocated: list[int] | None = None, owner: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "count": count, "selectors": [{"cel": {"expression": H100_40}}]}}]}},
    }  # fmt: skip
    if allocated is not None:
        body["status"] = {
            "allocation": {"devices": {"results": [
                {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "n1", "device": f"gpu-{i}"} for i in allocated]}},
            "reservedFor": [{"resource": "pods", "name": owner, "uid": f"uid-{owner}"}],
        }  # fmt: skip
    return body


def claim_pod(
    name: str, claim_name: str, node_name: str | None = None, phase: str = "Pending"
) -> dict[str, Any]:
    out = pod(name, [container("c", {"cpu": "1"})], node=node_name, phase=phase,
              resourceClaims=[{"name": "gpus", "resourceClaimName": claim_name}])  # fmt: skip
    out["metadata"]["uid"] = f"uid-{name}"
    return out


def world(tmp_path: Path) -> Any:
    items: list[dict[str, Any]] = [node("n1", gpus=None)]
    items += [dump(c) for c in device_classes()] + [dump(s) for s in node_slices("n1", "H100", 8)]
    items += [claim("big", 7, allocated=list(range(7)), owner="holder"), claim("c-two", 2), claim("c-one", 1)]
    items += [
        claim_pod("holder", "big", "n1", "Running"),
        claim_pod("two", "c-two"),
        claim_pod("one", "c-one"),
    ]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    snap = load_snapshot([path])
    return diagnose(build_live_cluster(snap), snap.newest)


def test_claims_are_allocated_by_the_dynamic_resources_plugin(tmp_path: Path) -> None:
    d = world(tmp_path)
    by_pod = {p.pod: p for p in d.pending}
    two, one = by_pod["default/two"], by_pod["default/one"]
    assert two.message == "0/1 nodes are available: 1 cannot allocate all claims."
    assert two.blocked_by == "dra"
    assert two.detail == (
        "1 node(s) pass every other filter, but: cannot allocate all claims; c-two/gpus asks 2 x gpu.nvidia.com: "
        "8 matching device(s) in the cluster, 0 free"
    )
    assert one.blocked_by == "none" and one.placed_on == "n1"
    assert one.queue_position < two.queue_position


def test_missing_claim_is_a_prefilter_block(tmp_path: Path) -> None:
    items: list[dict[str, Any]] = [node("n1", gpus=None), *[dump(c) for c in device_classes()]]
    items.append(claim_pod("lost", "no-such-claim"))
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    snap = load_snapshot([path])
    (p,) = diagnose(build_live_cluster(snap), snap.newest).pending
    assert p.message == '0/1 nodes are available: resourceclaim.resource.k8s.io "no-such-claim" not found.'
    assert p.blocked_by == "dra"


def test_devices_taken_in_queue_order(tmp_path: Path) -> None:
    """Two pods each asking for 1 H100 while 1 is free: the first in queue order takes gpu-7 (the joint pass
    reserves it), the second finds no device left."""
    items: list[dict[str, Any]] = [node("n1", gpus=None)]
    items += [dump(c) for c in device_classes()] + [dump(s) for s in node_slices("n1", "H100", 8)]
    items += [claim("big", 7, allocated=list(range(7)), owner="holder"), claim("c-a", 1), claim("c-b", 1)]
    items += [claim_pod("holder", "big", "n1", "Running"), claim_pod("a", "c-a"), claim_pod("b", "c-b")]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    snap = load_snapshot([path])
    by_pod = {p.pod: p for p in diagnose(build_live_cluster(snap), snap.newest).pending}
    assert by_pod["default/a"].placed_on == "n1"
    assert by_pod["default/b"].placed_on is None
