"""What flavor assignment reads of a podset that does not change during a run, computed once per shape.

Per (flavor, resource) the quota check (``flavors._find_flavor``) compares the podset's total request,
plus what earlier podsets of the workload put there, with the flavor's maximum capacity
(potentialAvailable, static), with its nominal quota (static) and with what is available now. A
workload's first podset adds to nothing, and submitters share one podset object per shape, so for it
the static part of every comparison is kept on the ClusterQueue's tree node, keyed by the podset's
object and the ClusterQueue's rules (both kept alive in the entry, so an identity is never reused):
the totals per resource, their order, and per resource group and flavor the rows below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from fleetlab.admission.tree import FlavorResource, Node, ResourceTree

__all__ = ["Row", "kept_rows", "pair", "pairs_of", "podset_totals", "rows"]

#: Per flavor name, its (flavor, resource) pairs, built once each.
_PAIRS: dict[str, dict[str, FlavorResource]] = {}

#: Entries kept per node before the oldest are forgotten (shapes of a run are few; tests make many).
_MAX_ENTRIES = 4096


def pairs_of(flavor: str) -> dict[str, FlavorResource]:
    """The (flavor, resource) pairs of ``flavor`` built so far, by resource."""
    pairs = _PAIRS.get(flavor)
    if pairs is None:
        pairs = _PAIRS[flavor] = {}
    return pairs


def pair(flavor: str, resource: str) -> FlavorResource:
    """The one :class:`FlavorResource` of ``flavor`` and ``resource``."""
    pairs = pairs_of(flavor)
    fr = pairs.get(resource)
    if fr is None:
        fr = pairs[resource] = FlavorResource(flavor, resource)
    return fr


class Row(NamedTuple):
    """One resource of a podset on one flavor: the request, what earlier podsets put there, the total
    (``value``), the pair, the flavor's maximum capacity and whether the total is within nominal quota."""

    resource: str
    request: int
    assumed: int
    value: int
    fr: FlavorResource
    maximum: int
    within_nominal: bool


def _build(
    tree: ResourceTree,
    node: Node,
    flavor: str,
    wanted: Sequence[tuple[str, int]],
    usage: Mapping[FlavorResource, int],
    nominal: Mapping[FlavorResource, int],
) -> tuple[Row, ...]:
    out = []
    for resource, request in wanted:
        fr = pair(flavor, resource)
        assumed = usage.get(fr, 0) if usage else 0
        value = assumed + request
        maximum = node.potential.get(fr)
        if maximum is None:
            maximum = tree.potential_available(node, fr)
        out.append(Row(resource, request, assumed, value, fr, maximum, nominal.get(fr, 0) >= value))
    return tuple(out)


def podset_totals(
    node: Node, rules: object, podset: object, requests: Mapping[str, int], count: int, pods: str | None
) -> tuple[dict[str, int], list[str]]:
    """A podset's totals per resource (count × request, and the pod count under ``pods`` when the
    ClusterQueue covers it) and the resources in sorted order, kept on ``node`` per (rules, podset).
    The totals are shared: callers must not change them."""
    key = ("totals", id(rules), id(podset))
    held: Any = node.prepared.get(key)
    if held is None:
        totals = {r: v * count for r, v in requests.items()}
        if pods is not None:
            totals[pods] = count
        held = node.prepared[key] = (rules, podset, totals, sorted(totals))
        _bound(node)
    return held[2], held[3]


def rows(
    tree: ResourceTree,
    node: Node,
    rules: object,
    group: int,
    flavors: Sequence[str],
    wanted: Sequence[tuple[str, int]],
    totals: Mapping[str, int],
    usage: Mapping[FlavorResource, int],
    nominal: Mapping[FlavorResource, int],
) -> list[tuple[Row, ...]]:
    """Per flavor of resource group ``group``, the rows of ``wanted`` (resource, request from
    ``totals``) on it on top of ``usage``. Without usage they are static and kept on ``node`` per (rules,
    totals object, group); the entry keeps both objects alive, so their identities are never reused."""
    if usage:
        return [_build(tree, node, f, wanted, usage, nominal) for f in flavors]
    key = ("rows", id(rules), id(totals), group)
    held: Any = node.prepared.get(key)
    if held is None:
        built = [_build(tree, node, f, wanted, usage, nominal) for f in flavors]
        held = node.prepared[key] = (rules, totals, built)
        _bound(node)
    return held[2]  # type: ignore[no-any-return]


def kept_rows(node: Node, rules: object, totals: object, group: int) -> list[tuple[Row, ...]] | None:
    """The rows :func:`rows` kept for a first podset's ``totals`` object, or None before it built them
    (so a caller builds its ``wanted`` list only when they must be built)."""
    held: Any = node.prepared.get(("rows", id(rules), id(totals), group))
    return None if held is None else held[2]  # type: ignore[no-any-return]


def _bound(node: Node) -> None:
    """Forget every entry of ``node`` once there are many (a run has few shapes; tests make many)."""
    if len(node.prepared) > _MAX_ENTRIES:
        node.prepared.clear()
