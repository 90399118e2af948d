"""Scale: the simulation's CPU seconds on the benchmark workloads, beside the fair bare loop.

Workloads are those of ``bench/workloads.py``: ``benchmark`` (the narrow original: one batch class, 4 pod
shapes), ``mix`` (four teams, two priorities, ``--shapes`` pod shapes, 3 % gangs with topology, lognormal
runtimes, images, two zones, load 0.95) and ``kueue`` (the same jobs through a Kueue cohort of four
ClusterQueues at saturation). Each (workload, jobs, policy) runs in a fresh child process so its peak RSS
is its own.

Columns: workload, pod shapes (distinct pod specs the run compiled), jobs, GPUs, policy, generate (CPU s),
simulate (CPU s: ``time.process_time`` around ``Simulator.run``), simulate (wall s), CPU µs per job,
fleetlab jobs per CPU second, the fair bare loop's jobs per CPU second (best of ``--repeat``, garbage
collected first; see ``workloads.bare_loop``), ratio % (bare-loop CPU s ÷ simulate CPU s × 100), peak
RSS (MiB), jobs completed. CPU seconds are used because other processes on a shared machine change wall
time by 2–3× while leaving CPU time within about 15 %.

``--markdown`` prints the table as Markdown with the command that made it, for docs/scale.md.

Run: .venv/bin/python bench/bench_scale.py [--workload benchmark mix kueue] [--jobs 10000 30000]
         [--gpus 10000] [--shapes 16] [--policy default] [--repeat 5] [--profile F] [--markdown]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import resource
import shlex
import subprocess
import sys
import time
from typing import Any

from doc_tables import write_table
from fleetlab.compiled import describe
from fleetlab.experiment.run import profile_for
from fleetlab.model.scenario import Scenario
from fleetlab.sim.simulator import Simulator
from workloads import NAMES, bare_inputs, bare_loop, benchmark, resolve_workload


def scenario(jobs: int, gpus: int, policy: str) -> Scenario:
    """The ``benchmark`` workload (kept for bench/example_hashes.py's generated cases)."""
    return benchmark(jobs, gpus, policy)


def one(args: argparse.Namespace) -> dict[str, Any]:
    """Generate, simulate and time the bare loop for one workload, size and policy, in this process."""
    name, jobs, gpus, policy = args.workload[0], args.jobs[0], args.gpus, args.policy[0]
    t0 = time.process_time()
    resolved = resolve_workload(name, jobs, gpus, policy, shapes=args.shapes)
    generate_s = time.process_time() - t0
    sim = Simulator(resolved, profile_for(resolved, None))
    t0, wall0 = time.process_time(), time.perf_counter()
    if args.profile:
        prof = cProfile.Profile()
        result = prof.runcall(sim.run)
        prof.dump_stats(args.profile)
    else:
        result = sim.run()
    simulate_s, wall_s = time.process_time() - t0, time.perf_counter() - wall0
    bare_s = bare_loop(*bare_inputs(resolved.jobs), repeat=args.repeat)
    return {
        "workload": name,
        "shapes": int(sim.job_columns.spec_key.max(initial=-1)) + 1,
        "jobs": jobs,
        "gpus": gpus,
        "policy": policy,
        "generate_s": round(generate_s, 2),
        "simulate_s": round(simulate_s, 2),
        "wall_s": round(wall_s, 2),
        "us_per_job": round(1e6 * simulate_s / jobs),
        "jobs_per_s": round(jobs / simulate_s),
        "bare_jobs_per_s": round(jobs / bare_s),
        "ratio_pct": round(100 * bare_s / simulate_s, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "completed": int(result.jobs.completed.sum()),
    }


COLUMNS = (
    ("workload", "workload", 9),
    ("shapes", "shapes", 6),
    ("jobs", "jobs", 8),
    ("gpus", "GPUs", 6),
    ("policy", "policy", 14),
    ("generate_s", "gen s", 6),
    ("simulate_s", "sim s", 7),
    ("wall_s", "wall s", 7),
    ("us_per_job", "µs/job", 7),
    ("jobs_per_s", "jobs/s", 7),
    ("bare_jobs_per_s", "bare/s", 9),
    ("ratio_pct", "ratio %", 7),
    ("peak_rss_mib", "RSS MiB", 7),
    ("completed", "done", 8),
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workload", nargs="+", choices=NAMES, default=["mix", "kueue"])
    parser.add_argument("--jobs", type=int, nargs="+", default=[10_000, 30_000])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--shapes", type=int, default=16, help="pod shapes of mix and kueue (4..64)")
    parser.add_argument("--policy", nargs="+", default=["default"])
    parser.add_argument("--repeat", type=int, default=5, help="bare-loop runs, the best is reported")
    parser.add_argument("--profile", help="write a cProfile of the simulation to this file (one run)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table for docs/")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--write-docs",
        metavar="PAGE",
        help="also write the measured table into PAGE between its 'bench_scale' markers (docs/scale.md)",
    )
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one(args)))
        return
    rows = []
    if not args.markdown:
        print(f"Kueue admission: {describe()}", flush=True)
        print(" ".join(f"{title:>{width}}" for _, title, width in COLUMNS), flush=True)
    for workload in args.workload:
        for jobs in args.jobs:
            for policy in args.policy:
                argv = [sys.executable, __file__, "--child", "--workload", workload, "--jobs", str(jobs)]
                argv += ["--gpus", str(args.gpus), "--shapes", str(args.shapes), "--policy", policy]
                argv += ["--repeat", str(args.repeat)] + (["--profile", args.profile] if args.profile else [])
                out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
                row = json.loads(out)
                rows.append(row)
                if not args.markdown:
                    print(" ".join(f"{row[key]!s:>{width}}" for key, _, width in COLUMNS), flush=True)
    if args.markdown:
        print(f"`{shlex.join(['bench/bench_scale.py', *sys.argv[1:]])}` (Kueue admission: {describe()}):\n")
        print("| " + " | ".join(title for _, title, _ in COLUMNS) + " |")
        print(
            "|" + "|".join("---" if key in ("workload", "policy") else "---:" for key, _, _ in COLUMNS) + "|"
        )
    table = markdown_table(rows)
    if args.markdown:
        print(table, end="")
    if args.write_docs:
        write_table(args.write_docs, "bench_scale", table)


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The measured rows as a Markdown table headed by the command that measured them (docs/scale.md)."""
    lines = [f"`{shlex.join(['bench/bench_scale.py', *sys.argv[1:]])}`:", ""]
    lines.append("| " + " | ".join(title for _, title, _ in COLUMNS) + " |")
    lines.append(
        "|" + "|".join("---" if key in ("workload", "policy") else "---:" for key, _, _ in COLUMNS) + "|"
    )
    for row in rows:
        cells = [f"{row[key]:,}" if isinstance(row[key], int) else str(row[key]) for key, _, _ in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
