"""Read resource.k8s.io/v1 objects (DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice) from
kubectl output or a scenario, and a pod's ``spec.resourceClaims`` with the claim names its status records.

Objects are checked as the API server checks them: the v1 schema's fields (``model/dra.py``) and every
CEL selector parsed (``spec/cel_parse.py``); a problem names the object and the field. Other API versions
of these kinds (v1beta1, v1beta2) are refused with the command that lists them as v1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from fleetlab.model.dra import (
    API_VERSION,
    DeviceClass,
    DeviceSelector,
    DraObjects,
    PodClaimRef,
    PodClaims,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from fleetlab.spec.cel_parse import CelSyntaxError, parse_cel
from fleetlab.spec.errors import SpecError, problems_from_validation

__all__ = ["DRA_KINDS", "check_dra_selectors", "pod_claims", "read_dra_objects"]

DRA_KINDS: dict[str, type[BaseModel]] = {
    "DeviceClass": DeviceClass,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
    "ResourceSlice": ResourceSlice,
}


def _name(obj: Mapping[str, Any]) -> str:
    found = obj.get("metadata")
    meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    ns, name = meta.get("namespace"), meta.get("name") or "<unnamed>"
    return f"{ns}/{name}" if ns else str(name)


def _selectors(model: BaseModel) -> list[tuple[str, DeviceSelector]]:
    """Every CEL selector of a class or claim, with its field path."""
    if isinstance(model, DeviceClass):
        return [(f"spec.selectors[{i}]", s) for i, s in enumerate(model.spec.selectors)]
    if isinstance(model, ResourceClaimTemplate):
        devices = model.spec.spec.devices
    elif isinstance(model, ResourceClaim):
        devices = model.spec.devices
    else:
        return []
    out: list[tuple[str, DeviceSelector]] = []
    for r, request in enumerate(devices.requests):
        base = f"spec.devices.requests[{r}]"
        if request.exactly is not None:
            out += [(f"{base}.exactly.selectors[{i}]", s) for i, s in enumerate(request.exactly.selectors)]
        for k, sub in enumerate(request.first_available):
            out += [(f"{base}.firstAvailable[{k}].selectors[{i}]", s) for i, s in enumerate(sub.selectors)]
    if isinstance(model, ResourceClaimTemplate):
        out = [(path.replace("spec.", "spec.spec.", 1), s) for path, s in out]
    return out


def read_dra_object(obj: Mapping[str, Any], source: str, lenient: bool = False) -> BaseModel:
    """One object of :data:`DRA_KINDS`; ``lenient`` (kubectl output) drops ``status`` fields other than the
    allocation and reservations a newer API server may add."""
    kind = str(obj.get("kind"))
    where = f"{kind} {_name(obj)}"
    version = obj.get("apiVersion", API_VERSION)
    if version != API_VERSION:
        raise SpecError(
            source,
            [f"{where}: apiVersion {version} is not read; list the objects as {API_VERSION} "
             f"(`kubectl get {kind.lower()}s.v1.resource.k8s.io -A -o json`)"],
        )  # fmt: skip
    data = dict(obj)
    if lenient and isinstance(data.get("status"), Mapping):
        data["status"] = {
            k: v for k, v in data["status"].items() if k in ("allocation", "reservedFor", "devices")
        }
    try:
        model = DRA_KINDS[kind].model_validate(data)
    except ValidationError as exc:
        raise SpecError(source, problems_from_validation(exc, where)) from None
    problems = _selector_problems(model, where)
    if problems:
        raise SpecError(source, problems)
    return model


def _selector_problems(model: BaseModel, where: str) -> list[str]:
    problems = []
    for path, selector in _selectors(model):
        try:
            parse_cel(selector.cel.expression)
        except CelSyntaxError as exc:
            problems.append(f"{where}: {path}.cel.expression: compilation failed: {exc}")
    return problems


def check_dra_selectors(objects: DraObjects, source: str) -> None:
    """Every CEL selector of a scenario's DRA objects parses (the API server compiles them on create)."""
    problems: list[str] = []
    models: list[DeviceClass | ResourceClaim | ResourceClaimTemplate] = [
        *objects.classes,
        *objects.claims,
        *objects.templates,
    ]
    for model in models:
        kind = type(model).__name__
        meta = model.metadata
        name = f"{meta.namespace}/{meta.name}" if getattr(meta, "namespace", None) else meta.name
        problems += _selector_problems(model, f"dra: {kind} {name}")
    if problems:
        raise SpecError(source, problems)


def read_dra_objects(objs: Sequence[Mapping[str, Any]], source: str, lenient: bool = False) -> DraObjects:
    """The objects sorted by kind, in the order given; names must be unique per kind and namespace."""
    by_kind: dict[str, list[Any]] = {k: [] for k in DRA_KINDS}
    seen: set[tuple[str, str]] = set()
    for obj in objs:
        model = read_dra_object(obj, source, lenient)
        key = (str(obj.get("kind")), _name(obj))
        if key in seen:
            raise SpecError(source, [f"{key[0]} {key[1]} appears twice"])
        seen.add(key)
        by_kind[key[0]].append(model)
    return DraObjects(
        classes=tuple(by_kind["DeviceClass"]),
        claims=tuple(by_kind["ResourceClaim"]),
        templates=tuple(by_kind["ResourceClaimTemplate"]),
        slices=tuple(by_kind["ResourceSlice"]),
    )


def pod_claims(
    meta: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any]
) -> PodClaims | None:
    """``spec.resourceClaims`` with each template entry's generated claim from
    ``status.resourceClaimStatuses`` (None: the pod has no claims)."""
    entries = spec.get("resourceClaims") or []
    if not isinstance(entries, list) or not entries:
        return None
    generated = {
        str(s.get("name")): s.get("resourceClaimName")
        for s in status.get("resourceClaimStatuses") or []
        if isinstance(s, Mapping)
    }
    refs = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name = str(entry.get("name") or "")
        template = entry.get("resourceClaimTemplateName")
        claim = entry.get("resourceClaimName") or (generated.get(name) if template else None)
        refs.append(PodClaimRef(name, str(claim) if claim else None, str(template) if template else None))
    return PodClaims(
        str(meta.get("namespace") or "default"),
        str(meta.get("name") or ""),
        str(meta.get("uid") or ""),
        tuple(refs),
    )
