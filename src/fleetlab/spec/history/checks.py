"""Sanity checks every history must pass before it is measured or replayed: times finite, not negative,
in lifecycle order, inside the record; counts and shares in range. One SpecError lists the first few."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fleetlab.model.history import History
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.job_columns import has_repeats

#: Problems listed before the check gives up.
MAX_LISTED = 8
#: The lifecycle order a job's times must keep (each pair checked where both are present).
ORDER = ("submit_s", "admitted_s", "scheduled_s", "running_s", "end_s")


def _floats(table: pa.Table, name: str) -> np.ndarray:
    return np.asarray(table.column(name).cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)


def _number(value: float) -> pa.Scalar:
    return pa.scalar(float(value), pa.float64())


def _bad(values: Any) -> Any:
    """Not a finite number: NaN, an infinity, or null (a required value that is missing)."""
    return pc.fill_null(pc.invert(pc.is_finite(values)), True)


def history_problems(history: History) -> list[str]:
    """Every kind of bad row, each with the first job id and value (empty when the history is sound).
    Computed with Arrow on the columns as they are (bitmaps, no copies), so a million jobs cost little."""
    jobs = history.jobs
    ids = jobs.column("job_id")
    out: list[str] = []
    if not np.isfinite(history.end_s) or history.end_s < 0:
        out.append(f"end_s {history.end_s!r}: must be a finite number >= 0")
        return out

    def report(mask: Any, what: str, values: Any) -> None:
        mask = pc.fill_null(mask, False)
        count = pc.sum(mask).as_py() or 0
        if count:
            i = pc.index(mask, pa.scalar(True)).as_py()
            value = values[i].as_py()
            value = float("nan") if value is None and pa.types.is_floating(values.type) else value
            out.append(f"{count} job(s) {what}, e.g. job {ids[i].as_py()!r} (value {value!r})")

    if has_repeats(ids):
        counts = pc.value_counts(ids).to_pylist()
        repeated = next(item["values"] for item in counts if item["counts"] > 1)
        out.append(f"job {repeated!r} appears more than once; every job is one row (counted twice, it would "
                   "count its GPU-hours twice)")  # fmt: skip
    times = {name: jobs.column(name).cast(pa.float64()) for name in ORDER}
    end = _number(history.end_s + 1e-6)
    for name, values in times.items():
        present = pc.is_valid(values) if name != "submit_s" else pa.scalar(True)
        report(pc.and_(present, _bad(values)), f"have a {name} that is not a finite number", values)
        report(pc.less(values, _number(0)), f"have a negative {name}", values)
        report(pc.greater(values, end), f"have a {name} after the record's end_s", values)
    for a in range(len(ORDER)):
        for b in range(a + 1, len(ORDER)):
            x, y = times[ORDER[a]], times[ORDER[b]]
            early = pc.less(y, pc.subtract(x, _number(1e-6)))  # null unless both are present
            report(early, f"have {ORDER[b]} before {ORDER[a]} (the clock goes backwards)", y)
    state = jobs.column("state")

    def state_in(*names: str) -> Any:
        return pc.is_in(state, value_set=pa.array(names))

    scheduled = times["scheduled_s"]
    report(
        pc.and_(state_in("pending"), pc.is_valid(scheduled)), "are pending yet have a scheduled_s", scheduled
    )
    run = jobs.column("run_s")
    # A job that started and ended with no recorded end keeps its measured wait (its compute is unknown);
    # one with neither a start, an end nor a run time has nothing measured at all.
    no_end = pc.and_(pc.and_(pc.is_null(times["end_s"]), pc.is_null(run)), pc.is_null(scheduled))
    report(pc.and_(state_in("completed", "failed"), no_end), "have ended without an end_s or a run_s", state)
    report(pc.and_(pc.is_valid(run), pc.or_(pc.less(run, _number(0)), _bad(run))),
           "have a run_s that is not a number >= 0", run)  # fmt: skip
    still_open = pc.and_(state_in("running", "pending"), pc.is_valid(times["end_s"]))
    report(still_open, "are still open yet have an end_s", state)
    pods = jobs.column("pods").cast(pa.float64())
    report(pc.fill_null(pc.less(pods, _number(1)), True), "have pods < 1", pods)
    for name in ("gpus_per_pod", "cpu_per_pod", "memory_per_pod", "restarts", "evictions"):
        values = jobs.column(name).cast(pa.float64())
        report(pc.or_(_bad(values), pc.fill_null(pc.less(values, _number(0)), False)),
               f"have a {name} that is not a number >= 0", values)  # fmt: skip
    util = jobs.column("gpu_util_mean")
    report(
        pc.or_(pc.less(util, _number(0)), pc.greater(util, _number(1))),
        "have a gpu_util_mean outside 0..1",
        util,
    )
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
