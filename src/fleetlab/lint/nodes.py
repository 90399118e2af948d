"""The scenario's nodes as lint sees them, and a pod's scheduling constraints read from its spec.

Matching follows kube-scheduler: nodeSelector pairs all match, required node affinity terms are ORed and
their expressions ANDed (component-helpers nodeaffinity; an empty term matches nothing), and a taint with
effect NoSchedule or NoExecute needs a toleration (core/v1 ToleratesTaint). Filters run in the default
profile's order (TaintToleration before NodeAffinity before NodeResourcesFit) and each node reports the
first that fails, which is how ``0/N nodes are available: ...`` counts reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pydantic import ValidationError

from fleetlab.lint.resources import containers
from fleetlab.lint.workloads import PodTemplate
from fleetlab.model.cluster import Cluster
from fleetlab.model.kube import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration
from fleetlab.model.quantity import QuantityError
from fleetlab.model.resources import CPU, MEMORY, PODS, is_extended, parse_amount
from fleetlab.placement.plugins.taint_toleration import first_untolerated
from fleetlab.spec.kube_objects import dig


@dataclass(frozen=True)
class LintNode:
    """One node of a scenario: labels, taints and allocatable in fleetlab's integer units."""

    name: str
    pool: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, int]


def cluster_nodes(cluster: Cluster) -> list[LintNode]:
    """Every node of every pool, as the simulator would create them."""
    out: list[LintNode] = []
    for pool in cluster.pools:
        resources = {CPU: pool.cpu, MEMORY: pool.memory, PODS: pool.max_pods, **pool.extended_resources}
        if pool.gpu_model is not None:
            resources.update(pool.device_resources())
        for index in range(pool.count):
            out.append(
                LintNode(pool.node_name(index), pool.name, pool.node_labels(index), pool.taints, resources)
            )
    return out


@dataclass(frozen=True)
class PodConstraints:
    """What placement reads from a pod spec; ``None`` selector/affinity means none was given."""

    node_selector: Mapping[str, str]
    required: NodeSelector | None
    tolerations: tuple[Toleration, ...]
    requests: Mapping[str, int]
    implied_tolerations: tuple[Toleration, ...] = field(default=())

    @property
    def gpu_resources(self) -> list[str]:
        """Extended resources the pod requests (what the device plugins advertise)."""
        return sorted(n for n, v in self.requests.items() if is_extended(n) and v > 0)


def _amounts(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    if not isinstance(values, Mapping):
        return out
    for name, raw in values.items():
        try:
            amount = parse_amount(str(name), raw)
        except (QuantityError, TypeError):
            continue  # reported by the resource rules; placement just ignores it
        out[str(name)] = amount
    return out


def pod_requests(template: PodTemplate) -> dict[str, int]:
    """The pod's effective request: app containers and sidecars summed, or the largest init container
    if that is more (the rule of k8s.io/component-helpers/resource PodRequests); requests default to
    limits."""
    app: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for container in containers(template):
        resources = container.data.get("resources")
        amounts = {**_amounts(dig(resources, "limits")), **_amounts(dig(resources, "requests"))}
        target = app if (not container.init or container.sidecar) else None
        for name, amount in amounts.items():
            if target is not None:
                target[name] = target.get(name, 0) + amount
            else:
                init_max[name] = max(init_max.get(name, 0), amount)
    for name, amount in init_max.items():
        app[name] = max(app.get(name, 0), amount)
    return app


def constraints(template: PodTemplate, extended_resource_toleration: bool) -> PodConstraints:
    """Selector, required affinity, tolerations and requests of a pod template (invalid parts ignored:
    the API server rejects those before scheduling)."""
    spec = template.spec
    raw_selector = spec.get("nodeSelector")
    selector = {str(k): str(v) for k, v in raw_selector.items()} if isinstance(raw_selector, Mapping) else {}
    required: NodeSelector | None = None
    raw_required = dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    if raw_required is not None:
        try:
            required = NodeSelector.model_validate(raw_required)
        except ValidationError:
            required = None
    tolerations: list[Toleration] = []
    for raw in spec.get("tolerations") or []:
        try:
            tolerations.append(Toleration.model_validate(raw))
        except ValidationError:
            continue
    requests = pod_requests(template)
    implied: tuple[Toleration, ...] = ()
    if extended_resource_toleration:  # the ExtendedResourceToleration admission plugin
        implied = tuple(
            Toleration(key=n, operator="Exists", effect="NoSchedule")
            for n in sorted(requests)
            if is_extended(n)
        )
    return PodConstraints(selector, required, tuple(tolerations), requests, implied)


def _requirement(labels: Mapping[str, str], req: NodeSelectorRequirement) -> bool:
    value = labels.get(req.key)
    op = req.operator
    if op == "In":
        return value is not None and value in req.values
    if op == "NotIn":
        return value is None or value not in req.values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    try:
        number = int(value) if value is not None else None
    except ValueError:
        return False
    bound = int(req.values[0])
    return number is not None and (number > bound if op == "Gt" else number < bound)


def _term(node: LintNode, term: NodeSelectorTerm) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    if not all(_requirement(node.labels, r) for r in term.match_expressions):
        return False
    return all(_requirement({"metadata.name": node.name}, r) for r in term.match_fields)


def matches_affinity(node: LintNode, pod: PodConstraints) -> bool:
    """nodeSelector and required node affinity (the NodeAffinity filter)."""
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    return pod.required is None or any(_term(node, t) for t in pod.required.node_selector_terms)


def untolerated(node: LintNode, pod: PodConstraints) -> Taint | None:
    """The first NoSchedule/NoExecute taint the pod does not tolerate."""
    return first_untolerated(node.taints, (*pod.tolerations, *pod.implied_tolerations))


def insufficient(node: LintNode, pod: PodConstraints) -> list[str]:
    """Resources the node's allocatable cannot cover for one pod (NodeResourcesFit's ``Insufficient X``)."""
    return [
        name
        for name, amount in sorted(pod.requests.items())
        if amount > 0
        and (name in (CPU, MEMORY) or is_extended(name))
        and node.allocatable.get(name, 0) < amount
    ]


def fit_error(nodes: Sequence[LintNode], pod: PodConstraints, named_taint: bool) -> str:
    """kube-scheduler's FitError text for a pod no node can take, on an empty cluster."""
    counts: dict[str, int] = {}
    for node in nodes:
        reasons: list[str]
        taint = untolerated(node, pod)
        if taint is not None:
            reasons = [
                f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
                if named_taint
                else "node(s) had untolerated taint(s)"
            ]
        elif not matches_affinity(node, pod):
            reasons = ["node(s) didn't match Pod's node affinity/selector"]
        else:
            reasons = [f"Insufficient {n}" for n in insufficient(node, pod)]
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
    if not nodes:
        return "no nodes available to schedule pods"
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"0/{len(nodes)} nodes are available: " + ", ".join(parts) + "."


def pods_per_node(node: LintNode, pod: PodConstraints) -> int:
    """How many copies of the pod an empty node holds (cpu, memory and extended resources)."""
    fits = [node.allocatable.get(PODS, 0)]
    for name, amount in pod.requests.items():
        if amount > 0 and (name in (CPU, MEMORY) or is_extended(name)):
            fits.append(int(Fraction(node.allocatable.get(name, 0), amount)))
    return min(fits)
