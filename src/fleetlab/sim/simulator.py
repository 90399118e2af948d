"""Replay one scenario: the engine core (sim/engine.py), the features the scenario uses (sim/features.py),
the event loop (sim/loop.py), and the result built from what they recorded (sim/tables.py).

``Simulator`` is the one class callers use (``fleetlab.experiment.run``, the API, the benchmarks); it is the
only module that knows both the engine and the features.
"""

from __future__ import annotations

import time

from fleetlab.model.scenario import ResolvedScenario
from fleetlab.placement.profiles import Profile
from fleetlab.sim.engine import Engine
from fleetlab.sim.features import build_features
from fleetlab.sim.handle import ResultParts
from fleetlab.sim.loop import ProgressCallback, run_events
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.tables import build_result


class Simulator(Engine):
    """Replays one resolved scenario under one profile; the same inputs give the same result."""

    def __init__(self, resolved: ResolvedScenario, profile: Profile, seed: int | None = None) -> None:
        super().__init__(resolved, profile, seed)
        #: The features of this run, each subscribed to the engine's lifecycle events.
        self.features = build_features(self)

    def run(self, progress: ProgressCallback | None = None) -> SimulationResult:
        """Run to completion (or the horizon) and return what happened."""
        started = time.perf_counter()
        self.start_run()
        run_events(self, progress)
        horizon = self.horizon_ms
        parts = ResultParts(int(self.now if horizon is None else horizon))
        for finish in reversed(self.on.run_end):  # a feature closes before those it was built on
            finish(parts)
        return build_result(self, parts, time.perf_counter() - started)
