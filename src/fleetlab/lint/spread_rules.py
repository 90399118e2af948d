"""Rules for topology spread and pod anti-affinity that the scenario's nodes can never satisfy.

GPU010: a DoNotSchedule topologySpreadConstraint whose topologyKey no node the pod may use carries —
kube-scheduler rejects every such node ("didn't match pod topology spread constraints (missing required
label)"). GPU011: required podAntiAffinity against the template's own pods with more replicas than the
key has domains among those nodes — the extra replicas stay Pending ("didn't match pod anti-affinity
rules").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from fleetlab.lint.findings import Finding, finding
from fleetlab.lint.manifests import value_at
from fleetlab.lint.nodes import LintNode
from fleetlab.lint.workloads import PodTemplate
from fleetlab.model.pod_constraints import LabelSelector
from fleetlab.placement.pod_labels import selector_matches


def _own_labels(template: PodTemplate) -> dict[str, str]:
    """The pod template's metadata.labels (the Pod's own for kind Pod)."""
    data = value_at(template.manifest.data, (*template.spec_path[:-1], "metadata", "labels"))
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, Mapping) else {}


def _selects_own(term: Mapping[str, Any], labels: dict[str, str]) -> bool:
    try:
        selector = (
            LabelSelector.model_validate(term.get("labelSelector")) if term.get("labelSelector") else None
        )
    except ValidationError:
        return False
    return selector_matches(selector, labels)


def spread_findings(template: PodTemplate, allowed: Sequence[LintNode], label: str) -> list[Finding]:
    """GPU010 / GPU011 for one pod template, given the nodes that can take one of its pods."""
    spec, path, manifest = template.spec, template.spec_path, template.manifest
    out: list[Finding] = []
    for i, c in enumerate(spec.get("topologySpreadConstraints") or []):
        if not isinstance(c, Mapping) or c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
            continue
        key = c.get("topologyKey")
        if isinstance(key, str) and not any(key in n.labels for n in allowed):
            out.append(
                finding(
                    "GPU010",
                    manifest,
                    (*path, "topologySpreadConstraints", i, "topologyKey"),
                    f"no node of {label} the pod may use has the label {key}; kube-scheduler: node(s) didn't "
                    "match pod topology spread constraints (missing required label)",
                    "spread over a key the nodes carry (topology.kubernetes.io/zone, kubernetes.io/hostname) "
                    "or use whenUnsatisfiable: ScheduleAnyway",
                )
            )
    anti = ((spec.get("affinity") or {}).get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    labels = _own_labels(template)
    for i, term in enumerate(anti):
        key = term.get("topologyKey") if isinstance(term, Mapping) else None
        if not isinstance(key, str) or not _selects_own(term, labels):
            continue
        domains = {n.labels[key] for n in allowed if key in n.labels}
        if template.replicas > len(domains):
            out.append(
                finding(
                    "GPU011",
                    manifest,
                    (
                        *path,
                        "affinity",
                        "podAntiAffinity",
                        "requiredDuringSchedulingIgnoredDuringExecution",
                        i,
                    ),
                    f"{template.replicas} replica(s) must each have their own {key} domain, but the nodes of "
                    f"{label} the pod may use have {len(domains)}; {template.replicas - len(domains)} "
                    "replica(s) stay Pending (node(s) didn't match pod anti-affinity rules)",
                    f"run at most {len(domains)} replica(s), add nodes, or make the term preferred",
                )
            )
    return out
