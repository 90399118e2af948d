"""Placement speed and memory.

1. Replays the Alibaba 2023 "openb" default pod list on its full node list under LeastAllocated and
   MostAllocated (needs the trace: ../shared/traces/alibaba-gpu-v2023 or --openb-dir).
2. Places pods on a 2,000-node synthetic cluster through the full simulator, and through the Scheduler
   alone (filter + score + select + bind), and reports placements per second.

Run: .venv/bin/python bench/bench_placement.py [--openb-dir DIR] [--nodes 2000] [--jobs 60000]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import tracemalloc
from collections import deque
from pathlib import Path

from fleetlab.experiment.run import profile_for
from fleetlab.model.scenario import Scenario
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.profiles import resolve_profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import ClusterState
from fleetlab.sim.simulator import Simulator
from fleetlab.sim.specs import build_nodes, pod_spec
from fleetlab.spec.loader import resolve

DEFAULT_OPENB = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "alibaba-gpu-v2023"


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_openb(folder: Path) -> None:
    from fleetlab.spec.loader import openb_scenario

    nodes = folder / "openb_node_list_all_node.csv"
    pods = folder / "openb_pod_list_default.csv"
    if not nodes.exists() or not pods.exists():
        print(f"openb: trace not found under {folder}; skipped")
        return
    t0 = time.perf_counter()
    resolved = openb_scenario(nodes, pods)
    load_s = time.perf_counter() - t0
    print(
        f"openb: loaded {len(resolved.jobs)} pods, {resolved.scenario.cluster.node_count} nodes in {load_s:.2f}s"
    )
    for policy in ("least-allocated", "most-allocated"):
        profile = profile_for(resolved, policy)
        t0 = time.perf_counter()
        result = Simulator(resolved, profile).run()
        wall = time.perf_counter() - t0
        # A second, traced run measures memory (tracing slows Python down, so it is not timed).
        tracemalloc.start()
        Simulator(resolved, profile).run()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            f"openb {policy:16s}: {result.placements} placements in {wall:.2f}s "
            f"({result.placements / wall:,.0f}/s), {len(result.pending)} pending, "
            f"peak traced Python memory {peak / 2**20:.1f} MiB"
        )


def synthetic(nodes: int, jobs: int) -> Scenario:
    """2,000 8-GPU nodes in 4 pools (two tainted) and a stream of 1–8 GPU pods keeping them busy."""
    per_pool = nodes // 4
    pools = []
    for i, model in enumerate(["H100", "H100", "A100-80GB", "A100-80GB"]):
        pools.append(
            {
                "name": f"pool-{i}",
                "count": per_pool,
                "gpu_model": model,
                "gpus_per_node": 8,
                "cpu": "190",
                "memory": "1900Gi",
                "zones": ["a", "b", "c"],
                "racks_per_zone": 8,
                "price_per_hour": 40.0,
                "taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if i == 3 else [],
            }
        )
    # Mean demand ≈ 2.9 GPUs × 1 h per job; arrivals sized to keep the cluster about 80 % allocated.
    gpus = nodes * 8
    rate = 0.8 * gpus / (2.9 * 1.0)
    return Scenario.model_validate(
        {
            "name": "synthetic",
            "seed": 1,
            "cluster": {"pools": pools},
            "workload": {
                "generator": {
                    "classes": [
                        {
                            "name": "work",
                            "class": "batch",
                            "arrivals_per_hour": rate,
                            "count": jobs,
                            "gpus_per_pod": {"values": [1, 2, 4, 8], "weights": [4, 2, 1, 1]},
                            "duration": {"kind": "exponential", "mean": "1h"},
                            "image": {"name": "img", "size": "5Gi"},
                        }
                    ]
                }
            },
        }
    )


def bench_synthetic(nodes: int, jobs: int) -> None:
    t0 = time.perf_counter()
    resolved = resolve(synthetic(nodes, jobs))
    print(
        f"synthetic: generated {len(resolved.jobs)} jobs on {nodes} nodes in {time.perf_counter() - t0:.2f}s"
    )
    for policy in ("least-allocated", "most-allocated"):
        profile = profile_for(resolved, policy)
        t0 = time.perf_counter()
        result = Simulator(resolved, profile).run()
        wall = time.perf_counter() - t0
        print(
            f"synthetic simulate {policy:16s}: {result.placements} placements in {wall:.2f}s "
            f"({result.placements / wall:,.0f}/s incl. events and queue)"
        )
    # The scheduler alone: filter + score + select + bind, releasing the oldest pods to hold ~80 % allocation.
    for policy in ("least-allocated", "most-allocated"):
        state = ClusterState(build_nodes(resolved), extra_resources=["nvidia.com/gpu"])
        for i in range(state.n):
            state.set_ready(i)
        scheduler = Scheduler(state, resolve_profile(SchedulerConfig(policy=policy)), seed=0)
        specs = [scheduler.compile(pod_spec(job)) for job in resolved.jobs]
        capacity = int(state.allocatable[:, state.gpu_col].sum())
        running: deque[tuple[int, int]] = deque()
        allocated = placed = failed = 0
        t0 = time.perf_counter()
        for k, pod in enumerate(specs):
            while running and allocated > 0.7 * capacity:
                node, j = running.popleft()
                state.release(node, specs[j].request, specs[j].nonzero)
                allocated -= int(specs[j].request[state.gpu_col])
            node = scheduler.select(pod)
            if node < 0:
                failed += 1
                continue
            state.bind(node, pod.request, pod.nonzero)
            running.append((node, k))
            allocated += int(pod.request[state.gpu_col])
            placed += 1
        wall = time.perf_counter() - t0
        print(
            f"scheduler-only {policy:16s}: {placed} placements ({failed} unschedulable attempts) in {wall:.2f}s "
            f"({placed / wall:,.0f} placements/s, {len(specs) / wall:,.0f} attempts/s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--openb-dir", type=Path, default=Path(os.environ.get("FLEETLAB_OPENB", DEFAULT_OPENB))
    )
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=60000)
    args = parser.parse_args()
    bench_openb(args.openb_dir)
    bench_synthetic(args.nodes, args.jobs)
    print(f"peak RSS {peak_rss_mib():.0f} MiB")


if __name__ == "__main__":
    main()
