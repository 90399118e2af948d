"""Sweep speed: 6 variants x 10 seeds of the built-in default scenario (examples/experiments/placement.yaml).

Reports wall time of the full sweep (all cores, or --jobs), per-run simulation time, and the time of a
rerun that only resumes (every run already finished). Target: under 2 minutes on 2 cores.

Run: .venv/bin/python bench/bench_experiment.py [--jobs N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from fleetlab.experiment.engines import LocalEngine
from fleetlab.experiment.plan import load_experiment
from fleetlab.experiment.sweep import MANIFEST, run_sweep

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "experiments" / "placement.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument("--keep", type=Path, default=None, help="write results here instead of a temp dir")
    args = parser.parse_args()
    experiment = load_experiment(EXAMPLE)
    engine = LocalEngine(args.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp) / "sweep"
        started = time.perf_counter()
        outcome = run_sweep(experiment, out, engine)
        sweep_s = time.perf_counter() - started
        started = time.perf_counter()
        resumed = run_sweep(experiment, out, engine)
        resume_s = time.perf_counter() - started
        records = [
            json.loads((out / run["folder"] / "run.json").read_text())
            for run in json.loads((out / MANIFEST).read_text())["runs"]
        ]
    per_run = [r["wall_s"] for r in records]
    print(f"cores: {os.cpu_count()}, workers: {engine.jobs}")
    print(
        f"sweep: {len(experiment.variants)} variants x {len(experiment.seeds)} seeds = "
        f"{len(outcome.executed)} runs in {sweep_s:.1f} s"
    )
    print(f"per run (simulate + write): mean {sum(per_run) / len(per_run):.2f} s, max {max(per_run):.2f} s")
    print(f"resume with every run finished: {resume_s:.2f} s ({len(resumed.executed)} runs executed)")


if __name__ == "__main__":
    main()
