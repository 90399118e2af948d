"""Small sweeps the report tests render: the built-in two-teams scenario (Kueue cohort) x 2 variants x 2
seeds, one variant with a hostile name (about a second to run)."""

from __future__ import annotations

from pathlib import Path

from fleetlab.experiment.engines import LocalEngine
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.sweep import run_sweep

HOSTILE_VARIANT = "<img src=x onerror=alert(2)>"

KUEUE_EXPERIMENT = f"""\
name: "<b>queues</b>"
base: two-teams
seeds: [1, 2]
variants:
  - name: base
  - name: "{HOSTILE_VARIANT}"
    policy: most-allocated
"""


def kueue_sweep(folder: Path) -> Path:
    """Run the two-teams sweep into ``folder/out`` and return that output folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "exp.yaml").write_text(KUEUE_EXPERIMENT)
    out = folder / "out"
    run_sweep(load_experiment(folder / "exp.yaml"), out, LocalEngine(1))
    return out
