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

from collections.abc import Mapping
from typing import Any

import numpy as np

from fleetlab.placement.framework import CompiledPod
from fleetlab.placement.scheduler import (
    FULL_RESCORE_FRACTION,
    MAX_CHANGE_LOG,
    REBUILD_FROM,
    Scheduler,
    _Incremental,
)
from fleetlab.placement.state import BoolArray


class TieDraws:
    """A gang's random tie-breaks drawn ahead in one call where each round's number of tied nodes can be
    foreseen: one fewer each round, as the node taken leaves the best (``count``, ``count`` − 1, … 2).
    numpy's Generator gives the same numbers from one call over several bounds as from one call per
    bound, and leaves the same state (tests/test_tie_draws.py). A round with another count, an ordinary
    ``select`` in between, or the gang's end first takes the unused draws back (``settle``): the generator
    is then where the draws used so far, made one at a time, would have left it."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.bounds: list[int] = []
        self.values: list[int] = []
        self.used = 0
        self.saved: Mapping[str, Any] | None = None

    def draw(self, tied: int, rounds: int) -> int:
        """The index among ``tied`` nodes (at least 2) for this round, with ``rounds`` rounds left in all
        (this one included): ``rng.integers(tied)`` as the one-at-a-time choice draws it."""
        used = self.used
        if used < len(self.bounds) and self.bounds[used] == tied:
            self.used = used + 1
            return self.values[used]
        self.settle()
        ahead = min(rounds, tied - 1)
        if ahead <= 1:
            return int(self.rng.integers(tied))
        self.saved = self.rng.bit_generator.state
        self.bounds = list(range(tied, tied - ahead, -1))
        self.values = self.rng.integers(0, self.bounds).tolist()
        self.used = 1
        return self.values[0]

    def settle(self) -> None:
        """Take back the draws not used: the generator as the used ones alone leave it."""
        if self.used < len(self.bounds):
            assert self.saved is not None
            self.rng.bit_generator.state = self.saved
            if self.used:
                self.rng.integers(0, self.bounds[: self.used])
        self.bounds, self.values, self.used, self.saved = [], [], 0, None


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
    request, nonzero, delta = pod.request, pod.nonzero, pod.usage_delta
    bind, select, catch_up_nodes = state.bind, scheduler.select, scheduler.catch_up_nodes
    log = state.changes
    # One changed node never takes the batched catch-up or a rebuild (Scheduler._incremental's tests).
    one_node_catch_up = state.n // FULL_RESCORE_FRACTION >= 1 and FULL_RESCORE_FRACTION <= REBUILD_FROM
    plain = mask is None and pod.spec.claims is None and one_node_catch_up
    tied: list[int] = []
    top = taken = 0
    kept: object = None  # the cache ``tied`` was read from
    first_of_ties = scheduler._first_of_ties
    draws = TieDraws(scheduler.rng)
    inc = _one_node_cache(scheduler, pod) if plain else None
    for k in range(count):
        if inc is not None and len(log) == inc.log_pos + 1 and len(log) <= MAX_CHANGE_LOG:
            node = log[-1]
            catch_up_nodes(pod, inc, (node,))
            inc.log_pos = len(log)
            same = kept is inc
            if not same or not chosen or node != chosen[-1]:
                tied = []
            elif (now := inc.best_view[node]) > top:
                tied, top = [node], now
            elif now < top:  # the node taken last round, at ``taken`` in ``tied``
                if taken < len(tied) and tied[taken] == node:
                    del tied[taken]
                else:
                    tied.remove(node)
            if not inc.n_fit:
                node = -1
            else:
                if not tied:
                    best = inc.best
                    top = int(best[best.argmax()])
                    tied = (best == top).nonzero()[0].tolist()
                    kept = inc
                taken = 0 if len(tied) == 1 or first_of_ties else draws.draw(len(tied), count - k)
                node = tied[taken]
        else:
            draws.settle()  # select draws from the same generator
            node = select(pod, mask)
            kept = None
            inc = _one_node_cache(scheduler, pod) if plain else None
        if node < 0:
            draws.settle()
            return False
        bind(node, request, nonzero, -1, delta)
        chosen.append(node)
    draws.settle()
    return True


def _one_node_cache(scheduler: Scheduler, pod: CompiledPod) -> _Incremental | None:
    """The pod spec's cache where a round after a one-node change may take the one-node catch-up, as far as
    a round's binds cannot change it: only ``select`` replaces the cache, moves the epoch or adds cached
    specs, and the topology moves only between scheduling cycles; the change log's length is each round's."""
    inc: _Incremental | None = pod.cache.get("incremental")
    if (
        inc is not None
        and inc.by_best
        and inc.share is None
        and inc.epoch == scheduler._epoch
        and inc.topology == scheduler.state.topology_generation
        and not scheduler.caches_near_budget()
    ):
        return inc
    return None
