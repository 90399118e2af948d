"""Import + baseline + calibrate of a long real log, each in a fresh process: CPU seconds and peak memory.

The log is built from a real Parallel Workloads Archive file in ../shared/traces by laying copies of it
end to end in time (copy k's submits shifted by k x the file's span plus a day, job numbers by k x the
largest), until it holds ``--jobs`` jobs; each copy keeps the file's jobs, sizes, run times, users and
(where recorded) waits. Default: the NASA iPSC/860 log (no wait times recorded, like the LCG grid log),
18,239 jobs -> 190,000 in about 10.4 copies on its 128 nodes.

``--max-procs 1`` keeps only the single-processor jobs (the shape of the LCG grid log: one processor per job,
no waits recorded).

Run: .venv/bin/python bench/bench_calibrate.py [--jobs 190000] [--source PATH.swf] [--swf-nodes 128x1]
     [--max-procs 1]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NASA = ("traces", "pwa-nasa-ipsc", "NASA-iPSC-1993-3.1-cln.swf")


def shared_file(*parts: str) -> Path:
    """A file of the shared data: ``FLEETLAB_SHARED``, else the nearest ``shared/`` beside the checkout."""
    override = os.environ.get("FLEETLAB_SHARED")
    roots = [Path(override)] if override else [a / "shared" for a in (ROOT, *ROOT.parents)]
    for root in roots:
        if root.joinpath(*parts).is_file():
            return root.joinpath(*parts)
    return Path("shared").joinpath(*parts)


DAY_S = 86400


def tiled_log(source: Path, jobs: int, out: Path, max_procs: int | None = None) -> int:
    """``source`` laid end to end until ``jobs`` job lines (only its jobs of at most ``max_procs``
    processors when given); returns the number written."""
    header: list[str] = []
    lines: list[list[str]] = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.startswith(";"):
            header.append(line)
        elif line.strip():
            cells = line.split()
            if max_procs is None or 0 < float(cells[4]) <= max_procs:
                lines.append(cells)
    span = max(float(c[1]) for c in lines) + DAY_S
    largest = max(int(c[0]) for c in lines)
    written = 0
    with out.open("w", encoding="utf-8") as fh:
        fh.write("\n".join(header) + "\n")
        copy = 0
        while written < jobs:
            for cells in lines:
                if written >= jobs:
                    break
                shifted = [
                    str(int(cells[0]) + copy * largest),
                    f"{float(cells[1]) + copy * span:.0f}",
                    *cells[2:],
                ]
                fh.write(" ".join(shifted) + "\n")
                written += 1
            copy += 1
    return written


def _run(args: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one fresh ``fleetlab`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fleetlab", *args], capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"fleetlab {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=190_000)
    parser.add_argument("--source", type=Path, default=shared_file(*NASA))
    parser.add_argument("--swf-nodes", default=None, help="COUNTxPROCS (default: the log's header)")
    parser.add_argument(
        "--max-procs", type=int, default=None, help="keep only jobs of at most this many processors"
    )
    parser.add_argument(
        "--keep", type=Path, default=None, help="write the outputs here instead of a temp dir"
    )
    args = parser.parse_args()
    if not args.source.is_file():
        raise SystemExit(f"{args.source}: not found (the shared traces are needed)")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        log = work / "tiled.swf"
        count = tiled_log(args.source, args.jobs, log, args.max_procs)
        nodes = ["--swf-nodes", args.swf_nodes] if args.swf_nodes else []
        total_cpu = 0.0
        peak = 0
        for name, command in (
            ("import", ["import", f"swf:{log}", *nodes, "--out", str(work / "history"), "--json"]),
            ("baseline", ["baseline", str(work / "history"), "--out", str(work / "baseline"), "--json"]),
            ("calibrate", ["calibrate", str(work / "history"), "--out", str(work / "calibration"), "--json"]),
        ):
            wall, cpu, rss = _run(command)
            total_cpu += cpu
            peak = max(peak, rss)
            print(f"{name:9s} wall {wall:6.1f} s  CPU {cpu:6.1f} s  peak RSS {rss} MiB", flush=True)
        print(f"{count} jobs from {args.source.name}: CPU {total_cpu:.1f} s in all, peak RSS {peak} MiB")


if __name__ == "__main__":
    main()
