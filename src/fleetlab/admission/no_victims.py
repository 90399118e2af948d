"""Early "no victims" answers of one flavor assignment, kept for its targets.

Flavor assignment asks classic preemption, per (flavor, resource) that does not fit, whether victims could
free that amount alone (upstream ``SimulatePreemption``); a head whose every such answer is "none" then
asks for the targets of its whole assignment (upstream ``GetTargets``). When every pair needing
preemption was answered by the early test (``preemption._nothing_to_take``) in the same state, the test
holds for the whole assignment too, so the targets are empty without running it again:

* ``borrowWithinCohort`` and the cohort's presence are the ClusterQueue's, the same for both questions;
* the own-queue test is one test per pair (is an own workload the policy allows using it?), each of
  which passed;
* the level test asks, from the own queue up to below the root, whether the request fits in a level's
  quota; the whole assignment's request of a pair is at least what was asked for it alone (podsets only
  add), what is left for the parent grows with it, and a fit needs every pair to fit: a level where the
  whole request fits is one where the pair alone fits, which the early test ruled out.

Notes belong to one assignment (the manager's ``assigning`` number) and one state of the quota tree (its
version, which only grows during an assignment); any other reading finds none.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable

from fleetlab.admission.tree import FlavorResource

__all__ = ["NoVictimNotes"]


class NoVictimNotes:
    """The (flavor, resource) pairs the early test answered "no victims" for, per workload and queue,
    within the current assignment and tree state."""

    def __init__(self) -> None:
        self._stamp: Hashable = None
        self._pairs: set[FlavorResource] = set()

    def note(self, stamp: Hashable, frs: Collection[FlavorResource]) -> None:
        """Remember that the early test found no victims for ``frs`` under ``stamp``."""
        if stamp != self._stamp:
            self._stamp = stamp
            self._pairs = set()
        self._pairs.update(frs)

    def covers(self, stamp: Hashable, frs: Collection[FlavorResource]) -> bool:
        """Whether every one of ``frs`` (not empty) was noted under ``stamp``."""
        return bool(frs) and stamp == self._stamp and self._pairs.issuperset(frs)
