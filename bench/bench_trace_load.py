"""Trace ingestion: time ``load_native_trace`` on a synthetic native trace of N rows (CSV and Parquet).

The table is written with pyarrow straight from numpy columns (ids, Poisson submit times, 1–8 GPUs,
CPU and memory per GPU, lognormal runtimes, four teams, an H100 runtime column), so writing it costs
little; the load is timed in a fresh child process per format so its peak RSS is its own. Load time is
shown in wall seconds and in CPU seconds of the child (all its threads: Arrow reads with several).

Run: .venv/bin/python bench/bench_trace_load.py [--rows 1000000] [--format csv parquet]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq


def write_trace(rows: int, path: Path) -> None:
    """A native trace of ``rows`` jobs; text columns as a CSV user would write them."""
    rng = np.random.default_rng(5)
    gpus = rng.choice([1, 2, 4, 8], size=rows, p=[0.5, 0.25, 0.125, 0.125])
    runtime = np.maximum(1.0, np.round(rng.lognormal(np.log(1800), 1.2, size=rows), 1))
    table = pa.table(
        {
            "id": [f"job-{i}" for i in range(rows)],
            "submit_s": np.round(np.cumsum(rng.exponential(2.0, size=rows)), 3).astype(str),
            "class": np.where(gpus >= 4, "training", "batch").astype(str),
            "team": np.asarray(["vision", "nlp", "speech", "infra"])[rng.integers(4, size=rows)],
            "pods": np.ones(rows, dtype=np.int64).astype(str),
            "cpu": (gpus * 12).astype(str),
            "memory": np.char.add((gpus * 100).astype(str), "Gi"),
            "gpus": gpus.astype(str),
            "runtime_s": runtime.astype(str),
            "runtime_s[H100]": np.round(runtime / 2, 1).astype(str),
        }
    )
    if path.suffix == ".csv":
        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path)


def child(path: Path) -> dict[str, float]:
    """Load the trace in this process and report the time and peak RSS."""
    from fleetlab.spec.native_trace import load_native_trace

    t0, c0 = time.perf_counter(), time.process_time()
    jobs, _ = load_native_trace(path)
    return {
        "rows": len(jobs),
        "load_s": round(time.perf_counter() - t0, 2),
        "load_cpu_s": round(time.process_time() - c0, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--format", nargs="+", default=["csv", "parquet"], choices=["csv", "parquet"])
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.format:
            path = Path(tmp) / f"trace.{fmt}"
            t0 = time.perf_counter()
            write_trace(args.rows, path)
            written = time.perf_counter() - t0
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(path)], check=True, capture_output=True, text=True
            )
            row = json.loads(out.stdout)
            print(
                f"{fmt:8} {row['rows']:>9} rows  write {written:5.1f}s  load {row['load_s']:6.2f}s "
                f"({row['load_cpu_s']:.2f} CPU s)  "
                f"peak RSS {row['peak_rss_mib']} MiB",
                flush=True,
            )


if __name__ == "__main__":
    main()
