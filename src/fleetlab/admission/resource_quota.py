"""Namespace ResourceQuota as the API server enforces it on pods (kubernetes/kubernetes
``pkg/quota/v1/evaluator/core/pods.go`` and the ResourceQuota admission plugin, v1.35).

A pod's usage: ``count/pods`` always; unless it is terminal (Succeeded / Failed) or deleted past its grace
period, also ``pods`` 1 and, from its requests and limits aggregated as the scheduler does (the sum of the
app containers and sidecars, at least each init container, pod overhead added; pod-level cpu / memory /
hugepages when set), ``cpu`` = ``requests.cpu``, ``limits.cpu``, the same for memory and
ephemeral-storage, ``hugepages-<size>`` = ``requests.hugepages-<size>``, and ``requests.<name>`` for
extended resources (``requests.nvidia.com/gpu``).

Admission refuses a pod that would take any quota of its namespace over its hard limit ("exceeded
quota"), and — the old compatibility rule — a pod with a container that does not set cpu or memory when a
quota limits that resource ("must specify"). Only quotas whose scopes match the pod count it. The pod's
controller then syncs again after its work queue's per-item exponential backoff (client-go
``ItemExponentialFailureRateLimiter``): base · 2^(n−1) after the n-th failed sync in a row, capped —
1 s to 1 min for the Job controller (``DefaultJobApiBackOff`` / ``MaxJobApiBackOff``, Kubernetes 1.36;
older releases used 10 s to 6 min), 5 ms to 1000 s for the ReplicaSet controller (client-go's
``DefaultControllerRateLimiter``).

Quantities are exact (fractions): quota arithmetic never rounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from fleetlab.model.quantity import parse_quantity
from fleetlab.model.resource_quota import ResourceQuota, ScopedRequirement
from fleetlab.spec.kube_requests import add_into, containers_total

__all__ = [
    "JOB_CONTROLLER_BACKOFF",
    "REPLICASET_CONTROLLER_BACKOFF",
    "ControllerBackoff",
    "QuotaCharge",
    "QuotaDecision",
    "admit_charges",
    "admit_pod",
    "creation_retry_delay_s",
    "pod_constraints",
    "pod_totals",
    "pod_usage",
    "quota_charges",
    "quota_matches",
    "status_used",
    "usage_stats",
]

Usage = dict[str, Fraction]
COMPUTE = ("cpu", "memory", "ephemeral-storage")
#: Resources whose quota obliges every container to set them (pods.go ``validationSet``).
VALIDATION_SET = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
Pods = Iterable[Mapping[str, Any]]


def _list(values: Any) -> Usage:
    if not isinstance(values, Mapping):
        return {}
    return {str(k): parse_quantity(v) for k, v in values.items()}


def _container(c: Mapping[str, Any]) -> tuple[Usage, Usage]:
    res = c.get("resources") or {}
    requests, limits = _list(res.get("requests")), _list(res.get("limits"))
    for name, value in limits.items():  # the API server's defaulting: a limit alone is also the request
        requests.setdefault(name, value)
    return requests, limits


def pod_totals(spec: Mapping[str, Any], which: int) -> Usage:
    """Requests (``which`` 0) or limits (1) of the pod, as resourcehelper ``PodRequests`` / ``PodLimits``."""
    total: Usage = containers_total(
        spec.get("containers") or [], spec.get("initContainers") or [], lambda c, _: _container(c)[which]
    )
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping):
        level = _list(pod_level.get("requests" if which == 0 else "limits"))
        if which == 0:
            for name, value in _list(pod_level.get("limits")).items():
                level.setdefault(name, value)
        total.update({k: v for k, v in level.items() if k in ("cpu", "memory") or k.startswith("hugepages-")})
    overhead = _list(spec.get("overhead"))
    if which == 0:
        add_into(total, overhead)
    else:  # overhead counts in a limit only where the pod has one
        add_into(total, {k: v for k, v in overhead.items() if k in total})
    return total


def _extended(name: str) -> bool:
    return "/" in name and not name.startswith("kubernetes.io/") and not name.startswith("requests.")


def counts(pod: Mapping[str, Any], now: datetime | None = None) -> bool:
    """Whether the pod still holds quota: not Succeeded / Failed, not deleted past its grace period."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    meta = pod.get("metadata") or {}
    deleted = meta.get("deletionTimestamp")
    if deleted and now is not None:
        grace = meta.get("deletionGracePeriodSeconds") or 0
        when = datetime.fromisoformat(str(deleted).replace("Z", "+00:00"))
        if now > when + timedelta(seconds=int(grace)):
            return False
    return True


def pod_usage(pod: Mapping[str, Any], now: datetime | None = None) -> Usage:
    """The quota resources one pod uses (see the module docstring)."""
    usage: Usage = {"count/pods": Fraction(1)}
    if not counts(pod, now):
        return usage
    spec = pod.get("spec") or {}
    usage["pods"] = Fraction(1)
    requests, limits = pod_totals(spec, 0), pod_totals(spec, 1)
    for name in COMPUTE:
        if name in requests:
            usage[name] = usage[f"requests.{name}"] = requests[name]
        if name in limits:
            usage[f"limits.{name}"] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = usage[f"requests.{name}"] = value
        elif _extended(name):
            usage[f"requests.{name}"] = value
    return usage


def pod_constraints(required: Iterable[str], pod: Mapping[str, Any]) -> str | None:
    """``must specify cpu for: a,b; memory for: a`` when a quota limits cpu or memory and a container
    leaves it out (pods.go ``Constraints``); None when every container sets what is required."""
    spec = pod.get("spec") or {}
    needed = set(required) & VALIDATION_SET
    level = spec.get("resources")
    if isinstance(level, Mapping) and (level.get("requests") or level.get("limits")):
        return None  # pod-level resources (PodLevelResources) stand for the containers'
    missing: dict[str, set[str]] = {}
    for c in (*(spec.get("initContainers") or []), *(spec.get("containers") or [])):
        requests, limits = _container(c)
        names = {n for r in requests if r in ("cpu", "memory") for n in (r, f"requests.{r}")}
        names |= {f"limits.{r}" for r in limits if r in ("cpu", "memory")}
        for name in needed - names:
            missing.setdefault(name, set()).add(str(c.get("name", "")))
    if not missing:
        return None
    parts = [f"{r} for: {','.join(sorted(names))}" for r, names in sorted(missing.items())]
    return "must specify " + "; ".join(parts)


def _best_effort(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    for c in (*(spec.get("initContainers") or []), *(spec.get("containers") or [])):
        requests, limits = _container(c)
        if any(k in ("cpu", "memory") for k in (*requests, *limits)):
            return False
    return True


def _scope_matches(scope: str, pod: Mapping[str, Any], req: ScopedRequirement | None = None) -> bool:
    spec = pod.get("spec") or {}
    if scope == "Terminating":
        return spec.get("activeDeadlineSeconds") is not None
    if scope == "NotTerminating":
        return spec.get("activeDeadlineSeconds") is None
    if scope == "BestEffort":
        return _best_effort(pod)
    if scope == "NotBestEffort":
        return not _best_effort(pod)
    if scope == "CrossNamespacePodAffinity":
        return False  # fleetlab reads no cross-namespace affinity terms
    value = spec.get("priorityClassName") or ""
    if req is None or req.operator == "Exists":
        return bool(value)
    if req.operator == "DoesNotExist":
        return not value
    if req.operator == "In":
        return value in req.values
    return value not in req.values


def quota_matches(quota: ResourceQuota, pod: Mapping[str, Any]) -> bool:
    """Whether every scope and scopeSelector expression of the quota matches the pod."""
    scopes = all(_scope_matches(s, pod) for s in quota.spec.scopes)
    selector = quota.spec.scope_selector
    exprs = selector.match_expressions if selector else ()
    return scopes and all(_scope_matches(r.scope_name, pod, r) for r in exprs)


def usage_stats(quota: ResourceQuota, pods: Pods, now: datetime | None = None) -> Usage:
    """What the pods the quota's scopes match use, every resource (evaluator ``UsageStats``)."""
    used: Usage = {}
    for pod in pods:
        if quota_matches(quota, pod):
            add_into(used, pod_usage(pod, now))
    return used


def status_used(quota: ResourceQuota, pods: Pods, now: datetime | None = None) -> Usage:
    """The quota's ``status.used``: the usage of the resources it limits (0 where nothing uses them)."""
    stats = usage_stats(quota, pods, now)
    return {k: stats.get(k, Fraction(0)) for k in quota.spec.hard}


def _fmt(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    milli = value * 1000
    return f"{milli.numerator // milli.denominator}m" if milli.denominator == 1 else str(float(value))


def _pretty(values: Mapping[str, Fraction]) -> str:
    return ",".join(f"{k}={_fmt(v)}" for k, v in sorted(values.items()))


@dataclass(frozen=True)
class QuotaDecision:
    """Admitted, or refused with the API server's message (the pod is not created)."""

    admitted: bool
    message: str = ""
    #: What the pod adds to each matching quota, by quota name (empty when refused).
    charged: Mapping[str, Usage] | None = None


@dataclass(frozen=True)
class QuotaCharge:
    """What one pod would add to one quota that matches it (``delta``, the resources the quota limits),
    the quota's hard limits, and the "must specify" problem that refuses the pod whatever the usage."""

    quota: str
    hard: Mapping[str, Fraction]
    delta: Mapping[str, Fraction]
    problem: str | None = None


def quota_charges(
    pod: Mapping[str, Any], quotas: Sequence[ResourceQuota], now: datetime | None = None
) -> list[QuotaCharge]:
    """Per quota of the pod's namespace that matches it (by name), what admitting it would charge: the
    part of the admission check that depends on the pod alone, computed once per pod shape."""
    usage = pod_usage(pod, now)
    out: list[QuotaCharge] = []
    for quota in sorted(quotas, key=lambda q: q.metadata.name):
        if not quota_matches(quota, pod):
            continue
        hard = {k: parse_quantity(v) for k, v in quota.spec.hard.items()}
        delta = {k: v for k, v in usage.items() if k in hard}
        out.append(QuotaCharge(quota.metadata.name, hard, delta, pod_constraints(hard, pod)))
    return out


def admit_charges(
    charges: Sequence[QuotaCharge], used: Mapping[str, Mapping[str, Fraction]]
) -> QuotaDecision:
    """The ResourceQuota admission check of a pod whose charges are ``charges`` against what each quota
    uses now (``used``: per quota name its ``status.used``): refused at the first quota (by name) it
    breaks, with the API server's message."""
    charged: dict[str, Usage] = {}
    for charge in charges:
        if charge.problem is not None:
            return QuotaDecision(False, f"failed quota: {charge.quota}: {charge.problem}")
        delta, hard = charge.delta, charge.hard
        now_used = used.get(charge.quota, {})
        over = [k for k, v in delta.items() if now_used.get(k, Fraction(0)) + v > hard[k]]
        if over:
            return QuotaDecision(
                False,
                f"exceeded quota: {charge.quota}, requested: {_pretty({k: delta[k] for k in over})}, "
                f"used: {_pretty({k: now_used.get(k, Fraction(0)) for k in over})}, "
                f"limited: {_pretty({k: hard[k] for k in over})}",
            )
        charged[charge.quota] = dict(delta)
    return QuotaDecision(True, charged=charged)


def admit_pod(
    pod: Mapping[str, Any],
    quotas: Sequence[ResourceQuota],
    used: Mapping[str, Mapping[str, Fraction]],
    now: datetime | None = None,
) -> QuotaDecision:
    """The ResourceQuota admission check of one new pod against the quotas of its namespace (``used``:
    per quota name its current ``status.used``)."""
    return admit_charges(quota_charges(pod, quotas, now), used)


@dataclass(frozen=True)
class ControllerBackoff:
    """A controller work queue's per-item exponential failure backoff (client-go
    ``ItemExponentialFailureRateLimiter``): the n-th failed sync in a row waits base · 2^(n−1), at most
    ``max_s``; a successful sync forgets the count."""

    base_s: float
    max_s: float

    def delay_s(self, failures: int) -> float:
        """Seconds before the next sync after ``failures`` (≥ 1) failed syncs in a row."""
        if failures < 1:
            raise ValueError("failures are counted from 1")
        return float(min(self.base_s * 2.0 ** min(failures - 1, 62), self.max_s))


#: kubernetes/kubernetes pkg/controller/job/job_controller.go: ``DefaultJobApiBackOff`` 1 s,
#: ``MaxJobApiBackOff`` 1 min (a sync that failed to create pods is requeued rate-limited).
JOB_CONTROLLER_BACKOFF = ControllerBackoff(1.0, 60.0)
#: client-go ``DefaultControllerRateLimiter``'s per-item part (the ReplicaSet controller's queue).
REPLICASET_CONTROLLER_BACKOFF = ControllerBackoff(0.005, 1000.0)


def creation_retry_delay_s(failures: int) -> float:
    """The ReplicaSet controller's wait before creating the pod again after ``failures`` refusals
    (client-go ``DefaultControllerRateLimiter``'s per-item exponential part: 5 ms · 2^(failures−1), at
    most 1000 s)."""
    return REPLICASET_CONTROLLER_BACKOFF.delay_s(failures)
