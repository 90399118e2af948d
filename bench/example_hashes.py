"""Byte-identity guard for speed work: SHA-256 of every output file of every example scenario.

Runs ``fleetlab compare`` (the four presets) on each built-in scenario and ``fleetlab simulate`` on every
scenario file under ``examples/``, in this process, and hashes each file written under ``--out``.
Record the hashes before a structural change and check them after it: any difference names the file.

With ``--bench-workloads`` the realistic benchmark workloads of ``bench/workloads.py`` are run too, small
(the Kueue cohort at saturation, and the mix with 64 pod shapes): record those hashes on the commit a
change starts from, as they are not among the example cases.

Run: .venv/bin/python bench/example_hashes.py --write hashes.json      (record)
     .venv/bin/python bench/example_hashes.py --check hashes.json      (compare; exit 1 on a difference)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

from bench_scale import scenario as scale_scenario
from fleetlab.cli import app
from fleetlab.experiment.output import write_run_files
from fleetlab.experiment.run import run_one
from fleetlab.spec.loader import resolve
from workloads import resolve_workload

ROOT = Path(__file__).resolve().parent.parent
BUILTINS = ("default", "two-teams")


def scenario_files() -> list[Path]:
    """Every example YAML that is a scenario (experiment and plan files are skipped by ``validate``)."""
    runner = CliRunner()
    out = []
    for path in sorted((ROOT / "examples").rglob("*.yaml")):
        if runner.invoke(app, ["validate", str(path)]).exit_code == 0:
            out.append(path)
    return out


def hash_tree(folder: Path) -> dict[str, str]:
    """Relative path → SHA-256 of every file under ``folder``."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def generated(policy: str, out: Path) -> None:
    """bench_scale's generated workload at 3,000 jobs on 1,000 GPUs, written as ``simulate`` writes it."""
    resolved = resolve(scale_scenario(3000, 1000, policy))
    write_run_files(run_one(resolved), out)


#: ``--bench-workloads``: (name, workload, jobs, GPUs, pod shapes), small enough for a check run.
BENCH_WORKLOADS = (
    ("kueue-16", "kueue", 4000, 800, 16),
    ("kueue-64", "kueue", 2000, 400, 64),
    ("mix-64", "mix", 3000, 1000, 64),
)


def bench_workload(case: str, out: Path) -> None:
    """One of :data:`BENCH_WORKLOADS`, written as ``simulate`` writes it."""
    _, name, jobs, gpus, shapes = next(w for w in BENCH_WORKLOADS if w[0] == case)
    write_run_files(run_one(resolve_workload(name, jobs, gpus, shapes=shapes)), out)


def run_all(only: list[str] | None, bench_workloads: bool = False) -> dict[str, str]:
    """Run every case and return ``case/file`` → hash."""
    runner = CliRunner()
    cases: list[tuple[str, list[str]]] = [(f"compare:{b}", ["compare", b]) for b in BUILTINS]
    cases += [(f"simulate:{p.relative_to(ROOT)}", ["simulate", str(p)]) for p in scenario_files()]
    cases += [(f"generated:{p}", ["generated", p]) for p in ("default", "most-allocated")]
    if bench_workloads:
        cases += [(f"workload:{w[0]}", ["workload", w[0]]) for w in BENCH_WORKLOADS]
    hashes: dict[str, str] = {}
    for name, argv in cases:
        if only and not any(text in name for text in only):
            continue
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            if argv[0] in ("generated", "workload"):
                (generated if argv[0] == "generated" else bench_workload)(argv[1], out)
                for rel, digest in hash_tree(out).items():
                    hashes[f"{name}/{rel}"] = digest
                continue
            result = runner.invoke(app, [*argv, "--out", str(out)])
            if result.exit_code != 0:
                hashes[f"{name}/exit"] = f"{result.exit_code}: {result.output.strip()[:200]}"
            else:
                for rel, digest in hash_tree(out).items():
                    hashes[f"{name}/{rel}"] = digest
        print(f"{time.perf_counter() - t0:6.1f}s {name}", file=sys.stderr)
    return hashes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="record the hashes in this JSON file")
    group.add_argument("--check", type=Path, help="compare with hashes recorded earlier")
    parser.add_argument(
        "--only",
        action="append",
        help="run only cases whose name contains this text (repeatable: any of them)",
    )
    parser.add_argument(
        "--bench-workloads", action="store_true", help="also run bench/workloads.py's workloads, small"
    )
    args = parser.parse_args()
    hashes = run_all(args.only, args.bench_workloads)
    if args.write:
        args.write.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{len(hashes)} files hashed")
        return
    want = json.loads(args.check.read_text(encoding="utf-8"))
    if args.only:
        want = {k: v for k, v in want.items() if any(text in k for text in args.only)}
    if not args.bench_workloads:
        want = {k: v for k, v in want.items() if not k.startswith("workload:")}
    differ = sorted(k for k in want.keys() | hashes.keys() if want.get(k) != hashes.get(k))
    for key in differ:
        print(f"DIFFERS {key}: {want.get(key, '(missing)')[:16]} → {hashes.get(key, '(missing)')[:16]}")
    print(f"{len(hashes)} files, {len(differ)} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
