"""Split a history at an instant for out-of-sample calibration (docs/calibration.md, "Fit, then validate").

``--fit-until`` is an instant (seconds from the history's epoch, or an RFC 3339 time) or a fraction of
the submissions (default 2/3: the submit time of the first job after the earlier two thirds). The *fit
part* is what the record showed at that instant: the jobs submitted before it, with every time after it
unknown (a job that had not started is pending, one that had not ended is running) and the record ending
there; knobs and inferred policy come from it alone. The *later part* is the jobs submitted at or after
it, judged by replaying the whole history with what was fitted.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fleetlab.model.history import History
from fleetlab.spec.errors import SpecError

#: The share of submissions fitted on when --fit-until is not given.
DEFAULT_FIT_SHARE = 2.0 / 3.0


def split_instant(history: History, fit_until: str | float | None) -> float:
    """The instant (seconds from the epoch) the fit part ends: a number in (0, 1] is a share of the
    submissions, a larger number seconds, text an RFC 3339 time; the end of the record fits on all."""
    submits = np.sort(history.jobs.column("submit_s").to_numpy(zero_copy_only=False).astype(np.float64))
    end = float(history.end_s)
    if fit_until is None:
        fit_until = DEFAULT_FIT_SHARE
    value: float
    if isinstance(fit_until, str):
        try:
            value = float(fit_until)
        except ValueError:
            value = _instant(fit_until, history)
        else:
            fit_until = value
    if isinstance(fit_until, int | float):
        value = float(fit_until)
        if not math.isfinite(value) or value <= 0:
            raise SpecError("--fit-until", [f"{fit_until!r}: give a share in (0, 1] or seconds > 1"])
        if value <= 1.0:
            if value >= 1.0 or not len(submits):
                return end
            index = min(max(math.ceil(value * len(submits)), 1), len(submits) - 1)
            if submits[index] <= submits[0]:  # jobs before the split must exist: the next later instant
                later = submits[submits > submits[0]]
                return float(later[0]) if len(later) else end
            return float(submits[index])
    return min(max(value, 0.0), end)


def _instant(text: str, history: History) -> float:
    try:
        moment = datetime.fromisoformat(text)
        epoch = datetime.fromisoformat(history.epoch)
    except ValueError:
        raise SpecError(
            "--fit-until",
            [f"{text!r}: give a share of the submissions (0.67), seconds from the history's start, or an "
             "RFC 3339 time such as 2024-05-01T00:00:00Z"],
        ) from None  # fmt: skip
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=epoch.tzinfo)
    return (moment - epoch).total_seconds()


def _nulled(table: pa.Table, name: str, mask: pa.Array) -> pa.Table:
    """``name`` with the cells where ``mask`` is true set to null."""
    column = table.column(name)
    index = table.schema.get_field_index(name)
    return table.set_column(
        index, table.schema.field(name), pc.if_else(mask, pa.nulls(len(column), column.type), column)
    )


def history_until(history: History, instant: float) -> History:
    """What the record showed at ``instant``: jobs submitted before it, later times unknown, nodes created
    before it, down windows clipped to it; the record ends there."""
    jobs = history.jobs.filter(pc.less(history.jobs.column("submit_s"), instant))
    after = {name: pc.fill_null(pc.greater(jobs.column(name), instant), False)
             for name in ("admitted_s", "scheduled_s", "running_s", "end_s")}  # fmt: skip
    not_started = after["scheduled_s"]
    not_ended = pc.or_(after["end_s"], not_started)
    state = jobs.column("state")
    started_at_all = pc.invert(pc.is_null(jobs.column("scheduled_s")))
    cancelled_later = pc.and_(pc.equal(state, "cancelled"), pc.invert(started_at_all))
    cancelled_later = pc.and_(cancelled_later, after["end_s"])
    new_state = pc.if_else(
        pc.or_(not_started, cancelled_later), "pending", pc.if_else(not_ended, "running", state)
    )
    for name in ("admitted_s", "scheduled_s", "running_s"):
        jobs = _nulled(jobs, name, after[name])
    jobs = _nulled(jobs, "end_s", pc.or_(not_ended, cancelled_later))
    jobs = _nulled(jobs, "run_s", pc.or_(not_ended, cancelled_later))
    jobs = _nulled(jobs, "end_reason", pc.or_(not_ended, cancelled_later))
    jobs = jobs.set_column(jobs.schema.get_field_index("state"), jobs.schema.field("state"), new_state)
    nodes = history.nodes.filter(pc.fill_null(pc.less(history.nodes.column("created_s"), instant), True))
    nodes = _nulled(nodes, "deleted_s", pc.fill_null(pc.greater(nodes.column("deleted_s"), instant), False))
    down = history.node_down.filter(pc.less(history.node_down.column("start_s"), instant))
    down = _nulled(down, "end_s", pc.fill_null(pc.greater(down.column("end_s"), instant), True))
    return replace(history, jobs=jobs, nodes=nodes, node_down=down, end_s=float(instant))
