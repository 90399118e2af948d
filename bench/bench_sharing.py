"""GPU-sharing speed: ~50,000 pods on ~1,000 8-GPU nodes, most of them fractional (gpu_milli) shares.

The cluster has plain nodes and a tenth time-sliced (replicas 2, no memory isolation); pods are Alibaba-2023
like shares (the trace's common gpu_milli values), whole 1/2/4/8-GPU pods and some with declared GPU memory,
arriving as a Poisson stream that keeps the GPUs about 85 % allocated. The same run with every share
rounded up to a whole GPU is timed for comparison. Prints wall times, placements per second, OOM kills,
time-slicing slowdown and the mean FGD fragmentation rate.

Run: .venv/bin/python bench/bench_sharing.py [--nodes 1000] [--pods 50000] [--policy most-allocated]
"""

from __future__ import annotations

import argparse
import resource
import time
from typing import Any

import numpy as np

from fleetlab.experiment.run import profile_for
from fleetlab.metrics.summary import summarize
from fleetlab.model.scenario import Scenario
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.loader import resolve

#: Common openb gpu_milli values and their weights (reference fgd.md §1.2, default trace).
SHARE_MILLI = [500, 250, 750, 100, 200, 300, 400, 600, 800, 50]
SHARE_WEIGHT = [810, 650, 470, 590, 550, 460, 370, 320, 230, 110]


def jobs(count: int, gpus: int, seed: int, round_up: bool) -> list[dict[str, Any]]:
    """Pod specs: 55 % shares, 38 % one GPU, 5 % 2/4/8 GPUs, 2 % CPU-only; exponential 1 h runtimes."""
    rng = np.random.default_rng(seed)
    weights = np.asarray(SHARE_WEIGHT, dtype=float) / sum(SHARE_WEIGHT)
    mean_gpus = 0.55 * float(np.dot(SHARE_MILLI, weights)) / 1000 + 0.38 + 0.05 * (14 / 3)
    rate_per_s = 0.85 * gpus / (mean_gpus * 3600.0)
    submit = np.cumsum(rng.exponential(1.0 / rate_per_s, count))
    runtime = np.maximum(1.0, rng.exponential(3600.0, count))
    kind = rng.choice(4, size=count, p=[0.55, 0.38, 0.05, 0.02])
    out: list[dict[str, Any]] = []
    for i in range(count):
        requests: dict[str, Any] = {"cpu": "4", "memory": "16Gi"}
        entry: dict[str, Any] = {"id": f"p{i}", "submit_s": round(float(submit[i]), 3)}
        if kind[i] == 0:
            milli = int(rng.choice(SHARE_MILLI, p=weights))
            if round_up:
                requests["nvidia.com/gpu"] = 1
            else:
                entry["gpu_milli"] = milli
        elif kind[i] == 1:
            requests["nvidia.com/gpu"] = 1
            if rng.random() < 0.3:
                entry["gpu_memory"] = f"{int(rng.integers(10, 50))}Gi"
        elif kind[i] == 2:
            requests["nvidia.com/gpu"] = int(rng.choice([2, 4, 8]))
        entry.update(requests=requests, runtime=round(float(runtime[i]), 3))
        out.append(entry)
    return out


def scenario(nodes: int, pods: int, round_up: bool) -> Scenario:
    sliced = nodes // 10
    base = {"gpu_model": "H100", "gpus_per_node": 8, "cpu": "190", "memory": "1900Gi", "max_pods": 110}
    pools = [
        {"name": "plain", "count": nodes - sliced, **base},
        {"name": "sliced", "count": sliced, **base, "time_slicing": {"replicas": 2}},
    ]
    return Scenario.model_validate(
        {
            "name": "sharing-bench",
            "seed": 1,
            "cluster": {"pools": pools},
            "workload": {"jobs": jobs(pods, nodes * 8, 7, round_up)},
        }
    )


def run(nodes: int, pods: int, policy: str, round_up: bool) -> None:
    label = "rounded up" if round_up else "fractional"
    t0 = time.perf_counter()
    resolved = resolve(scenario(nodes, pods, round_up))
    load_s = time.perf_counter() - t0
    profile = profile_for(resolved, policy)
    t0 = time.perf_counter()
    result = Simulator(resolved, profile).run()
    wall = time.perf_counter() - t0
    s = summarize(result)
    print(
        f"{label:10s} {policy}: {len(resolved.jobs)} pods on {nodes} nodes; built in {load_s:.1f}s, "
        f"simulated in {wall:.2f}s ({result.placements / wall:,.0f} placements/s); "
        f"completed {s.jobs_completed}, pending {s.jobs_pending}, failed {s.jobs_failed} "
        f"(OOM kills {s.oom_kills}); time-slicing extra {s.time_slicing_extra_hours:.1f} h; "
        f"mean frag rate {s.frag_rate_mean:.3f}; mean queue wait {s.queue_wait_mean_s:.0f}s; "
        f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--policy", default="most-allocated")
    args = parser.parse_args()
    run(args.nodes, args.pods, args.policy, round_up=False)
    run(args.nodes, args.pods, args.policy, round_up=True)


if __name__ == "__main__":
    main()
