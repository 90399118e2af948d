"""Read the Workload API's objects (``scheduling.k8s.io/v1alpha2`` Workload and PodGroup, Kubernetes
v1.36) and a pod's membership of a PodGroup, and turn a PodGroup into the gang request fleetlab and
Kueue TAS understand.

A gang PodGroup becomes a fleetlab gang (all-or-nothing placement); its topology constraint becomes the
gang's ``topology_required`` (the same as Kueue's ``podset-required-topology``: one domain of that
label holds every pod). fleetlab's gangs place all their pods together, so a ``minCount`` below the
group's pod count is kept as the count of pods that must fit (``diagnose`` reports a group short of it)
but the simulated gang waits for all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from fleetlab.model.tas_request import TopologyRequest
from fleetlab.model.workload_api import API_VERSION, PodGroup, Workload
from fleetlab.spec.errors import SpecError, problems_from_validation

__all__ = ["WORKLOAD_API_KINDS", "GangRequest", "gang_request", "pod_group_name", "read_workload_api"]

WORKLOAD_API_KINDS = frozenset({"Workload", "PodGroup"})


@dataclass(frozen=True)
class WorkloadApiObjects:
    """Workloads and PodGroups by (namespace, name)."""

    workloads: Mapping[tuple[str, str], Workload]
    pod_groups: Mapping[tuple[str, str], PodGroup]


@dataclass(frozen=True)
class GangRequest:
    """What a PodGroup asks of placement: a gang of at least ``min_count`` pods (None: pods one by one)
    and the node label they must share a value of."""

    min_count: int | None
    topology_key: str | None

    @property
    def topology(self) -> TopologyRequest | None:
        """The same request in Kueue TAS terms."""
        return None if self.topology_key is None else TopologyRequest(required=self.topology_key)


def gang_request(group: PodGroup) -> GangRequest:
    """A PodGroup's policy and constraint."""
    return GangRequest(group.min_count, group.topology_key)


def pod_group_name(pod_spec: Mapping[str, Any]) -> str | None:
    """``spec.schedulingGroup.podGroupName`` of a pod, if it names one."""
    group = pod_spec.get("schedulingGroup")
    if not isinstance(group, Mapping):
        return None
    name = group.get("podGroupName")
    return name if isinstance(name, str) and name else None


def read_workload_api(objects: Sequence[Mapping[str, Any]], source: str) -> WorkloadApiObjects:
    """Validate Workload and PodGroup objects; any problem names the object and field (exit 2)."""
    workloads: dict[tuple[str, str], Workload] = {}
    groups: dict[tuple[str, str], PodGroup] = {}
    problems: list[str] = []
    for obj in objects:
        kind = obj.get("kind")
        found = obj.get("metadata")
        meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        where = f"{kind} {meta.get('namespace', '')}/{meta.get('name', '<unnamed>')}"
        if obj.get("apiVersion") != API_VERSION:
            problems.append(
                f"{where}: apiVersion {obj.get('apiVersion')!r} is not read; fleetlab reads {API_VERSION} "
                "(Kubernetes v1.36)"
            )
            continue
        try:
            if kind == "Workload":
                w = Workload.model_validate(obj)
                workloads[(w.metadata.namespace, w.metadata.name)] = w
            else:
                g = PodGroup.model_validate(obj)
                groups[(g.metadata.namespace, g.metadata.name)] = g
        except ValidationError as exc:
            problems.extend(f"{where}: {p}" for p in problems_from_validation(exc))
    for (ns, name), group in groups.items():
        ref = group.spec.pod_group_template_ref
        workload = workloads.get((ns, ref.workload.workload_name)) if ref is not None else None
        if workload is not None and ref is not None:
            names = {t.name for t in workload.spec.pod_group_templates}
            if ref.workload.pod_group_template_name not in names:
                problems.append(
                    f"PodGroup {ns}/{name}: podGroupTemplateRef names template "
                    f'"{ref.workload.pod_group_template_name}", which Workload {ns}/{workload.metadata.name} '
                    f"does not have (it has {', '.join(sorted(names))})"
                )
    if problems:
        raise SpecError(source, problems)
    return WorkloadApiObjects(workloads, groups)
