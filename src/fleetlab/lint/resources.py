"""Container resource rules for GPUs and other extended resources, as the API server enforces them.

pkg/apis/core/validation/validation.go (validateResourceRequirements, ValidateResourceQuantityValue):
an extended resource is an integer resource (``must be an integer``) that cannot be overcommitted, so a
request must equal its limit (``must be equal to nvidia.com/gpu limit of 2``) and a request needs a limit
(``Limit must be set for non overcommitable resources``); a limit alone is fine, the request defaults to
it. Messages are written ``<field path>: <error type>: <detail>`` like a ``field.Error``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from fleetlab.lint.findings import Finding, finding
from fleetlab.lint.manifests import FieldPath, render_path, value_at
from fleetlab.lint.workloads import PodTemplate
from fleetlab.model.gpu_products import parse_product
from fleetlab.model.mig import MIG_RESOURCE_PREFIX, MigLayoutError, mig_capable_models, profiles
from fleetlab.model.quantity import QuantityError, parse_quantity
from fleetlab.model.resources import is_extended
from fleetlab.spec.kube_objects import dig

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
#: apimachinery's resource.ErrFormatWrong, what the API server says about a quantity it cannot parse.
QUANTITY_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def canonical(value: Fraction) -> str:
    """A quantity as ``Quantity.String()`` prints a decimal one: ``0.5`` -> ``500m``, ``2000`` -> ``2k``."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    value = abs(value)
    for suffix, exponent in (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3), ("", 0)):
        scaled = value / Fraction(10) ** exponent
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    for suffix, exponent in (("m", 3), ("u", 6), ("n", 9)):
        scaled = value * 10**exponent
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    return f"{sign}{-(-value * 10**9 // 1)}n"


def is_gpu_resource(name: str) -> bool:
    """GPU-like device plugin resources: ``nvidia.com/gpu``, MIG instances, ``amd.com/gpu`` and the like."""
    return is_extended(name) and ("gpu" in name.split("/", 1)[1] or name.startswith(MIG_RESOURCE_PREFIX))


@dataclass(frozen=True)
class Container:
    """One container of a pod template and where it is."""

    path: FieldPath
    name: str
    data: Mapping[str, Any]
    init: bool
    sidecar: bool
    #: Where the ResourceRequirements sit under ``path`` (``resourcesPerNode`` on a Trainer TrainJob).
    resources_key: str = "resources"


def containers(template: PodTemplate) -> Iterator[Container]:
    """App and init containers of a pod spec (ephemeral containers cannot have resources), and the
    container a CRD writes elsewhere (``resources_at``)."""
    if template.resources_at is not None:
        path, key = template.resources_at
        data = value_at(template.manifest.data, path)
        if isinstance(data, Mapping):
            yield Container(path, str(path[-1]), {"resources": data.get(key)}, False, False, key)
    for key, init in (("initContainers", True), ("containers", False)):
        items = template.spec.get(key)
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            if isinstance(item, Mapping):
                name = item.get("name")
                sidecar = init and item.get("restartPolicy") == "Always"
                yield Container((*template.spec_path, key, i), str(name or i), item, init, sidecar)


def _resource_map(container: Container, key: str) -> Mapping[str, Any]:
    value = container.data.get("resources")
    value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _parse(
    template: PodTemplate, path: FieldPath, name: str, raw: Any, out: list[Finding]
) -> Fraction | None:
    """A quantity, or None after recording GPU000/GPU001 for it."""
    where = render_path(path)
    try:
        value = parse_quantity(raw)
    except QuantityError as exc:
        out.append(
            finding(
                "GPU000",
                template.manifest,
                path,
                f'{where}: Invalid value: "{raw}": {QUANTITY_FORMAT} ({exc})',
                f'write {name} as a whole number such as "1" or "8"',
            )
        )
        return None
    if value < 0:
        out.append(
            finding(
                "GPU000",
                template.manifest,
                path,
                f'{where}: Invalid value: "{canonical(value)}": must be greater than or equal to 0',
                f"request a positive whole number of {name}",
            )
        )
        return None
    if value.denominator != 1:
        share = (
            "to share one GPU, use a MIG resource such as nvidia.com/mig-1g.10gb or the device plugin's "
            "time-slicing (nvidia.com/gpu.shared)"
            if is_gpu_resource(name)
            else "extended resources are counted in whole units"
        )
        out.append(
            finding(
                "GPU001",
                template.manifest,
                path,
                f'{where}: Invalid value: "{canonical(value)}": must be an integer',
                f"request a whole number of {name} (e.g. {max(1, int(value))}); {share}",
            )
        )
        return None
    return value


def _extended(values: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k): v for k, v in values.items() if is_extended(str(k))}


def _container_findings(template: PodTemplate, container: Container) -> list[Finding]:
    out: list[Finding] = []
    res_path: FieldPath = (*container.path, container.resources_key)
    limits = _extended(_resource_map(container, "limits"))
    requests = _extended(_resource_map(container, "requests"))
    parsed_limits = {n: _parse(template, (*res_path, "limits", n), n, raw, out) for n, raw in limits.items()}
    for name, raw in requests.items():
        request = _parse(template, (*res_path, "requests", name), name, raw, out)
        if name not in limits:
            where = render_path((*res_path, "limits"))
            out.append(
                finding(
                    "GPU003",
                    template.manifest,
                    (*res_path, "limits"),
                    f"{where}: Required value: Limit must be set for non overcommitable resources "
                    f"({name} is requested but has no limit)",
                    f"set resources.limits[{name}] to the same amount (or give only the limit: the request "
                    "defaults to it)",
                )
            )
            continue
        limit = parsed_limits.get(name)
        if request is not None and limit is not None and request != limit:
            where = render_path((*res_path, "requests"))
            out.append(
                finding(
                    "GPU002",
                    template.manifest,
                    (*res_path, "requests"),
                    f'{where}: Invalid value: "{canonical(request)}": must be equal to {name} limit of '
                    f"{canonical(limit)}",
                    f"make requests[{name}] equal to limits[{name}] (or drop the request; it defaults to the "
                    "limit)",
                )
            )
    gpus = sorted(n for n in {*limits, *requests} if is_gpu_resource(n))
    if container.init and not container.sidecar and gpus:
        out.append(
            finding(
                "GPU004",
                template.manifest,
                res_path,
                f"init container {container.name!r} requests {', '.join(gpus)}: the pod's effective request "
                "is the larger of any init container and the sum of its app containers, so these GPUs are "
                "reserved for the whole life of the pod while only the init step can use them",
                "move GPU work out of the init container, or request the GPUs in the app container that uses "
                "them (the device plugin hands the init container's devices on to it)",
            )
        )
    return out


def resource_findings(template: PodTemplate) -> list[Finding]:
    """GPU000-GPU005 for every container of one pod template."""
    out: list[Finding] = []
    for container in containers(template):
        out += _container_findings(template, container)
        out += _mig_findings(template, container)
    return out


def declared_products(spec: Mapping[str, Any]) -> tuple[FieldPath, list[str]] | None:
    """GPU products a pod is pinned to by nodeSelector, or by an ``In`` on every required affinity term."""
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping) and isinstance(selector.get(GPU_PRODUCT_LABEL), str):
        return ("nodeSelector", GPU_PRODUCT_LABEL), [str(selector[GPU_PRODUCT_LABEL])]
    terms = dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    terms = dig(terms, "nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return None
    products: list[str] = []
    for term in terms:
        exprs = term.get("matchExpressions") if isinstance(term, Mapping) else None
        hit = [
            e
            for e in exprs or []
            if isinstance(e, Mapping) and e.get("key") == GPU_PRODUCT_LABEL and e.get("operator") == "In"
        ]
        if not hit or not isinstance(hit[0].get("values"), list):
            return None
        products += [str(v) for v in hit[0]["values"]]
    return ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"), products


def _profile_name(resource: str) -> str:
    return resource[len(MIG_RESOURCE_PREFIX) :]


def _known_somewhere(profile: str) -> bool:
    return any(profile in profiles(m) for m in mig_capable_models())


def _mig_problem(resource: str, profile: str, product: str, selected_at: str) -> tuple[str, str] | None:
    """(message, fix) when the GPU model behind ``product`` cannot provide MIG resource ``resource``."""
    model = parse_product(product).model
    if model is None:
        return None  # a product fleetlab does not know: nothing to check against
    label = f"{GPU_PRODUCT_LABEL}={product}"
    try:
        table = profiles(model)
    except MigLayoutError:
        return (
            f"{resource}: {model} ({label}) has no MIG support, so its nodes never advertise MIG resources",
            f"request nvidia.com/gpu on {model}, or select a MIG-capable GPU: "
            + ", ".join(mig_capable_models()),
        )
    if profile in table:
        return None
    names = ", ".join(MIG_RESOURCE_PREFIX + p for p in table if "+me" not in p)
    return (
        f"{resource}: {model} ({label}, selected at {selected_at}) has no MIG profile {profile!r}",
        f"use one of {model}'s profiles: {names}",
    )


def _mig_findings(template: PodTemplate, container: Container) -> list[Finding]:
    """GPU005: a ``nvidia.com/mig-<profile>`` the selected GPU model (or, unselected, every model) lacks."""
    limits, requests = _resource_map(container, "limits"), _resource_map(container, "requests")
    names = sorted({str(n) for n in (*limits, *requests) if str(n).startswith(MIG_RESOURCE_PREFIX)})
    declared = declared_products(template.spec)
    out: list[Finding] = []
    for resource in names:
        profile = _profile_name(resource).replace(".me", "+me")
        path: FieldPath = (
            *container.path,
            container.resources_key,
            "limits" if resource in limits else "requests",
            resource,
        )
        if declared is None:
            if not _known_somewhere(profile):
                message = (
                    f"{resource}: no MIG-capable GPU model has a profile {profile!r}, so no node advertises "
                    "this resource"
                )
                fix = (
                    "use a profile of the GPU you target (e.g. nvidia.com/mig-1g.10gb on A100-80GB/H100, "
                    f"nvidia.com/mig-1g.18gb on H200) and pin the model with nodeSelector {GPU_PRODUCT_LABEL}"
                )
                out.append(finding("GPU005", template.manifest, path, message, fix))
            continue
        selector_path, products = declared
        selected_at = render_path((*template.spec_path, *selector_path))
        for product in products:
            problem = _mig_problem(resource, profile, product, selected_at)
            if problem is not None:
                out.append(finding("GPU005", template.manifest, path, *problem))
    return out
