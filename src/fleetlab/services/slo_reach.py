"""Latency targets no replica count can meet: a request's response time is at least its own service
time, so with as many replicas as wanted (no queueing) the q-quantile is the service time's:
``-ln(1 - q)/μ`` for exponential service times, ``1/μ`` for deterministic ones (services/queueing.py).
A target below that gives 0 % SLO attainment whatever the autoscaler does; ``validate`` and the run say so.
"""

from __future__ import annotations

import math

from fleetlab.model.service import Service

#: The targets a LatencySlo can set, with their quantile.
TARGETS = (("p50_ms", 0.5), ("p99_ms", 0.99))


def best_percentile_ms(q: float, server_rate: float, distribution: str) -> float:
    """The q-quantile (ms) of the response time with no queueing: the service time's own quantile."""
    if distribution == "deterministic":
        return 1000.0 / server_rate
    return -math.log(1.0 - q) / server_rate * 1000.0


def unreachable_targets(service: Service) -> list[str]:
    """One line per latency target of ``service`` below what its service time allows on some GPU model."""
    out: list[str] = []
    for gpu_model, perf in sorted(service.performance.items()):
        if perf.service_time_ms is None:
            continue
        rate = perf.server_rate()
        for field, q in TARGETS:
            target = getattr(service.slo, field)
            best = best_percentile_ms(q, rate, service.service_time_distribution)
            if target is not None and target < best:
                out.append(
                    f"service {service.name}: slo.{field} {target:g} ms is unreachable on {gpu_model}: with "
                    f"{service.service_time_distribution} service times of {1000.0 / rate:g} ms the best "
                    f"reachable {field[:3]} is {best:.0f} ms at any replica count (no queueing); SLO "
                    "attainment there will be 0 %"
                )
    return out
