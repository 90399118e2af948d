"""LimitRange as the API server applies it to a new pod (``plugin/pkg/admission/limitranger``, v1.35).

The LimitRange object is defaulted when created (``SetDefaults_LimitRangeItem``, type Container): a
``max`` with no ``default`` becomes the default limit, a ``default`` with no ``defaultRequest`` becomes the
default request, a ``min`` with no ``defaultRequest`` becomes it. Then each container of a new pod gets the
default limit and request of every resource it leaves unset — after the pod's own defaulting, so a
container with a limit only already has that limit as its request. Finally the pod is refused when a
container (type Container) or the pod's total (type Pod: requests and limits aggregated as the scheduler
does, ``resource_quota.pod_totals``) breaks ``min`` (request below it, or no request),
``max`` (limit above it, or no limit) or ``maxLimitRequestRatio``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from fleetlab.admission.resource_quota import pod_totals
from fleetlab.model.quantity import parse_quantity
from fleetlab.model.resource_quota import LimitRange, LimitRangeItem

__all__ = ["apply_limit_ranges", "defaulted_item"]


def defaulted_item(item: LimitRangeItem) -> LimitRangeItem:
    """The item as stored after the API server's defaulting of a LimitRange."""
    if item.type != "Container":
        return item
    default = {**item.max, **item.default}
    request = {**default, **item.default_request}
    request = {**item.min, **request}
    return item.model_copy(update={"default": default, "default_request": request})


def _q(values: Mapping[str, str | int]) -> dict[str, Fraction]:
    return {k: parse_quantity(v) for k, v in values.items()}


def _bounds(
    item: LimitRangeItem, kind: str, requests: Mapping[str, Fraction], limits: Mapping[str, Fraction]
) -> list[str]:
    problems: list[str] = []
    for name, low in _q(item.min).items():
        have = requests.get(name)
        if have is None:
            problems.append(f"minimum {name} usage per {kind} is {item.min[name]}.  No request is specified")
        elif have < low:
            problems.append(
                f"minimum {name} usage per {kind} is {item.min[name]}, but request is {float(have):g}"
            )
    for name, high in _q(item.max).items():
        have = limits.get(name)
        if have is None:
            problems.append(f"maximum {name} usage per {kind} is {item.max[name]}.  No limit is specified")
        elif have > high:
            problems.append(
                f"maximum {name} usage per {kind} is {item.max[name]}, but limit is {float(have):g}"
            )
    for name, ratio in _q(item.max_limit_request_ratio).items():
        req, lim = requests.get(name), limits.get(name)
        if req is None or lim is None or req == 0:
            problems.append(
                f"{name} max limit to request ratio per {kind} is {item.max_limit_request_ratio[name]}, "
                "but no request or limit is specified"
            )
        elif lim / req > ratio:
            problems.append(
                f"{name} max limit to request ratio per {kind} is {item.max_limit_request_ratio[name]}, "
                f"but provided ratio is {float(lim / req):.6f}"
            )
    return problems


def apply_limit_ranges(
    pod: Mapping[str, Any], ranges: Sequence[LimitRange]
) -> tuple[dict[str, Any], list[str]]:
    """The pod with the defaults of its namespace's LimitRanges set, and the reasons it is refused (empty
    when admitted)."""
    out = copy.deepcopy(dict(pod))
    spec = out.setdefault("spec", {})
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    items = [defaulted_item(i) for r in ranges for i in r.spec.limits]
    for c in containers:
        resources = c.setdefault("resources", {})
        requests = resources.setdefault("requests", {})
        limits = resources.setdefault("limits", {})
        for name, value in limits.items():
            requests.setdefault(name, value)
        for item in (i for i in items if i.type == "Container"):
            for name, value in item.default.items():
                limits.setdefault(name, value)
            for name, value in item.default_request.items():
                requests.setdefault(name, value)
    problems: list[str] = []
    for c in containers:
        requests, limits = _q(c["resources"]["requests"]), _q(c["resources"]["limits"])
        for item in (i for i in items if i.type == "Container"):
            problems += _bounds(item, "Container", requests, limits)
    for item in (i for i in items if i.type == "Pod"):
        problems += _bounds(item, "Pod", pod_totals(spec, 0), pod_totals(spec, 1))
    return out, problems
