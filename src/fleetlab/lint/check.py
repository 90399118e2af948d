"""Run every rule over a set of manifest files, optionally against a scenario's node pools."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fleetlab.lint.cluster_rules import ClusterContext, cluster_findings, group_findings
from fleetlab.lint.crd_workloads import unread_kind_findings, workload_templates
from fleetlab.lint.dra_rules import dra_findings
from fleetlab.lint.findings import Finding
from fleetlab.lint.kai_rules import kai_findings
from fleetlab.lint.manifests import Manifest, read_manifests
from fleetlab.lint.nodes import cluster_nodes
from fleetlab.lint.resources import resource_findings
from fleetlab.lint.workloads import PodTemplate, pod_groups
from fleetlab.model.scenario import Scenario


@dataclass(frozen=True)
class LintReport:
    """Findings in file order, and how much was looked at."""

    findings: tuple[Finding, ...]
    objects: int
    pod_templates: int
    scenario: str | None

    @property
    def errors(self) -> int:
        """Findings of severity error."""
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> int:
        """Findings of severity warning."""
        return sum(1 for f in self.findings if f.severity == "warning")


def lint_manifests(manifests: Sequence[Manifest], scenario: Scenario | None = None) -> LintReport:
    """Every finding for already-read manifests; cluster rules only when a scenario is given."""
    templates: list[PodTemplate] = []
    findings: list[Finding] = []
    for manifest in manifests:
        found = workload_templates(manifest)
        findings += unread_kind_findings(manifest, found)
        templates += found
    ctx = ClusterContext(scenario, cluster_nodes(scenario.cluster)) if scenario is not None else None
    for template in templates:
        own = resource_findings(template) + kai_findings(template)
        findings += own
        if ctx is not None and template.placement_known:
            unknown_mig = any(f.rule == "GPU005" for f in own)
            # a MIG profile that does not exist is reported once, not again as "no node has room"
            findings += [
                f for f in cluster_findings(template, ctx) if not (unknown_mig and f.rule == "GPU009")
            ]
    findings += dra_findings(manifests)
    if ctx is not None:
        for group in pod_groups(templates):
            findings += group_findings(group, ctx)
    file_order: dict[str, int] = {}
    for manifest in manifests:
        file_order.setdefault(manifest.file, len(file_order))
    findings.sort(key=lambda f: (file_order.get(f.file, 0), f.document, f.line or 0))
    return LintReport(
        findings=tuple(findings),
        objects=len(manifests),
        pod_templates=len(templates),
        scenario=scenario.name if scenario is not None else None,
    )


def lint_paths(paths: Sequence[Path], scenario: Scenario | None = None) -> LintReport:
    """Read every file (a ManifestError / SpecError for the first unreadable one) and lint them all."""
    manifests: list[Manifest] = []
    for path in paths:
        manifests += read_manifests(path)
    return lint_manifests(manifests, scenario)
