"""Kueue's pre-admission check that a claim's CEL selectors can match enough devices in the cluster
(``validateCELSelectorsAgainstDevices``, kubernetes-sigs/kueue ``pkg/dra/claims.go``).

Every device of every ResourceSlice counts, allocated or not: the check refuses workloads that could never
be scheduled, not ones that must wait. A device is tried against its DeviceClass's selectors, then the
request's; a device matched by one request of the claim is not counted again for the next. A CEL error
(compile or runtime) refuses the claim with the error.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleetlab.model.dra import DeviceSelector, DraObjects
from fleetlab.placement.dra.allocator import AllocationError, Allocator, DeviceID

__all__ = ["ClusterSelectorCheck", "selector_check"]


class ClusterSelectorCheck:
    """Callable over one claim's CEL-selecting requests: None, or why they cannot all be matched."""

    def __init__(self, objects: DraObjects) -> None:
        self.classes = {c.metadata.name: c for c in objects.classes}
        self.allocator = Allocator(self.classes, objects.slices)
        self.devices = [
            (DeviceID(s.spec.driver, s.spec.pool.name, d.name), d)
            for s in objects.slices
            for d in s.spec.devices
        ]

    def __call__(self, requests: Sequence[tuple[int, str, Sequence[DeviceSelector], int]]) -> str | None:
        matched: set[int] = set()
        for index, class_name, selectors, count in requests:
            device_class = self.classes.get(class_name)
            if device_class is None:
                return f'devices.requests[{index}]: DeviceClass "{class_name}" not found'
            found = 0
            for n, (device_id, device) in enumerate(self.devices):
                if found >= count:
                    break
                if n in matched:
                    continue
                try:
                    if not self.allocator.device_matches(device_id, device, device_class.spec.selectors):
                        continue
                    if not self.allocator.device_matches(device_id, device, selectors):
                        continue
                except AllocationError as exc:
                    return (
                        f"devices.requests[{index}]: CEL evaluation failed for DeviceClass "
                        f"{class_name}: {exc}"
                    )
                matched.add(n)
                found += 1
            if found < count:
                return (
                    f"devices.requests[{index}]: insufficient matching devices for CEL selector in "
                    f"DeviceClass {class_name}: {found} device(s) match in the cluster but {count} requested"
                )
        return None


def selector_check(objects: DraObjects) -> ClusterSelectorCheck:
    """A check for :func:`fleetlab.admission.dra_quota.pod_dra_charge` over the cluster's slices."""
    return ClusterSelectorCheck(objects)
