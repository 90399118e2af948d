"""End to end at scale: generate, simulate and write the run folder for up to a million jobs on 10k GPUs.

The workload is bench_scale.py's (1/2/4/8-GPU batch jobs, exponential 1 h durations, ~85 % of the GPUs
busy, H100 8-GPU nodes, seed 11). Each (jobs, policy) runs in a fresh child process so its peak RSS is its
own, in three timed phases, as ``fleetlab simulate`` does them:

* **generate**: ``resolve()`` of the scenario (the generator draws every job);
* **simulate**: ``run_one()`` (build the simulator, run it, preflight warnings);
* **write**: ``write_run_files()`` into a temporary folder (jobs, pods, nodes, segments, timeline
  Parquet files, the cost ledger and summary.json).

Times are CPU seconds of the child (``time.process_time``; a shared machine disturbs them far less than
wall time) with wall seconds beside them. Peak RSS (``ru_maxrss``) is read after each phase, so the
columns show where the peak was reached (the bare loop's lists come after and are not counted). In the same child, after the run, the bare ``heapq`` loop of
bench_scale.py replays the same arrivals and finishes; **ratio %** = 100 × bare-loop CPU s ÷ simulate
CPU s.

Run: .venv/bin/python bench/bench_million.py [--jobs 1000000] [--gpus 10000]
                                             [--policy default most-allocated] [--profile FILE.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bench_scale import bare_loop, scenario
from fleetlab.experiment.output import write_run_files
from fleetlab.experiment.run import run_one
from fleetlab.spec.loader import resolve

T = TypeVar("T")


def peak_rss_mib() -> int:
    """The process's peak resident set so far, MiB (Linux reports ``ru_maxrss`` in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def timed(fn: Callable[[], T], prof: cProfile.Profile | None) -> tuple[T, float, float]:
    """``fn()`` with its CPU and wall seconds (under ``prof`` when given)."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    value = fn() if prof is None else prof.runcall(fn)
    return value, time.process_time() - cpu0, time.perf_counter() - wall0


def one(jobs: int, gpus: int, policy: str, profile_path: str | None) -> dict[str, Any]:
    """The three phases and the bare loop for one size and policy, in this process."""
    prof = cProfile.Profile() if profile_path else None
    row: dict[str, Any] = {"jobs": jobs, "gpus": gpus, "policy": policy}
    resolved, cpu, wall = timed(lambda: resolve(scenario(jobs, gpus, policy)), prof)
    row.update(generate_cpu_s=round(cpu, 2), generate_wall_s=round(wall, 2), rss_generate_mib=peak_rss_mib())
    run, cpu, wall = timed(lambda: run_one(resolved), prof)
    row.update(simulate_cpu_s=round(cpu, 2), simulate_wall_s=round(wall, 2), rss_simulate_mib=peak_rss_mib())
    simulate_cpu = cpu
    with tempfile.TemporaryDirectory() as tmp:
        _, cpu, wall = timed(lambda: write_run_files(run, Path(tmp) / "run"), prof)
        row["out_mib"] = round(sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file()) / 2**20, 1)
    row.update(write_cpu_s=round(cpu, 2), write_wall_s=round(wall, 2), peak_rss_mib=peak_rss_mib())
    if prof is not None and profile_path:
        prof.dump_stats(profile_path)
    row["total_cpu_s"] = round(row["generate_cpu_s"] + simulate_cpu + cpu, 2)
    row["total_wall_s"] = round(row["generate_wall_s"] + row["simulate_wall_s"] + wall, 2)
    row["completed"] = int(run.result.jobs.completed.sum())
    submits = [job.submit_s for job in resolved.jobs]
    durations = [float(job.runtime.default) for job in resolved.jobs]
    bare_s = bare_loop(submits, durations)
    row["bare_jobs_per_s"] = round(jobs / bare_s)
    row["jobs_per_s"] = round(jobs / simulate_cpu)
    row["ratio_pct"] = round(100 * bare_s / simulate_cpu, 2)
    return row


COLUMNS = (
    ("jobs", 8, "jobs"),
    ("policy", 15, "policy"),
    ("generate_cpu_s", 7, "gen s"),
    ("simulate_cpu_s", 7, "sim s"),
    ("write_cpu_s", 7, "write s"),
    ("total_cpu_s", 7, "total s"),
    ("total_wall_s", 7, "wall s"),
    ("jobs_per_s", 7, "jobs/s"),
    ("ratio_pct", 7, "ratio %"),
    ("rss_generate_mib", 7, "RSS gen"),
    ("rss_simulate_mib", 7, "RSS sim"),
    ("peak_rss_mib", 8, "RSS peak"),
    ("out_mib", 7, "out MiB"),
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--policy", nargs="+", default=["default", "most-allocated"])
    parser.add_argument("--profile", help="write a cProfile of all three phases to this file (one run)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per run instead")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one(args.jobs[0], args.gpus, args.policy[0], args.profile)))
        return
    if not args.json:
        print(" ".join(f"{title:>{width}}" for _, width, title in COLUMNS), flush=True)
    for jobs in args.jobs:
        for policy in args.policy:
            argv = [sys.executable, __file__, "--child", "--jobs", str(jobs), "--gpus", str(args.gpus)]
            argv += ["--policy", policy] + (["--profile", args.profile] if args.profile else [])
            out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
            row = json.loads(out)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(" ".join(f"{row[key]!s:>{width}}" for key, width, _ in COLUMNS), flush=True)


if __name__ == "__main__":
    main()
