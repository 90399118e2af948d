"""What the bounded reader costs: a synthetic `kubectl get pods -A -o json` dump read as JSON and as YAML,
with the bounded reader (duplicate keys, depth, integer size, alias expansion checked) and without.

Prints seconds (CPU and wall) for each, the ratio, and the peak RSS. The limits are worth their price only
if a real dump still reads in seconds.

Run: .venv/bin/python bench/bench_bounded.py [--pods 20000]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Callable
from typing import Any

import yaml

from fleetlab.spec.bounded import load_json, load_yaml_all


def pod(i: int) -> dict[str, Any]:
    """A pod shaped like kubectl's: metadata, one GPU container with env, status with conditions."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"train-{i}",
            "namespace": "ml",
            "labels": {"app": "train", "team": f"t{i % 7}"},
            "uid": f"00000000-0000-0000-0000-{i:012d}",
        },
        "spec": {
            "nodeName": f"gpu-{i % 500}",
            "containers": [
                {
                    "name": "main",
                    "image": "trainer:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "resources": {
                        "limits": {"nvidia.com/gpu": "8"},
                        "requests": {"cpu": "8", "memory": "64Gi"},
                    },
                }
            ],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": t, "status": "True"} for t in ("Initialized", "Ready", "PodScheduled")],
        },
    }


def timed(call: Callable[[], Any]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    call()
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20_000)
    args = parser.parse_args()
    doc = {"apiVersion": "v1", "kind": "List", "items": [pod(i) for i in range(args.pods)]}
    as_json = json.dumps(doc)
    as_yaml = yaml.dump(doc, Dumper=yaml.CSafeDumper, sort_keys=False)
    print(f"{args.pods:,} pods: JSON {len(as_json) / 2**20:.1f} MiB, YAML {len(as_yaml) / 2**20:.1f} MiB")
    rows = [
        ("JSON plain json.loads", lambda: json.loads(as_json)),
        ("JSON bounded load_json", lambda: load_json("bench", as_json)),
        ("YAML plain CSafeLoader", lambda: list(yaml.load_all(as_yaml, Loader=yaml.CSafeLoader))),
        ("YAML bounded load_yaml_all", lambda: load_yaml_all("bench", as_yaml)),
    ]
    results = {name: timed(call) for name, call in rows}
    for name, (cpu, wall) in results.items():
        print(f"{name:28} {cpu:7.2f} s CPU {wall:7.2f} s wall")
    for kind in ("JSON", "YAML"):
        plain = next(v for k, v in results.items() if k.startswith(f"{kind} plain"))[0]
        bounded = next(v for k, v in results.items() if k.startswith(f"{kind} bounded"))[0]
        print(f"{kind}: bounded / plain CPU = {bounded / plain:.2f}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
