"""Sanity checks every history must pass before it is measured or replayed: times finite, not negative,
in lifecycle order, inside the record; counts and shares in range. One SpecError lists the first few."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fleetlab.model.history import History
from fleetlab.spec.errors import SpecError

#: Problems listed before the check gives up.
MAX_LISTED = 8
#: The lifecycle order a job's times must keep (each pair checked where both are present).
ORDER = ("submit_s", "admitted_s", "scheduled_s", "running_s", "end_s")


def _floats(table: pa.Table, name: str) -> np.ndarray:
    return np.asarray(table.column(name).cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def history_problems(history: History) -> list[str]:
    """Every kind of bad row, each with the first job id and value (empty when the history is sound)."""
    jobs = history.jobs
    ids = jobs.column("job_id").to_pylist()
    out: list[str] = []
    if not np.isfinite(history.end_s) or history.end_s < 0:
        out.append(f"end_s {history.end_s!r}: must be a finite number >= 0")
        return out

    def report(mask: np.ndarray, what: str, values: np.ndarray) -> None:
        bad = np.nonzero(mask)[0]
        if len(bad):
            i = int(bad[0])
            out.append(f"{len(bad)} job(s) {what}, e.g. job {ids[i]!r} (value {values[i]!r})")

    times = {name: _floats(jobs, name) for name in ORDER}
    for name, values in times.items():
        present = ~np.isnan(values) if name != "submit_s" else np.ones(len(values), dtype=bool)
        report(present & ~np.isfinite(values), f"have a {name} that is not a finite number", values)
        report(present & (values < 0), f"have a negative {name}", values)
        report(present & (values > history.end_s + 1e-6), f"have a {name} after the record's end_s", values)
    for a in range(len(ORDER)):
        for b in range(a + 1, len(ORDER)):
            x, y = times[ORDER[a]], times[ORDER[b]]
            both = ~np.isnan(x) & ~np.isnan(y)
            report(both & (y < x - 1e-6), f"have {ORDER[b]} before {ORDER[a]} (the clock goes backwards)", y)
    state = np.asarray(jobs.column("state").to_pylist(), dtype=object)
    started = ~np.isnan(times["scheduled_s"])
    report((state == "pending") & started, "are pending yet have a scheduled_s", times["scheduled_s"])
    run = _floats(jobs, "run_s")
    ended = np.isin(state, ["completed", "failed"])
    # A job that started and ended with no recorded end keeps its measured wait (its compute is unknown);
    # one with neither a start, an end nor a run time has nothing measured at all.
    report(
        ended & np.isnan(times["end_s"]) & np.isnan(run) & ~started,
        "have ended without an end_s or a run_s",
        state,
    )
    report(~np.isnan(run) & ((run < 0) | ~np.isfinite(run)), "have a run_s that is not a number >= 0", run)
    report(
        np.isin(state, ["running", "pending"]) & ~np.isnan(times["end_s"]),
        "are still open yet have an end_s",
        state,
    )
    pods = _floats(jobs, "pods")
    report(pods < 1, "have pods < 1", pods)
    for name in ("gpus_per_pod", "cpu_per_pod", "memory_per_pod", "restarts", "evictions"):
        values = _floats(jobs, name)
        report(~np.isfinite(values) | (values < 0), f"have a {name} that is not a number >= 0", values)
    util = _floats(jobs, "gpu_util_mean")
    report(~np.isnan(util) & ((util < 0) | (util > 1)), "have a gpu_util_mean outside 0..1", util)
    nodes = history.nodes
    if nodes.num_rows:
        names = nodes.column("node").to_pylist()
        if len(set(names)) != len(names):
            out.append("the node list names a node more than once")
        for name in ("gpus", "cpu", "memory"):
            values = _floats(nodes, name)
            if np.any(~np.isfinite(values) | (values < 0)):
                out.append(f"node column {name}: every value must be a number >= 0")
    down = history.node_down
    if down.num_rows:
        start, stop = _floats(down, "start_s"), _floats(down, "end_s")
        if np.any(~np.isfinite(start) | (start < 0) | (start > history.end_s + 1e-6)):
            out.append("node_down start_s: every value must be a finite number within 0..end_s")
        if np.any(~np.isnan(stop) & (~np.isfinite(stop) | (stop < start) | (stop > history.end_s + 1e-6))):
            out.append("node_down end_s: every value must lie within start_s..end_s (null: to the end)")
    bill = history.bill
    for name in ("billed_cost", "effective_cost", "charge_start_s", "charge_end_s"):
        values = _floats(bill, name)
        if np.any(~np.isfinite(values)):
            out.append(f"bill column {name}: every value must be a finite number")
    return out


def check_history(history: History, source: str) -> History:
    """The history itself, or a SpecError listing what is wrong with it."""
    problems = history_problems(history)
    if problems:
        shown = problems[:MAX_LISTED]
        if len(problems) > MAX_LISTED:
            shown.append(f"{len(problems) - MAX_LISTED} more kind(s) of problem not listed")
        raise SpecError(source, shown)
    return history
