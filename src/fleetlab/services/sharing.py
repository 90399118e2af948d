"""What GPU sharing does to a service replica's capacity, and the latency and SLO attainment that follow.

A replica that serves ``μ`` requests per second on a GPU of its own serves ``μ × speed`` when it shares:

* **time-slicing and fractions** (device plugin ``sharing.timeSlicing``; KAI / ``gpu_milli`` shares, which
  time-share compute the same way): with ``k`` pods running on the GPU each runs at
  ``1 / (1 + α·(k−1))`` — the slowdown fleetlab already applies to batch work on shared GPUs (α =
  ``slowdown_per_extra_pod``), so a co-tenant's start or end changes the replica's speed at once;
* **MPS** (device plugin ``sharing.mps`` with ``replicas: n``): each client is limited to ``1/n`` of the
  GPU's compute whether or not the others are busy, so the speed is ``1/n`` throughout;
* **MIG**: an instance owns its slices; its speed is its compute fraction (``g`` of the GPU's 7 compute
  slices for a ``g``g profile) and co-tenants on other instances do not change it.

Latency then follows the queueing model of ``services/queueing.py`` with the pool's servers at the mean
rate ``(Σ μ·speed_i)/c`` (replicas slowed differently are pooled at their mean rate: the M/M/c model
needs identical servers; with one replica it is exact). SLO attainment is, as for every service, the share
of time whose percentiles meet the targets; a stretch where the offered load reaches the slowed capacity
is saturated (every request late). *Latency spread* is the time-weighted standard deviation of p99 over the
unsaturated stretches, with the saturated share of time beside it — how much co-tenancy moves latency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from fleetlab.services.queueing import Discipline, response_percentile

__all__ = [
    "MIG_COMPUTE_SLICES",
    "ServiceStretch",
    "SharingOutcome",
    "latency_spread",
    "pool_rate",
    "replica_speed",
    "sharing_outcome",
]

ShareMode = Literal["exclusive", "time-slicing", "fraction", "mps", "mig"]
#: Compute slices of a whole GPU under MIG (A100 / H100 / H200 / B200: 7).
MIG_COMPUTE_SLICES = 7


def replica_speed(
    mode: ShareMode,
    pods_on_gpu: int = 1,
    slowdown_per_extra_pod: float = 1.0,
    mps_replicas: int = 1,
    mig_compute_slices: int = MIG_COMPUTE_SLICES,
) -> float:
    """The replica's speed relative to a GPU of its own (see the module docstring for each mode)."""
    if mode == "exclusive":
        return 1.0
    if mode in ("time-slicing", "fraction"):
        if pods_on_gpu < 1:
            raise ValueError("pods_on_gpu counts the replica itself: at least 1")
        return 1.0 / (1.0 + slowdown_per_extra_pod * (pods_on_gpu - 1))
    if mode == "mps":
        if mps_replicas < 1:
            raise ValueError("sharing.mps replicas must be at least 1")
        return 1.0 / mps_replicas
    if not 1 <= mig_compute_slices <= MIG_COMPUTE_SLICES:
        raise ValueError(f"a MIG profile has 1 to {MIG_COMPUTE_SLICES} compute slices")
    return mig_compute_slices / MIG_COMPUTE_SLICES


def pool_rate(server_rate: float, speeds: Sequence[float]) -> tuple[int, float]:
    """(servers, per-server rate) of ready replicas running at ``speeds``: the mean slowed rate."""
    if not speeds:
        return 0, server_rate
    return len(speeds), server_rate * sum(speeds) / len(speeds)


@dataclass(frozen=True)
class ServiceStretch:
    """A stretch of time with constant traffic and constant replica speeds."""

    duration_s: float
    rps: float
    server_rate: float
    speeds: tuple[float, ...]


@dataclass(frozen=True)
class SharingOutcome:
    """Per stretch p99 (ms, inf when saturated) and SLO verdict; over all: attainment (% of time), the
    time-weighted mean and standard deviation of the finite p99s, and the saturated share of time (%)."""

    p99_ms: tuple[float, ...]
    slo_met: tuple[bool, ...]
    slo_attainment_pct: float
    p99_ms_mean: float
    p99_ms_std: float
    saturated_pct: float


def sharing_outcome(
    stretches: Sequence[ServiceStretch], p99_target_ms: float, discipline: Discipline = "M/M/c"
) -> SharingOutcome:
    """Latency and SLO attainment of one service over stretches of sharing."""
    if not stretches:
        raise ValueError("no stretch of time to evaluate")
    pools = [pool_rate(s.server_rate, s.speeds) for s in stretches]
    lam = np.array([s.rps for s in stretches], dtype=np.float64)
    mu = np.array([rate for _, rate in pools], dtype=np.float64)
    c = np.array([servers for servers, _ in pools], dtype=np.float64)
    dur = np.array([s.duration_s for s in stretches], dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p99 = response_percentile(0.99, lam, mu, c, discipline) * 1000.0
    idle = lam <= 0
    met = idle | (p99 <= p99_target_ms)
    total = float(dur.sum())
    mean, std, saturated_pct = latency_spread(p99, dur, idle)
    return SharingOutcome(
        p99_ms=tuple(float(x) for x in p99),
        slo_met=tuple(bool(x) for x in met),
        slo_attainment_pct=100.0 * float(dur[met].sum()) / total if total else 0.0,
        p99_ms_mean=mean,
        p99_ms_std=std,
        saturated_pct=saturated_pct,
    )


def latency_spread(
    p99_ms: NDArray[np.float64], duration_s: NDArray[np.float64], idle: NDArray[np.bool_]
) -> tuple[float, float, float]:
    """(time-weighted mean of the finite p99s, their time-weighted standard deviation, % of the time
    saturated) over stretches of ``duration_s``; stretches without traffic (``idle``) count in the time
    only. NaN mean and deviation when no stretch has a finite p99."""
    finite = np.isfinite(p99_ms) & ~idle
    total = float(duration_s.sum())
    mean = std = math.nan
    if finite.any() and duration_s[finite].sum() > 0:
        mean = float(np.average(p99_ms[finite], weights=duration_s[finite]))
        std = float(math.sqrt(np.average((p99_ms[finite] - mean) ** 2, weights=duration_s[finite])))
    saturated = ~np.isfinite(p99_ms) & ~idle
    return mean, std, 100.0 * float(duration_s[saturated].sum()) / total if total else 0.0
