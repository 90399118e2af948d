"""Scale: fleetlab's own generator at 10k / 30k / 100k jobs beside a bare ``heapq`` event loop.

The workload: one batch class of 1–8-GPU jobs (weights 4:2:1:1, exponential 1 h durations) arriving as a
Poisson stream that keeps about 85 % of the GPUs busy, on H100 8-GPU nodes. Each size runs in a fresh
child process so its peak RSS is its own. In the same child, after the simulation, a bare event loop
replays the same arrivals and finishes (push arrival, pop, push finish, pop: two events per job) so the
ratio of the two rates holds on a noisy machine. Rates are per CPU second of the child process
(``time.process_time``), which other processes on a shared machine disturb far less than wall time; the
simulation's wall seconds are shown too.

Columns: jobs, GPUs, policy, generate (CPU s), simulate (CPU s), simulate (wall s), fleetlab jobs per CPU
second, bare-loop jobs per CPU second, ratio (%), peak RSS (MiB).

Run: .venv/bin/python bench/bench_scale.py [--jobs 10000 30000 100000] [--gpus 10000]
                                           [--policy default most-allocated] [--profile FILE.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import json
import resource
import subprocess
import sys
import time
from typing import Any

from fleetlab.experiment.run import profile_for
from fleetlab.model.scenario import Scenario
from fleetlab.sim.simulator import Simulator
from fleetlab.spec.loader import resolve
from workloads import benchmark


def scenario(jobs: int, gpus: int, policy: str) -> Scenario:
    """``gpus // 8`` H100 nodes and one generator class sized to keep about 85 % of the GPUs busy."""
    return benchmark(jobs, gpus, policy)


def bare_loop(submits: list[float], durations: list[float]) -> float:
    """CPU seconds a bare heapq loop takes to push, pop and finish every job (two events per job)."""
    t0 = time.process_time()
    heap: list[tuple[float, int, int]] = []
    for i, s in enumerate(submits):
        heapq.heappush(heap, (s, 0, i))
    done = 0
    while heap:
        t, kind, i = heapq.heappop(heap)
        if kind == 0:
            heapq.heappush(heap, (t + durations[i], 1, i))
        else:
            done += 1
    assert done == len(submits)
    return time.process_time() - t0


def one(jobs: int, gpus: int, policy: str, profile_path: str | None) -> dict[str, Any]:
    """Generate, simulate and time the bare loop for one size, in this process."""
    t0 = time.process_time()
    resolved = resolve(scenario(jobs, gpus, policy))
    generate_s = time.process_time() - t0
    sim = Simulator(resolved, profile_for(resolved, None))
    t0, wall0 = time.process_time(), time.perf_counter()
    if profile_path:
        prof = cProfile.Profile()
        result = prof.runcall(sim.run)
        prof.dump_stats(profile_path)
    else:
        result = sim.run()
    simulate_s, wall_s = time.process_time() - t0, time.perf_counter() - wall0
    submits = [job.submit_s for job in resolved.jobs]
    durations = [float(job.runtime.default) for job in resolved.jobs]
    bare_s = bare_loop(submits, durations)
    return {
        "jobs": jobs,
        "gpus": gpus,
        "policy": policy,
        "generate_s": round(generate_s, 2),
        "simulate_s": round(simulate_s, 2),
        "wall_s": round(wall_s, 2),
        "jobs_per_s": round(jobs / simulate_s),
        "bare_jobs_per_s": round(jobs / bare_s),
        "ratio_pct": round(100 * bare_s / simulate_s, 2),
        "completed": int(result.jobs.completed.sum()),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--policy", nargs="+", default=["default", "most-allocated"])
    parser.add_argument("--profile", help="write a cProfile of the simulation to this file (one size)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one(args.jobs[0], args.gpus, args.policy[0], args.profile)))
        return
    header = f"{'jobs':>8} {'GPUs':>6} {'policy':<15} {'gen s':>6} {'sim s':>7} {'wall s':>7} {'jobs/s':>8} {'bare/s':>9} {'ratio %':>7} {'RSS MiB':>7}"
    print(header)
    for jobs in args.jobs:
        for policy in args.policy:
            argv = [sys.executable, __file__, "--child", "--jobs", str(jobs), "--gpus", str(args.gpus)]
            argv += ["--policy", policy] + (["--profile", args.profile] if args.profile else [])
            row = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
            print(
                f"{row['jobs']:>8} {row['gpus']:>6} {row['policy']:<15} {row['generate_s']:>6} "
                f"{row['simulate_s']:>7} {row['wall_s']:>7} {row['jobs_per_s']:>8} {row['bare_jobs_per_s']:>9} "
                f"{row['ratio_pct']:>7} {row['peak_rss_mib']:>7}",
                flush=True,
            )


if __name__ == "__main__":
    main()
