"""Consolidation never loses a pod (hypothesis): after every step each unfinished pod is either bound to
a node or waiting in the scheduling queue, and with no horizon every job completes — however often
consolidation evicts and re-places pods to open room (KAI's consolidation commits a move only when every
evicted pod fits again)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import job, pool, scenario
from fleetlab.experiment.run import profile_for
from fleetlab.sim.simulator import Simulator


class CheckedSimulator(Simulator):
    """After every step: every pod of an unfinished job is bound or queued, never both, never neither."""

    def end_step(self) -> None:
        super().end_step()
        book = self.book
        queued = {
            p
            for group, firsts in self.queue.pending().items()
            for f in firsts
            for p in self.entry_pods(group, f)
        }
        unfinished = np.flatnonzero(book.end_ms < 0)
        bound = set(np.flatnonzero((book.node >= 0) & (book.end_ms < 0)).tolist())
        submitted = self.submit_ms[book.job] <= self.now
        for pod in unfinished.tolist():
            if not submitted[pod]:
                continue
            assert (pod in bound) != (pod in queued), (pod, pod in bound, pod in queued)


def _run(seed: int, cooldown_s: int) -> tuple[CheckedSimulator, Any]:
    rng = np.random.default_rng(seed)
    jobs: list[dict[str, Any]] = []
    for j in range(40):
        gpus = int(rng.choice([1, 2, 4, 8]))
        jobs.append(
            job(
                f"j{j}",
                gpus=gpus,
                submit_s=int(rng.integers(0, 600)),
                runtime=int(rng.integers(30, 900)),
                preemptible=bool(rng.random() < 0.7),
                checkpoint_interval_s=int(rng.choice([60, 300])),
            )
        )
    sched = {"consolidation": True, "consolidation_cooldown_s": cooldown_s, "preemption": False}
    resolved = scenario([pool("gpu", count=3, gpus=8)], jobs, scheduler=sched)
    sim = CheckedSimulator(resolved, profile_for(resolved, "scenario"))
    return sim, sim.run()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from([0, 600]))
def test_consolidation_never_loses_a_pod(seed: int, cooldown_s: int) -> None:
    _, result = _run(seed, cooldown_s)
    assert not result.pending
    assert (result.pods.end_ms >= 0).all()
    assert (result.jobs.end_ms >= 0).all()


def test_the_property_workload_does_consolidate() -> None:
    """The workload above really exercises consolidation (seed 1 moves pods five times)."""
    sim, _ = _run(1, 0)
    assert sim.features.consolidation.evictions > 0
