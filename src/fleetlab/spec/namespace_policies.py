"""Read namespace ResourceQuota and LimitRange objects (core/v1) from kubectl output or a scenario.

Each object is checked as the API server checks it (``model/resource_quota.py``); ``status`` is dropped
(a replay recomputes usage) and a problem names the object and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from fleetlab.model.resource_quota import LimitRange, ResourceQuota
from fleetlab.spec.errors import SpecError, problems_from_validation

__all__ = ["NAMESPACE_POLICY_KINDS", "read_namespace_policies"]

NAMESPACE_POLICY_KINDS = frozenset({"ResourceQuota", "LimitRange"})
NamespacePolicy = ResourceQuota | LimitRange


def read_namespace_policies(objects: Sequence[Mapping[str, Any]], source: str) -> tuple[NamespacePolicy, ...]:
    """The objects as models, in the order given; every problem of every object in one error."""
    out: list[NamespacePolicy] = []
    problems: list[str] = []
    for obj in objects:
        body = {k: v for k, v in obj.items() if k != "status"}
        found = obj.get("metadata")
        meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        where = f"{obj.get('kind')} {meta.get('namespace', 'default')}/{meta.get('name', '?')}"
        model = ResourceQuota if obj.get("kind") == "ResourceQuota" else LimitRange
        try:
            out.append(model.model_validate(body))
        except ValidationError as exc:
            problems.extend(f"{where}: {p}" for p in problems_from_validation(exc))
    if problems:
        raise SpecError(source, problems)
    return tuple(out)
