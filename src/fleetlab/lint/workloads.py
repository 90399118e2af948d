"""Where the pod templates are in each workload kind, and which pods must share a topology domain.

Core kinds (Pod, Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob), JobSet
(``spec.replicatedJobs[].template``), the Kubeflow training operator's shape
(``spec.<x>ReplicaSpecs.<Role>.template``: PyTorchJob, MPIJob, TFJob, XGBoostJob, PaddleJob, JAXJob),
KubeRay (RayCluster, RayJob, RayService: head and worker groups) and LeaderWorkerSet.

A *gang* is a set of pods that must all land in one domain of a node label: Kueue's topology-aware
scheduling annotation ``kueue.x-k8s.io/podset-required-topology`` on a pod template (one podset: every
replica of that template), JobSet's ``alpha.jobset.sigs.k8s.io/exclusive-topology`` (each child Job in a
domain of its own), and a Kueue plain-pod group (``kueue.x-k8s.io/pod-group-name`` label with the
``kueue.x-k8s.io/pod-group-total-count`` annotation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetlab.lint.manifests import FieldPath, Manifest
from fleetlab.spec.kube_objects import dig

REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
JOBSET_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
POD_GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_COUNT = "kueue.x-k8s.io/pod-group-total-count"

_DIRECT_TEMPLATE = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "ReplicationController", "Job"}
#: Kinds whose pods Kueue admits one by one (pod integration: one workload per pod), so a required
#: topology constrains each pod alone; a StatefulSet's replicas form one pod group.
_PODS_ONE_BY_ONE = {"Deployment", "ReplicaSet", "DaemonSet", "ReplicationController"}


@dataclass(frozen=True)
class PodTemplate:
    """One pod spec inside a manifest: where it is, how many pods it stands for, and its gang (if any).

    ``gang_size`` is the number of pods that must share one domain of ``topology`` (a node label key);
    ``gang_path`` is where that requirement is written."""

    manifest: Manifest
    spec_path: FieldPath
    spec: Mapping[str, Any]
    replicas: int
    topology: str | None = None
    gang_size: int = 0
    gang_path: FieldPath = ()
    gang_label: str = ""
    #: A container written outside ``containers`` (KServe ``predictor.model``, Trainer
    #: ``trainer.resourcesPerNode``): the object's path and the key of its ResourceRequirements.
    resources_at: tuple[FieldPath, str] | None = None
    #: False where the pod's tolerations and node selection live elsewhere (a TrainJob's runtime): the
    #: rules that judge placement against the scenario's nodes are skipped.
    placement_known: bool = True


def _count(value: Any, default: int = 1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _annotations(meta: Any) -> Mapping[str, Any]:
    value = dig(meta, "annotations")
    return value if isinstance(value, Mapping) else {}


def _labels(meta: Any) -> Mapping[str, Any]:
    value = dig(meta, "labels")
    return value if isinstance(value, Mapping) else {}


def template_at(
    manifest: Manifest,
    template: Any,
    path: FieldPath,
    replicas: int,
    podset_label: str,
    gang_size: int | None = None,
) -> PodTemplate | None:
    """A pod template (``{metadata, spec}``) at ``path``, with Kueue's required-topology podset if set;
    ``gang_size`` (default: every replica) is how many pods share the domain."""
    spec = dig(template, "spec")
    if not isinstance(spec, Mapping):
        return None
    topology = _annotations(dig(template, "metadata")).get(REQUIRED_TOPOLOGY)
    if isinstance(topology, str) and topology:
        size = replicas if gang_size is None else gang_size
        return PodTemplate(
            manifest,
            (*path, "spec"),
            spec,
            replicas,
            topology=topology,
            gang_size=size,
            gang_path=(*path, "metadata", "annotations", REQUIRED_TOPOLOGY),
            gang_label=f"podset {podset_label} ({size} pod(s))",
        )
    return PodTemplate(manifest, (*path, "spec"), spec, replicas)


def _jobset(manifest: Manifest) -> list[PodTemplate]:
    out: list[PodTemplate] = []
    exclusive = _annotations(manifest.data.get("metadata")).get(JOBSET_EXCLUSIVE)
    jobs = dig(manifest.data, "spec", "replicatedJobs")
    if not isinstance(jobs, list):
        return out
    for i, job in enumerate(jobs):
        if not isinstance(job, Mapping):
            continue
        name = job.get("name", str(i))
        copies = _count(job.get("replicas"))
        job_spec = dig(job, "template", "spec")
        per_job = _count(dig(job_spec, "parallelism"))
        path: FieldPath = ("spec", "replicatedJobs", i, "template", "spec", "template")
        found = template_at(manifest, dig(job_spec, "template"), path, copies * per_job, f"{name}")
        if found is None:
            continue
        own = _annotations(dig(job, "template", "metadata")).get(JOBSET_EXCLUSIVE)
        key = own if isinstance(own, str) and own else exclusive
        if found.topology is None and isinstance(key, str) and key:
            where: FieldPath = (
                ("spec", "replicatedJobs", i, "template", "metadata", "annotations", JOBSET_EXCLUSIVE)
                if own
                else ("metadata", "annotations", JOBSET_EXCLUSIVE)
            )
            found = PodTemplate(
                manifest,
                found.spec_path,
                found.spec,
                found.replicas,
                topology=key,
                gang_size=per_job,
                gang_path=where,
                gang_label=f"each child Job of {name} ({per_job} pod(s), exclusive)",
            )
        out.append(found)
    return out


def _replica_specs(manifest: Manifest) -> list[PodTemplate]:
    out: list[PodTemplate] = []
    spec = manifest.data.get("spec")
    if not isinstance(spec, Mapping):
        return out
    for key, roles in spec.items():
        if not (isinstance(key, str) and key.endswith("ReplicaSpecs") and isinstance(roles, Mapping)):
            continue
        for role, replica in roles.items():
            if not isinstance(replica, Mapping):
                continue
            found = template_at(
                manifest,
                replica.get("template"),
                ("spec", key, str(role), "template"),
                _count(replica.get("replicas")),
                str(role),
            )
            if found is not None:
                out.append(found)
    return out


def _ray(manifest: Manifest) -> list[PodTemplate]:
    """RayCluster (``spec``) or RayJob / RayService (``spec.rayClusterSpec`` / ``spec.rayClusterConfig``):
    the head group and each worker group."""
    spec = manifest.data.get("spec")
    root: FieldPath = ("spec",)
    for key in ("rayClusterSpec", "rayClusterConfig"):
        if isinstance(dig(spec, key), Mapping):
            spec, root = dig(spec, key), ("spec", key)
    out: list[PodTemplate] = []
    head = template_at(
        manifest, dig(spec, "headGroupSpec", "template"), (*root, "headGroupSpec", "template"), 1, "head"
    )
    if head is not None:
        out.append(head)
    groups = dig(spec, "workerGroupSpecs")
    for i, group in enumerate(groups if isinstance(groups, list) else []):
        replicas = _count(dig(group, "replicas")) * _count(dig(group, "numOfHosts"))
        name = str(dig(group, "groupName") or i)
        found = template_at(
            manifest, dig(group, "template"), (*root, "workerGroupSpecs", i, "template"), replicas, name
        )
        if found is not None:
            out.append(found)
    return out


def _leader_worker_set(manifest: Manifest) -> list[PodTemplate]:
    """LeaderWorkerSet: ``replicas`` groups of ``size`` pods (a leader and size-1 workers); Kueue admits
    each group as one workload, so a required topology holds per group."""
    lwt = dig(manifest.data, "spec", "leaderWorkerTemplate")
    groups = _count(dig(manifest.data, "spec", "replicas"))
    size = _count(dig(lwt, "size"))
    root: FieldPath = ("spec", "leaderWorkerTemplate")
    out: list[PodTemplate] = []
    leader = template_at(manifest, dig(lwt, "leaderTemplate"), (*root, "leaderTemplate"), groups, "leader", 1)
    if leader is not None:
        out.append(leader)
    workers = size - 1 if leader is not None else size
    found = template_at(
        manifest, dig(lwt, "workerTemplate"), (*root, "workerTemplate"), groups * workers, "workers", workers
    )
    if found is not None:
        out.append(found)
    return out


def pod_templates(manifest: Manifest) -> list[PodTemplate]:
    """Every pod spec of a workload object; an empty list for kinds that run no pods."""
    kind, data = manifest.kind, manifest.data
    if kind == "Pod":
        found = template_at(manifest, data, (), 1, manifest.name)
        return [] if found is None else [found]
    if kind in _DIRECT_TEMPLATE:
        spec = data.get("spec")
        replicas = _count(dig(spec, "parallelism" if kind == "Job" else "replicas"))
        gang = 1 if kind in _PODS_ONE_BY_ONE else None
        found = template_at(
            manifest, dig(spec, "template"), ("spec", "template"), replicas, manifest.name, gang
        )
        return [] if found is None else [found]
    if kind == "CronJob":
        job_spec = dig(data, "spec", "jobTemplate", "spec")
        path: FieldPath = ("spec", "jobTemplate", "spec", "template")
        found = template_at(
            manifest, dig(job_spec, "template"), path, _count(dig(job_spec, "parallelism")), ""
        )
        return [] if found is None else [found]
    if kind == "JobSet":
        return _jobset(manifest)
    if kind in ("RayCluster", "RayJob", "RayService"):
        return _ray(manifest)
    if kind == "LeaderWorkerSet":
        return _leader_worker_set(manifest)
    return _replica_specs(manifest)


@dataclass(frozen=True)
class PodGroup:
    """A Kueue plain-pod group: the pods found in the files and the total count the group declares."""

    name: str
    members: tuple[PodTemplate, ...]
    total: int
    topology: str | None


def pod_groups(templates: list[PodTemplate]) -> list[PodGroup]:
    """Kueue plain-pod groups across all files, keyed by namespace and group name."""
    groups: dict[tuple[str, str], list[PodTemplate]] = {}
    for template in templates:
        if template.manifest.kind != "Pod":
            continue
        meta = template.manifest.data.get("metadata")
        name = _labels(meta).get(POD_GROUP_NAME)
        if isinstance(name, str) and name:
            namespace = dig(meta, "namespace")
            groups.setdefault((str(namespace or "default"), name), []).append(template)
    out: list[PodGroup] = []
    for (_, name), members in groups.items():
        meta = members[0].manifest.data.get("metadata")
        raw = _annotations(meta).get(POD_GROUP_COUNT)
        try:
            total = int(str(raw))
        except ValueError:
            total = len(members)
        topology = next((m.topology for m in members if m.topology), None)
        out.append(
            PodGroup(name=name, members=tuple(members), total=max(total, len(members)), topology=topology)
        )
    return out
