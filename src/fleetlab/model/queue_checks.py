"""The whole-configuration rules Kueue's webhooks enforce on ClusterQueues, Cohorts and LocalQueues.

Each problem names the object and the field; ``QueueConfig`` refuses a configuration with any.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleetlab.model.queue_objects import ClusterQueue, Cohort, LocalQueue, ResourceFlavor, ResourceGroup


def _obj(kind: str, name: str) -> str:
    return f'{kind} "{name}"'


def _group_problems(owner: str, groups: Sequence[ResourceGroup], flavors: set[str]) -> list[str]:
    """Resource-group rules Kueue's webhook enforces, for a ClusterQueue or a Cohort."""
    out: list[str] = []
    covered_by: dict[str, int] = {}
    flavor_in: dict[str, int] = {}
    for g, group in enumerate(groups):
        where = f"spec.resourceGroups[{g}]"
        seen_res: set[str] = set()
        for resource in group.covered_resources:
            if resource in seen_res:
                out.append(f"{owner}: {where}.coveredResources: {resource!r} is listed twice")
            seen_res.add(resource)
            if resource in covered_by and covered_by[resource] != g:
                out.append(
                    f"{owner}: {where}.coveredResources: resource {resource!r} is already covered by "
                    f"spec.resourceGroups[{covered_by[resource]}] (one resource group per resource)"
                )
            covered_by.setdefault(resource, g)
        for f, flavor in enumerate(group.flavors):
            fwhere = f"{where}.flavors[{f}]"
            if flavor.name not in flavors:
                known = ", ".join(f'"{n}"' for n in sorted(flavors)) or "none"
                out.append(
                    f'{owner}: {fwhere}.name: ResourceFlavor "{flavor.name}" is not defined '
                    f"(defined: {known})"
                )
            if flavor.name in flavor_in:
                first = flavor_in[flavor.name]
                other = "this resource group" if first == g else f"spec.resourceGroups[{first}]"
                out.append(
                    f'{owner}: {fwhere}.name: flavor "{flavor.name}" already appears in {other} '
                    "(a flavor may appear in only one resource group, once)"
                )
            flavor_in.setdefault(flavor.name, g)
            names = tuple(r.name for r in flavor.resources)
            if names != group.covered_resources:
                out.append(
                    f"{owner}: {fwhere}.resources: the resources {list(names)} must match "
                    f"coveredResources {list(group.covered_resources)} (same names, same order)"
                )
    return out


def _limit_problems(owner: str, groups: Sequence[ResourceGroup], has_parent: bool, is_cq: bool) -> list[str]:
    out: list[str] = []
    for g, group in enumerate(groups):
        for f, flavor in enumerate(group.flavors):
            for r, quota in enumerate(flavor.resources):
                where = f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}]"
                if not has_parent:
                    none_msg = "cohort is empty" if is_cq else "the Cohort has no parentName"
                    if quota.borrowing_limit is not None:
                        # Kueue's CEL message on ClusterQueueSpec:
                        # "borrowingLimit must be nil when cohort is empty"
                        out.append(
                            f"{owner}: {where}.borrowingLimit: borrowingLimit must be nil when {none_msg}"
                        )
                    if quota.lending_limit is not None:
                        out.append(f"{owner}: {where}.lendingLimit: lendingLimit must be nil when {none_msg}")
                if is_cq and quota.lending_limit is not None and quota.lending_limit > quota.nominal_quota:
                    out.append(
                        f"{owner}: {where}.lendingLimit: lendingLimit ({quota.lending_limit}) must be less "
                        f"than or equal to nominalQuota ({quota.nominal_quota}) for {quota.name}"
                    )
    return out


def _duplicates(kind: str, names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        if name in seen:
            out.append(f"{_obj(kind, name)}: metadata.name: duplicate {kind} name")
        seen.add(name)
    return out


def queue_config_problems(
    flavors: Sequence[ResourceFlavor],
    cluster_queues: Sequence[ClusterQueue],
    cohorts: Sequence[Cohort],
    local_queues: Sequence[LocalQueue],
) -> list[str]:
    """Every whole-configuration problem, each naming the object (kind and name) and the field."""
    out: list[str] = []
    out += _duplicates("ResourceFlavor", (f.name for f in flavors))
    out += _duplicates("ClusterQueue", (c.name for c in cluster_queues))
    out += _duplicates("Cohort", (c.name for c in cohorts))
    out += _duplicates("LocalQueue", (f"{q.metadata.namespace}/{q.name}" for q in local_queues))
    flavor_names = {f.name for f in flavors}
    for cq in cluster_queues:
        owner = _obj("ClusterQueue", cq.name)
        out += _group_problems(owner, cq.spec.resource_groups, flavor_names)
        out += _limit_problems(owner, cq.spec.resource_groups, cq.spec.cohort_name is not None, True)
    parents = {c.name: c.spec.parent_name for c in cohorts}
    for cohort in cohorts:
        owner = _obj("Cohort", cohort.name)
        out += _group_problems(owner, cohort.spec.resource_groups, flavor_names)
        out += _limit_problems(owner, cohort.spec.resource_groups, cohort.spec.parent_name is not None, False)
    reported: set[str] = set()
    for start in parents:
        path: list[str] = []
        node: str | None = start
        while node is not None and node in parents and node not in path:
            path.append(node)
            node = parents[node]
        if node is not None and node in path:
            cycle = path[path.index(node) :]
            if not reported.intersection(cycle):
                reported.update(cycle)
                ring = " -> ".join([*cycle, node])
                out.append(f"{_obj('Cohort', node)}: spec.parentName: cohort parents form a cycle ({ring})")
    cq_names = {c.name for c in cluster_queues}
    for lq in local_queues:
        if lq.spec.cluster_queue not in cq_names:
            known = ", ".join(f'"{n}"' for n in sorted(cq_names)) or "none"
            out.append(
                f'LocalQueue "{lq.metadata.namespace}/{lq.name}": spec.clusterQueue: ClusterQueue '
                f'"{lq.spec.cluster_queue}" is not defined (defined: {known})'
            )
    return out
