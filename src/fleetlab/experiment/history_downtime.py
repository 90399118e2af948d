"""What a history recorded of its nodes and jobs beyond their shapes and times, for the replay
(docs/calibration.md, "Down windows, wall times, withdrawals").

* A recorded ``down`` window of a node of a fixed pool becomes a ``failures.trace`` event of that pool:
  the node fails at the window's start (its pods are evicted) and is repaired at its end (or the record's
  end). Windows of every node (``node`` null) fail each node.
* The rest goes to the scenario's ``recorded`` section, which the simulator applies: each job's requested
  wall time (EASY backfill plans with it), the instant a user withdrew a job that never started (it leaves
  the queue then, cancelled), drain windows (cordons) and the down windows of autoscaled nodes (one node
  of their pool, cordoned and evicted). Windows of nodes the replay does not have are left out.
"""

from __future__ import annotations

import math

from fleetlab.model.calibration_record import RecordedBehaviour, RecordedWindow
from fleetlab.model.history import History
from fleetlab.model.lifecycle import FailureEvent

#: The simulator's clock is in milliseconds: a repair shorter than this is dropped.
MIN_REPAIR_S = 0.001


def down_windows(history: History) -> list[tuple[str | None, float, float, str]]:
    """(node or None, start, end, state) of every recorded window, open ends at the record's end."""
    t = history.node_down
    end = float(history.end_s)
    return [
        (None if n is None else str(n), float(a), end if b is None else float(b), str(s))
        for n, a, b, s in zip(
            t.column("node").to_pylist(), t.column("start_s").to_pylist(), t.column("end_s").to_pylist(),
            t.column("state").to_pylist(), strict=True,
        )
    ]  # fmt: skip


def failure_events(
    history: History, pool_nodes: list[str], pool_name: str
) -> tuple[tuple[FailureEvent, ...], set[int]]:
    """The ``down`` windows of the history nodes ``pool_nodes`` (in the pool's node order) as the pool's
    failure trace, and the indexes of the windows used."""
    index = {name: i for i, name in enumerate(pool_nodes)}
    events: list[FailureEvent] = []
    used: set[int] = set()
    for k, (node, start, stop, state) in enumerate(down_windows(history)):
        if state != "down" or stop - start < MIN_REPAIR_S:
            continue
        targets = range(len(pool_nodes)) if node is None else [index[node]] if node in index else []
        for i in targets:
            events.append(FailureEvent(node=f"{pool_name}-{i}", at_s=start, repair_s=stop - start))
            used.add(k)
    events.sort(key=lambda e: (e.at_s, e.node))
    return tuple(events), used


def recorded_behaviour(
    history: History,
    replayed_windows: set[int],
    replay_names: dict[str, str] | None = None,
    autoscaled: dict[str, str] | None = None,
) -> RecordedBehaviour | None:
    """The ``recorded`` section (see the module docstring); None when there is nothing to record. A window
    names its node as the replay does (``replay_names``: history name -> ``POOL-INDEX``), or the pool of an
    autoscaled node (``autoscaled``: history name -> pool); a window of any other node is left out."""
    names = replay_names or {}
    pools = autoscaled or {}
    jobs = history.jobs
    ids = jobs.column("job_id").to_pylist()
    walltime = jobs.column("walltime_s").to_pylist()
    state = jobs.column("state").to_pylist()
    scheduled = jobs.column("scheduled_s").to_pylist()
    ends = jobs.column("end_s").to_pylist()
    walltimes = {
        str(i): float(w) for i, w in zip(ids, walltime, strict=True) if w is not None and math.isfinite(w)
    }
    withdrawn = {
        str(i): float(e)
        for i, s, sc, e in zip(ids, state, scheduled, ends, strict=True)
        if s == "cancelled" and sc is None and e is not None
    }
    windows = tuple(
        RecordedWindow.model_validate(
            {
                "node": names.get(node) if node is not None else None,
                "pool": pools.get(node) if node is not None else None,
                "start_s": start,
                "end_s": None if stop >= history.end_s else stop,
                "state": kind,
            }
        )
        for k, (node, start, stop, kind) in enumerate(down_windows(history))
        if k not in replayed_windows and (node is None or node in names or node in pools)
    )
    if not walltimes and not withdrawn and not windows:
        return None
    return RecordedBehaviour(walltime_s=walltimes, withdraw_s=withdrawn, windows=windows)
