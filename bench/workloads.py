"""The benchmark workloads every speed figure is measured on, and the fair bare loop beside them.

Workloads (``build(name, jobs, gpus)``):

* ``benchmark``: the original narrow workload (bench_scale.py's first figures): one batch class of 1/2/4/8-GPU
  jobs (weights 4:2:1:1), exponential 1 h durations, offered load 0.85, one H100 pool in one zone.
* ``mix``: a realistic mix without Kueue: four teams with demand shares 10/20/30/40 %, two priorities
  (100 for a quarter of each team's jobs, 10 for the rest), ``--shapes`` distinct pod shapes (requests and
  image; 16 by default), 3 % gangs of 2 or 4 pods of 8 GPUs that prefer one rack, lognormal runtimes, four
  container images, the low-priority and gang jobs checkpointing every 30 min; H100 nodes in two zones of
  four racks each; offered load 0.95.
* ``kueue``: the same jobs through Kueue: one cohort of four ClusterQueues (one per team) with nominal
  quotas of 40/30/20/10 % of the GPUs (and CPU and memory in the nodes' proportion) on two zonal
  ResourceFlavors, borrowing without limit, ``reclaimWithinCohort: Any`` and ``withinClusterQueue:
  LowerPriority``; the demand (10/20/30/40 %) is skewed against the quotas, so the small teams borrow the
  large ones' idle quota and are reclaimed from.

The offered load is the GPU-hours asked for per hour over the cluster's GPUs, from each class's mean
runtime (lognormal mean = median × exp(σ²/2)) and mean GPUs; preempted work re-run after a checkpoint adds
to it, so at 0.95 the Kueue cohort is saturated.

**The fair bare loop** (:func:`bare_loop`) replays the same jobs with the event discipline fleetlab's own
loop uses: arrivals read in order from the submit-sorted list, one heap for pod events (a finish per
pod), two comparisons per step to pick the next event. Garbage is collected before timing; the best of
``repeat`` runs is reported, so it is the loop's own cost, not a collection of the simulator's objects.
"""

from __future__ import annotations

import gc
import heapq
import math
import time
from typing import Any

import numpy as np
import pyarrow as pa

from fleetlab.model.job_table import JobTable
from fleetlab.model.scenario import ResolvedScenario, Scenario
from fleetlab.spec.loader import resolve

__all__ = [
    "NAMES",
    "arrival_rate",
    "bare_inputs",
    "bare_loop",
    "build",
    "one_stream",
    "resolve_workload",
    "shape_count",
]

NAMES = ("benchmark", "mix", "kueue")

#: Teams, their share of the demand (GPU-hours) and of the Kueue quota.
TEAMS = ("a", "b", "c", "d")
DEMAND = (0.10, 0.20, 0.30, 0.40)
QUOTA = (0.40, 0.30, 0.20, 0.10)
HIGH, LOW = 100, 10
HIGH_SHARE = 0.25  # of each team's non-gang jobs
GANG_SHARE = 0.03  # of all jobs
GPU_VALUES, GPU_WEIGHTS = (1, 2, 4, 8), (4, 2, 1, 1)
GANG_PODS, GANG_POD_WEIGHTS = (2, 4), (2, 1)
BATCH_MEDIAN_S, BATCH_SIGMA = 40 * 60.0, 0.8
GANG_MEDIAN_S, GANG_SIGMA = 2 * 3600.0, 0.6
IMAGES = (
    ("nvcr.io/nvidia/pytorch:24.05-py3", "9Gi"),
    ("nvcr.io/nvidia/tritonserver:24.05-py3", "12Gi"),
    ("ghcr.io/acme/batch-infer:3.1", "6Gi"),
    ("ghcr.io/acme/trainer:2.4", "10Gi"),
)
ZONES = ("use1-az1", "use1-az2")
NODE_CPU, NODE_MEMORY_GI, GPUS_PER_NODE = 190, 1900, 8


def _mean(values: tuple[int, ...], weights: tuple[int, ...]) -> float:
    return sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)


def _lognormal_mean(median_s: float, sigma: float) -> float:
    return median_s * math.exp(sigma * sigma / 2)


def _pool(gpus: int, zones: tuple[str, ...], racks: int) -> dict[str, Any]:
    return {
        "name": "h100",
        "count": gpus // GPUS_PER_NODE,
        "gpu_model": "H100",
        "gpus_per_node": GPUS_PER_NODE,
        "cpu": str(NODE_CPU),
        "memory": f"{NODE_MEMORY_GI}Gi",
        "zones": list(zones),
        "racks_per_zone": racks,
        "price_per_hour": 55.04,
    }


def benchmark(jobs: int, gpus: int, policy: str = "default") -> Scenario:
    """The original narrow workload: ``gpus // 8`` H100 nodes, one class keeping about 85 % of GPUs busy."""
    rate = 0.85 * gpus / _mean(GPU_VALUES, GPU_WEIGHTS)  # jobs per hour: each holds its GPUs 1 h on average
    pool = _pool(gpus, ("zone-a",), 1)
    del pool["zones"], pool["racks_per_zone"]
    return Scenario.model_validate(
        {
            "name": f"scale-{jobs}",
            "seed": 11,
            "cluster": {"pools": [pool]},
            "workload": {
                "generator": {
                    "classes": [
                        {
                            "name": "batch",
                            "class": "batch",
                            "arrivals_per_hour": rate,
                            "count": jobs,
                            "gpus_per_pod": {"values": list(GPU_VALUES), "weights": list(GPU_WEIGHTS)},
                            "duration": {"kind": "exponential", "mean": "1h"},
                        }
                    ]
                }
            },
            "scheduler": {"policy": policy},
        }
    )


def _counts(jobs: int, shares: list[float]) -> list[int]:
    """``jobs`` split by ``shares`` (summing to 1) into integers that sum to ``jobs`` (largest remainder)."""
    raw = [jobs * s for s in shares]
    out = [int(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (out[i] - raw[i], i))
    for i in order[: jobs - sum(out)]:
        out[i] += 1
    return out


def arrival_rate(gpus: int, load: float) -> float:
    """Jobs per hour of the mix that offer ``load`` × ``gpus`` GPU-hours per hour."""
    batch_gpu_h = _mean(GPU_VALUES, GPU_WEIGHTS) * _lognormal_mean(BATCH_MEDIAN_S, BATCH_SIGMA) / 3600
    gang_pods = _mean(GANG_PODS, GANG_POD_WEIGHTS)
    gang_gpu_h = GPUS_PER_NODE * gang_pods * _lognormal_mean(GANG_MEDIAN_S, GANG_SIGMA) / 3600
    return load * gpus / ((1 - GANG_SHARE) * batch_gpu_h + GANG_SHARE * gang_gpu_h)


def _classes(jobs: int, gpus: int, shapes: int, load: float, kueue: bool) -> list[dict[str, Any]]:
    """The mix's generator classes: per team, ``shapes // 4`` request variants of each GPU count at each
    priority, and a gang class; counts sum to ``jobs`` (rates are replaced by one stream, see
    :func:`one_stream`)."""
    if shapes % 4 or not 4 <= shapes <= 64:
        raise ValueError(f"shapes must be a multiple of 4 from 4 to 64, not {shapes}")
    variants = shapes // 4
    rate = arrival_rate(gpus, load)
    specs: list[tuple[dict[str, Any], float]] = []
    for team, demand in zip(TEAMS, DEMAND, strict=True):
        where: dict[str, Any] = {"teams": [f"team-{team}"], "namespace": f"team-{team}"}
        if kueue:
            where["queue"] = "jobs"
        for priority, share in ((HIGH, HIGH_SHARE), (LOW, 1 - HIGH_SHARE)):
            for k in range(variants):
                for g, (gpu, weight) in enumerate(zip(GPU_VALUES, GPU_WEIGHTS, strict=True)):
                    name, size = IMAGES[g]
                    cls: dict[str, Any] = {
                        "name": f"{team}-p{priority}-v{k}-g{gpu}",
                        "class": "batch" if priority == LOW else "experiment",
                        "priority": priority,
                        **where,
                        "gpus_per_pod": {"values": [gpu]},
                        "cpu_per_gpu": str(6 + k),
                        "memory_per_gpu": f"{48 + 4 * k}Gi",
                        "duration": {"kind": "lognormal", "median": BATCH_MEDIAN_S, "sigma": BATCH_SIGMA},
                        "image": {"name": name, "size": size},
                    }
                    if priority == LOW:
                        cls.update(checkpoint_interval_s="30m", checkpoint_write_s="30s", preemptible=True)
                    mix_share = weight / sum(GPU_WEIGHTS) / variants
                    specs.append((cls, demand * (1 - GANG_SHARE) * share * mix_share))
        gang = {
            "name": f"{team}-gang",
            "class": "training",
            "priority": LOW,
            **where,
            "pods": {"values": list(GANG_PODS), "weights": list(GANG_POD_WEIGHTS)},
            "gpus_per_pod": {"values": [GPUS_PER_NODE]},
            "cpu_per_gpu": "6",
            "memory_per_gpu": "48Gi",
            "duration": {"kind": "lognormal", "median": GANG_MEDIAN_S, "sigma": GANG_SIGMA},
            "image": {"name": IMAGES[-1][0], "size": IMAGES[-1][1]},  # the shape of variant 0's 8-GPU pods
            "gang": True,
            "topology_preferred": "fleetlab.io/rack",
            "checkpoint_interval_s": "30m",
            "checkpoint_write_s": "1m",
        }
        specs.append((gang, demand * GANG_SHARE))
    counts = _counts(jobs, [share for _, share in specs])
    out = []
    for (cls, share), count in zip(specs, counts, strict=True):
        if count:
            out.append({**cls, "count": count, "arrivals_per_hour": rate * share})
    return out


def kueue_object(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    """One Kueue object as it would be pasted from YAML."""
    metadata = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind, "metadata": metadata, "spec": spec}


def kueue_objects(gpus: int) -> list[dict[str, Any]]:
    """Two zonal ResourceFlavors, one cohort, a ClusterQueue and LocalQueue per team (quotas 40/30/20/10 %
    of each flavor's GPUs, CPU and memory in the nodes' proportion)."""
    per_flavor = gpus // len(ZONES)
    objects = [
        kueue_object("ResourceFlavor", f"h100-{zone}", {"nodeLabels": {"topology.kubernetes.io/zone": zone}})
        for zone in ZONES
    ]
    objects.append(kueue_object("Cohort", "org", {}))
    for team, quota in zip(TEAMS, QUOTA, strict=True):
        g = round(per_flavor * quota)
        flavors = [
            {
                "name": f"h100-{zone}",
                "resources": [
                    {"name": "cpu", "nominalQuota": str(g * NODE_CPU // GPUS_PER_NODE)},
                    {"name": "memory", "nominalQuota": f"{g * NODE_MEMORY_GI // GPUS_PER_NODE}Gi"},
                    {"name": "nvidia.com/gpu", "nominalQuota": g},
                ],
            }
            for zone in ZONES
        ]
        spec = {
            "cohortName": "org",
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": flavors}],
        }
        objects.append(kueue_object("ClusterQueue", f"team-{team}", spec))
        objects.append(kueue_object("LocalQueue", "jobs", {"clusterQueue": f"team-{team}"}, f"team-{team}"))
    return objects


def mix(
    jobs: int,
    gpus: int,
    policy: str = "default",
    *,
    shapes: int = 16,
    load: float = 0.95,
    kueue: bool = False,
    seed: int = 11,
) -> Scenario:
    """The realistic mix (see the module docstring), through Kueue's cohort when ``kueue``."""
    racks = 4
    body: dict[str, Any] = {
        "name": f"{'kueue' if kueue else 'mix'}-{jobs}",
        "seed": seed,
        "cluster": {"pools": [_pool(gpus, ZONES, racks)]},
        "workload": {"generator": {"classes": _classes(jobs, gpus, shapes, load, kueue)}},
        "scheduler": {"policy": policy},
    }
    if kueue:
        body["kueue"] = kueue_objects(gpus)
    return Scenario.model_validate(body)


def build(
    name: str, jobs: int, gpus: int, policy: str = "default", *, shapes: int = 16, load: float | None = None
) -> Scenario:
    """Workload ``name`` (one of :data:`NAMES`) with ``jobs`` jobs on ``gpus`` GPUs."""
    if name == "benchmark":
        return benchmark(jobs, gpus, policy)
    if name not in NAMES:
        raise ValueError(f"unknown workload {name!r}: one of {', '.join(NAMES)}")
    return mix(jobs, gpus, policy, shapes=shapes, load=0.95 if load is None else load, kueue=name == "kueue")


def one_stream(resolved: ResolvedScenario, rate_per_hour: float, seed: int) -> ResolvedScenario:
    """The jobs re-timed as one Poisson stream of ``rate_per_hour``, each arrival a job drawn without
    replacement: the generator draws each class's arrivals as a stream of its own with a fixed count, so
    classes of few jobs end at scattered times and the offered load would thin out at the end."""
    table = resolved.jobs
    n = len(table)
    rng = np.random.Generator(np.random.PCG64(seed))
    order = rng.permutation(n)
    submits = np.round(np.cumsum(rng.exponential(3600.0 / rate_per_hour, size=n)), 3)
    retimed = JobTable(
        table.ids.take(pa.array(order)),
        submits,
        table.column("runtime_s")[order],
        table.column("pods")[order],
        table.column("template")[order],
        table.templates,
        [() for _ in table.templates],
    )
    return resolved.model_copy(update={"jobs": retimed})


def resolve_workload(
    name: str, jobs: int, gpus: int, policy: str = "default", *, shapes: int = 16, load: float | None = None
) -> ResolvedScenario:
    """:func:`build` resolved, the mix's jobs in one arrival stream (:func:`one_stream`)."""
    scenario = build(name, jobs, gpus, policy, shapes=shapes, load=load)
    resolved = resolve(scenario)
    if name == "benchmark":
        return resolved
    return one_stream(resolved, arrival_rate(gpus, 0.95 if load is None else load), scenario.seed)


def shape_count(scenario: Scenario) -> int:
    """Distinct pod shapes (requests and image) the scenario's generator can draw."""
    gen = scenario.workload.generator
    assert gen is not None
    shapes = set()
    for c in gen.classes:
        image = None if c.image is None else (c.image.name, c.image.size)
        for g in c.gpus_per_pod.values:
            shapes.add((g, c.cpu_per_gpu * g, c.memory_per_gpu * g, image))
    return len(shapes)


def bare_inputs(jobs: Any) -> tuple[list[float], list[float], list[int]]:
    """Submit times, runtimes and pod counts of a resolved job table, in submit order."""
    order = np.argsort(jobs.column("submit_s"), kind="stable")
    return (
        jobs.column("submit_s")[order].tolist(),
        jobs.column("runtime_s")[order].tolist(),
        jobs.column("pods")[order].tolist(),
    )


def _bare_once(submits: list[float], runtimes: list[float], pods: list[int]) -> float:
    gc.collect()
    t0 = time.process_time()
    heap: list[tuple[float, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    n, i, done = len(submits), 0, 0
    while i < n or heap:
        if i < n and (not heap or submits[i] <= heap[0][0]):
            end = submits[i] + runtimes[i]
            for _ in range(pods[i]):
                push(heap, (end, i))
            i += 1
        else:
            pop(heap)
            done += 1
    elapsed = time.process_time() - t0
    assert done == sum(pods)
    return elapsed


def bare_loop(submits: list[float], runtimes: list[float], pods: list[int], repeat: int = 5) -> float:
    """Best CPU seconds of ``repeat`` runs of the fair bare loop (see the module docstring)."""
    return min(_bare_once(submits, runtimes, pods) for _ in range(repeat))
