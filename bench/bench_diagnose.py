"""``fleetlab diagnose`` speed on a large snapshot: the joint pass places pending pods one by one in
queue order, so its cost grows with the pending set, not only with the number of distinct pod specs.

A cluster of ``--nodes`` GPU nodes (8 GPUs each, 3 of 4 nodes half full) and ``--pending`` pending pods
of ``--specs`` shapes (1, 2, 4 or 8 GPUs, some with a zone selector); reports the time of ``diagnose``
(stages a-c) and how many pods it placed, next to the time of loading the snapshot.

Run: .venv/bin/python bench/bench_diagnose.py [--nodes 2000] [--pending 2000] [--specs 8]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from fleetlab.kube.cluster import build_live_cluster
from fleetlab.kube.diagnose import diagnose
from fleetlab.spec.kube_snapshot import load_snapshot


def node(i: int) -> dict[str, Any]:
    labels = {
        "kubernetes.io/hostname": f"n{i}",
        "topology.kubernetes.io/zone": f"zone-{i % 4}",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.present": "true",
    }
    alloc = {"cpu": "190", "memory": "1900Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"n{i}", "labels": labels},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": alloc,
            "capacity": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, gpus: int, node_name: str | None, minute: int, zone: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    if zone:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": zone}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "creationTimestamp": f"2026-11-30T{9 + minute // 60:02d}:{minute % 60:02d}:00Z",
        },
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pending", type=int, default=2000)
    parser.add_argument("--specs", type=int, default=8)
    args = parser.parse_args()
    items = [node(i) for i in range(args.nodes)]
    items += [pod(f"run-{i}", 4, f"n{i}", 0, None) for i in range(args.nodes) if i % 4]
    shapes = [(g, z) for g in (1, 2, 4, 8) for z in (None, "zone-1")][: args.specs]
    for p in range(args.pending):
        gpus, zone = shapes[p % len(shapes)]
        items.append(pod(f"pend-{p}", gpus, None, p % 600, zone))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snap.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        t0 = time.perf_counter()
        snap = load_snapshot([path])
        live = build_live_cluster(snap)
        t1 = time.perf_counter()
        result = diagnose(live, snap.newest)
        t2 = time.perf_counter()
    placed = sum(1 for p in result.pending if p.placed_on)
    print(f"{args.nodes} nodes, {args.pending} pending pods of {len(shapes)} shapes")
    print(f"load + build: {t1 - t0:.2f} s")
    print(f"diagnose:     {t2 - t1:.2f} s ({(t2 - t1) / max(1, args.pending) * 1000:.2f} ms per pending pod)")
    print(f"placed in queue order: {placed}; waiting: {args.pending - placed}")


if __name__ == "__main__":
    main()
