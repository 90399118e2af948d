"""Import speed and peak memory of ``fleetlab import`` on a synthetic Slurm accounting dump.

Writes ``sacct --parsable2`` output (the header of docs/history-import.md) of --jobs jobs over 30 days on
250 8-GPU nodes, each job on its own line followed by --steps step lines (``.batch``, ``.extern``, ``.0``...,
which the importer folds into the job), or the same jobs as ``sacct --json`` with --json; then runs
``fleetlab import slurm:FILE --out DIR`` in a fresh process and reports wall time, CPU time, peak RSS and
the jobs by state. Times are the whole command: interpreter start, imports, reading, checking and writing
the history folder.

Run: .venv/bin/python bench/bench_sacct.py [--jobs 1000000] [--steps 0] [--json] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2024, 5, 1, tzinfo=UTC)
NODES = 250
HEADER = "JobID|JobIDRaw|JobName|Partition|Account|QOS|State|Submit|Start|End|AllocTRES|NodeList|Priority"
STATES = ("COMPLETED",) * 14 + ("FAILED", "CANCELLED by 1000", "TIMEOUT", "PREEMPTED", "RUNNING", "PENDING")


def _ts(seconds: int) -> str:
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")


def _job(i: int, jobs: int) -> tuple[str, int, int, int, str, int, int]:
    """State, submit, start, end (seconds from START; -1 = none), node, GPUs and nodes of job ``i``."""
    submit = i * 30 * 86400 // jobs
    state = STATES[i % len(STATES)]
    start = -1 if state == "PENDING" else submit + 60 + i % 600
    end = -1 if state in ("PENDING", "RUNNING") else start + 600 + (i * 37) % 36000
    gpus = (1, 2, 4, 8, 16)[i % 5]
    return state, submit, start, end, f"gpu{(i * 7) % NODES:03d}", gpus, 2 if gpus == 16 else 1


def write_parsable(path: Path, jobs: int, steps: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write(HEADER + "\n")
        for i in range(jobs):
            state, submit, start, end, node, gpus, nodes = _job(i, jobs)
            times = f"{_ts(submit)}|{_ts(start) if start >= 0 else 'Unknown'}|{_ts(end) if end >= 0 else 'Unknown'}"
            tres = f"billing={gpus * 8},cpu={gpus * 8},gres/gpu={gpus},gres/gpu:h100={gpus},mem={gpus * 64}G,node={nodes}"
            job_id = 100000 + i
            fh.write(
                f"{job_id}|{job_id}|train-{i}|gpu|team-{i % 12}|normal|{state}|{times}|{tres}|{node}|{1000 + i % 50}\n"
            )
            for s in range(steps):
                step = ("batch", "extern", "0", "1")[s % 4]
                fh.write(f"{job_id}.{step}|{job_id}.{step}|{step}||team-{i % 12}||{state}|{times}|cpu={gpus * 8},mem={gpus * 64}G,node=1|{node}|\n")  # fmt: skip


def write_json(path: Path, jobs: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{"meta": {"plugin": {"type": "openapi/slurmdbd"}}, "jobs": [\n')
        for i in range(jobs):
            state, submit, start, end, node, gpus, nodes = _job(i, jobs)
            job = {
                "account": f"team-{i % 12}", "job_id": 100000 + i, "name": f"train-{i}", "partition": "gpu",
                "nodes": node, "restart_cnt": 0, "priority": {"set": True, "infinite": False, "number": 1000 + i % 50},
                "state": {"current": [state.split()[0]], "reason": "None"},
                "time": {"submission": 1714521600 + submit, "start": 0 if start < 0 else 1714521600 + start,
                         "end": 0 if end < 0 else 1714521600 + end},
                "tres": {"allocated": [{"type": "cpu", "name": "", "count": gpus * 8},
                                       {"type": "mem", "name": "", "count": gpus * 65536},
                                       {"type": "node", "name": "", "count": nodes},
                                       {"type": "gres", "name": "gpu", "count": gpus}]},
            }  # fmt: skip
            fh.write(("" if i == 0 else ",\n") + json.dumps(job))
        fh.write("\n]}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=0, help="step lines after each job line")
    parser.add_argument("--json", action="store_true", help="write sacct --json instead of --parsable2")
    parser.add_argument("--keep", type=Path, help="write the dump here and keep it")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-sacct-"))
    source = args.keep or folder / ("sacct.json" if args.json else "sacct.txt")
    t = time.perf_counter()
    if not source.exists():
        write_json(source, args.jobs) if args.json else write_parsable(source, args.jobs, args.steps)
    lines = args.jobs * (1 + (0 if args.json else args.steps))
    size_mib = source.stat().st_size / 2**20
    print(
        f"{lines:,} rows ({args.jobs:,} jobs), {size_mib:.0f} MiB, written in {time.perf_counter() - t:.1f} s"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "fleetlab", "import", f"slurm:{source}", "--out", str(folder / "out"), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit(result.stderr)
    meta = json.loads(result.stdout)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(
        f"import: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {after.ru_maxrss / 1024:.0f} MiB; "
        f"{meta['jobs']:,} jobs {meta['jobs_by_state']}, skipped {meta['skipped']}"
    )
    if args.keep is None:
        source.unlink()
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
