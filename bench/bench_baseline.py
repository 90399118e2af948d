"""Import and baseline speed on a synthetic month: an openb-format pod list of 500,000 pods (invented rows,
seeded) read into a History, then the measured baseline computed from it.

Prints rows, seconds per stage and the process's peak resident memory. Target: under a minute and 2 GB.

Run: .venv/bin/python bench/bench_baseline.py [--pods 500000] [--seed 7]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from fleetlab.metrics.baseline import compute_baseline
from fleetlab.spec.history.alibaba import load_alibaba_history

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
MONTH_S = 30 * 86400


def write_pods(path: Path, pods: int, seed: int) -> None:
    """A month of invented pods: Poisson arrivals, lognormal waits and lifetimes, mixed phases."""
    rng = np.random.default_rng(seed)
    created = np.sort(rng.uniform(0, MONTH_S, pods)).round()
    wait = rng.lognormal(1.0, 2.0, pods).round()
    life = rng.lognormal(7.0, 2.0, pods).round() + 1
    phase = rng.choice(["Succeeded", "Failed", "Running", "Pending"], pods, p=[0.6, 0.2, 0.15, 0.05])
    gpus = rng.choice([0, 1, 1, 1, 2, 4, 8], pods)
    milli = np.where(gpus == 1, rng.choice([250, 500, 1000, 1000], pods), np.where(gpus == 0, 0, 1000))
    qos = rng.choice(["LS", "BE", "Burstable"], pods)
    scheduled = np.minimum(created + wait, MONTH_S)
    deleted = np.minimum(scheduled + life, MONTH_S)
    with path.open("w", encoding="utf-8") as out:
        out.write(HEADER + "\n")
        for i in range(pods):
            pending = phase[i] == "Pending"
            out.write(
                f"pod-{i:07d},{4000 * (1 + i % 4)},{16384},{gpus[i]},{milli[i]},,{qos[i]},{phase[i]},"
                f"{created[i]:.0f},{deleted[i] if not pending else scheduled[i]:.0f},"
                f"{'' if pending else f'{scheduled[i]:.0f}'}\n"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=500_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pods.csv"
        t0 = time.perf_counter()
        write_pods(path, args.pods, args.seed)
        t1 = time.perf_counter()
        history = load_alibaba_history(path)
        t2 = time.perf_counter()
        baseline = compute_baseline(history)
        t3 = time.perf_counter()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"pods {history.jobs.num_rows:,}: written {t1 - t0:.1f} s (not timed below)")
    print(
        f"import {t2 - t1:.1f} s ({history.jobs.num_rows / (t2 - t1):,.0f} pods/s), baseline {t3 - t2:.1f} s"
    )
    print(f"groups {len(baseline.rows)}, peak RSS {peak_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
