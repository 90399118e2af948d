"""Lint rules for Dynamic Resource Allocation manifests (resource.k8s.io/v1).

* GPU014 (error): a DeviceClass / ResourceClaim / ResourceClaimTemplate the API server refuses: a field the
  v1 schema does not have, or a CEL selector that does not compile (syntax, an undeclared name such as a
  misspelt ``device``, a function the environment lacks, a non-bool result).
* GPU015 (error): a claim or template request naming a DeviceClass that none of the linted files defines and
  that is not one of NVIDIA's driver classes (``gpu.nvidia.com``, ``mig.nvidia.com``): kube-scheduler keeps
  the pod pending with "device class ... does not exist".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from fleetlab.lint.findings import Finding, finding
from fleetlab.lint.manifests import Manifest
from fleetlab.model.dra import DeviceClass, ResourceClaim, ResourceClaimTemplate
from fleetlab.placement.dra.cel import compile_selector
from fleetlab.spec.cel_parse import CelSyntaxError
from fleetlab.spec.dra_objects import DRA_KINDS

NVIDIA_CLASSES = frozenset({"gpu.nvidia.com", "mig.nvidia.com"})


def _requests(model: Any) -> list[tuple[tuple[str | int, ...], Any]]:
    """(path of the request, exact or sub request) for every request of a claim or template."""
    base: tuple[str | int, ...]
    if isinstance(model, ResourceClaimTemplate):
        devices, base = model.spec.spec.devices, ("spec", "spec", "devices", "requests")
    elif isinstance(model, ResourceClaim):
        devices, base = model.spec.devices, ("spec", "devices", "requests")
    else:
        return []
    out: list[tuple[tuple[str | int, ...], Any]] = []
    for r, request in enumerate(devices.requests):
        if request.exactly is not None:
            out.append(((*base, r, "exactly"), request.exactly))
        for k, sub in enumerate(request.first_available):
            out.append(((*base, r, "firstAvailable", k), sub))
    return out


UNKNOWN_CLASS_FIX = "apply the DeviceClass, or name one that exists (kubectl get deviceclasses)"
CEL_FIX = "write the selector over device.driver, device.attributes[...] and device.capacity[...]"


def dra_findings(manifests: Sequence[Manifest]) -> list[Finding]:
    """GPU014 / GPU015 findings over every DRA object in the files."""
    models: list[tuple[Manifest, Any]] = []
    findings: list[Finding] = []
    for m in manifests:
        if m.kind not in DRA_KINDS or m.kind == "ResourceSlice":
            continue
        try:
            models.append((m, DRA_KINDS[m.kind].model_validate(m.data)))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = tuple(p for p in first["loc"] if isinstance(p, (str, int)))
            findings.append(finding("GPU014", m, loc, f"the API server refuses this {m.kind}: {first['msg']}",
                                    "fix the field as the resource.k8s.io/v1 schema defines it"))  # fmt: skip
    classes = {model.name for _, model in models if isinstance(model, DeviceClass)} | NVIDIA_CLASSES
    for m, model in models:
        selectors: list[tuple[tuple[str | int, ...], str]] = []
        if isinstance(model, DeviceClass):
            selectors = [
                (("spec", "selectors", i, "cel", "expression"), s.cel.expression)
                for i, s in enumerate(model.spec.selectors)
            ]
        for path, request in _requests(model):
            selectors += [
                ((*path, "selectors", i, "cel", "expression"), s.cel.expression)
                for i, s in enumerate(request.selectors)
            ]
            if request.device_class_name not in classes:
                message = (
                    f"device class {request.device_class_name} is not defined in these files (nor a driver's)"
                )
                findings.append(finding("GPU015", m, (*path, "deviceClassName"), message, UNKNOWN_CLASS_FIX))
        for path, expression in selectors:
            try:
                compile_selector(expression)
            except CelSyntaxError as exc:
                findings.append(finding("GPU014", m, path, f"CEL selector does not compile: {exc}", CEL_FIX))
    return findings
