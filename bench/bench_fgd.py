"""FGD experiment speed: one run per policy of the full openb ``default`` pod list on the 1,213 GPU nodes,
inflated to 130 % of GPU capacity (about 10,800 arrivals), single process.

Target: FGD under 20 s on a 2-core machine. Prints wall time, arrivals per second and the unallocated GPU %
at 100 % arrived per policy (needs the trace: shared/traces/alibaba-gpu-v2023 above the working folder,
$FLEETLAB_OPENB_DIR or --trace-dir).

Run: .venv/bin/python bench/bench_fgd.py [--trace-dir DIR] [--variant default] [--seed 42] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from fleetlab.experiment.fgd import run_policy, workload_target
from fleetlab.placement.share_policies import known_policies
from fleetlab.spec.openb_share import load_share_nodes, load_share_pods
from fleetlab.spec.openb_variants import NODE_FILE, pod_list_path, trace_dir_or_error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace-dir", type=Path, default=None)
    parser.add_argument("--variant", default="default")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=1, help="runs per policy; the fastest is reported")
    parser.add_argument("--policy", action="append", default=None)
    args = parser.parse_args()
    folder = trace_dir_or_error(args.trace_dir)
    started = time.perf_counter()
    nodes = load_share_nodes(folder / NODE_FILE)
    pods = load_share_pods(pod_list_path(folder, args.variant), nodes.models)
    target = workload_target(pods)
    print(
        f"openb {args.variant}: {len(nodes.names)} nodes, {int(nodes.gpus.sum())} GPUs, {len(pods)} pods, "
        f"{len(target)} typical pod specs; load {time.perf_counter() - started:.2f} s; "
        f"{os.cpu_count()} CPUs visible, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'policy':<11} {'wall s':>7} {'arrivals/s':>11} {'failed':>7} {'unalloc@100%':>13}")
    for policy in args.policy or known_policies():
        best = None
        for _ in range(args.repeat):
            run = run_policy(nodes, pods, policy, args.seed, args.variant, target)
            best = run if best is None or run.wall_s < best.wall_s else best
        assert best is not None
        unalloc = best.by_percent()[0][100]
        rate = len(best.arrived_milli) / best.wall_s
        print(f"{policy:<11} {best.wall_s:>7.2f} {rate:>11.0f} {best.failed:>7} {unalloc:>12.2f}%")


if __name__ == "__main__":
    main()
