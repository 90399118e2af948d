"""A large run frees its finished simulator before the caller writes files (bench/bench_million.py: the
write phase no longer stacks the result's tables on the simulator's per-pod state)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from builders import job, pool, scenario
from fleetlab.experiment import run as run_module
from fleetlab.sim.simulator import Simulator


def _tracked(monkeypatch: pytest.MonkeyPatch) -> list[weakref.ref[Simulator]]:
    """Replace run_one's Simulator by a subclass that remembers each instance weakly."""
    made: list[weakref.ref[Simulator]] = []

    class Tracked(Simulator):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))

    monkeypatch.setattr(run_module, "Simulator", Tracked)
    return made


def _world() -> Any:
    return scenario([pool("gpu", count=1)], [job(f"j{i}", submit_s=float(i)) for i in range(3)])


def test_a_run_at_the_threshold_leaves_no_simulator_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _tracked(monkeypatch)
    monkeypatch.setattr(run_module, "COLLECT_AFTER_JOBS", 3)  # three jobs: at the threshold
    gc.disable()  # only run_one's own collection may free it
    try:
        result = run_module.run_one(_world())
        assert len(made) == 1 and made[0]() is None
    finally:
        gc.enable()
    assert int(result.result.jobs.completed.sum()) == 3


def test_the_simulator_is_held_by_reference_cycles_until_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the collection is needed: below the threshold the finished simulator survives run_one
    (its components point back at it) until the collector runs."""
    made = _tracked(monkeypatch)
    monkeypatch.setattr(run_module, "COLLECT_AFTER_JOBS", 4)
    gc.disable()
    try:
        run_module.run_one(_world())
        assert made[0]() is not None
        gc.collect()
        assert made[0]() is None
    finally:
        gc.enable()
