"""A scenario's ResourceQuota and LimitRange objects as manifests (``namespace-policies.yaml``)."""

from __future__ import annotations

from typing import Any

from fleetlab.export.applied import as_applied
from fleetlab.model.scenario import Scenario

__all__ = ["NAMESPACE_POLICIES_FILE", "namespace_policy_documents"]

NAMESPACE_POLICIES_FILE = "namespace-policies.yaml"


def namespace_policy_documents(scenario: Scenario) -> list[dict[str, Any]]:
    """Each object as applied (core/v1), quotas first, in the scenario's order within each kind."""
    ordered = sorted(scenario.namespace_policies, key=lambda p: p.kind != "ResourceQuota")
    return [as_applied(p) for p in ordered]
