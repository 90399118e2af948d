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
        #: Per node of the tree its leaf's share: allocatable less the non-TAS pods bound there (kept for
        #: nodes that leave the tree too, so one coming back is counted as it is); per leaf its nodes; TAS
        #: usage of leaves not in the tree now (a workload still holds it; it counts when they return).
        self._node_free: dict[str, dict[str, int]] = {}
        self._leaf_nodes: dict[str, set[str]] = {}
        self._stash: dict[str, dict[str, int]] = {}
        usage = non_tas_usage or {}
        for node in nodes:
            free = dict(node.allocatable)
            for pod in usage.get(node.name, ()):
                _sub(free, pod)
                free[PODS] = free.get(PODS, 0) - 1
            self._node_free[node.name] = free
            if self._admits(node):
                self._join(node)
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

    def _join(self, node: TasNode) -> Leaf | None:
        """Add the node's share to its leaf (made when new; not linked into the tree here)."""
        values = tuple(node.labels[level] for level in self.levels)
        leaf_id = values[-1] if self.lowest_is_node else "/".join(values)
        leaf = self.leaves.get(leaf_id)
        made = leaf is None
        if leaf is None:
            leaf = self.leaves[leaf_id] = Leaf(values=values, tas_usage=self._stash.pop(leaf_id, {}))
            if self.lowest_is_node:
                leaf.taints = node.taints
                leaf.labels = node.labels
        for name, amount in self._node_free[node.name].items():
            leaf.free[name] = leaf.free.get(name, 0) + amount
        self.node_leaf[node.name] = leaf_id
        self._leaf_nodes.setdefault(leaf_id, set()).add(node.name)
        return leaf if made else None

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

    def _unlink(self, domain: Domain) -> None:
        """Take a domain out of the tree, and its parent when that is left without children."""
        del self.domains[domain.values]
        del self.per_level[len(domain.values) - 1][domain.values]
        parent = domain.parent
        if parent is None:
            self.roots.remove(domain)
            return
        parent.children.remove(domain)
        domain.parent = None
        if not parent.children:
            self._unlink(parent)

    # -- nodes that come and go (kept incrementally: a run never rebuilds the tree) ----------------------
    def add_node(self, node: TasNode) -> None:
        """A node joins the flavor's tree (it became Ready and schedulable); a node of another flavor, or
        one without every level's label, is ignored."""
        if node.name in self.node_leaf:
            return
        self._node_free.setdefault(node.name, dict(node.allocatable))
        if not self._admits(node):
            return
        made = self._join(node)
        if made is not None:
            self._link(made)

    def remove_node(self, name: str) -> None:
        """A node leaves the tree (NotReady, deleted or cordoned); its leaf goes with its last node, the
        TAS usage it held kept aside until the leaf returns."""
        leaf_id = self.node_leaf.pop(name, None)
        if leaf_id is None:
            return
        leaf = self.leaves[leaf_id]
        _sub(leaf.free, self._node_free[name])
        members = self._leaf_nodes[leaf_id]
        members.discard(name)
        if members:
            return
        del self._leaf_nodes[leaf_id]
        del self.leaves[leaf_id]
        if any(leaf.tas_usage.values()):
            self._stash[leaf_id] = leaf.tas_usage
        self._unlink(leaf)

    def node_usage(self, name: str, requests: Mapping[str, int], sign: int) -> None:
        """A pod no TAS workload owns was bound (``sign`` 1) to the node, or left it (-1)."""
        free = self._node_free.get(name)
        if free is None:
            return
        change = {k: sign * v for k, v in requests.items()}
        change[PODS] = change.get(PODS, 0) + sign
        _sub(free, change)
        leaf_id = self.node_leaf.get(name)
        if leaf_id is not None:
            _sub(self.leaves[leaf_id].free, change)

    # -- usage ------------------------------------------------------------------------------------------
    def leaf_of(self, values: Sequence[str]) -> Leaf | None:
        """The leaf an assignment's domain values name (a hostname, or the full level values)."""
        key = values[-1] if self.lowest_is_node else "/".join(values)
        return self.leaves.get(key)

    def add_tas_usage(
        self, values: Sequence[str], requests: Mapping[str, int], pods: int, sign: int = 1
    ) -> None:
        """Count ``pods`` pods of an admitted TAS workload on a leaf (``sign`` -1: the workload finished or
        was evicted). A leaf that is gone does not count it, as Kueue's snapshot skips a node deleted or
        NotReady since admission, until it returns."""
        leaf = self.leaf_of(values)
        if leaf is not None:
            usage = leaf.tas_usage
        else:
            key = values[-1] if self.lowest_is_node else "/".join(values)
            usage = self._stash.setdefault(key, {})
        for name, amount in requests.items():
            usage[name] = usage.get(name, 0) + sign * amount * pods
        usage[PODS] = usage.get(PODS, 0) + sign * pods

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
