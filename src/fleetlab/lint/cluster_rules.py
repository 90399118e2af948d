"""Rules that need the scenario's node pools: selectors, taints, per-node capacity and gang topology.

For a pod that requests a GPU resource: GPU007 when no node matches its nodeSelector / required node
affinity, GPU009 when no matching node has enough of a resource for one pod, GPU006 when the nodes left
all carry a taint the pod does not tolerate, and GPU008 when a gang with a required topology level can
never fit in a single domain of that level, counted like Kueue's topology-aware scheduling does on an
empty cluster: per node, how many whole pods its allocatable holds, summed over the domain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fleetlab.lint.findings import Finding, finding
from fleetlab.lint.manifests import FieldPath, Manifest, render_path
from fleetlab.lint.nodes import (
    LintNode,
    PodConstraints,
    constraints,
    fit_error,
    insufficient,
    matches_affinity,
    pods_per_node,
    untolerated,
)
from fleetlab.lint.resources import is_gpu_resource
from fleetlab.lint.spread_rules import spread_findings
from fleetlab.lint.workloads import PodGroup, PodTemplate
from fleetlab.model.scenario import Scenario

MAX_VALUES = 6


@dataclass(frozen=True)
class ClusterContext:
    """The scenario and its nodes, built once per lint run."""

    scenario: Scenario
    nodes: Sequence[LintNode]

    @property
    def named_taint(self) -> bool:
        """Before v1.35 the scheduler named the first untolerated taint in its message."""
        return self.scenario.scheduler.kubernetes_version < "1.35"

    @property
    def label(self) -> str:
        return f"scenario {self.scenario.name!r}"


def _label_values(nodes: Sequence[LintNode], key: str) -> str:
    values = sorted({n.labels[key] for n in nodes if key in n.labels})
    if not values:
        return f"no node has a {key} label"
    shown = ", ".join(values[:MAX_VALUES]) + (
        f" and {len(values) - MAX_VALUES} more" if len(values) > MAX_VALUES else ""
    )
    return f"{key} on the nodes: {shown}"


def _selector_keys(pod: PodConstraints) -> list[str]:
    keys = list(pod.node_selector)
    if pod.required is not None:
        for term in pod.required.node_selector_terms:
            keys += [r.key for r in term.match_expressions if r.key not in keys]
    return keys


def _placement_findings(
    template: PodTemplate, pod: PodConstraints, ctx: ClusterContext
) -> tuple[list[Finding], list[LintNode]]:
    """GPU007 / GPU009 / GPU006, and the nodes that can take one pod when none applies."""
    nodes, manifest, spec = ctx.nodes, template.manifest, template.spec_path
    scheduler = f"kube-scheduler: {fit_error(nodes, pod, ctx.named_taint)}"
    matching = [n for n in nodes if matches_affinity(n, pod)]
    if not matching:
        path: FieldPath = spec  # both a selector and required affinity: the pod spec as a whole
        if pod.required is None:
            path = (*spec, "nodeSelector")
        elif not pod.node_selector:
            path = (*spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
        keys = _selector_keys(pod)
        return [
            finding(
                "GPU007",
                manifest,
                path,
                f"no node of {ctx.label} ({len(nodes)} node(s) in {len(ctx.scenario.cluster.pools)} "
                f"pool(s)) matches the pod's nodeSelector / required node affinity; {scheduler}",
                "select labels the GPU pools carry: " + "; ".join(_label_values(nodes, k) for k in keys),
            )
        ], []
    fitting = [n for n in matching if not insufficient(n, pod)]
    if not fitting:
        return [_capacity_finding(template, pod, matching, ctx, scheduler)], []
    allowed = [n for n in fitting if untolerated(n, pod) is None]
    if not allowed:
        taints = {(t.key, t.value, t.effect) for n in fitting if (t := untolerated(n, pod)) is not None}
        adds = "; ".join(f"{{key: {k}, operator: Exists, effect: {e}}}" for k, _, e in sorted(taints))
        shown = ", ".join(f"{k}={v}:{e}" if v else f"{k}:{e}" for k, v, e in sorted(taints))
        return [
            finding(
                "GPU006",
                manifest,
                (*spec, "tolerations"),
                f"every node of {ctx.label} that could run the pod is tainted {shown} and the pod does not "
                f"tolerate it; {scheduler}",
                f"add to {render_path((*spec, 'tolerations'))}: {adds}",
            )
        ], []
    return [], allowed


def _capacity_finding(
    template: PodTemplate,
    pod: PodConstraints,
    matching: Sequence[LintNode],
    ctx: ClusterContext,
    scheduler: str,
) -> Finding:
    """GPU009: no node the pod may use holds one pod; names what is short and where it exists at all."""
    largest = {name: max(n.allocatable.get(name, 0) for n in matching) for name in pod.requests}
    short = [name for name in sorted(pod.requests) if largest[name] < pod.requests[name]]
    short = short or sorted({name for n in matching for name in insufficient(n, pod)})
    parts: list[str] = []
    fixes: list[str] = []
    for name in short:
        parts.append(
            f"{name}: the pod needs {pod.requests[name]}, the largest matching node has {largest[name]}"
        )
        if largest[name] == 0:
            pools = sorted({n.pool for n in ctx.nodes if n.allocatable.get(name, 0) > 0})
            where = f"pools that have it: {', '.join(pools)}" if pools else "no pool of the scenario has it"
            fixes.append(f"no node the pod may use advertises {name} ({where})")
    if not fixes:
        fixes.append(
            "request at most what one node has and spread the work over more pods, or select a pool whose "
            "nodes are large enough"
        )
    return finding(
        "GPU009",
        template.manifest,
        (*template.spec_path, "containers"),
        f"no node of {ctx.label} that the pod may use has room for one pod ({'; '.join(parts)}); {scheduler}",
        "; ".join(fixes),
    )


def _gang_finding(
    manifest: Manifest,
    path: FieldPath,
    label: str,
    topology: str,
    count: int,
    pod: PodConstraints,
    allowed: Sequence[LintNode],
    levels: Sequence[str],
) -> Finding | None:
    """GPU008 when ``count`` pods like ``pod`` fit in no single domain of ``topology``, or when
    ``topology`` is not a level of the cluster's Topology (Kueue admits TAS podsets only at its levels)."""
    if topology not in levels:
        return finding(
            "GPU008",
            manifest,
            path,
            f"{label} requires one {topology} domain, but {topology} is not a level of the cluster's "
            f"Topology ({', '.join(levels)}); Kueue assigns topology only at the levels its Topology lists",
            f"use one of the levels: {', '.join(levels)}",
        )
    domains: dict[str, list[LintNode]] = {}
    for node in allowed:
        if topology in node.labels:
            domains.setdefault(node.labels[topology], []).append(node)
    if not domains:
        return finding(
            "GPU008",
            manifest,
            path,
            f"{label} requires one {topology} domain, but no node it may use has the label {topology}, so "
            "it can never be admitted",
            "use a topology level the nodes carry (e.g. topology.kubernetes.io/zone, kubernetes.io/hostname)",
        )
    gpu = next((n for n in pod.gpu_resources if is_gpu_resource(n)), pod.gpu_resources[0])
    per_pod = pod.requests[gpu]
    capacity = {value: sum(pods_per_node(n, pod) for n in members) for value, members in domains.items()}
    best = max(capacity, key=lambda v: (capacity[v], v))
    if capacity[best] >= count:
        return None
    gpus_in_best = sum(n.allocatable.get(gpu, 0) for n in domains[best])
    return finding(
        "GPU008",
        manifest,
        path,
        f"{label} requires all its pods in one {topology} domain: {count} pod(s) x {per_pod} {gpu} = "
        f"{count * per_pod} {gpu}, but the largest domain ({topology}={best}: {len(domains[best])} node(s), "
        f"{gpus_in_best} {gpu}) holds only {capacity[best]} such pod(s)",
        f"ask for a wider level or kueue.x-k8s.io/podset-preferred-topology, or keep the gang at "
        f"{capacity[best]} pod(s) or fewer",
    )


def cluster_findings(template: PodTemplate, ctx: ClusterContext) -> list[Finding]:
    """GPU006-GPU009 for one pod template that requests a GPU resource."""
    pod = constraints(template, ctx.scenario.cluster.extended_resource_toleration)
    if not any(is_gpu_resource(n) for n in pod.gpu_resources):
        return []
    out, allowed = _placement_findings(template, pod, ctx)
    if not out:
        out = spread_findings(template, allowed, ctx.label)
    if out or template.topology is None or template.manifest.kind == "Pod":
        return out
    gang = _gang_finding(
        template.manifest,
        template.gang_path,
        template.gang_label,
        template.topology,
        template.gang_size,
        pod,
        allowed,
        ctx.scenario.cluster.topology_levels,
    )
    return [gang] if gang is not None else []


def group_findings(group: PodGroup, ctx: ClusterContext) -> list[Finding]:
    """GPU008 for a Kueue plain-pod group with a required topology; its pods are taken to be like its
    first pod (a group's pods are one shape in the common case)."""
    if group.topology is None:
        return []
    first = group.members[0]
    pod = constraints(first, ctx.scenario.cluster.extended_resource_toleration)
    if not any(is_gpu_resource(n) for n in pod.gpu_resources):
        return []
    out, allowed = _placement_findings(first, pod, ctx)
    if out:
        return []  # already reported for the pod itself
    gang = _gang_finding(
        first.manifest,
        first.gang_path,
        f"pod group {group.name!r} ({group.total} pod(s))",
        group.topology,
        group.total,
        pod,
        allowed,
        ctx.scenario.cluster.topology_levels,
    )
    return [gang] if gang is not None else []
