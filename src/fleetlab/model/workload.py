"""Workload sources: an inline job list, a trace file, or a seeded generator of job classes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from fleetlab.model.cluster import SpecModel
from fleetlab.model.job import Image, Job, JobClass
from fleetlab.model.kube import Affinity, Toleration
from fleetlab.model.limits import (
    MAX_ARRIVALS_PER_HOUR,
    MAX_GENERATED_JOBS,
    MAX_TOTAL_PODS,
    Count,
    Float,
    Int,
    Priority,
)
from fleetlab.model.pod_constraints import PodAffinityTerm, PodAntiAffinityTerm, TopologySpreadConstraint
from fleetlab.model.units import Bytes, MilliCpu, Seconds


class Choice(SpecModel):
    """A discrete distribution: ``values`` drawn with relative ``weights`` (uniform when omitted)."""

    values: tuple[Count, ...] = Field(min_length=1)
    weights: tuple[float, ...] | None = None

    @model_validator(mode="after")
    def _check(self) -> Choice:
        if self.weights is not None:
            if len(self.weights) != len(self.values):
                raise ValueError(f"weights has {len(self.weights)} entries but values has {len(self.values)}")
            if any(w < 0 for w in self.weights) or sum(self.weights) <= 0:
                raise ValueError("weights must be >= 0 and not all 0")
        if any(v < 0 for v in self.values):
            raise ValueError("values must be >= 0")
        return self


class DurationDistribution(SpecModel):
    """Runtime distribution: lognormal by median and sigma, exponential by mean, or fixed."""

    kind: Literal["lognormal", "exponential", "fixed"] = "lognormal"
    median: Seconds | None = None
    sigma: Float = Field(default=1.0, ge=0)
    mean: Seconds | None = None
    min: Seconds = 1.0
    max: Seconds | None = None

    @model_validator(mode="after")
    def _check(self) -> DurationDistribution:
        if self.kind in ("lognormal", "fixed") and self.median is None:
            raise ValueError(f"kind {self.kind} needs 'median'")
        if self.kind == "exponential" and self.mean is None:
            raise ValueError("kind exponential needs 'mean'")
        return self


class JobClassSpec(SpecModel):
    """One class of generated jobs: Poisson arrivals and per-job size and duration draws."""

    name: str = Field(min_length=1)
    job_class: JobClass = Field(alias="class")
    arrivals_per_hour: Float = Field(gt=0, le=MAX_ARRIVALS_PER_HOUR)
    count: Int = Field(ge=0, le=MAX_GENERATED_JOBS)
    priority: Priority = 0
    teams: tuple[str, ...] = ("default",)
    pods: Choice = Choice(values=(1,))
    gpus_per_pod: Choice = Choice(values=(1,))
    cpu_per_gpu: MilliCpu = 8000
    memory_per_gpu: Bytes = 64 * 1024**3
    cpu_per_pod: MilliCpu | None = None
    memory_per_pod: Bytes | None = None
    duration: DurationDistribution
    speedup_by_gpu: dict[str, float] = Field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    affinity: Affinity | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    service: str | None = None
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    anti_affinity: tuple[PodAntiAffinityTerm, ...] = ()
    #: podAffinity terms (required or preferred); without labelSelector, towards the job\'s own pods.
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    image: Image | None = None
    data_size: Bytes = 0
    preemptible: bool = False
    gang: bool = False
    topology_required: str | None = None
    topology_preferred: str | None = None
    checkpoint_interval_s: Seconds | None = None
    checkpoint_write_s: Seconds = 0.0
    #: Passed to each job (fleetlab.model.job): busy share of allocated GPU time, interference demand.
    gpu_utilization: Float = Field(default=1.0, ge=0.0, le=1.0)
    interference_demand: dict[str, float] | None = None
    queue: str | None = None
    namespace: str = "default"
    #: First possible arrival of this class (defaults to the generator's start_s).
    start_s: Seconds | None = None


class Generator(SpecModel):
    """A seeded mix of job classes; the scenario seed drives every draw."""

    classes: tuple[JobClassSpec, ...] = Field(min_length=1)
    start_s: Seconds = 0.0

    @model_validator(mode="after")
    def _fits_in_memory(self) -> Generator:
        most = sum(c.count * max(c.pods.values) for c in self.classes)
        if most > MAX_TOTAL_PODS:
            raise ValueError(
                f"the classes may draw up to {most:,} pods (count x the largest pods value, summed); "
                f"at most {MAX_TOTAL_PODS:,} fit in one simulation"
            )
        return self


class TraceSource(SpecModel):
    """A trace file: fleetlab's native CSV/Parquet job table, or the Alibaba 2023 "openb" pod list."""

    path: str = Field(min_length=1)
    format: Literal["native", "alibaba-openb"] = "native"
    limit: Int | None = Field(default=None, ge=1, le=MAX_TOTAL_PODS)
    time_scale: Float = Field(default=1.0, ge=1e-6, le=1e6)
    #: alibaba-openb: round GPU shares (gpu_milli below 1000) up to whole GPUs instead of sharing GPUs.
    round_up_gpu_shares: bool = False


class Workload(SpecModel):
    """Exactly one of ``jobs``, ``trace`` or ``generator``."""

    jobs: tuple[Job, ...] | None = None
    trace: TraceSource | None = None
    generator: Generator | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Workload:
        given = [n for n in ("jobs", "trace", "generator") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of jobs, trace or generator (got {', '.join(given) or 'none'})"
            )
        return self
