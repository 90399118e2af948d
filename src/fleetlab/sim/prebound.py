"""Jobs that are already running when a run starts (from a cluster snapshot): bound to their node at
submit time, without a scheduling cycle, as kube-scheduler's cache holds pods bound before it started."""

from __future__ import annotations

from collections.abc import Callable
from weakref import WeakKeyDictionary

from fleetlab.sim.handle import EngineHandle

_NODE_INDEX: WeakKeyDictionary[EngineHandle, dict[str, int]] = WeakKeyDictionary()


def bind_prebound(sim: EngineHandle, job: int, bind: Callable[[int, int], None]) -> bool:
    """Bind a ``bound_node`` job's pods on their first submission; False for every other job or attempt."""
    spec = sim.jobs[job]
    if spec.bound_node is None:
        return False
    pods = list(sim.book.pods_of(job))
    if any(sim.book.bound_ms[p] >= 0 for p in pods):
        return False  # evicted and requeued: it goes through the scheduler like any other job
    index = _NODE_INDEX.get(sim)
    if index is None:
        index = {name: i for i, name in enumerate(sim.state.node_names)}
        _NODE_INDEX[sim] = index
    node = index.get(spec.bound_node)
    if node is None:
        raise ValueError(f"job {spec.id}: bound_node {spec.bound_node!r} is not a node of the cluster")
    for pod in pods:
        bind(pod, node)
    return True
