"""Kueue admission alone: the admission manager's calls of a benchmark run, recorded and replayed.

A run of a ``bench/workloads.py`` workload through Kueue records every call the simulator makes on its
admission manager (submit, cycle, take_preemptions, finish, evict, tracks) with what it returned, and
every 997th call the manager's pending messages. The calls are then replayed ``--repeat`` times against a
fresh manager built from the same configuration: the CPU seconds of a replay are the admission cycles'
own cost, without the simulator around them (far less noisy than the whole run on a shared machine), and
every answer must be the one recorded (admissions, preemption requests, pending messages), so a replay is
also an exactness check of a change against the run it was recorded in.

Run: .venv/bin/python bench/bench_admission_replay.py --jobs 20000 --gpus 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fleetlab.admission.manager import AdmissionManager
from fleetlab.admission.preemption import ClassicPreemption
from fleetlab.experiment.run import run_one
from workloads import resolve_workload

#: The manager's methods the simulator calls, and whether what they return is compared on replay.
CALLS = {
    "submit": False,
    "cycle": True,
    "finish": False,
    "evict": False,
    "take_preemptions": True,
    "tracks": True,
}
PENDING_EVERY = 997

Call = tuple[str, tuple[Any, ...], dict[str, Any], Any]


@contextmanager
def recording(log: list[Call], configs: list[Any]) -> Iterator[None]:
    """Record the calls on every AdmissionManager built meanwhile (classic preemption only)."""
    saved: dict[str, Callable[..., Any]] = {
        name: getattr(AdmissionManager, name) for name in (*CALLS, "__init__")
    }

    def init(self: AdmissionManager, config: Any, *args: Any, **kwargs: Any) -> None:
        saved["__init__"](self, config, *args, **kwargs)
        if self.fair_sharing is not None or not isinstance(self._preemption, ClassicPreemption):
            raise SystemExit("bench_admission_replay: only classic preemption without fair sharing")
        configs.append(config)

    def wrapper(name: str) -> Callable[..., Any]:
        def call(self: AdmissionManager, *args: Any, **kwargs: Any) -> Any:
            out = saved[name](self, *args, **kwargs)
            log.append((name, args, kwargs, out if CALLS[name] else None))
            if name == "cycle" and len(log) % PENDING_EVERY == 0:
                log.append(("pending", (), {}, self.pending()))
            return out

        return call

    AdmissionManager.__init__ = init
    for name in CALLS:
        setattr(AdmissionManager, name, wrapper(name))
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(AdmissionManager, name, method)


def replay(config: Any, log: list[Call]) -> tuple[float, int]:
    """CPU seconds of one replay against a fresh manager, and how many answers differed."""
    manager = AdmissionManager(config, preemption=ClassicPreemption())
    gc.collect()
    start = time.process_time()
    differ = 0
    for name, args, kwargs, out in log:
        got = getattr(manager, name)(*args, **kwargs)
        if out is not None and got != out:
            differ += 1
    return time.process_time() - start, differ


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workload", default="kueue", choices=["kueue"])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--gpus", type=int, default=1_000)
    parser.add_argument("--shapes", type=int, default=16, help="pod shapes (4..64)")
    parser.add_argument("--repeat", type=int, default=3, help="replays; the best is reported")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    args = parser.parse_args()
    resolved = resolve_workload(args.workload, args.jobs, args.gpus, shapes=args.shapes)
    log: list[Call] = []
    configs: list[Any] = []
    start = time.process_time()
    with recording(log, configs):
        run_one(resolved)
    run_cpu = time.process_time() - start
    if len(configs) != 1:
        raise SystemExit(
            f"bench_admission_replay: expected one admission manager, the run built {len(configs)}"
        )
    runs = [replay(configs[0], log) for _ in range(args.repeat)]
    best = min(cpu for cpu, _ in runs)
    out = {
        "workload": args.workload,
        "jobs": args.jobs,
        "gpus": args.gpus,
        "calls": len(log),
        "run_cpu_s": round(run_cpu, 2),
        "replay_cpu_s": [round(cpu, 3) for cpu, _ in runs],
        "best_replay_cpu_s": round(best, 3),
        "differ": max(d for _, d in runs),
    }
    if args.json:
        print(json.dumps(out))
        return
    print(
        f"{args.workload} {args.jobs:,} jobs on {args.gpus:,} GPUs: {len(log):,} calls recorded "
        f"(run {run_cpu:.2f} CPU s, recording included); admission replayed {args.repeat}×: "
        f"{', '.join(f'{cpu:.2f}' for cpu, _ in runs)} CPU s (best {best:.2f}); answers that differ: {out['differ']}"
    )
    if out["differ"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
