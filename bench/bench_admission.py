"""Admission speed: 100,000 jobs through 20 ClusterQueues in a two-level cohort tree on 2,000 nodes.

Four cohorts of five ClusterQueues each under one root cohort; every ClusterQueue has a nominal share
of the cluster's GPUs and may borrow. Jobs of 1–8 GPUs arrive as a Poisson stream keeping the cluster
busy. Prints the wall time of the whole simulation (admission + placement + events) and its rates.

Run: .venv/bin/python bench/bench_admission.py [--jobs 100000] [--nodes 2000] [--queues 20]
"""

from __future__ import annotations

import argparse
import resource
import time
from typing import Any

from fleetlab.experiment.run import profile_for
from fleetlab.model.scenario import Scenario
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.loader import resolve
from workloads import kueue_object


def kueue_objects(queues: int, gpus: int) -> list[dict[str, Any]]:
    """A root cohort, ``queues // 5`` child cohorts, ``queues`` ClusterQueues and their LocalQueues."""
    per_queue = gpus // queues
    objects = [kueue_object("ResourceFlavor", "gpu", {}), kueue_object("Cohort", "root", {})]
    for c in range(max(1, queues // 5)):
        objects.append(kueue_object("Cohort", f"org-{c}", {"parentName": "root"}))
    for q in range(queues):
        resources = [
            {"name": "cpu", "nominalQuota": per_queue * 24},
            {"name": "memory", "nominalQuota": f"{per_queue * 240}Gi"},
            {"name": "nvidia.com/gpu", "nominalQuota": per_queue},
        ]
        group = {
            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [{"name": "gpu", "resources": resources}],
        }
        spec = {"cohortName": f"org-{q // 5}", "resourceGroups": [group]}
        objects.append(kueue_object("ClusterQueue", f"cq-{q}", spec))
        objects.append(kueue_object("LocalQueue", "q", {"clusterQueue": f"cq-{q}"}, f"team-{q}"))
    return objects


def scenario(jobs: int, nodes: int, queues: int) -> Scenario:
    """2,000 8-GPU nodes; one generator class per team, together about 85 % of the GPUs busy."""
    gpus = nodes * 8
    rate = 0.85 * gpus / 2.9  # jobs per hour: mean 2.9 GPUs × 1 h each
    classes = [
        {
            "name": f"team-{q}",
            "class": "batch",
            "arrivals_per_hour": rate / queues,
            "count": jobs // queues,
            "namespace": f"team-{q}",
            "queue": "q",
            "gpus_per_pod": {"values": [1, 2, 4, 8], "weights": [4, 2, 1, 1]},
            "duration": {"kind": "exponential", "mean": "1h"},
        }
        for q in range(queues)
    ]
    return Scenario.model_validate(
        {
            "name": "admission-bench",
            "seed": 3,
            "cluster": {
                "pools": [
                    {
                        "name": "gpu",
                        "count": nodes,
                        "gpu_model": "H100",
                        "gpus_per_node": 8,
                        "cpu": "190",
                        "memory": "1900Gi",
                        "price_per_hour": 40,
                    }
                ]
            },
            "kueue": kueue_objects(queues, gpus),
            "workload": {"generator": {"classes": classes}},
            "scheduler": {"policy": "most-allocated"},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--queues", type=int, default=20)
    args = parser.parse_args()
    t0 = time.perf_counter()
    resolved = resolve(scenario(args.jobs, args.nodes, args.queues))
    print(
        f"generated {len(resolved.jobs)} jobs for {args.queues} ClusterQueues in {time.perf_counter() - t0:.1f}s"
    )
    sim = Simulator(resolved, profile_for(resolved, None))
    t0 = time.perf_counter()
    result = sim.run()
    wall = time.perf_counter() - t0
    assert sim.features.kueue is not None
    print(
        f"simulated {len(resolved.jobs)} jobs on {args.nodes} nodes in {wall:.1f}s: "
        f"{result.placements / wall:,.0f} placements/s, {sim.features.kueue.manager.cycles} admission cycles, "
        f"{int(result.jobs.completed.sum())} completed, {len(result.pending)} pending"
    )
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
