"""A cluster's DRA objects and which devices are taken, kept current as pods reserve and release claims.

The kube-scheduler DynamicResources plugin reads claims, classes and slices through its DRA manager and
treats every device in an allocated claim's results as taken (``ListAllAllocatedDevices``; results with
admin access do not take a device). :class:`DraState` is that view for fleetlab: ``diagnose`` builds it
from a snapshot, and the simulator will build it from a scenario and call :meth:`reserve` when it binds a
pod with claims and :meth:`release` when the pod ends (see ``placement/plugins/dynamic_resources.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetlab.model.dra import (
    RESERVED_FOR_MAX,
    AllocationResult,
    DeviceClass,
    DraObjects,
    PodClaimRef,
    PodClaims,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from fleetlab.placement.dra.allocator import DeviceID, Features

__all__ = ["DraObjects", "DraState", "claim_from_template", "pod_instance"]


def pod_instance(shape: PodClaims, pod: str, uid: str) -> PodClaims:
    """One pod's own claims from its job's shape: each template entry names the claim generated for the
    pod (``<pod>-<entry>``, as :func:`claim_from_template` names it); shared claims stay as they are."""
    refs = tuple(
        PodClaimRef(r.name, f"{pod}-{r.name}", r.template_name) if r.template_name is not None else r
        for r in shape.refs
    )
    return PodClaims(shape.namespace, pod, uid, refs)


def claim_from_template(template: ResourceClaimTemplate, pod: PodClaims, ref: PodClaimRef) -> ResourceClaim:
    """The ResourceClaim the resourceclaim controller creates for a pod's template entry, owned by the pod
    (named ``<pod>-<entry>``; upstream adds a random suffix, fleetlab keeps names deterministic)."""
    meta: dict[str, Any] = dict(template.spec.metadata)
    meta.update(
        {
            "name": f"{pod.pod}-{ref.name}",
            "namespace": pod.namespace,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.pod, "uid": pod.uid, "controller": True}
            ],
        }
    )
    return ResourceClaim.model_validate(
        {"metadata": meta, "spec": template.spec.spec.model_dump(by_alias=True)}
    )


def _taken(claim: ResourceClaim) -> Iterable[DeviceID]:
    allocation = claim.status.allocation
    if allocation is None:
        return ()
    return (DeviceID(r.driver, r.pool, r.device) for r in allocation.devices.results if not r.admin_access)


@dataclass
class DraState:
    """Classes, claims (by ``namespace/name``), templates, slices, and the devices allocated claims hold."""

    classes: dict[str, DeviceClass]
    claims: dict[str, ResourceClaim]
    templates: dict[str, ResourceClaimTemplate]
    slices: list[ResourceSlice]
    features: Features = field(default_factory=Features)
    allocated: set[DeviceID] = field(default_factory=set)
    #: Bumped whenever an allocation or reservation changes (plugin caches key on it).
    generation: int = 0
    #: Per (namespace, template, entry) the unallocated claim a pod shape stands for (templates are fixed).
    _shape_claims: dict[tuple[str, str, str], ResourceClaim] = field(default_factory=dict)

    @classmethod
    def from_objects(cls, objects: DraObjects, features: Features = Features()) -> DraState:
        """A state from objects as read; devices of allocated claims count as taken."""
        state = cls(
            classes={c.name: c for c in objects.classes},
            claims={c.key: c for c in objects.claims},
            templates={
                f"{t.metadata.namespace or 'default'}/{t.metadata.name}": t for t in objects.templates
            },
            slices=list(objects.slices),
            features=features,
        )
        for claim in state.claims.values():
            state.allocated.update(_taken(claim))
        return state

    def resolve(self, pod: PodClaims) -> list[ResourceClaim] | str:
        """The pod's claims in ``spec.resourceClaims`` order, or why the scheduler cannot use them yet
        (upstream's PreEnqueue / PreFilter messages)."""
        out: list[ResourceClaim] = []
        for ref in pod.refs:
            if ref.claim_name is None:
                if ref.template_name is None:
                    continue
                if pod.shape:
                    found = self._shape_claim(pod, ref)
                    if isinstance(found, str):
                        return found
                    out.append(found)
                    continue
                return f'pod "{pod.namespace}/{pod.pod}": ResourceClaim not created yet'
            claim = self.claims.get(f"{pod.namespace}/{ref.claim_name}")
            if claim is None:
                return f'resourceclaim.resource.k8s.io "{ref.claim_name}" not found'
            if claim.metadata.deletion_timestamp is not None:
                return f'resourceclaim "{ref.claim_name}" is being deleted'
            if ref.template_name is not None and not any(
                o.get("uid") == pod.uid and o.get("controller") for o in claim.metadata.owner_references
            ):
                return (
                    f"ResourceClaim {pod.namespace}/{ref.claim_name} was not created for pod "
                    f"{pod.namespace}/{pod.pod} (pod is not owner)"
                )
            out.append(claim)
        return out

    def _shape_claim(self, pod: PodClaims, ref: PodClaimRef) -> ResourceClaim | str:
        """The claim a template entry of a pod shape will generate (not stored: it is never allocated)."""
        assert ref.template_name is not None
        key = (pod.namespace, ref.template_name, ref.name)
        found = self._shape_claims.get(key)
        if found is None:
            template = self.templates.get(f"{pod.namespace}/{ref.template_name}")
            if template is None:
                return f'resourceclaimtemplate.resource.k8s.io "{ref.template_name}" not found'
            found = self._shape_claims[key] = claim_from_template(template, pod, ref)
        return found

    def instantiate(self, pod: PodClaims) -> list[ResourceClaim]:
        """The resourceclaim controller's work for a pod about to be bound: each template entry's claim is
        created (named by the entry's ``claim_name``); shared claims are looked up. In ``spec.resourceClaims``
        order, as :meth:`resolve` returns them for the pod's shape."""
        out: list[ResourceClaim] = []
        for ref in pod.refs:
            if ref.claim_name is None:
                continue
            key = f"{pod.namespace}/{ref.claim_name}"
            if ref.template_name is not None:
                template = self.templates[f"{pod.namespace}/{ref.template_name}"]
                made = claim_from_template(template, pod, ref)
                claim = made.model_copy(
                    update={"metadata": made.metadata.model_copy(update={"name": ref.claim_name})}
                )
                self.claims[key] = claim
            out.append(self.claims[key])
        return out

    def delete_generated(self, pod: PodClaims) -> None:
        """The pod is gone: the claims generated from templates for it are deleted with it (they are owned
        by the pod); release them first."""
        for ref in pod.refs:
            if ref.template_name is not None and ref.claim_name is not None:
                self.claims.pop(f"{pod.namespace}/{ref.claim_name}", None)

    def add_claim(self, claim: ResourceClaim) -> None:
        """A claim created after the state was built (one generated from a template)."""
        self.claims[claim.key] = claim
        self.allocated.update(_taken(claim))
        self.generation += 1

    def reserved_for(self, claim: ResourceClaim, uid: str) -> bool:
        """Whether the claim is already reserved for the pod with ``uid``."""
        return any(r.uid == uid for r in claim.status.reserved_for)

    def can_reserve(self, claim: ResourceClaim) -> bool:
        """A claim may be shared by up to 256 consumers (``ResourceClaimReservedForMaxSize``)."""
        return len(claim.status.reserved_for) < RESERVED_FOR_MAX

    def reserve(
        self, pod: PodClaims, claims: Sequence[ResourceClaim], allocations: Sequence[AllocationResult]
    ) -> None:
        """Record the pod's allocation (one result per unallocated claim, in order) and reservation."""
        fresh = iter(allocations)
        for claim in claims:
            status = claim.status.model_dump(by_alias=True, exclude_none=True)
            if claim.status.allocation is None:
                allocation = next(fresh)
                status["allocation"] = allocation.model_dump(by_alias=True, exclude_none=True)
            if not self.reserved_for(claim, pod.uid):
                mine = {"resource": "pods", "name": pod.pod, "uid": pod.uid}
                status["reservedFor"] = [*status.get("reservedFor", ()), mine]
            updated = claim.model_copy(update={"status": type(claim.status).model_validate(status)})
            self.claims[updated.key] = updated
            self.allocated.update(_taken(updated))
        self.generation += 1

    def release(self, pod: PodClaims) -> None:
        """The pod ended: drop its reservations; a claim nobody reserves any more is deallocated (the
        resourceclaim controller's job), so its devices are free again."""
        for ref in pod.refs:
            if ref.claim_name is None:
                continue
            claim = self.claims.get(f"{pod.namespace}/{ref.claim_name}")
            if claim is None or not self.reserved_for(claim, pod.uid):
                continue
            keep = tuple(r for r in claim.status.reserved_for if r.uid != pod.uid)
            allocation = claim.status.allocation if keep else None
            if allocation is None and claim.status.allocation is not None:
                self.allocated.difference_update(_taken(claim))
            status = claim.status.model_copy(update={"reserved_for": keep, "allocation": allocation})
            self.claims[claim.key] = claim.model_copy(update={"status": status})
        self.generation += 1
