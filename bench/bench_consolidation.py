"""Consolidation speed: a busy cluster of ~1,000 8-GPU nodes where most running pods are preemptible and
large pods keep arriving that fit only after moves. Times the whole run with consolidation on and off, and
the candidate search alone (one array pass over all movable running pods) for an 8-GPU pod at the end
(half-way through the arrivals, when the cluster is busy).

Run: .venv/bin/python bench/bench_consolidation.py [--nodes 1000] [--pods 30000]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from fleetlab.experiment.run import profile_for
from fleetlab.metrics.summary import summarize
from fleetlab.model.scenario import Scenario
from fleetlab.placement.framework import PodSpec
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.loader import resolve


def jobs(count: int, gpus: int, seed: int) -> list[dict[str, Any]]:
    """70 % one-GPU preemptible pods, the rest 2/4/8-GPU pods; arrivals keep the GPUs ~90 % requested."""
    rng = np.random.default_rng(seed)
    size = rng.choice([1, 2, 4, 8], size=count, p=[0.7, 0.12, 0.1, 0.08])
    runtime = np.maximum(60.0, rng.exponential(3600.0, count))
    rate = 0.9 * gpus / (float(size.mean()) * 3600.0)
    submit = np.cumsum(rng.exponential(1.0 / rate, count))
    return [
        {
            "id": f"p{i}",
            "submit_s": round(float(submit[i]), 3),
            "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": int(size[i])},
            "runtime": round(float(runtime[i]), 3),
            "preemptible": bool(size[i] == 1),
        }
        for i in range(count)
    ]


def scenario(nodes: int, pods: int, on: bool) -> Scenario:
    pools = [
        {
            "name": "gpu",
            "count": nodes,
            "gpu_model": "H100",
            "gpus_per_node": 8,
            "cpu": "190",
            "memory": "1900Gi",
        }
    ]
    workload = jobs(pods, nodes * 8, 5)
    return Scenario.model_validate(
        {
            "name": "consolidation-bench",
            "horizon_s": workload[pods // 2]["submit_s"],  # stop mid-stream: the cluster is busy
            "seed": 1,
            "cluster": {"pools": pools},
            "scheduler": {"consolidation": on, "policy": "least-allocated"},
            "workload": {"jobs": workload},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=30_000)
    args = parser.parse_args()
    for on in (False, True):
        resolved = resolve(scenario(args.nodes, args.pods, on))
        sim = Simulator(resolved, profile_for(resolved, None), seed=None)
        t0 = time.perf_counter()
        result = sim.run()
        wall = time.perf_counter() - t0
        s = summarize(result)
        print(
            f"consolidation {'on ' if on else 'off'}: {len(resolved.jobs)} pods on {args.nodes} nodes in "
            f"{wall:.2f}s; moves evicted {s.consolidation_evictions}; mean queue wait {s.queue_wait_mean_s:.0f}s"
        )
    pending = sim.scheduler.compile(PodSpec(requests=(("cpu", 4000), ("nvidia.com/gpu", 8))))
    static = sim.scheduler.static_mask(pending)
    consolidator = sim.features.consolidation
    t0 = time.perf_counter()
    repeats = 50
    for _ in range(repeats):
        found = consolidator.candidates(pending, static)
    per = (time.perf_counter() - t0) / repeats
    print(
        f"candidate search for an 8-GPU pod over {args.nodes} nodes: {per * 1000:.2f} ms ({len(found)} nodes)"
    )


if __name__ == "__main__":
    main()
