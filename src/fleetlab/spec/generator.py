"""Seeded synthetic workloads: Poisson arrivals per job class, sizes and durations from distributions.

Every draw comes from one numpy Generator seeded by the scenario seed, class by class in declaration
order, so the same scenario and seed always produce the same jobs.
"""

from __future__ import annotations

import math

import numpy as np

from fleetlab.model.job import Job
from fleetlab.model.workload import Choice, DurationDistribution, Generator, JobClassSpec


def _choose(rng: np.random.Generator, choice: Choice, n: int) -> np.ndarray:
    values = np.asarray(choice.values, dtype=np.int64)
    if choice.weights is None:
        return values[rng.integers(len(values), size=n)]
    p = np.asarray(choice.weights, dtype=np.float64)
    return values[rng.choice(len(values), size=n, p=p / p.sum())]


def _durations(rng: np.random.Generator, dist: DurationDistribution, n: int) -> np.ndarray:
    if dist.kind == "fixed":
        assert dist.median is not None
        out = np.full(n, dist.median, dtype=np.float64)
    elif dist.kind == "exponential":
        assert dist.mean is not None
        out = rng.exponential(dist.mean, size=n)
    else:
        assert dist.median is not None
        out = rng.lognormal(mean=math.log(max(dist.median, 1e-9)), sigma=dist.sigma, size=n)
    upper = dist.max if dist.max is not None else np.inf
    return np.clip(np.round(out), dist.min, upper)


def _class_jobs(rng: np.random.Generator, spec: JobClassSpec, start_s: float) -> list[Job]:
    n = spec.count
    if n == 0:
        return []
    gaps = rng.exponential(3600.0 / spec.arrivals_per_hour, size=n)
    submits = start_s + np.round(np.cumsum(gaps), 3)
    pods = _choose(rng, spec.pods, n)
    gpus = _choose(rng, spec.gpus_per_pod, n)
    durations = _durations(rng, spec.duration, n)
    teams = rng.integers(len(spec.teams), size=n)
    jobs: list[Job] = []
    for i in range(n):
        g = int(gpus[i])
        cpu = spec.cpu_per_pod if spec.cpu_per_pod is not None else max(spec.cpu_per_gpu * g, 1000)
        memory = (
            spec.memory_per_pod if spec.memory_per_pod is not None else max(spec.memory_per_gpu * g, 1 << 30)
        )
        requests: dict[str, str | int] = {"cpu": f"{cpu}m", "memory": memory}
        if g:
            requests["nvidia.com/gpu"] = g
        base = float(durations[i])
        by_gpu = {model: max(1.0, round(base / speedup)) for model, speedup in spec.speedup_by_gpu.items()}
        jobs.append(
            Job.model_validate(
                {
                    "id": f"{spec.name}-{i:05d}",
                    "submit_s": float(submits[i]),
                    "class": spec.job_class,
                    "priority": spec.priority,
                    "team": spec.teams[int(teams[i])],
                    "pods": int(pods[i]),
                    "requests": requests,
                    "tolerations": spec.tolerations,
                    "nodeSelector": spec.node_selector,
                    "affinity": spec.affinity,
                    "labels": spec.labels,
                    "service": spec.service,
                    "topology_spread": spec.topology_spread,
                    "anti_affinity": spec.anti_affinity,
                    "pod_affinity": spec.pod_affinity,
                    "runtime": {"default": base, "by_gpu": by_gpu},
                    "image": spec.image,
                    "data_size": spec.data_size,
                    "preemptible": spec.preemptible,
                    "gang": spec.gang and int(pods[i]) > 1,
                    "topology_required": spec.topology_required if int(pods[i]) > 1 else None,
                    "topology_preferred": spec.topology_preferred if int(pods[i]) > 1 else None,
                    "checkpoint_interval_s": spec.checkpoint_interval_s,
                    "checkpoint_write_s": spec.checkpoint_write_s,
                    "gpu_utilization": spec.gpu_utilization,
                    "interference_demand": spec.interference_demand,
                    "queue": spec.queue,
                    "namespace": spec.namespace,
                }
            )
        )
    return jobs


def generate_jobs(generator: Generator, seed: int) -> list[Job]:
    """All classes' jobs, sorted by submit time (ties by class order, then index)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    jobs: list[Job] = []
    for spec in generator.classes:
        start = generator.start_s if spec.start_s is None else spec.start_s
        jobs.extend(_class_jobs(rng, spec, start))
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_s, i))
    return [jobs[i] for i in order]
