"""Kueue's side of a pending workload: which ClusterQueue it waits in, and nominal vs used vs borrowable.

Read from kubectl output of ClusterQueues, LocalQueues, Workloads and ResourceFlavors (and Cohorts for
flat cohorts). The quota figures follow Kueue's resource tree (kubernetes-sigs/kueue
``pkg/cache/scheduler/resource_node.go``) for one cohort level: what a ClusterQueue can still use is its
local (non-lendable) headroom plus what the cohort has unused, capped by ``borrowingLimit``. Usage comes
from the ClusterQueue's ``status.flavorsUsage`` (what Kueue itself reports), else from admitted
Workloads. The Workload's own QuotaReserved/Admitted condition message is shown as Kueue wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetlab.model.limits import MAX_PODS_PER_JOB
from fleetlab.model.quantity import QuantityError
from fleetlab.model.resources import format_amount, parse_amount
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_objects import KubeObject, ShapeError, mapping_list, object_name
from fleetlab.spec.kube_requests import pod_requests


@dataclass
class QuotaRow:
    """One (flavor, resource) of the ClusterQueue the workload asks for."""

    flavor: str
    resource: str
    nominal: str
    borrowing_limit: str | None
    used: str
    #: What can still be used now, and the part of it that is borrowed from the cohort.
    available: str
    borrowable: str
    requested: str
    fits: bool


@dataclass
class QueuedWorkload:
    """A Workload Kueue has not admitted: its queue, Kueue's own message and the quota behind it."""

    workload: str
    owners: list[str]
    local_queue: str
    cluster_queue: str | None
    state: str
    message: str
    requests: dict[str, str]
    quota: list[QuotaRow] = field(default_factory=list)
    verdict: str = ""


def _amount(resource: str, value: Any, where: str) -> int:
    try:
        return parse_amount(resource, value)
    except QuantityError as exc:
        raise SpecError(where, [f"{resource}: {exc}"]) from None


def _conditions(obj: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping):
            out[str(c.get("type"))] = (str(c.get("status", "")), str(c.get("message", "")))
    return out


@dataclass
class _Quota:
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    used: int = 0


class KueueView:
    """Kueue objects indexed for lookups: queues, quotas and usage per (flavor, resource)."""

    def __init__(self, objects: Iterable[KubeObject]) -> None:
        try:
            self._index(objects)
        except ShapeError as exc:
            raise SpecError("Kueue objects", [str(exc)]) from None
        except (AttributeError, TypeError, ValueError) as exc:
            raise SpecError(
                "Kueue objects",
                [f"a field has an unexpected shape ({type(exc).__name__}); expected kubectl output"],
            ) from None

    def _index(self, objects: Iterable[KubeObject]) -> None:
        self.cluster_queues: dict[str, KubeObject] = {}
        self.local_queues: dict[str, str] = {}  # namespace/name -> ClusterQueue
        self.workloads: list[KubeObject] = []
        self.quota: dict[str, dict[tuple[str, str], _Quota]] = {}
        for obj in objects:
            kind = obj.get("kind")
            spec = obj.get("spec") or {}
            if kind == "ClusterQueue":
                if not isinstance(obj.get("spec"), dict):
                    raise ShapeError(f"ClusterQueue {object_name(obj)}: has no `spec` mapping")
                self.cluster_queues[object_name(obj)] = obj
            elif kind == "LocalQueue":
                self.local_queues[object_name(obj)] = str(spec.get("clusterQueue", ""))
            elif kind == "Workload":
                _check_workload(obj)
                self.workloads.append(obj)
        for name, cq in self.cluster_queues.items():
            self.quota[name] = self._quotas(name, cq)
        self._fill_usage()

    def _quotas(self, name: str, cq: KubeObject) -> dict[tuple[str, str], _Quota]:
        out: dict[tuple[str, str], _Quota] = {}
        where = f"ClusterQueue {name}"
        for group in (cq.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    r = str(res.get("name"))
                    limits = [
                        None if res.get(k) is None else _amount(r, res[k], where)
                        for k in ("borrowingLimit", "lendingLimit")
                    ]
                    nominal = _amount(r, res.get("nominalQuota", 0), where)
                    out[(str(flavor.get("name")), r)] = _Quota(nominal, limits[0], limits[1])
        return out

    def _fill_usage(self) -> None:
        reported: set[str] = set()
        for name, cq in self.cluster_queues.items():
            usage = (cq.get("status") or {}).get("flavorsUsage")
            if not isinstance(usage, list):
                continue
            reported.add(name)
            for flavor in usage:
                for res in flavor.get("resources") or []:
                    q = self.quota[name].get((str(flavor.get("name")), str(res.get("name"))))
                    if q is not None:
                        q.used = _amount(str(res.get("name")), res.get("total", 0), f"ClusterQueue {name}")
        for wl in self.workloads:
            admission = (wl.get("status") or {}).get("admission") or {}
            cq_name = str(admission.get("clusterQueue", ""))
            if cq_name not in self.quota or cq_name in reported or not _admitted(wl):
                continue
            for podset in admission.get("podSetAssignments") or []:
                flavors = podset.get("flavors") or {}
                for r, value in (podset.get("resourceUsage") or {}).items():
                    q = self.quota[cq_name].get((str(flavors.get(r, "")), str(r)))
                    if q is not None:
                        q.used += _amount(str(r), value, f"Workload {object_name(wl)}")

    def available(self, cq_name: str, key: tuple[str, str]) -> int:
        """What the ClusterQueue can still use of (flavor, resource) now, borrowing included."""
        q = self.quota[cq_name][key]
        cohort = (self.cluster_queues[cq_name].get("spec") or {}).get("cohortName")
        if not cohort:
            return q.nominal - q.used
        members = [
            self.quota[n][key]
            for n, cq in self.cluster_queues.items()
            if (cq.get("spec") or {}).get("cohortName") == cohort and key in self.quota[n]
        ]
        subtree = sum(m.nominal - _local(m) for m in members)
        usage = sum(max(0, m.used - _local(m)) for m in members)
        parent = subtree - usage
        if q.borrowing_limit is not None:
            stored = q.nominal - _local(q)
            used_in_parent = max(0, q.used - _local(q))
            parent = min(parent, stored - used_in_parent + q.borrowing_limit)
        return max(0, _local(q) - q.used) + parent


#: Kueue's Workload CRD allows at most 8 pod sets (``+kubebuilder:validation:MaxItems=8``).
MAX_POD_SETS = 8


def _check_workload(wl: KubeObject) -> None:
    """podSets: a list of up to 8 mappings, each with an int32 ``count`` and a mapping ``template``."""
    spec = wl.get("spec")
    if not isinstance(spec, dict):
        raise ShapeError(f"Workload {object_name(wl)}: has no `spec` mapping")
    for i, podset in enumerate(mapping_list(wl, "spec.podSets", spec.get("podSets"), MAX_POD_SETS)):
        count = podset.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_PODS_PER_JOB:
            raise ShapeError(
                f"Workload {object_name(wl)}: `spec.podSets[{i}].count` must be a whole number "
                f"0..{MAX_PODS_PER_JOB:,}"
            )
        template = podset.get("template")
        if template is None:
            continue
        if not (isinstance(template, dict) and isinstance(template.get("spec", {}), dict)):
            raise ShapeError(
                f"Workload {object_name(wl)}: `spec.podSets[{i}].template` must be a pod template"
            )
    try:
        workload_requests(wl)  # the pod templates parse as pod specs do, or the Workload is refused here
    except (AttributeError, TypeError, ValueError) as exc:
        raise ShapeError(
            f"Workload {object_name(wl)}: a pod template field has an unexpected shape ({type(exc).__name__})"
        ) from None


def _local(q: _Quota) -> int:
    return 0 if q.lending_limit is None else max(0, q.nominal - q.lending_limit)


def owner_uids(wl: KubeObject) -> set[str]:
    """uids of the Workload's owners (the Job, or the Pods of a plain pod group)."""
    owners = (wl.get("metadata") or {}).get("ownerReferences") or []
    return {str(o.get("uid")) for o in owners if isinstance(o, Mapping) and o.get("uid")}


def _admitted(wl: KubeObject) -> bool:
    return _conditions(wl).get("Admitted", ("", ""))[0] == "True"


def workload_requests(wl: KubeObject) -> dict[str, int]:
    """Total requests of all pod sets: count x the pod template's effective requests."""
    total: dict[str, int] = {}
    where = f"Workload {object_name(wl)}"
    for i, podset in enumerate((wl.get("spec") or {}).get("podSets") or []):
        spec = (podset.get("template") or {}).get("spec") or {}
        per_pod, _ = pod_requests(spec, f"{where}.spec.podSets[{i}].template.spec", where)
        count = int(podset.get("count", 1) or 1)
        for r, v in per_pod.items():
            total[r] = total.get(r, 0) + v * count
    return total


def _state(wl: KubeObject) -> str:
    cond = _conditions(wl)
    if (wl.get("spec") or {}).get("active") is False:
        return "inactive"
    if cond.get("QuotaReserved", ("", ""))[0] == "True":
        return "quota reserved, waiting for admission checks"
    if cond.get("Evicted", ("", ""))[0] == "True":
        return "evicted, requeued"
    return "pending"


def queued_workloads(view: KueueView) -> list[QueuedWorkload]:
    """Every Workload not admitted and not finished, with the quota rows for what it asks."""
    out: list[QueuedWorkload] = []
    for wl in sorted(view.workloads, key=object_name):
        cond = _conditions(wl)
        if _admitted(wl) or cond.get("Finished", ("", ""))[0] == "True":
            continue
        ns = (wl.get("metadata") or {}).get("namespace") or "default"
        lq = str((wl.get("spec") or {}).get("queueName", ""))
        cq_name = view.local_queues.get(f"{ns}/{lq}")
        requests = workload_requests(wl)
        message = cond.get("QuotaReserved", cond.get("Admitted", ("", "")))[1]
        entry = QueuedWorkload(
            workload=object_name(wl),
            owners=sorted(owner_uids(wl)),
            local_queue=f"{ns}/{lq}",
            cluster_queue=cq_name,
            state=_state(wl),
            message=message,
            requests={r: format_amount(r, v) for r, v in sorted(requests.items())},
        )
        if cq_name is None or cq_name not in view.cluster_queues:
            entry.verdict = f"LocalQueue {ns}/{lq} " + (
                "does not exist" if cq_name is None else f"points to missing ClusterQueue {cq_name}"
            )
            out.append(entry)
            continue
        entry.verdict = _verdict(view, cq_name, requests, entry)
        out.append(entry)
    return out


def _verdict(view: KueueView, cq_name: str, requests: dict[str, int], entry: QueuedWorkload) -> str:
    cq = view.cluster_queues[cq_name]
    active = _conditions(cq).get("Active")
    if active is not None and active[0] == "False":
        return f"ClusterQueue {cq_name} is inactive: {active[1]}"
    short: list[str] = []
    for r, want in sorted(requests.items()):
        keys = [k for k in view.quota[cq_name] if k[1] == r]
        if not keys:
            short.append(f"{r} is not covered by ClusterQueue {cq_name}")
            continue
        fits_any = False
        for key in keys:
            q = view.quota[cq_name][key]
            avail = view.available(cq_name, key)
            fits = want <= avail
            fits_any |= fits
            limit = None if q.borrowing_limit is None else format_amount(r, q.borrowing_limit)
            borrowed = max(0, avail - max(0, q.nominal - q.used))
            entry.quota.append(
                QuotaRow(
                    flavor=key[0],
                    resource=r,
                    nominal=format_amount(r, q.nominal),
                    borrowing_limit=limit,
                    used=format_amount(r, q.used),
                    available=format_amount(r, max(0, avail)),
                    borrowable=format_amount(r, borrowed),
                    requested=format_amount(r, want),
                    fits=fits,
                )
            )
        if not fits_any:
            best = max(view.available(cq_name, k) for k in keys)
            short.append(
                f"{r}: needs {format_amount(r, want)}, at most {format_amount(r, max(0, best))} available"
            )
    if short:
        return f"quota: ClusterQueue {cq_name}: " + "; ".join(short)
    return (
        f"quota fits in ClusterQueue {cq_name} now; Kueue admits it at its next cycle "
        "(or it waits behind an earlier workload in FIFO order)"
    )
