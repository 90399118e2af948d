"""Service latency and SLO attainment from a run's service samples, computed for all samples at once.

Each sample holds from its time to the next sample (the last one to the end of the run). Its latency
percentiles come from the queueing model (fleetlab.services.queueing) with the sample's request rate,
servers and per-server rate. A sample meets the SLO when every target given is met; one with no
traffic meets it trivially. *Late requests* are ``∫ rps·P(T > target) dt`` — the request-seconds served
late — against the p99 target when one is given, else the p50 target; a saturated sample (no ready
replica, or more traffic than the replicas can serve) counts all its requests as late.

On a cluster where replicas can share GPUs the samples carry the replicas' mean speed, and each service
also reports the latency variation sharing causes (``services/sharing.latency_spread``): the time-weighted
standard deviation of p99 over unsaturated samples, the saturated share of its time and the time-weighted
mean replica speed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.service import Service
from fleetlab.services.queueing import Discipline, response_percentile, response_tail
from fleetlab.services.sharing import latency_spread
from fleetlab.sim.result import JobTable, SimulationResult
from fleetlab.sim.service_record import ServiceSamples
from fleetlab.sim.service_replicas import is_service_job

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class SampleLatency:
    """Per-sample columns derived from the samples."""

    duration_s: FloatArray
    p50_ms: FloatArray
    p99_ms: FloatArray
    slo_met: NDArray[np.bool_]
    late_requests: FloatArray


@dataclass(frozen=True)
class ServiceSummary:
    """One service's figures for the run summary and the comparison table."""

    service: str
    slo_attainment_pct: float
    requests: float
    late_requests: float
    late_requests_pct: float
    p99_ms_mean: float | None
    ready_replicas_mean: float
    replicas_lost_to_failures: int
    replicas_lost_to_preemption: int
    replicas_lost_to_spot: int
    #: Under GPU sharing only (None otherwise, and left out of the JSON): the time-weighted standard
    #: deviation of p99 over unsaturated samples, % of the time saturated, and the time-weighted mean speed
    #: of the serving replicas (null when no sample had a finite p99 / a serving replica).
    p99_ms_std: float | None = None
    saturated_pct: float | None = None
    replica_speed_mean: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (the sharing figures only when the run recorded replica speeds)."""
        out = asdict(self)
        if self.saturated_pct is None:  # no replica speeds recorded: the cluster shares no GPU
            for key in SHARING_KEYS:
                out.pop(key)
        return out


SHARING_KEYS = ("p99_ms_std", "saturated_pct", "replica_speed_mean")


def _discipline(service: Service) -> Discipline:
    return "M/D/c" if service.service_time_distribution == "deterministic" else "M/M/c"


def sample_latency(samples: ServiceSamples, service: Service, end_ms: int) -> SampleLatency:
    """Percentiles, SLO verdict and late requests of every sample."""
    t = samples.t_ms
    duration = np.diff(np.append(t, max(end_ms, int(t[-1]) if len(t) else end_ms))) / 1000.0
    lam, c = samples.rps, samples.servers
    mu = samples.server_rate
    disc = _discipline(service)
    idle = lam <= 0
    with np.errstate(invalid="ignore"):
        p50 = response_percentile(0.5, lam, mu, c, disc) * 1000.0
        p99 = response_percentile(0.99, lam, mu, c, disc) * 1000.0
    no_server = c <= 0
    p50 = np.where(idle & no_server, np.nan, p50)
    p99 = np.where(idle & no_server, np.nan, p99)
    slo = service.slo
    met = np.ones(len(t), dtype=bool)
    if slo.p50_ms is not None:
        met &= p50 <= slo.p50_ms
    if slo.p99_ms is not None:
        met &= p99 <= slo.p99_ms
    met |= idle
    target_ms = slo.p99_ms if slo.p99_ms is not None else slo.p50_ms
    assert target_ms is not None
    late_fraction = response_tail(target_ms / 1000.0, lam, mu, c, disc)  # 1 where saturated
    late = np.where(idle, 0.0, lam * duration * late_fraction)
    return SampleLatency(duration, p50, p99, met, late)


def _eviction_causes(result: SimulationResult, pods: NDArray[np.int64]) -> tuple[int, int, int]:
    """(failures, preemptions, spot reclaims) among the evictions of these pods."""
    seg = result.segments
    mine = np.isin(seg.pod, pods) & seg.evicted
    names = {name: i for i, name in enumerate(result.nodes.names)}
    failed = set()
    if result.lifecycle is not None:
        failed = {(names[f.node], f.t_ms) for f in result.lifecycle.failures}
    reclaimed = set()
    if result.interruptions is not None:
        log = result.interruptions
        reclaimed = set(zip(log.node.tolist(), log.reclaim_ms.tolist(), strict=True))
    fails = spot = other = 0
    for node, end in zip(seg.node[mine].tolist(), seg.end_ms[mine].tolist(), strict=True):
        if (node, end) in failed:
            fails += 1
        elif (node, end) in reclaimed:
            spot += 1
        else:
            other += 1
    return fails, other, spot


def _serving_mean(speed: FloatArray, duration_s: FloatArray) -> float | None:
    """Time-weighted mean replica speed over the samples where some replica served (None: never)."""
    serving = np.isfinite(speed) & (duration_s > 0)
    if not serving.any():
        return None
    return float(np.average(speed[serving], weights=duration_s[serving]))


def service_rows(result: SimulationResult) -> list[ServiceSummary]:
    """One summary per service (empty without services)."""
    record = result.services
    if record is None:
        return []
    out: list[ServiceSummary] = []
    for samples in record.services:
        service = samples.spec
        lat = sample_latency(samples, service, result.end_ms)
        span = float(lat.duration_s.sum())
        requests = float(np.dot(samples.rps, lat.duration_s))
        late = float(lat.late_requests.sum())
        finite = np.isfinite(lat.p99_ms)
        fails, preempted, spot = _eviction_causes(result, samples.pods)
        sharing: dict[str, float | None] = {}
        if samples.speed is not None:
            _, std, saturated = latency_spread(lat.p99_ms, lat.duration_s, samples.rps <= 0)
            sharing = {
                "p99_ms_std": None if std != std else std,
                "saturated_pct": saturated,
                "replica_speed_mean": _serving_mean(samples.speed, lat.duration_s),
            }
        out.append(
            ServiceSummary(
                service=samples.name,
                slo_attainment_pct=100.0 * float(lat.duration_s[lat.slo_met].sum()) / span if span else 0.0,
                requests=requests,
                late_requests=late,
                late_requests_pct=100.0 * late / requests if requests else 0.0,
                p99_ms_mean=float(np.average(lat.p99_ms[finite], weights=lat.duration_s[finite]))
                if finite.any() and lat.duration_s[finite].sum() > 0
                else None,
                ready_replicas_mean=float(np.dot(samples.ready, lat.duration_s)) / span if span else 0.0,
                replicas_lost_to_failures=fails,
                replicas_lost_to_preemption=preempted,
                replicas_lost_to_spot=spot,
                **sharing,
            )
        )
    return out


def service_columns(result: SimulationResult) -> dict[str, Any]:
    """The services.parquet columns: one row per service per evaluation step."""
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "time_s",
            "service",
            "ready_replicas",
            "desired_replicas",
            "servers",
            "rps",
            "p50_ms",
            "p99_ms",
            "slo_met",
            "late_requests",
        )
    }
    record = result.services
    if record is None:
        return cols
    shared = any(samples.speed is not None for samples in record.services)
    if shared:
        cols["replica_speed"] = []
    for samples in record.services:
        lat = sample_latency(samples, samples.spec, result.end_ms)
        cols["time_s"].extend((samples.t_ms / 1000.0).tolist())
        cols["service"].extend([samples.name] * len(samples.t_ms))
        cols["ready_replicas"].extend(samples.ready.tolist())
        cols["desired_replicas"].extend(samples.desired.tolist())
        cols["servers"].extend(samples.servers.tolist())
        cols["rps"].extend(samples.rps.tolist())
        cols["p50_ms"].extend(lat.p50_ms.tolist())
        cols["p99_ms"].extend(lat.p99_ms.tolist())
        cols["slo_met"].extend(lat.slo_met.tolist())
        cols["late_requests"].extend(lat.late_requests.tolist())
        if shared:
            speed = samples.speed if samples.speed is not None else np.ones(len(samples.t_ms))
            cols["replica_speed"].extend(speed.tolist())
    return cols


def workload_mask(jobs: JobTable) -> NDArray[np.bool_]:
    """True for the jobs of the workload, False for service replica slots."""
    return np.asarray([not is_service_job(i) for i in jobs.ids], dtype=bool)


def workload_jobs(jobs: JobTable) -> JobTable:
    """The job table without the service replica slots, so job figures (waits, completions, pending)
    describe the workload only; replicas are reported per service instead."""
    keep = workload_mask(jobs)
    if keep.all():
        return jobs
    picked: dict[str, Any] = {}
    for f in fields(jobs):
        value = getattr(jobs, f.name)
        if value is None:  # a wait bucket the run does not have
            picked[f.name] = None
        elif isinstance(value, list):
            picked[f.name] = [v for v, k in zip(value, keep, strict=True) if k]
        else:
            picked[f.name] = value[keep]
    return JobTable(**picked)


def services_payload(result: SimulationResult) -> dict[str, Any]:
    """``{"services": [...]}`` for summary.json, or nothing without services (files stay as they were)."""
    if result.services is None:
        return {}
    return {
        "services": [row.as_dict() for row in service_rows(result)],
        "service_warnings": list(result.services.warnings),
    }


def service_totals(result: SimulationResult) -> dict[str, Any]:
    """Summary columns over every service: mean SLO attainment, late share of all requests, replicas lost
    (failures, preemption and spot together); empty without services (the Summary defaults apply)."""
    rows = service_rows(result)
    if not rows:
        return {}
    requests = sum(r.requests for r in rows)
    late = sum(r.late_requests for r in rows)
    lost = sum(
        r.replicas_lost_to_failures + r.replicas_lost_to_preemption + r.replicas_lost_to_spot for r in rows
    )
    return {
        "service_slo_attainment_pct": float(np.mean([r.slo_attainment_pct for r in rows])),
        "service_late_requests_pct": 100.0 * late / requests if requests else 0.0,
        "service_replicas_lost": lost,
    }
