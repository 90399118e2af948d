"""A cluster's Kueue configuration as a whole: ResourceFlavors, ClusterQueues, Cohorts and LocalQueues
(:mod:`fleetlab.model.queue_objects`, re-exported here) validated together.

:func:`queue_config_from_objects` dispatches a list of mixed objects on ``kind`` (a ``kind: List`` with
``items`` is flattened) and validates the whole configuration (:mod:`fleetlab.model.queue_checks`); every
problem names the object and field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from fleetlab.model.kueue_extra import (
    EXTRA_KINDS,
    IGNORED_KINDS,
    AdmissionCheck,
    IgnoredKueueObject,
    ProvisioningRequestConfig,
    Topology,
    WorkloadPriorityClass,
    unmodelled_notes,
)
from fleetlab.model.queue_checks import queue_config_problems
from fleetlab.model.queue_objects import (
    API_VERSIONS,
    BorrowWithinCohort,
    ClusterQueue,
    ClusterQueuePreemption,
    ClusterQueueSpec,
    Cohort,
    CohortSpec,
    FairSharing,
    FlavorFungibility,
    FlavorQuotas,
    KueueObject,
    LocalQueue,
    LocalQueueSpec,
    ResourceFlavor,
    ResourceFlavorSpec,
    ResourceGroup,
    ResourceQuota,
)
from fleetlab.model.validation_problems import problems_from_validation

__all__ = [
    "API_VERSIONS",
    "BorrowWithinCohort",
    "ClusterQueue",
    "ClusterQueuePreemption",
    "ClusterQueueSpec",
    "Cohort",
    "CohortSpec",
    "FairSharing",
    "FlavorFungibility",
    "FlavorQuotas",
    "LocalQueue",
    "LocalQueueSpec",
    "QueueConfig",
    "QueueConfigError",
    "ResourceFlavor",
    "ResourceFlavorSpec",
    "ResourceGroup",
    "ResourceQuota",
    "queue_config_from_objects",
    "queue_config_problems",
]


class QueueConfigError(ValueError):
    """A Kueue configuration that cannot be used; ``problems`` lists each one, naming object and field."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


_KINDS: dict[str, type[KueueObject]] = {
    "ResourceFlavor": ResourceFlavor,
    "ClusterQueue": ClusterQueue,
    "Cohort": Cohort,
    "LocalQueue": LocalQueue,
}


class QueueConfig(BaseModel):
    """The four kinds of Kueue objects of one cluster, validated as a whole."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")

    resource_flavors: tuple[ResourceFlavor, ...] = ()
    cluster_queues: tuple[ClusterQueue, ...] = ()
    cohorts: tuple[Cohort, ...] = ()
    local_queues: tuple[LocalQueue, ...] = ()
    topologies: tuple[Topology, ...] = ()
    workload_priority_classes: tuple[WorkloadPriorityClass, ...] = ()
    #: AdmissionCheck and ProvisioningRequestConfig objects (checked, not simulated) and MultiKueue ones.
    ignored: tuple[IgnoredKueueObject | AdmissionCheck | ProvisioningRequestConfig, ...] = ()

    @property
    def notes(self) -> list[str]:
        """Warnings naming what was accepted but is not modelled."""
        fields = {cq.name: f for cq in self.cluster_queues if (f := cq.spec.unmodelled_fields())}
        used = frozenset(f.spec.topology_name for f in self.resource_flavors if f.spec.topology_name)
        return unmodelled_notes(self.topologies, self.ignored, fields, used)

    @model_validator(mode="after")
    def _whole(self) -> QueueConfig:
        problems = queue_config_problems(
            self.resource_flavors, self.cluster_queues, self.cohorts, self.local_queues
        )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def cohort_parents(self) -> dict[str, str | None]:
        """Every cohort's parent, including the cohorts Kueue creates implicitly for names with no object."""
        parents: dict[str, str | None] = {c.name: c.spec.parent_name for c in self.cohorts}
        referenced = [cq.spec.cohort_name for cq in self.cluster_queues]
        referenced += [c.spec.parent_name for c in self.cohorts]
        for name in referenced:
            if name is not None and name not in parents:
                parents[name] = None  # implicit Cohort: no parent, no quota, no limits
        return parents

    def implicit_cohorts(self) -> list[str]:
        """Names of the cohorts referenced (by a ClusterQueue or as a parent) with no Cohort object."""
        explicit = {c.name for c in self.cohorts}
        return sorted(n for n in self.cohort_parents() if n not in explicit)


def _flatten(objects: Iterable[Any], where: str, out: list[tuple[str, Any]]) -> None:
    for i, obj in enumerate(objects):
        loc = f"{where}[{i}]"
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        if isinstance(kind, str) and kind.endswith("List") and isinstance(obj.get("items"), list):
            _flatten(obj["items"], f"{loc}.items", out)
        else:
            out.append((loc, obj))


def queue_config_from_objects(objects: list[dict[str, Any]]) -> QueueConfig:
    """Build and validate a :class:`QueueConfig` from pasted Kueue objects of any kind, in any order.

    Raises :class:`QueueConfigError` listing every problem, each naming the object and the field."""
    if not isinstance(objects, list):
        raise QueueConfigError([f"expected a list of Kueue objects, got {type(objects).__name__}"])
    flat: list[tuple[str, Any]] = []
    _flatten(objects, "objects", flat)
    problems: list[str] = []
    parsed: dict[str, list[Any]] = {k: [] for k in (*_KINDS, *EXTRA_KINDS)}
    kinds: dict[str, type[BaseModel]] = {**_KINDS, **EXTRA_KINDS}
    for loc, obj in flat:
        if not isinstance(obj, Mapping):
            problems.append(
                f"{loc}: expected a Kueue object (a mapping with kind, metadata, spec), got {obj!r}"
            )
            continue
        kind = obj.get("kind")
        if kind not in kinds:
            problems.append(f"{loc}: kind {kind!r} is not one of {', '.join(kinds)}")
            continue
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        label = f'{kind} "{name}"' if isinstance(name, str) else f"{loc} ({kind})"
        try:
            parsed[kind].append(kinds[kind].model_validate(dict(obj)))
        except ValidationError as exc:
            problems += [f"{label}: {p}" for p in problems_from_validation(exc)]
    if problems:
        raise QueueConfigError(problems)
    whole = queue_config_problems(
        parsed["ResourceFlavor"], parsed["ClusterQueue"], parsed["Cohort"], parsed["LocalQueue"]
    )
    if whole:
        raise QueueConfigError(whole)
    return QueueConfig(
        resource_flavors=tuple(parsed["ResourceFlavor"]),
        cluster_queues=tuple(parsed["ClusterQueue"]),
        cohorts=tuple(parsed["Cohort"]),
        local_queues=tuple(parsed["LocalQueue"]),
        topologies=tuple(parsed["Topology"]),
        workload_priority_classes=tuple(parsed["WorkloadPriorityClass"]),
        ignored=tuple(o for k in IGNORED_KINDS for o in parsed[k]),
    )
