"""Seeded synthetic workloads: Poisson arrivals per job class, sizes and durations from distributions.

Every draw comes from one numpy Generator seeded by the scenario seed, class by class in declaration
order, so the same scenario and seed always produce the same jobs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from fleetlab.model.arrow_arrays import arrow_array, string_scalar
from fleetlab.model.job import Job
from fleetlab.model.job_table import JobTable
from fleetlab.model.limits import MAX_PODS_PER_JOB, MAX_SECONDS
from fleetlab.model.workload import Choice, DurationDistribution, Generator, JobClassSpec
from fleetlab.spec.errors import SpecError, problems_from_validation


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


def _job_spec(
    spec: JobClassSpec, i: int, submit_s: float, pods: int, gpus: int, team: str, base: float
) -> dict[str, Any]:
    """Job.model_validate input of one generated job (templates are built from it, and it names the
    row when a drawn value is out of range)."""
    cpu = spec.cpu_per_pod if spec.cpu_per_pod is not None else max(spec.cpu_per_gpu * gpus, 1000)
    memory = (
        spec.memory_per_pod if spec.memory_per_pod is not None else max(spec.memory_per_gpu * gpus, 1 << 30)
    )
    requests: dict[str, str | int] = {"cpu": f"{cpu}m", "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = gpus
    by_gpu = {model: max(1.0, round(base / speedup)) for model, speedup in spec.speedup_by_gpu.items()}
    return {
        "id": f"{spec.name}-{i:05d}",
        "submit_s": submit_s,
        "class": spec.job_class,
        "priority": spec.priority,
        "team": team,
        "pods": pods,
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
        "gang": spec.gang and pods > 1,
        "topology_required": spec.topology_required if pods > 1 else None,
        "topology_preferred": spec.topology_preferred if pods > 1 else None,
        "checkpoint_interval_s": spec.checkpoint_interval_s,
        "checkpoint_write_s": spec.checkpoint_write_s,
        "gpu_utilization": spec.gpu_utilization,
        "interference_demand": spec.interference_demand,
        "queue": spec.queue,
        "namespace": spec.namespace,
    }


def _seconds_ok(values: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """Where a Seconds field would accept the value (finite, 0 ..= MAX_SECONDS)."""
    ok: npt.NDArray[np.bool_] = np.isfinite(values) & (values >= 0) & (values <= MAX_SECONDS)
    return ok


def _class_jobs(rng: np.random.Generator, spec: JobClassSpec, start_s: float, label: str) -> JobTable:
    """One class's jobs in draw order. The draws are made in the same order as ever; each distinct
    (team, GPUs per pod, multi-pod) shape is validated once as a whole Job and becomes a template."""
    n = spec.count
    if n == 0:
        return JobTable.empty()
    gaps = rng.exponential(3600.0 / spec.arrivals_per_hour, size=n)
    submits = np.asarray(start_s + np.round(np.cumsum(gaps), 3), dtype=np.float64)
    pods = _choose(rng, spec.pods, n)
    gpus = _choose(rng, spec.gpus_per_pod, n)
    durations = _durations(rng, spec.duration, n)
    teams = rng.integers(len(spec.teams), size=n)
    by_gpu = {m: np.maximum(1.0, np.round(durations / s)) for m, s in spec.speedup_by_gpu.items()}
    ok = _seconds_ok(submits) & _seconds_ok(durations) & (pods >= 1) & (pods <= MAX_PODS_PER_JOB)
    for values in by_gpu.values():
        ok &= _seconds_ok(values)
    first_bad = int(np.argmin(ok)) if not ok.all() else n
    keys = teams.astype(np.int64) * 2 + (pods > 1)
    keys = keys * (int(gpus.max()) + 1) + gpus
    uniq, first, template = np.unique(keys, return_index=True, return_inverse=True)
    templates: dict[int, Job] = {}

    def validated(i: int) -> Job:
        """Job ``i`` validated whole; a SpecError naming the class, the job and the field if refused."""
        team = spec.teams[int(teams[i])]
        row = _job_spec(spec, i, float(submits[i]), int(pods[i]), int(gpus[i]), team, float(durations[i]))
        try:
            return Job.model_validate(row)
        except ValidationError as exc:
            where = f"workload.generator class {spec.name!r}, job {row['id']}"
            problems = [f"{where}: {p}" for p in problems_from_validation(exc)]
            hint = "fewer jobs (count), more arrivals_per_hour or shorter durations keep every time in range"
            raise SpecError(label, [*problems, hint]) from None

    for k in np.argsort(first, kind="stable").tolist():
        i = int(first[k])
        if i > first_bad and first_bad < n:
            validated(first_bad)  # raises: that row's own error comes first
        templates[k] = validated(i)
    if first_bad < n:
        validated(first_bad)
    numbers = pc.utf8_lpad(pc.cast(arrow_array(np.arange(n)), pa.large_string()), width=5, padding="0")
    prefix, empty = string_scalar(f"{spec.name}-", pa.large_string()), string_scalar("", pa.large_string())
    ids = pc.binary_join_element_wise(prefix, numbers, empty)  # f"{name}-{i:05d}"
    models = tuple(spec.speedup_by_gpu)
    return JobTable(
        ids,
        submits,
        durations,
        pods.astype(np.int32),
        template.reshape(-1).astype(np.int32),
        [templates[k] for k in range(len(uniq))],
        [models] * len(uniq),
        by_gpu,
    )


def generate_jobs(generator: Generator, seed: int, label: str = "<scenario>") -> JobTable:
    """All classes' jobs, sorted by submit time (ties by class order, then index); a drawn job that is
    out of range (a submit time beyond 100 years) is a SpecError naming ``label``, the class and the job."""
    rng = np.random.Generator(np.random.PCG64(seed))
    tables: list[JobTable] = []
    for spec in generator.classes:
        start = generator.start_s if spec.start_s is None else spec.start_s
        tables.append(_class_jobs(rng, spec, start, label))
    jobs = JobTable.concat(tables) if tables else JobTable.empty()
    return jobs.take(np.argsort(jobs.column("submit_s"), kind="stable"))
