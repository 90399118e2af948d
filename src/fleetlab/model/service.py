"""Online inference services: replicas that run for the whole run and answer Poisson requests under an SLO.

A service is declared next to the workload (``services:`` in the scenario). Its replicas are long-running
pods placed like any job's pods; its request rate and the replicas that are ready give its latency
through the queueing model in ``fleetlab.services.queueing``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from fleetlab.model.cluster import SpecModel
from fleetlab.model.gpus import GPU_MODELS, check_gpu_model, known_gpu_models
from fleetlab.model.job import Image
from fleetlab.model.kube import Affinity, Toleration
from fleetlab.model.limits import Float, Int, Priority
from fleetlab.model.pod_constraints import PodAffinityTerm, PodAntiAffinityTerm, TopologySpreadConstraint
from fleetlab.model.units import Bytes, MilliCpu, Seconds

#: Performance given under this key applies to every GPU model not listed (and to CPU-only replicas).
DEFAULT_PERF = "default"


class ConstantRate(SpecModel):
    """The same request rate all run long."""

    kind: Literal["constant"] = "constant"
    rps: Float = Field(ge=0)


class DiurnalRate(SpecModel):
    """``rps(t) = mean_rps·(1 + amplitude·cos(2π(h(t) - peak_hour)/24))``, h(t) the hour of day (run start
    is 00:00 plus ``start_hour``); the mean over a day is ``mean_rps``, the peak
    ``mean_rps·(1+amplitude)``."""

    kind: Literal["diurnal"]
    mean_rps: Float = Field(ge=0)
    amplitude: Float = Field(default=0.5, ge=0, le=1)
    peak_hour: Float = Field(default=14.0, ge=0, lt=24)
    start_hour: Float = Field(default=0.0, ge=0, lt=24)


class TraceRate(SpecModel):
    """A CSV of ``time,rps`` rows: each rate holds until the next row's time, the last one to the end.

    The loader reads the file into ``times_s``/``rps`` (see spec/service_trace.py)."""

    kind: Literal["trace"]
    path: str = Field(min_length=1)
    times_s: tuple[float, ...] = ()
    rps: tuple[float, ...] = ()


RateCurve = Annotated[ConstantRate | DiurnalRate | TraceRate, Field(discriminator="kind")]


class ReplicaPerformance(SpecModel):
    """What one replica sustains on a GPU model: requests/s at full load and the time one request takes.

    ``service_time_ms × throughput_rps`` requests are served at once (rounded, at least 1): a replica is
    that many servers of the queueing model, each at ``1/service_time``."""

    throughput_rps: Float = Field(gt=0)
    service_time_ms: Float | None = Field(default=None, gt=0)

    def servers(self) -> int:
        """Concurrent requests one replica serves."""
        if self.service_time_ms is None:
            return 1
        return max(1, round(self.throughput_rps * self.service_time_ms / 1000.0))

    def server_rate(self) -> float:
        """Requests/s of one of those servers (``throughput / servers``)."""
        return self.throughput_rps / self.servers()


class Replicas(SpecModel):
    """The replica count, or its autoscaling bounds (``max`` defaults to ``min``)."""

    min: Int = Field(default=1, ge=0)
    max: Int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _bounds(self) -> Replicas:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"replicas.max ({self.max}) must be >= replicas.min ({self.min})")
        return self

    @property
    def upper(self) -> int:
        """The most replicas the service may have."""
        return self.min if self.max is None else self.max


class LatencySlo(SpecModel):
    """Targets on the response time (queueing + service) in milliseconds; at least one."""

    p50_ms: Float | None = Field(default=None, gt=0)
    p99_ms: Float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _some(self) -> LatencySlo:
        if self.p50_ms is None and self.p99_ms is None:
            raise ValueError("give p50_ms and/or p99_ms")
        return self


class ServiceAutoscaling(SpecModel):
    """The HorizontalPodAutoscaler's algorithm on replica utilisation (rps over ready capacity).

    ``desired = ceil(ready × utilisation / target)`` unless ``|utilisation/target - 1| <= tolerance``;
    a scale-up takes the lowest recommendation of the last ``scale_up_stabilization_s`` and a
    scale-down the highest of the last ``scale_down_stabilization_s`` (HPA's behavior defaults: 0 s and
    300 s; its default tolerance is 0.1). Evaluated every ``evaluation_step_s`` of the service."""

    target_utilization: Float = Field(gt=0, le=1)
    tolerance: Float = Field(default=0.1, ge=0, lt=1)
    scale_up_stabilization_s: Seconds = 0.0
    scale_down_stabilization_s: Seconds = 300.0


class Service(SpecModel):
    """One inference service: its replicas' pods, their performance, the SLO and the request rate."""

    name: str = Field(min_length=1, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    replicas: Replicas = Replicas()
    gpus_per_replica: Int = Field(default=1, ge=0)
    #: Only nodes of this GPU model (a nodeSelector on nvidia.com/gpu.product).
    gpu_model: str | None = None
    #: Each replica takes a share of one GPU (thousandths, as a job's ``gpu_milli``) instead of whole GPUs.
    gpu_milli: int | None = Field(default=None, ge=1, le=999)
    #: Each replica takes ``gpus_per_replica`` instances of this MIG profile (``nvidia.com/mig-<profile>``,
    #: the device plugin's mixed strategy) instead of whole GPUs.
    mig_profile: str | None = Field(default=None, pattern=r"^[1-7]g\.[0-9]+gb(\+me)?$")
    cpu_per_replica: MilliCpu = 8000
    memory_per_replica: Bytes = 64 * 1024**3
    performance: dict[str, ReplicaPerformance] = Field(min_length=1)
    service_time_distribution: Literal["exponential", "deterministic"] = "exponential"
    slo: LatencySlo
    rate: RateCurve
    autoscaling: ServiceAutoscaling | None = None
    start_s: Seconds = 0.0
    evaluation_step_s: Seconds = 60.0
    priority: Priority = 0
    team: str = "default"
    tolerations: tuple[Toleration, ...] = ()
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    affinity: Affinity | None = None
    #: Spread and anti-affinity for the replicas (kube-scheduler's PodTopologySpread and
    #: InterPodAffinity); a constraint without a selector counts this service's replicas.
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    anti_affinity: tuple[PodAntiAffinityTerm, ...] = ()
    #: podAffinity terms (required or preferred); without labelSelector, towards the job\'s own pods.
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    labels: dict[str, str] = Field(default_factory=dict)
    preemptible: bool = False
    #: Pulled (unless cached) and downloaded before a replica is ready, as for any pod.
    image: Image | None = None
    data_size: Bytes = 0

    @field_validator("gpu_model")
    @classmethod
    def _gpu_model(cls, value: str | None) -> str | None:
        return None if value is None else check_gpu_model(value)

    @field_validator("performance")
    @classmethod
    def _perf_models(cls, value: dict[str, ReplicaPerformance]) -> dict[str, ReplicaPerformance]:
        for name in value:
            if name != DEFAULT_PERF and name not in GPU_MODELS:
                raise ValueError(
                    f"performance: unknown GPU model {name!r}; use {DEFAULT_PERF!r} or one of "
                    f"{', '.join(known_gpu_models())}"
                )
        return value

    @model_validator(mode="after")
    def _check(self) -> Service:
        if self.evaluation_step_s <= 0:
            raise ValueError("evaluation_step_s must be > 0")
        if self.autoscaling is not None and self.replicas.min < 1:
            raise ValueError("an autoscaled service needs replicas.min >= 1 (the HPA does not scale from 0)")
        if (
            self.gpu_model is not None
            and self.gpu_model not in self.performance
            and (DEFAULT_PERF not in self.performance)
        ):
            raise ValueError(f"performance gives no entry for gpu_model {self.gpu_model!r} (nor 'default')")
        if self.gpu_milli is not None and self.mig_profile is not None:
            raise ValueError("give gpu_milli (a share of one GPU) or mig_profile (MIG instances), not both")
        if (self.gpu_milli is not None or self.mig_profile is not None) and self.gpus_per_replica < 1:
            raise ValueError("gpu_milli and mig_profile need gpus_per_replica >= 1")
        if self.gpu_milli is not None and self.gpus_per_replica != 1:
            raise ValueError("gpu_milli is a share of one GPU: gpus_per_replica must be 1")
        return self

    def perf_on(self, gpu_model: str | None) -> ReplicaPerformance | None:
        """The replica's performance on a node of this GPU model (None: not given for it)."""
        if gpu_model is not None and gpu_model in self.performance:
            return self.performance[gpu_model]
        return self.performance.get(DEFAULT_PERF)


def check_services(services: tuple[Service, ...], horizon_s: float | None) -> None:
    """Services run until the horizon, so a scenario with services needs one; names must be unique."""
    if not services:
        return
    if horizon_s is None:
        raise ValueError("services run until the end of the run: set horizon_s when services are declared")
    names = [s.name for s in services]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise ValueError(f"service name(s) used twice: {', '.join(dups)}")
    late = [s.name for s in services if s.start_s >= horizon_s]
    if late:
        raise ValueError(f"service(s) {', '.join(late)} start at or after horizon_s ({horizon_s:g} s)")
