"""End to end at scale: generate, simulate and write the run folder for up to a million jobs.

The workloads are ``bench/workloads.py``'s (``benchmark``, ``mix``, ``kueue``; ``--shapes`` pod shapes for
the last two). Each (workload, jobs, policy) runs in a fresh child process so its peak RSS is its own, in
three timed phases, as ``fleetlab simulate`` does them:

* **generate**: ``resolve()`` of the scenario (the generator draws every job; the mix's jobs re-timed as
  one arrival stream);
* **simulate**: ``run_one()`` (build the simulator, run it, preflight warnings);
* **write**: ``write_run_files()`` into a temporary folder (jobs, pods, nodes, segments, timeline
  Parquet files, the cost ledger and summary.json).

Times are CPU seconds of the child (``time.process_time``; a shared machine disturbs them far less than
wall time) with wall seconds beside them. **process s** is the child's whole CPU time as the parent sees
it (``getrusage(RUSAGE_CHILDREN)``): interpreter start and imports included, so **other s** = process −
(generate + simulate + write) is start-up and imports. Peak RSS (``ru_maxrss``) is read after each phase,
so the columns show where the peak was reached. The fair bare loop (``workloads.bare_loop``: sorted
arrivals, a heap of pod finishes, garbage collected first, best of ``--repeat``) runs in a second child
on the same jobs; **ratio %** = 100 × bare-loop CPU s ÷ simulate CPU s.

**build** says which Kueue admission ran: ``compiled`` (mypyc, as the install built it) or ``pure`` (its
Python sources; ``fleetlab.compiled``). ``--admission both`` runs every case both ways, the order
alternating from case to case, for an interleaved comparison on one install.

Run: .venv/bin/python bench/bench_million.py [--workload mix] [--jobs 1000000] [--gpus 10000]
         [--shapes 16] [--policy default] [--repeat 3] [--profile FILE.prof] [--json]
         [--admission installed|pure|both]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from fleetlab.compiled import PURE_ENV, describe, is_compiled
from fleetlab.experiment.output import write_run_files
from fleetlab.experiment.run import run_one
from workloads import NAMES, bare_inputs, bare_loop, resolve_workload

T = TypeVar("T")


def peak_rss_mib() -> int:
    """The process's peak resident set so far, MiB (Linux reports ``ru_maxrss`` in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def timed(fn: Callable[[], T], prof: cProfile.Profile | None) -> tuple[T, float, float]:
    """``fn()`` with its CPU and wall seconds (under ``prof`` when given)."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    value = fn() if prof is None else prof.runcall(fn)
    return value, time.process_time() - cpu0, time.perf_counter() - wall0


def one(args: argparse.Namespace) -> dict[str, Any]:
    """The three phases for one workload, size and policy, in this process."""
    name, jobs, policy = args.workload[0], args.jobs[0], args.policy[0]
    prof = cProfile.Profile() if args.profile else None
    row: dict[str, Any] = {"workload": name, "jobs": jobs, "gpus": args.gpus, "policy": policy}
    row["admission"] = describe()  # compiled or pure Python (fleetlab.compiled)
    row["build"] = "compiled" if is_compiled() else "pure"
    resolved, cpu, wall = timed(
        lambda: resolve_workload(name, jobs, args.gpus, policy, shapes=args.shapes), prof
    )
    row.update(generate_cpu_s=round(cpu, 2), generate_wall_s=round(wall, 2), rss_generate_mib=peak_rss_mib())
    total = cpu
    run, cpu, wall = timed(lambda: run_one(resolved), prof)
    row.update(simulate_cpu_s=round(cpu, 2), simulate_wall_s=round(wall, 2), rss_simulate_mib=peak_rss_mib())
    total += cpu
    with tempfile.TemporaryDirectory() as tmp:
        _, cpu, wall = timed(lambda: write_run_files(run, Path(tmp) / "run"), prof)
        row["out_mib"] = round(sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file()) / 2**20, 1)
    row.update(write_cpu_s=round(cpu, 2), write_wall_s=round(wall, 2), peak_rss_mib=peak_rss_mib())
    total += cpu
    if prof is not None:
        prof.dump_stats(args.profile)
    row["phases_cpu_s"] = round(total, 2)
    row["total_wall_s"] = round(row["generate_wall_s"] + row["simulate_wall_s"] + row["write_wall_s"], 2)
    row["completed"] = int(run.result.jobs.completed.sum())
    row["jobs_per_s"] = round(jobs / row["simulate_cpu_s"])
    return row


def bare(args: argparse.Namespace) -> dict[str, Any]:
    """The fair bare loop on the same jobs, in this process."""
    resolved = resolve_workload(args.workload[0], args.jobs[0], args.gpus, args.policy[0], shapes=args.shapes)
    return {"bare_cpu_s": bare_loop(*bare_inputs(resolved.jobs), repeat=args.repeat)}


def children_cpu() -> float:
    """CPU seconds of every child waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


COLUMNS = (
    ("workload", 8, "workload"),
    ("build", 8, "build"),
    ("jobs", 8, "jobs"),
    ("policy", 14, "policy"),
    ("generate_cpu_s", 7, "gen s"),
    ("simulate_cpu_s", 7, "sim s"),
    ("write_cpu_s", 7, "write s"),
    ("other_cpu_s", 7, "other s"),
    ("process_cpu_s", 9, "process s"),
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
    parser.add_argument("--workload", nargs="+", choices=NAMES, default=["mix"])
    parser.add_argument("--jobs", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--shapes", type=int, default=16, help="pod shapes of mix and kueue (4..64)")
    parser.add_argument("--policy", nargs="+", default=["default"])
    parser.add_argument("--repeat", type=int, default=3, help="bare-loop runs, the best is reported")
    parser.add_argument("--profile", help="write a cProfile of all three phases to this file (one run)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per run instead")
    parser.add_argument(
        "--admission",
        choices=sorted(SIDES),
        default="installed",
        help="Kueue admission as installed, its Python sources (FLEETLAB_PURE_PYTHON=1), or both in turn",
    )
    parser.add_argument("--child", choices=["run", "bare"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one(args) if args.child == "run" else bare(args)))
        return
    if not args.json:
        print(f"Kueue admission as installed: {describe()}", flush=True)
        print(" ".join(f"{title:>{width}}" for _, width, title in COLUMNS), flush=True)
    cases = [(w, j, p) for w in args.workload for j in args.jobs for p in args.policy]
    for number, (workload, jobs, policy) in enumerate(cases):
        sides = SIDES[args.admission]
        for pure in sides if number % 2 == 0 else sides[::-1]:  # "both": the order alternates per case
            row = measure(args, workload, jobs, policy, pure)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(" ".join(f"{row[key]!s:>{width}}" for key, width, _ in COLUMNS), flush=True)


#: ``--admission``: per case, the children's ``FLEETLAB_PURE_PYTHON`` (``None``: the environment as it is).
SIDES: dict[str, list[bool | None]] = {"installed": [None], "pure": [True], "both": [False, True]}


def measure(
    args: argparse.Namespace, workload: str, jobs: int, policy: str, pure: bool | None
) -> dict[str, Any]:
    """One case in fresh children (the run, then the bare loop), with the pure path forced on or off."""
    env = dict(os.environ)
    if pure is not None:
        env.pop(PURE_ENV, None)
        if pure:
            env[PURE_ENV] = "1"
    base = [sys.executable, __file__, "--workload", workload, "--jobs", str(jobs)]
    base += ["--gpus", str(args.gpus), "--shapes", str(args.shapes), "--policy", policy]
    base += ["--repeat", str(args.repeat)] + (["--profile", args.profile] if args.profile else [])
    before = children_cpu()
    out = subprocess.run([*base, "--child", "run"], check=True, capture_output=True, text=True, env=env)
    row: dict[str, Any] = json.loads(out.stdout)
    row["process_cpu_s"] = round(children_cpu() - before, 2)
    row["other_cpu_s"] = round(row["process_cpu_s"] - row["phases_cpu_s"], 2)
    out = subprocess.run([*base, "--child", "bare"], check=True, capture_output=True, text=True, env=env)
    bare_s = json.loads(out.stdout)["bare_cpu_s"]
    row["bare_jobs_per_s"] = round(jobs / bare_s)
    row["ratio_pct"] = round(100 * bare_s / row["simulate_cpu_s"], 2)
    return row


if __name__ == "__main__":
    main()
