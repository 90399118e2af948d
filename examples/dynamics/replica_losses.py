"""Replicas of the assistant service each node failure took, pack vs spread, seeds 1-10: the per-failure
spread of the blast radius that the experiment's means hide.

Run: .venv/bin/python examples/dynamics/replica_losses.py
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from fleetlab.experiment.run import run_one
from fleetlab.sim.result import SimulationResult
from fleetlab.spec.loader import load

HERE = Path(__file__).parent


def losses_per_failure(result: SimulationResult) -> list[int]:
    """For each node failure, how many service replicas it evicted (0 when it held none)."""
    assert result.lifecycle is not None and result.services is not None
    replicas = np.concatenate([s.pods for s in result.services.services])
    seg = result.segments
    mine = np.isin(seg.pod, replicas) & seg.evicted
    hits = Counter(zip(seg.node[mine].tolist(), seg.end_ms[mine].tolist(), strict=True))
    names = {name: i for i, name in enumerate(result.nodes.names)}
    return [hits.get((names[f.node], f.t_ms), 0) for f in result.lifecycle.failures]


def main() -> None:
    for variant in ("pack", "spread"):
        per_failure: list[int] = []
        for seed in range(1, 11):
            scenario = load(str(HERE / f"service-failures-{variant}.yaml"), seed=seed)
            per_failure += losses_per_failure(run_one(scenario, "scenario").result)
        counts = np.array(per_failure)
        print(
            f"{variant}: {len(counts)} failures, replicas lost per failure mean {counts.mean():.2f}, "
            f"max {counts.max()}, share of failures that hit no replica {np.mean(counts == 0):.0%}, "
            f"histogram {dict(sorted(Counter(per_failure).items()))}"
        )


if __name__ == "__main__":
    main()
