"""fleetlab against Gavel's own simulator on a Gavel-generated trace, Kueue StrictFIFO against Gavel's FIFO.

Gavel (Narayanan et al., OSDI'20, github.com/stanford-futuredata/gavel, MIT) simulates a heterogeneous
V100/P100/K80 cluster in scheduling rounds. This script

1. makes a Gavel trace with the settings of Gavel's ``scheduler/scripts/utils/generate_trace.py``
   (``--num_jobs N --lam L --seed S --generate-multi-gpu-jobs``, durations ``linspace(1, 4, 4)`` hours on a
   V100, scale factor 1, 2 or 4 with probabilities 0.7 / 0.1 / 0.2 for distributed job types): with
   ``--gavel-repo`` by running that script, otherwise by the same draws in this file (same seeds, same
   order, so the same rows);
2. runs Gavel's ``scheduler/scripts/drivers/simulate_scheduler_with_trace.py --policy fifo`` on it
   (only with ``--gavel-repo``);
3. runs fleetlab on the same jobs, once with one Kueue ClusterQueue (``StrictFIFO``, one ResourceFlavor per
   GPU type, each with the cluster's GPUs of that type as nominal quota) and once with plain kube-style
   queueing (no Kueue: kube-scheduler's active queue);

each in a fresh child process, and prints each child's CPU and wall seconds and the ratios.

Every job of the trace is one pod asking for ``scale_factor`` GPUs; its runtime on each GPU type is
``total_steps / throughput[type][(job_type, scale_factor)]`` from Gavel's throughput oracle
(``simulation_throughputs.json``), so both simulators run the same work. See docs/scale.md for where the
semantics differ (Gavel's rounds and leases against fleetlab's events).

``--gavel-python`` runs Gavel's generator and simulator with another interpreter (Gavel's declared
requirements, ``torch==1.4.0`` among them, install only up to Python 3.8); ``--own-trace`` draws the trace
with this file's copy of the generator even with ``--gavel-repo`` (for a checkout whose generator does not
run against its ``utils.py``); ``--rounds N`` runs every side N times, interleaved (Gavel first in rounds 1,
3, ..., last in rounds 2, 4, ..., where fleetlab's modes also run in reverse order), and reports each round
and the range of the ratios; ``--json`` prints every round's figures as one JSON object.

Run: .venv/bin/python bench/bench_gavel.py [--gavel-repo PATH] [--gavel-python PY] [--own-trace]
         [--jobs 2000] [--lam 250] [--rounds 3] [--json] [--profile F]
"""

from __future__ import annotations

import argparse
import ast
import cProfile
import importlib
import json
import math
import os
import random
import re
import resource
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _default_oracle() -> Path:
    """Gavel's oracle in the nearest ``shared/traces/gavel`` beside the checkout (or ``FLEETLAB_SHARED``)."""
    override = os.environ.get("FLEETLAB_SHARED")
    bases = [Path(override)] if override else [a / "shared" for a in ROOT.parents]
    for base in bases:
        if (base / "traces" / "gavel").is_dir():
            return base / "traces" / "gavel" / "simulation_throughputs.json"
    return Path("simulation_throughputs.json")


ORACLE = _default_oracle()
#: Gavel's worker types in its cluster-spec order (``#v100s:#p100s:#k80s``) and fleetlab's GPU models.
GPU_TYPES = (("v100", "V100"), ("p100", "P100"), ("k80", "K80"))
#: Gavel's job templates in ``scheduler/job_table.py`` order: (model family, batch sizes, distributed).
TEMPLATE_FAMILIES = (
    ("ResNet-18", (16, 32, 64, 128, 256), True),
    ("ResNet-50", (16, 32, 64, 128), True),
    ("Transformer", (16, 32, 64, 128, 256), True),
    ("LM", (5, 10, 20, 40, 80), True),
    ("Recommendation", (512, 1024, 2048, 4096, 8192), False),
)
MODE_NAMES = ("kueue-strictfifo", "kube")
#: The line Gavel's trace driver prints for every completed job.
COMPLETED_LINE = re.compile(r"Job \d+(?: \(high priority\))?: \d+\.\d{3}$")


def job_templates() -> list[tuple[str, bool]]:
    """(job type, distributed) for Gavel's 26 templates, in its table order."""
    out = [
        (f"{family} (batch size {batch})", distributed)
        for family, batches, distributed in TEMPLATE_FAMILIES
        for batch in batches
    ]
    return [*out, ("A3C", False), ("CycleGAN", False)]


def read_oracle(path: Path) -> dict[str, dict[tuple[str, int], float]]:
    """Worker type → (job type, scale factor) → isolated steps per second."""
    raw = json.loads(path.read_text())
    return {
        worker: {ast.literal_eval(key): float(value["null"]) for key, value in raw[worker].items()}
        for worker, _ in GPU_TYPES
    }


def generate_trace(
    jobs: int, lam: float, seed: int, oracle: dict[str, dict[tuple[str, int], float]]
) -> list[tuple[str, int, int, int]]:
    """(job type, scale factor, total steps, arrival s) per job, drawn as Gavel's trace generator draws them.

    Four ``random.Random`` streams seeded ``seed`` .. ``seed + 3`` pick the template, the inter-arrival
    time (exponential with mean ``lam`` seconds; the first job arrives at 0), the V100 duration and the
    scale factor; arrival times are written truncated to whole seconds."""
    templates = job_templates()
    job_rng, arrival_rng, duration_rng, scale_rng = (random.Random(seed + k) for k in range(4))
    durations = [1.0 + k for k in range(4)]  # numpy.linspace(1, 4, 4) hours
    rows: list[tuple[str, int, int, int]] = []
    arrival = 0.0
    for i in range(jobs):
        job_type, distributed = job_rng.choice(templates)
        scale = 1
        if distributed:
            r = scale_rng.uniform(0, 1)
            scale = 2 if 0.7 <= r <= 0.8 else 4 if r >= 0.8 else 1
        seconds = duration_rng.choice(durations) * 3600
        steps = max(1, int(oracle["v100"][(job_type, scale)] * seconds))
        if i > 0 and lam > 0:
            arrival += -math.log(1.0 - arrival_rng.random()) * lam
        rows.append((job_type, scale, steps, int(arrival)))
    return rows


def write_gavel_trace(rows: list[tuple[str, int, int, int]], path: Path) -> None:
    """Gavel's 10-field trace format; command and working directory are placeholders the simulator ignores."""
    with path.open("w") as f:
        for job_type, scale, steps, arrival in rows:
            f.write(f"{job_type}\tsleep\t.\t--steps\t0\t{steps}\t{scale}\t1\t-1.000000\t{arrival}\n")


def read_gavel_trace(path: Path) -> list[tuple[str, int, int, int]]:
    """The rows of a 10-field Gavel trace (as Gavel's ``utils.parse_trace`` reads them)."""
    rows = []
    for line in path.read_text().splitlines():
        fields = line.split("\t")
        rows.append((fields[0], int(fields[6]), int(fields[5]), int(float(fields[9]))))
    return rows


def scenario(
    rows: list[tuple[str, int, int, int]],
    oracle: dict[str, dict[tuple[str, int], float]],
    nodes: dict[str, int],
    gpus_per_node: int,
    kueue: bool,
) -> dict[str, Any]:
    """Gavel's cluster as one pool per GPU type; each trace row one single-pod job; Kueue optional."""
    pools = [
        {
            "name": worker,
            "count": nodes[worker],
            "gpu_model": model,
            "gpus_per_node": gpus_per_node,
            "cpu": "32",
            "memory": "256Gi",
            "price_per_hour": 1.0,
        }
        for worker, model in GPU_TYPES
    ]
    jobs = []
    for i, (job_type, scale, steps, arrival) in enumerate(rows):
        by_gpu = {
            model: steps / oracle[worker][(job_type, scale)]
            for worker, model in GPU_TYPES
            if oracle[worker][(job_type, scale)] > 0
        }
        job: dict[str, Any] = {
            "id": f"job-{i}",
            "submit_s": arrival,
            "class": "training",
            "requests": {"nvidia.com/gpu": scale},
            "runtime": {"default": by_gpu["V100"], "by_gpu": by_gpu},
        }
        unusable = [worker for worker, model in GPU_TYPES if model not in by_gpu]
        if unusable:  # Gavel's oracle gives this job no throughput on these types: keep it off them
            term = {"key": "fleetlab.io/pool", "operator": "NotIn", "values": unusable}
            job["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [term]}]
                    }
                }
            }
        if kueue:
            job["queue"] = "gavel"
        jobs.append(job)
    out: dict[str, Any] = {
        "name": "gavel-" + ("kueue-strictfifo" if kueue else "kube"),
        "seed": 0,
        "cluster": {"pools": pools},
        "workload": {"jobs": jobs},
    }
    if kueue:
        out["kueue"] = kueue_objects(nodes, gpus_per_node)
    return out


def kueue_objects(nodes: dict[str, int], gpus_per_node: int) -> list[dict[str, Any]]:
    """One ResourceFlavor per pool, one StrictFIFO ClusterQueue owning all GPUs, one LocalQueue."""
    flavors = [
        {"kind": "ResourceFlavor", "metadata": {"name": w}, "spec": {"nodeLabels": {"fleetlab.io/pool": w}}}
        for w, _ in GPU_TYPES
    ]
    queue = {
        "kind": "ClusterQueue",
        "metadata": {"name": "gavel"},
        "spec": {
            "queueingStrategy": "StrictFIFO",
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": w,
                            "resources": [
                                {"name": "nvidia.com/gpu", "nominalQuota": nodes[w] * gpus_per_node}
                            ],
                        }
                        for w, _ in GPU_TYPES
                    ],
                }
            ],
        },
    }
    local = {
        "kind": "LocalQueue",
        "metadata": {"name": "gavel", "namespace": "default"},
        "spec": {"clusterQueue": "gavel"},
    }
    return [{"apiVersion": "kueue.x-k8s.io/v1beta2", **obj} for obj in [*flavors, queue, local]]


def fleetlab_child(args: argparse.Namespace) -> dict[str, Any]:
    """Load the trace, build and resolve the scenario, simulate: CPU seconds of each step, in this process."""
    from fleetlab.experiment.run import profile_for
    from fleetlab.model.scenario import Scenario
    from fleetlab.sim.simulator import Simulator
    from fleetlab.spec.loader import resolve

    t0 = time.process_time()
    rows = read_gavel_trace(Path(args.trace))
    nodes = dict(zip([w for w, _ in GPU_TYPES], args.nodes, strict=True))
    spec = scenario(rows, read_oracle(Path(args.oracle)), nodes, args.gpus_per_node, args.mode != "kube")
    resolved = resolve(Scenario.model_validate(spec))
    sim = Simulator(resolved, profile_for(resolved, None))
    setup_s = time.process_time() - t0
    t0 = time.process_time()
    if args.profile:
        prof = cProfile.Profile()
        result = prof.runcall(sim.run)
        prof.dump_stats(args.profile)
    else:
        result = sim.run()
    simulate_s = time.process_time() - t0
    completed = int(result.jobs.completed.sum())
    return {
        "setup_s": round(setup_s, 2),
        "simulate_s": round(simulate_s, 2),
        "jobs": len(rows),
        "completed": completed,
        "not_completed": len(rows) - completed,
    }


def timed_child(argv: list[str], logs: Path, cwd: Path | None = None) -> tuple[float, float, str]:
    """Run a child process with its output in files under ``logs`` (Gavel logs every micro-task: reading
    that through a pipe would cost this process CPU); its CPU seconds (user + system, from this process's
    child accounting), wall seconds and standard output."""
    out, err = logs / "child.out", logs / "child.err"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall0 = time.perf_counter()
    with out.open("w") as stdout, err.open("w") as stderr:
        code = subprocess.run(argv, cwd=cwd, stdout=stdout, stderr=stderr).returncode
    wall = time.perf_counter() - wall0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        sys.exit(f"{' '.join(argv)} failed ({code}):\n{err.read_text()[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out.read_text()


def usable_lines(lines: list[str], oracle: dict[str, dict[tuple[str, int], float]], jobs: int) -> list[str]:
    """The first ``jobs`` trace lines whose job type runs on every GPU type. Gavel's oracle gives ResNet-50
    (batch size 128) on 2 or 4 GPUs no K80 throughput; Gavel's FIFO picks a worker type at random, never
    runs such a job when it drew K80, and its simulation then never ends."""
    kept = []
    for line in lines:
        fields = line.split("\t")
        key = (fields[0], int(fields[6]))
        if all(oracle[worker][key] > 0 for worker, _ in GPU_TYPES):
            kept.append(line)
    if len(kept) < jobs:
        sys.exit(f"only {len(kept)} usable jobs in the generated trace, {jobs} wanted")
    return kept[:jobs]


def gavel_trace_from_repo(repo: Path, args: argparse.Namespace, drawn: int, out: Path) -> None:
    """Gavel's own generator, run from ``scheduler/`` as its scripts are."""
    script = repo / "scheduler" / "scripts" / "utils" / "generate_trace.py"
    argv = [args.gavel_python, str(script), "--num_jobs", str(drawn), "--lam", str(args.lam)]
    argv += ["--seed", str(args.seed), "--generate-multi-gpu-jobs", "--throughputs_file", str(args.oracle)]
    timed_child([*argv, "--output_file", str(out)], out.parent, cwd=repo / "scheduler")


def gavel_driver(driver: str, argv: list[str]) -> None:
    """Run Gavel's driver script, unchanged, as ``__main__`` in this process, timing its
    ``Scheduler.simulate`` from outside (CPU seconds, printed as the last line of standard output)."""
    sys.path.insert(0, str(Path(driver).resolve().parents[2]))  # Gavel's scheduler/ folder
    gavel_scheduler = importlib.import_module("scheduler")
    simulate = gavel_scheduler.Scheduler.simulate
    spent: list[float] = []

    def timed(self: Any, *a: Any, **k: Any) -> Any:
        t0 = time.process_time()
        try:
            return simulate(self, *a, **k)
        finally:
            spent.append(time.process_time() - t0)

    gavel_scheduler.Scheduler.simulate = timed
    sys.argv = [driver, *argv]
    runpy.run_path(driver, run_name="__main__")
    print(json.dumps({"simulate_s": round(sum(spent), 2)}))


def run_gavel(repo: Path, args: argparse.Namespace, trace: Path) -> tuple[float, float, str, float, int]:
    """Gavel's simulator with its FIFO policy on ``trace``: process CPU s, wall s, the summary lines it
    printed, the CPU seconds of ``Scheduler.simulate`` alone, and the jobs it completed (the driver prints
    ``Job N: <completion time>`` for each; a job Gavel gives up on, after its ``MAX_FAILED_ATTEMPTS`` failed
    micro-tasks, gets no such line)."""
    script = repo / "scheduler" / "scripts" / "drivers" / "simulate_scheduler_with_trace.py"
    spec = ":".join(str(n * args.gpus_per_node) for n in args.nodes)
    per_server = ":".join([str(args.gpus_per_node)] * 3)
    argv = [
        args.gavel_python,
        __file__,
        "--gavel-driver",
        str(script),
        "--trace_file",
        str(trace),
        "--policy",
        "fifo",
    ]
    argv += ["--throughputs_file", str(args.oracle), "--cluster_spec", spec]
    argv += ["--num_gpus_per_server", per_server, "--seed", str(args.seed)]
    argv += ["--time_per_iteration", str(args.round_s), "--window-start", "0", "--window-end", str(args.jobs)]
    cpu, wall, out = timed_child(argv, trace.parent, cwd=repo / "scheduler")
    lines = out.splitlines()
    tail = [line for line in lines if "Average job completion time" in line or "utilization" in line]
    completed = sum(1 for line in lines if COMPLETED_LINE.match(line))
    return cpu, wall, "; ".join(tail[-2:]), float(json.loads(lines[-1])["simulate_s"]), completed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gavel-repo", type=Path, help="a checkout of stanford-futuredata/gavel")
    parser.add_argument(
        "--gavel-python",
        default=sys.executable,
        help="the Python that runs Gavel's scripts, with its requirements installed (default: this one)",
    )
    parser.add_argument(
        "--own-trace",
        action="store_true",
        help="with --gavel-repo, draw the trace with this script's copy of Gavel's generator "
        "(for a checkout whose scripts/utils/generate_trace.py does not run)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds of every side")
    parser.add_argument("--json", action="store_true", help="also print every round's figures as JSON")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument(
        "--lam", type=float, default=250.0, help="mean inter-arrival time, seconds (Gavel's -l)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nodes", type=int, nargs=3, default=[9, 9, 9], metavar=("V100", "P100", "K80"))
    parser.add_argument("--gpus-per-node", type=int, default=4)
    parser.add_argument(
        "--round-s", type=int, default=360, help="Gavel's --time_per_iteration (round length)"
    )
    parser.add_argument("--oracle", type=Path, default=ORACLE, help="Gavel's simulation_throughputs.json")
    parser.add_argument("--modes", nargs="+", choices=MODE_NAMES, default=list(MODE_NAMES))
    parser.add_argument(
        "--profile", help="write a cProfile of the fleetlab simulation to F (first mode only)"
    )
    parser.add_argument("--child", choices=MODE_NAMES, dest="mode", help=argparse.SUPPRESS)
    parser.add_argument("--trace", help=argparse.SUPPRESS)
    if sys.argv[1:2] == ["--gavel-driver"]:
        gavel_driver(sys.argv[2], sys.argv[3:])
        return
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(fleetlab_child(args)))
        return
    if not args.oracle.is_file():
        sys.exit(f"{args.oracle}: Gavel's simulation_throughputs.json not found; pass --oracle")
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: at least 1 round")
    gavel_python = gavel_version(args)
    if args.gavel_repo:
        print(f"gavel: {args.gavel_repo} run by Python {gavel_python} ({args.gavel_python})")
    with tempfile.TemporaryDirectory() as tmp:
        generated, trace = Path(tmp) / "generated.trace", Path(tmp) / "gavel.trace"
        oracle = read_oracle(args.oracle)
        drawn = args.jobs + args.jobs // 20 + 20  # spare draws for the rows usable_lines drops
        own = generate_trace(drawn, args.lam, args.seed, oracle)
        if args.gavel_repo and not args.own_trace:
            gavel_trace_from_repo(args.gavel_repo, args, drawn, generated)
            same = read_gavel_trace(generated) == own
            print(
                f"trace: Gavel's generate_trace.py ({'same rows as' if same else 'DIFFERS from'} this script's)"
            )
        else:
            write_gavel_trace(own, generated)
            why = "--own-trace" if args.gavel_repo else "no --gavel-repo"
            print(f"trace: this script's copy of Gavel's generator draws ({why})")
        lines = generated.read_text().splitlines(keepends=True)
        kept = usable_lines(lines, oracle, args.jobs)
        trace.write_text("".join(kept))
        skipped = lines.index(kept[-1]) + 1 - len(kept)
        print(f"{skipped} generated jobs skipped (no throughput on some GPU type in Gavel's oracle)")
        rows = read_gavel_trace(trace)
        gpus = sum(scale for _, scale, _, _ in rows)
        print(
            f"{len(rows)} jobs ({gpus} GPUs requested), lam {args.lam} s, seed {args.seed}, cluster "
            + ", ".join(
                f"{n}×{args.gpus_per_node} {w}" for n, (w, _) in zip(args.nodes, GPU_TYPES, strict=True)
            )
        )
        rounds = [run_round(args, trace, Path(tmp), k) for k in range(args.rounds)]
    summary = ratio_ranges(rounds, args.modes)
    for line in summary["lines"]:
        print(line)
    if args.json:
        print(json.dumps({"gavel_python": gavel_python, "rounds": rounds, "ratios": summary["ratios"]}))


def gavel_version(args: argparse.Namespace) -> str | None:
    """The Python that ran Gavel, as it names itself (None without ``--gavel-repo``)."""
    if not args.gavel_repo:
        return None
    done = subprocess.run(
        [args.gavel_python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def run_round(args: argparse.Namespace, trace: Path, tmp: Path, k: int) -> dict[str, dict[str, float]]:
    """Round ``k + 1``: Gavel (with ``--gavel-repo``) and every fleetlab mode, each in a fresh child process;
    Gavel first when ``k`` is even, last when it is odd (the modes then in reverse order), so no side always
    runs on a machine the other has just warmed or loaded."""
    sides: list[str] = (["gavel"] if args.gavel_repo else []) + list(args.modes)
    if k % 2:
        sides.reverse()
    figures: dict[str, dict[str, float]] = {}
    for side in sides:
        if side == "gavel":
            cpu, wall, tail, simulate_s, completed = run_gavel(args.gavel_repo, args, trace)
            figures["gavel"] = {
                "process_cpu_s": round(cpu, 3),
                "wall_s": round(wall, 3),
                "simulate_s": simulate_s,
                "completed": completed,
            }
            print(
                f"round {k + 1}  {'gavel fifo':<25} process CPU {cpu:7.2f} s  wall {wall:7.2f} s  "
                f"(simulate {simulate_s} s; {completed} completed; {tail})",
                flush=True,
            )
            continue
        argv = [
            sys.executable,
            __file__,
            "--child",
            side,
            "--trace",
            str(trace),
            "--oracle",
            str(args.oracle),
        ]
        argv += ["--nodes", *map(str, args.nodes), "--gpus-per-node", str(args.gpus_per_node)]
        if args.profile and k == 0 and side == args.modes[0]:
            argv += ["--profile", args.profile]
        cpu, wall, out = timed_child(argv, tmp, cwd=ROOT)
        row = json.loads(out)
        figures[side] = {"process_cpu_s": round(cpu, 3), "wall_s": round(wall, 3), **row}
        print(
            f"round {k + 1}  {'fleetlab ' + side:<25} process CPU {cpu:7.2f} s  wall {wall:7.2f} s  "
            f"(setup {row['setup_s']} s, simulate {row['simulate_s']} s; "
            f"{row['completed']} completed, {row['not_completed']} not)",
            flush=True,
        )
    return figures


def ratio_ranges(rounds: list[dict[str, dict[str, float]]], modes: list[str]) -> dict[str, Any]:
    """Gavel's CPU seconds ÷ each mode's, per round (process and simulate), and the lines that report their
    ranges; empty without Gavel."""
    ratios: dict[str, dict[str, list[float]]] = {}
    lines: list[str] = []
    if not rounds or "gavel" not in rounds[0]:
        return {"ratios": ratios, "lines": lines}
    for mode in modes:
        process = [r["gavel"]["process_cpu_s"] / r[mode]["process_cpu_s"] for r in rounds]
        simulate = [r["gavel"]["simulate_s"] / max(r[mode]["simulate_s"], 0.01) for r in rounds]
        ratios[mode] = {
            "process": [round(x, 2) for x in process],
            "simulate": [round(x, 2) for x in simulate],
        }
        lines.append(
            f"Gavel ÷ fleetlab {mode}: {spread(process)} process CPU, {spread(simulate)} simulate CPU "
            f"({len(rounds)} round{'s' if len(rounds) > 1 else ''})"
        )
    return {"ratios": ratios, "lines": lines}


def spread(values: list[float]) -> str:
    """``4.2×`` for one value, ``4.1–4.3×`` for several."""
    low, high = min(values), max(values)
    return f"{low:.1f}×" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}–{high:.1f}×"


if __name__ == "__main__":
    main()
