"""A gang's members chosen and trial-bound one after another in one call (the gang placer's kept plan).

Choosing ``count`` identical pods pod by pod is ``count`` rounds of ``Scheduler.select`` and
``ClusterState.bind``; after the first round, the only change the pod spec's cache has not seen is the node
the previous member took. That one-node catch-up (``Scheduler.catch_up_nodes``, the general catch-up's
own) and the choice by the per-node score are done here without the general catch-up's tests, writing
exactly what ``select`` writes (the cache's fit mask, scores and log position, the same random tie-break
draws); whenever the state is anything else (a mask of allowed nodes, a GPU share, a cache near its budget
or rebuilt, global scorers) the round is an ordinary ``select``.
"""

from __future__ import annotations

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.scheduler import (
    FULL_RESCORE_FRACTION,
    MAX_CHANGE_LOG,
    REBUILD_FROM,
    Scheduler,
)
from fleetlab.placement.state import BoolArray


def select_and_bind(
    scheduler: Scheduler, pod: CompiledPod, count: int, mask: BoolArray | None, chosen: list[int]
) -> bool:
    """Choose a node for each of ``count`` pods of ``pod``'s spec among ``mask``'s nodes (all when None)
    and bind it before the next is chosen, appending each to ``chosen``; False as soon as one finds no
    node (the binds made stay for the caller to roll back).

    Between rounds of one-node catch-ups the best nodes (``tied``, in node order, of score ``top``) are
    kept: only the node just taken changed, and it was one of them, so they stay, lose that node, or
    become that node alone; an array pass finds them again only when none is left."""
    state = scheduler.state
    request, nonzero = pod.request, pod.nonzero
    bind, select, catch_up_nodes = state.bind, scheduler.select, scheduler.catch_up_nodes
    log = state.changes
    # One changed node never takes the batched catch-up or a rebuild (Scheduler._incremental's tests).
    one_node_catch_up = state.n // FULL_RESCORE_FRACTION >= 1 and FULL_RESCORE_FRACTION <= REBUILD_FROM
    plain = mask is None and pod.spec.claims is None and one_node_catch_up
    tied: list[int] = []
    top = 0
    kept: object = None  # the cache ``tied`` was read from
    for _ in range(count):
        inc = pod.cache.get("incremental") if plain else None
        if (
            inc is not None
            and inc.by_best
            and inc.share is None
            and len(log) == inc.log_pos + 1
            and len(log) <= MAX_CHANGE_LOG
            and inc.epoch == scheduler._epoch
            and inc.topology == state.topology_generation
            and not scheduler.caches_near_budget()
        ):
            node = log[-1]
            catch_up_nodes(pod, inc, (node,))
            inc.log_pos = len(log)
            same = kept is inc
            if not same or not chosen or node != chosen[-1]:
                tied = []
            elif (now := inc.best_view[node]) > top:
                tied, top = [node], now
            elif now < top:
                tied.remove(node)
            if not inc.n_fit:
                node = -1
            else:
                if not tied:
                    best = inc.best
                    top = int(best[best.argmax()])
                    tied = (best == top).nonzero()[0].tolist()
                    kept = inc
                node = scheduler.one_of_tied(tied)
        else:
            node = select(pod, mask)
            kept = None
        if node < 0:
            return False
        bind(node, request, nonzero)
        chosen.append(node)
    return True
