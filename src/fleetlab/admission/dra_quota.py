"""What a workload's DRA device requests cost in Kueue quota (``resources.deviceClassMappings``).

Kueue (v0.15+, KEP 2941 "DRA support", ``pkg/dra/claims.go``) charges each pod of a PodSet the devices its
ResourceClaimTemplates ask for, counted under the quota resource their DeviceClass maps to; the PodSet's
usage is that per-pod amount times its pod count. The rules followed here:

* only claims made from templates are charged; a pod naming an existing ResourceClaim makes the workload
  inadmissible (claims shared between workloads have no owner to charge);
* an ``ExactCount`` request costs ``count`` devices; ``adminAccess`` requests cost nothing; ``All`` is
  refused (its size is unknown until allocation);
* a ``firstAvailable`` request is charged only when every alternative maps to the same resource with the
  same count (the charge then equals whatever the scheduler picks); otherwise it is refused;
* a DeviceClass with no mapping makes the workload inadmissible;
* a claim whose CEL-selecting requests fewer devices in the whole cluster match than they ask for is
  refused before quota is reserved (``check_selectors``: the caller's evaluation over ResourceSlices,
  :func:`fleetlab.placement.dra.quota_check.selector_check`).

Containers sharing one claim are charged once: the charge is per claim, not per container.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from fleetlab.model.dra import (
    DeviceRequest,
    DeviceSelector,
    PodClaimRef,
    ResourceClaimSpec,
    ResourceClaimTemplate,
)

__all__ = [
    "DraCharge",
    "DraChargeError",
    "SelectorCheck",
    "SelectorRequest",
    "pod_dra_charge",
    "podset_dra_usage",
]

#: One request with CEL selectors: (index in the claim, DeviceClass name, selectors, count).
SelectorRequest = tuple[int, str, Sequence[DeviceSelector], int]
#: Checks a claim's CEL-selecting requests against the cluster's devices: None, or why they cannot match.
SelectorCheck = Callable[[Sequence[SelectorRequest]], str | None]


class DraChargeError(ValueError):
    """The workload cannot be charged: Kueue marks it inadmissible with this message."""


@dataclass(frozen=True)
class DraCharge:
    """One pod's device charge: quota resource → devices."""

    per_pod: Mapping[str, int]

    def times(self, pods: int) -> dict[str, int]:
        """The PodSet's usage: the per-pod charge times its pod count."""
        return {name: amount * pods for name, amount in sorted(self.per_pod.items())}


def _alternatives_charge(
    request: DeviceRequest, resource_of: Mapping[str, str], where: str
) -> tuple[str, int]:
    logical: str | None = None
    count = 0
    for i, sub in enumerate(request.first_available):
        place = f"{where}.firstAvailable[{i}]"
        if sub.allocation_mode != "ExactCount":
            raise DraChargeError(
                f"{place}: allocationMode {sub.allocation_mode} is not supported (ExactCount)"
            )
        mapped = resource_of.get(sub.device_class_name)
        if mapped is None:
            raise DraChargeError(f'{place}: DeviceClass "{sub.device_class_name}" has no deviceClassMapping')
        if logical is None:
            logical, count = mapped, sub.count
        elif mapped != logical:
            raise DraChargeError(
                f'{place}: every alternative must map to "{logical}", this one maps to "{mapped}"'
            )
        elif sub.count != count:
            raise DraChargeError(
                f"{place}: every alternative must have count {count}, this one has {sub.count}"
            )
    assert logical is not None  # the model requires exactly or a non-empty firstAvailable
    return logical, count


def _spec_charge(
    spec: ResourceClaimSpec,
    resource_of: Mapping[str, str],
    check_selectors: SelectorCheck | None,
    where: str,
) -> dict[str, int]:
    charge: dict[str, int] = {}
    with_cel: list[SelectorRequest] = []
    for i, request in enumerate(spec.devices.requests):
        place = f"{where}.devices.requests[{i}]"
        if request.exactly is None:
            logical, count = _alternatives_charge(request, resource_of, place)
            charge[logical] = charge.get(logical, 0) + count
            continue
        exact = request.exactly
        if exact.admin_access:
            continue
        if exact.allocation_mode == "All":
            raise DraChargeError(f"{place}.exactly.allocationMode: AllocationMode 'All' is not supported")
        logical_name = resource_of.get(exact.device_class_name)
        if logical_name is None:
            raise DraChargeError(
                f'{place}.exactly.deviceClassName: DeviceClass "{exact.device_class_name}" has no '
                "deviceClassMapping in Kueue's Configuration"
            )
        if exact.selectors:
            with_cel.append((i, exact.device_class_name, exact.selectors, exact.count))
        charge[logical_name] = charge.get(logical_name, 0) + exact.count
    if check_selectors is not None and with_cel:
        problem = check_selectors(with_cel)
        if problem is not None:
            raise DraChargeError(f"{where}: {problem}")
    return charge


def pod_dra_charge(
    refs: Sequence[PodClaimRef],
    templates: Mapping[str, ResourceClaimTemplate],
    resource_of: Mapping[str, str],
    check_selectors: SelectorCheck | None = None,
) -> DraCharge:
    """The devices one pod of a PodSet is charged (``refs``: its ``spec.resourceClaims``; ``templates`` by
    name in the workload's namespace). Raises :class:`DraChargeError` where Kueue refuses the workload."""
    total: dict[str, int] = {}
    for j, ref in enumerate(refs):
        where = f"spec.resourceClaims[{j}]"
        if ref.template_name is None:
            raise DraChargeError(
                f'{where}: ResourceClaim "{ref.claim_name}" is named directly; Kueue charges only claims '
                "made from a ResourceClaimTemplate"
            )
        template = templates.get(ref.template_name)
        if template is None:
            raise DraChargeError(f'{where}: ResourceClaimTemplate "{ref.template_name}" not found')
        for name, amount in _spec_charge(
            template.spec.spec, resource_of, check_selectors, f"ResourceClaimTemplate {ref.template_name}"
        ).items():
            total[name] = total.get(name, 0) + amount
    return DraCharge(per_pod=total)


def podset_dra_usage(
    refs: Sequence[PodClaimRef],
    pods: int,
    templates: Mapping[str, ResourceClaimTemplate],
    resource_of: Mapping[str, str],
    check_selectors: SelectorCheck | None = None,
) -> dict[str, int]:
    """A PodSet's quota usage from DRA: the per-pod charge times ``pods``."""
    return pod_dra_charge(refs, templates, resource_of, check_selectors).times(pods)
