"""PodTopologySpread and InterPodAffinity speed: one scheduling cycle (filter + score + select + bind).

1. The Scheduler alone on 5,000 nodes in 10 zones: pods of 50 services, each with a zone DoNotSchedule
   constraint (maxSkew 1), a hostname ScheduleAnyway constraint and required hostname anti-affinity,
   placed one after another on top of a cluster already holding ``--bound`` such pods. Reports the time
   per cycle, next to the same pods without constraints.
2. The full simulator on a smaller cluster: service jobs whose replicas spread over zones and hosts.

Run: .venv/bin/python bench/bench_spread.py [--nodes 5000] [--zones 10] [--pods 2000] [--bound 20000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fleetlab.experiment.run import profile_for
from fleetlab.model.cluster import HOSTNAME_LABEL, ZONE_LABEL
from fleetlab.model.pod_constraints import LabelSelector, PodAntiAffinityTerm, TopologySpreadConstraint
from fleetlab.model.scenario import Scenario
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.placement.framework import PodSpec
from fleetlab.placement.profiles import resolve_profile
from fleetlab.placement.scheduler import Scheduler
from fleetlab.placement.state import ClusterState, NodeInfo
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.loader import resolve

GI = 1024**3


def cluster(nodes: int, zones: int) -> ClusterState:
    infos = [
        NodeInfo(
            name=f"n{i}",
            pool=0,
            labels={HOSTNAME_LABEL: f"n{i}", ZONE_LABEL: f"zone-{i % zones}"},
            taints=(),
            allocatable={"cpu": 640_000, "memory": 5120 * GI, "pods": 1000, "nvidia.com/gpu": 8},
        )
        for i in range(nodes)
    ]
    state = ClusterState(infos)
    for i in range(state.n):
        state.set_ready(i)
    return state


def service_spec(service: int, constrained: bool) -> PodSpec:
    labels = (("app", f"svc-{service}"),)
    if not constrained:
        return PodSpec(requests=(("cpu", 100), ("memory", GI)))
    selector = LabelSelector(match_labels={"app": f"svc-{service}"})
    return PodSpec(
        requests=(("cpu", 100), ("memory", GI)),
        labels=labels,
        topology_spread=(
            TopologySpreadConstraint(max_skew=1, topology_key=ZONE_LABEL, label_selector=selector),
            TopologySpreadConstraint(
                max_skew=1,
                topology_key=HOSTNAME_LABEL,
                when_unsatisfiable="ScheduleAnyway",
                label_selector=selector,
            ),
        ),
        anti_affinity=(PodAntiAffinityTerm(topology_key=HOSTNAME_LABEL, label_selector=selector),),
    )


def cycles(nodes: int, zones: int, pods: int, bound: int, constrained: bool) -> float:
    """Seconds per scheduling cycle (select + bind) after ``bound`` pods were placed the same way."""
    state = cluster(nodes, zones)
    scheduler = Scheduler(state, resolve_profile(SchedulerConfig()), seed=1)
    compiled = [scheduler.compile(service_spec(s, constrained)) for s in range(50)]
    rng = np.random.default_rng(1)
    for k in range(bound):  # pre-load: bind round-robin without scheduling
        pod = compiled[k % 50]
        state.bind(int(rng.integers(nodes)), pod.request, pod.nonzero, pod.label_set)
    start = time.perf_counter()
    placed = 0
    for k in range(pods):
        pod = compiled[k % 50]
        node = scheduler.select(pod)
        if node >= 0:
            state.bind(node, pod.request, pod.nonzero, pod.label_set)
            placed += 1
    elapsed = time.perf_counter() - start
    assert placed == pods, f"only {placed} of {pods} pods placed"
    return elapsed / pods


def bench_scheduler(nodes: int, zones: int, pods: int, bound: int) -> None:
    plain = cycles(nodes, zones, pods, bound, constrained=False)
    spread = cycles(nodes, zones, pods, bound, constrained=True)
    print(f"Scheduler alone, {nodes} nodes x {zones} zones, {bound} pods already bound, {pods} cycles:")
    print(f"  no constraints               {plain * 1e3:8.3f} ms per pod")
    print(f"  zone spread + host spread +  {spread * 1e3:8.3f} ms per pod (filter + score + select + bind)")
    print("  required hostname anti-affinity")


def bench_simulator(nodes: int, jobs: int) -> None:
    zones = [f"zone-{z}" for z in range(10)]
    constraint = {"maxSkew": 1, "topologyKey": ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule"}
    data = {
        "name": "spread-bench",
        "seed": 3,
        "cluster": {
            "pools": [
                {
                    "name": "cpu",
                    "count": nodes,
                    "cpu": "64",
                    "memory": "256Gi",
                    "max_pods": 110,
                    "zones": zones,
                }
            ]
        },
        "workload": {
            "generator": {
                "classes": [
                    {
                        "name": "svc",
                        "class": "inference",
                        "arrivals_per_hour": 3600,
                        "count": jobs,
                        "pods": {"values": [3, 5, 8]},
                        "gpus_per_pod": {"values": [0]},
                        "cpu_per_pod": "2",
                        "memory_per_pod": "4Gi",
                        "duration": {"kind": "exponential", "mean": 1800},
                        "topology_spread": [constraint],
                        "anti_affinity": [{"topology_key": HOSTNAME_LABEL, "required": False, "weight": 50}],
                    }
                ]
            }
        },
    }
    resolved = resolve(Scenario.model_validate(data))
    start = time.perf_counter()
    result = Simulator(resolved, profile_for(resolved, "default")).run()
    elapsed = time.perf_counter() - start
    pods = int(np.count_nonzero(result.pods.node >= 0))
    print(f"Simulator, {nodes} nodes x 10 zones, {jobs} service jobs ({pods} pods placed): {elapsed:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--zones", type=int, default=10)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--bound", type=int, default=20000)
    parser.add_argument("--sim-nodes", type=int, default=1000)
    parser.add_argument("--sim-jobs", type=int, default=5000)
    args = parser.parse_args()
    bench_scheduler(args.nodes, args.zones, args.pods, args.bound)
    bench_simulator(args.sim_nodes, args.sim_jobs)


if __name__ == "__main__":
    main()
