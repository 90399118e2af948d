"""Resource pools a node can reach, as the structured allocator gathers them (``GatherPools``,
``k8s.io/dynamic-resource-allocation/structured/internal/incubating/pools_incubating.go``, v1.35).

A pool is the slices one driver publishes under one pool name. Only the newest generation counts; a pool
whose slice count at that generation falls short of ``resourceSliceCount`` is incomplete (nothing is
allocated from it, and an "All" request fails on it); duplicate device names or counters that name an
unknown counter set make it invalid. Slices holding shared counter sets belong to the pool whatever
nodes they name. Pools are returned sorted by (driver, pool) so allocation is deterministic (upstream
iterates a map).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from fleetlab.model.dra import Device, ResourceSlice
from fleetlab.model.kube import NodeSelector, requirement_matches
from fleetlab.model.quantity import parse_quantity

__all__ = ["NodeView", "Pool", "gather_pools", "node_matches"]


@dataclass(frozen=True)
class NodeView:
    """What device node selection reads of a node: its name and labels."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


def selector_matches(selector: NodeSelector, node: NodeView) -> bool:
    """A NodeSelector's terms are ORed; a term's expressions (labels) and fields (``metadata.name``) are
    ANDed; an empty term matches nothing."""
    for term in selector.node_selector_terms:
        if not term.match_expressions and not term.match_fields:
            continue
        if all(requirement_matches(node.labels, r) for r in term.match_expressions) and all(
            requirement_matches({"metadata.name": node.name}, r) for r in term.match_fields
        ):
            return True
    return False


def node_matches(
    node: NodeView, node_name: str | None, all_nodes: bool | None, selector: NodeSelector | None
) -> bool:
    """Upstream ``NodeMatches``: a node name, all nodes, or a node selector (first one set wins)."""
    if node_name:
        return node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(selector, node)
    return False


@dataclass
class Pool:
    """One driver's pool as seen from a node."""

    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    reason: str = ""
    #: Device slices whose devices the node can reach, and the pool's other device slices (their
    #: allocated devices still use the pool's counters).
    slices: list[ResourceSlice] = field(default_factory=list)
    other_slices: list[ResourceSlice] = field(default_factory=list)
    #: Counter set -> counter -> how much there is.
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)

    @property
    def pool_id(self) -> str:
        """``driver/pool``."""
        return f"{self.driver}/{self.name}"


def _device_reachable(device: Device, node: NodeView) -> bool:
    return node_matches(node, device.node_name, device.all_nodes, device.node_selector)


def _targets(s: ResourceSlice, node: NodeView) -> bool | None:
    """Whether the slice's devices are reachable from the node (None: a slice of unknown access kind)."""
    spec = s.spec
    if spec.node_name or spec.all_nodes or spec.node_selector is not None:
        return node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector)
    if spec.per_device_node_selection:
        return any(_device_reachable(d, node) for d in spec.devices)
    return None


def gather_pools(slices: Sequence[ResourceSlice], node: NodeView, partitionable: bool = True) -> list[Pool]:
    """Every pool with a slice relevant to ``node``, complete or not, valid or not."""
    chosen: dict[tuple[str, str], list[ResourceSlice]] = {}
    for s in slices:
        spec = s.spec
        if not partitionable and (spec.per_device_node_selection is not None or spec.shared_counters):
            continue
        if not spec.shared_counters and not _targets(s, node):
            continue
        key = (spec.driver, spec.pool.name)
        have = chosen.get(key)
        if have is None or spec.pool.generation > have[0].spec.pool.generation:
            chosen[key] = [s]
        elif spec.pool.generation == have[0].spec.pool.generation:
            have.append(s)
    pools: list[Pool] = []
    for (driver, name), mine in sorted(chosen.items()):
        generation, count = mine[0].spec.pool.generation, mine[0].spec.pool.resource_slice_count
        everything = [
            s
            for s in slices
            if s.spec.driver == driver and s.spec.pool.name == name and s.spec.pool.generation >= generation
        ]
        if any(s.spec.pool.generation > generation for s in everything):
            continue  # the driver is replacing this generation: ignore the old one
        if len(everything) != count:
            pools.append(Pool(driver, name, incomplete=True))
            continue
        pools.append(_build(driver, name, mine, everything, partitionable))
    return pools


def _build(
    driver: str, name: str, mine: list[ResourceSlice], everything: list[ResourceSlice], partitionable: bool
) -> Pool:
    device_slices = [s for s in mine if not (partitionable and s.spec.shared_counters)]
    names = [d.name for s in device_slices for d in s.spec.devices]
    duplicate = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if duplicate is not None:
        return Pool(driver, name, invalid=True, reason=f"duplicate device name {duplicate}")
    pool = Pool(driver, name, slices=device_slices)
    if not partitionable:
        return pool
    for s in everything:
        for counter_set in s.spec.shared_counters:
            if counter_set.name in pool.counter_sets:
                return Pool(
                    driver, name, invalid=True, reason=f"duplicate counter set name {counter_set.name}"
                )
            pool.counter_sets[counter_set.name] = {
                c: parse_quantity(v.value) for c, v in counter_set.counters.items()
            }
    seen = {id(s) for s in mine}
    pool.other_slices = [s for s in everything if id(s) not in seen and not s.spec.shared_counters]
    for s in [*device_slices, *pool.other_slices]:
        for device in s.spec.devices:
            for use in device.consumes_counters:
                known = pool.counter_sets.get(use.counter_set)
                if known is None:
                    return Pool(driver, name, invalid=True, reason=f"counter set {use.counter_set} not found")
                missing = next((c for c in use.counters if c not in known), None)
                if missing is not None:
                    return Pool(
                        driver,
                        name,
                        invalid=True,
                        reason=f"counter {missing} not found in counter set {use.counter_set}",
                    )
    return pool
