"""A Kueue TAS flavor's view of its nodes: the topology domain tree and what each leaf can still hold.

Follows kubernetes-sigs/kueue ``pkg/cache/tas_flavor.go`` / ``tas_flavor_snapshot.go`` (the v0.13 line, as
tested by ``pkg/cache/tas_cache_test.go`` at commit 02eb5698e49cd440d2509af78545084cecdfe11e):

* a node belongs to the flavor when it carries the flavor's ``nodeLabels``, is Ready, is not cordoned
  (``spec.unschedulable``) and has a label for every topology level; other nodes are not in the tree;
* a leaf is one node when the lowest level is ``kubernetes.io/hostname`` (its id is the hostname), else
  one domain of the lowest level (the nodes under it pooled); its free capacity is allocatable minus
  what non-TAS pods use (each such pod also takes one ``pods`` slot); TAS usage (pods of workloads
  admitted with a topology assignment) is kept apart so "simulate empty" can ignore it for preemption;
* domains above the leaves are made from the level values, so ``b1/r1`` and ``b2/r1`` are different
  racks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fleetlab.model.kube import Taint, Toleration, first_untolerated
from fleetlab.model.resources import ResourceList

__all__ = ["HOSTNAME", "Domain", "TasFlavor", "TasNode", "TasSnapshot", "count_in", "non_tas_usage"]

HOSTNAME = "kubernetes.io/hostname"
PODS = "pods"


@dataclass(frozen=True)
class TasNode:
    """A node as TAS reads it (allocatable in fleetlab's integer units: cpu in milli, memory in bytes)."""

    name: str
    labels: Mapping[str, str]
    allocatable: ResourceList
    taints: tuple[Taint, ...] = ()
    ready: bool = True
    unschedulable: bool = False


@dataclass(frozen=True)
class TasFlavor:
    """A ResourceFlavor with ``spec.topologyName``: the Topology's levels (widest first), the flavor's
    ``nodeLabels`` and ``tolerations``."""

    topology_name: str
    levels: tuple[str, ...]
    node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


@dataclass(eq=False)
class Domain:
    """One topology domain; ``state`` / ``slice_state`` are scratch counts of the current search."""

    values: tuple[str, ...]
    parent: Domain | None = None
    children: list[Domain] = field(default_factory=list)
    state: int = 0
    slice_state: int = 0

    @property
    def key(self) -> tuple[str, ...]:
        return self.values


@dataclass(eq=False)
class Leaf(Domain):
    """A lowest-level domain with its capacity and (hostname level only) the node's taints and labels."""

    free: dict[str, int] = field(default_factory=dict)
    tas_usage: dict[str, int] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    labels: Mapping[str, str] | None = None


def count_in(requests: Mapping[str, int], capacity: Mapping[str, int]) -> int:
    """How many copies of ``requests`` fit in ``capacity`` (Kueue ``Requests.CountIn``): the minimum over
    requested resources of capacity // request; a resource the capacity lacks fits none."""
    fit: int | None = None
    for name, amount in requests.items():
        if amount <= 0:
            continue
        have = capacity.get(name, 0)
        n = max(have, 0) // amount
        fit = n if fit is None else min(fit, n)
    return fit if fit is not None else 2**31 - 1


def _sub(into: dict[str, int], amounts: Mapping[str, int], times: int = 1) -> None:
    for name, amount in amounts.items():
        into[name] = into.get(name, 0) - amount * times


class TasSnapshot:
    """The domain tree of one TAS flavor and the capacity of its leaves."""

    def __init__(
        self,
        flavor: TasFlavor,
        nodes: Iterable[TasNode],
        non_tas_usage: Mapping[str, Sequence[ResourceList]] | None = None,
    ) -> None:
        """``non_tas_usage``: per node name, the requests of each running or pending pod bound there that
        no TAS workload owns (terminal pods excluded by the caller)."""
        if not flavor.levels:
            raise ValueError("a Topology needs at least one level")
        self.flavor = flavor
        self.levels = flavor.levels
        self.leaves: dict[str, Leaf] = {}
        self.node_leaf: dict[str, str] = {}
        usage = non_tas_usage or {}
        for node in nodes:
            if not self._admits(node):
                continue
            values = tuple(node.labels[level] for level in self.levels)
            leaf_id = values[-1] if self.lowest_is_node else "/".join(values)
            leaf = self.leaves.get(leaf_id)
            if leaf is None:
                leaf = self.leaves[leaf_id] = Leaf(values=values)
                if self.lowest_is_node:
                    leaf.taints = node.taints
                    leaf.labels = node.labels
            for name, amount in node.allocatable.items():
                leaf.free[name] = leaf.free.get(name, 0) + amount
            for pod in usage.get(node.name, ()):
                _sub(leaf.free, pod)
                leaf.free[PODS] = leaf.free.get(PODS, 0) - 1
            self.node_leaf[node.name] = leaf_id
        self.domains: dict[tuple[str, ...], Domain] = {}
        self.per_level: list[dict[tuple[str, ...], Domain]] = [{} for _ in self.levels]
        self.roots: list[Domain] = []
        for leaf_id in sorted(self.leaves):
            self._link(self.leaves[leaf_id])

    @property
    def lowest_is_node(self) -> bool:
        return self.levels[-1] == HOSTNAME

    def _admits(self, node: TasNode) -> bool:
        if not node.ready or node.unschedulable:
            return False
        if any(node.labels.get(k) != v for k, v in self.flavor.node_labels.items()):
            return False
        return all(level in node.labels for level in self.levels)

    def _link(self, domain: Domain) -> None:
        self.domains[domain.values] = domain
        self.per_level[len(domain.values) - 1][domain.values] = domain
        if len(domain.values) == 1:
            self.roots.append(domain)
            return
        parent_values = domain.values[:-1]
        parent = self.domains.get(parent_values)
        if parent is None:
            parent = Domain(values=parent_values)
            self._link(parent)
        domain.parent = parent
        parent.children.append(domain)

    # -- usage ------------------------------------------------------------------------------------------
    def leaf_of(self, values: Sequence[str]) -> Leaf | None:
        """The leaf an assignment's domain values name (a hostname, or the full level values)."""
        key = values[-1] if self.lowest_is_node else "/".join(values)
        return self.leaves.get(key)

    def add_tas_usage(self, values: Sequence[str], requests: Mapping[str, int], pods: int) -> None:
        """Count ``pods`` pods of an admitted TAS workload on a leaf (skipped when the leaf is gone, as
        Kueue does for a node deleted or NotReady since admission)."""
        leaf = self.leaf_of(values)
        if leaf is None:
            return
        for name, amount in requests.items():
            leaf.tas_usage[name] = leaf.tas_usage.get(name, 0) + amount * pods
        leaf.tas_usage[PODS] = leaf.tas_usage.get(PODS, 0) + pods

    def remaining(self, leaf: Leaf, simulate_empty: bool) -> dict[str, int]:
        """Free capacity of a leaf, less TAS usage unless the search simulates an empty flavor."""
        left = dict(leaf.free)
        if not simulate_empty:
            _sub(left, leaf.tas_usage)
        return left

    def untolerated(self, leaf: Leaf, tolerations: Sequence[Toleration]) -> Taint | None:
        """The node's first NoSchedule/NoExecute taint the PodSet and flavor tolerations leave uncovered."""
        return first_untolerated(leaf.taints, tolerations) if leaf.taints else None


def non_tas_usage(pods: Iterable[tuple[str | None, str, ResourceList]]) -> dict[str, list[ResourceList]]:
    """Per node, the requests of the pods (node name, phase, requests) that hold capacity there: bound to
    a node and not Succeeded or Failed (an unscheduled pod holds nothing)."""
    out: dict[str, list[ResourceList]] = {}
    for node, phase, requests in pods:
        if node and phase not in ("Succeeded", "Failed"):
            out.setdefault(node, []).append(requests)
    return out
