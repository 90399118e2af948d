"""Jobs that join a Kubernetes v1.36 Workload API PodGroup (``schedulingGroup.podGroupName``, as a pod
does) take the group's gang and topology constraint: the PodGroup is another way to write ``gang: true``
and ``topology_required``.

A ``gang`` policy makes the job a gang; its topology constraint's ``key`` becomes ``topology_required``
(every pod on nodes sharing one value of that label — what Kueue's ``podset-required-topology`` asks).
fleetlab's gangs place all their pods together, so ``minCount`` may not exceed the job's pods (such a
group could never be placed) and one below them still waits for every pod. A ``basic`` group schedules
pods one by one; its topology constraint is not modelled and is refused rather than ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from fleetlab.model.workload_api import PodGroup, Workload

__all__ = ["check_templates", "join_pod_groups"]


def _groups(objects: Sequence[Any]) -> dict[tuple[str, str], PodGroup]:
    """The valid PodGroups among the raw objects (the section's own validation reports the others)."""
    out: dict[tuple[str, str], PodGroup] = {}
    for obj in objects:
        group = obj if isinstance(obj, PodGroup) else None
        if group is None and isinstance(obj, Mapping) and obj.get("kind") == "PodGroup":
            try:
                group = PodGroup.model_validate(obj)
            except ValidationError:
                continue
        if group is not None:
            out[(group.metadata.namespace, group.metadata.name)] = group
    return out


def _group_name(job: Any) -> str | None:
    ref = job.get("schedulingGroup", job.get("scheduling_group")) if isinstance(job, Mapping) else None
    if ref is None and not isinstance(job, Mapping):
        ref = getattr(job, "scheduling_group", None)
    if isinstance(ref, Mapping):
        name = ref.get("podGroupName", ref.get("pod_group_name"))
        return name if isinstance(name, str) else None
    return getattr(ref, "pod_group_name", None)


def _field(job: Any, name: str, alias: str | None = None) -> Any:
    if isinstance(job, Mapping):
        return job.get(name, job.get(alias) if alias else None)
    return getattr(job, name, None)


def _joined(job: Any, group: PodGroup, where: str) -> dict[str, Any]:
    """The fields the group sets on the job, or ValueError naming the clash."""
    pods = _field(job, "pods") or 1
    key = group.topology_key
    if group.min_count is None:
        if key is not None:
            raise ValueError(
                f"{where}: a basic (one-by-one) PodGroup's topology constraint {key!r} is not modelled; "
                "give the group a gang policy, or drop the constraint"
            )
        return {}
    if isinstance(pods, int) and group.min_count > pods:
        raise ValueError(
            f"{where}: gang minCount {group.min_count} exceeds the job's {pods} pod(s); "
            "such a group could never be placed"
        )
    if _field(job, "gang") is False:
        raise ValueError(f"{where}: the group is a gang but the job says gang: false")
    update: dict[str, Any] = {"gang": True}
    if key is not None:
        preferred = _field(job, "topology_preferred")
        required = _field(job, "topology_required")
        if preferred is not None or required not in (None, key):
            raise ValueError(
                f"{where}: the group's topology key {key!r} and the job's own topology_required / "
                "topology_preferred disagree; give the topology in one place"
            )
        update["topology_required"] = key
    return update


def join_pod_groups(data: Any) -> Any:
    """A scenario's raw data with every job that names a PodGroup of ``workload_api`` made its gang;
    ValueError for a job naming a group that is not there or that contradicts it."""
    if not isinstance(data, Mapping):
        return data
    workload = data.get("workload")
    if not isinstance(workload, Mapping):
        return data
    jobs = workload.get("jobs")
    if not isinstance(jobs, Sequence) or isinstance(jobs, str | bytes):
        return data
    named = [(i, _group_name(job)) for i, job in enumerate(jobs)]
    if not any(name for _, name in named):
        return data
    objects = data.get("workload_api", data.get("workloadApi")) or ()
    groups = _groups(objects if isinstance(objects, Sequence) else ())
    out = list(jobs)
    for i, name in named:
        if name is None:
            continue
        job = jobs[i]
        namespace = _field(job, "namespace") or "default"
        where = f"job {_field(job, 'id')!r}: schedulingGroup.podGroupName {name!r}"
        group = groups.get((namespace, name))
        if group is None:
            raise ValueError(f"{where} is not a PodGroup of workload_api in namespace {namespace!r}")
        update = _joined(job, group, where)
        out[i] = {**job, **update} if isinstance(job, Mapping) else job.model_copy(update=update)
    return {**data, "workload": {**workload, "jobs": out}}


def check_templates(objects: Sequence[Workload | PodGroup]) -> None:
    """A PodGroup made from a template must name a template its Workload has (when the Workload is given)."""
    workloads = {(o.metadata.namespace, o.metadata.name): o for o in objects if isinstance(o, Workload)}
    for group in (o for o in objects if isinstance(o, PodGroup)):
        ref = group.spec.pod_group_template_ref
        if ref is None:
            continue
        ns = group.metadata.namespace
        workload = workloads.get((ns, ref.workload.workload_name))
        names = {t.name for t in workload.spec.pod_group_templates} if workload is not None else set()
        if workload is not None and ref.workload.pod_group_template_name not in names:
            raise ValueError(
                f"PodGroup {ns}/{group.metadata.name}: podGroupTemplateRef names template "
                f'"{ref.workload.pod_group_template_name}", which Workload {ns}/{workload.metadata.name} '
                f"does not have (it has {', '.join(sorted(names))})"
            )
