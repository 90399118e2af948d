"""Workload resolve: time and memory to materialise bench_scale's generated workload at N jobs.

Each size runs in a fresh child process: it imports fleetlab, notes its peak RSS, resolves the scenario of
``bench_scale.py`` (one batch class of 1–8-GPU jobs on H100 nodes) and reports the CPU seconds of
``resolve()`` (``time.process_time``), the peak RSS it added over the imports, the bytes of the per-job
columns, the number of templates and the size of the pickled job table (what a sweep ships to a worker).

Run: .venv/bin/python bench/bench_workload.py [--jobs 100000 1000000] [--gpus 10000]
"""

from __future__ import annotations

import argparse
import json
import pickle
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(jobs: int, gpus: int) -> dict[str, Any]:
    """Resolve once in this process and measure it."""
    from bench_scale import scenario
    from fleetlab.spec.loader import resolve

    spec = scenario(jobs, gpus, "default")
    before = peak_rss_mib()
    t0 = time.process_time()
    resolved = resolve(spec)
    cpu_s = time.process_time() - t0
    added = peak_rss_mib() - before
    table = resolved.jobs
    columns = table.nbytes() if hasattr(table, "nbytes") else None
    templates = len(table.templates) if hasattr(table, "templates") else None
    return {
        "jobs": len(table),
        "resolve_cpu_s": round(cpu_s, 2),
        "added_peak_rss_mib": round(added),
        "column_mib": None if columns is None else round(columns / 2**20, 1),
        "templates": templates,
        "pickle_mib": round(len(pickle.dumps(table, protocol=5)) / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.gpus)))
        return
    print(
        f"{'jobs':>9} {'resolve CPU s':>14} {'+peak RSS MiB':>14} {'columns MiB':>12} {'templates':>10} {'pickle MiB':>11}"
    )
    for n in args.jobs:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(n), "--gpus", str(args.gpus)],
            check=True,
            capture_output=True,
            text=True,
        )
        row = json.loads(out.stdout)
        print(
            f"{row['jobs']:>9,} {row['resolve_cpu_s']:>14} {row['added_peak_rss_mib']:>14} "
            f"{row['column_mib']!s:>12} {row['templates']!s:>10} {row['pickle_mib']:>11}",
            flush=True,
        )


if __name__ == "__main__":
    main()
