"""Claim constraints across devices (``structured/internal/incubating/constraint.go`` and the allocator's
``matchAttributeConstraint``): matchAttribute keeps one value of an attribute across the devices of the
named requests (all requests when none are named); distinctAttribute keeps the values pairwise different.
A device without the attribute breaks either. Constraints are monotonic, so the search can stop early."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from fleetlab.model.dra import Device, DeviceAttribute, DeviceConstraint


def lookup_attribute(device: Device, driver: str, qualified: str) -> DeviceAttribute | None:
    """The attribute named ``domain/id``: stored with that name, or as ``id`` when the domain is the
    device's own driver."""
    found = device.attributes.get(qualified)
    if found is not None:
        return found
    domain, sep, ident = qualified.partition("/")
    if not sep or domain != driver:
        return None
    return device.attributes.get(ident)


def _typed(attr: DeviceAttribute) -> tuple[str, object]:
    """(type, value): values of different types never match (a version compares as its text)."""
    for kind, value in (("int", attr.int_value), ("bool", attr.bool_value), ("string", attr.string_value),
                        ("version", attr.version_value)):  # fmt: skip
        if value is not None:
            return kind, value
    raise AssertionError("validated to have one value")


@dataclass
class Constraint:
    """One constraint's running state while devices are added and removed."""

    requests: frozenset[str]
    attribute: str
    distinct: bool
    first: tuple[str, object] | None = None
    count: int = 0
    seen: Counter[tuple[str, object]] = field(default_factory=Counter)

    def applies(self, request: str, sub: str) -> bool:
        if not self.requests:
            return True
        return request in self.requests or (bool(sub) and f"{request}/{sub}" in self.requests)

    def add(self, request: str, sub: str, device: Device, driver: str) -> bool:
        """Whether the device may join; if so it is counted (undo with :meth:`remove`)."""
        if not self.applies(request, sub):
            return True
        attr = lookup_attribute(device, driver, self.attribute)
        if attr is None:
            return False
        value = _typed(attr)
        if self.distinct:
            if self.seen[value]:
                return False
            self.seen[value] += 1
            return True
        if self.count == 0:
            self.first = value
        elif value != self.first:
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub: str, device: Device, driver: str) -> None:
        """Undo one successful :meth:`add` with the same arguments."""
        if not self.applies(request, sub):
            return
        if self.distinct:
            attr = lookup_attribute(device, driver, self.attribute)
            if attr is not None:
                self.seen[_typed(attr)] -= 1
            return
        self.count -= 1


def make_constraint(spec: DeviceConstraint) -> Constraint:
    """The running state for one of a claim's constraints."""
    distinct = spec.distinct_attribute is not None
    attribute = spec.distinct_attribute if distinct else spec.match_attribute
    assert attribute is not None  # the model requires exactly one
    return Constraint(frozenset(spec.requests), attribute, distinct)
