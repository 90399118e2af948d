"""Tables as DataFrames on request, and the time-weighted mean a timeline column needs.

fleetlab's tables are Arrow tables; pandas and polars are optional (``pip install 'fleetlab[dataframes]'``)
and imported only when a frame is asked for, with a message naming the install when one is missing.

A timeline (``timeline.parquet``, the experiment store's ``timeline`` view) holds one row per *change
point*: a row's value holds from its ``t_s`` until the next row's. Its plain average weights a burst of
short steps as much as hours of steady state, so it is wrong for any question about "how many on average":
:func:`time_weighted` weights each value by how long it held. For example, rows at 0 s, 10 s and 100 s with
8, 0 and 4 allocated GPUs over a 200-second run average (8 + 0 + 4) / 3 = 4 rows-wise, but the cluster held
(8 × 10 + 0 × 90 + 4 × 100) / 200 = 2.4 GPUs on average.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["Frame", "MissingDependency", "time_weighted", "to_frame"]

#: A pandas or polars DataFrame, or an Arrow table (``library="arrow"``).
Frame = Any
LIBRARIES = ("pandas", "polars", "arrow")


class MissingDependency(ImportError):
    """An optional library a frame needs is not installed; the message says what to install."""


def _module(name: str) -> Any:
    try:
        return import_module(name)
    except ImportError:
        raise MissingDependency(
            f"{name} is not installed: pip install 'fleetlab[dataframes]' (pandas and polars), or "
            f"pip install {name}; library='arrow' gives the Arrow table without either"
        ) from None


def to_frame(table: pa.Table, library: str = "pandas") -> Frame:
    """An Arrow table as a pandas or polars DataFrame (imported only now), or the table itself."""
    if library not in LIBRARIES:
        raise ValueError(f"library {library!r}: one of {', '.join(LIBRARIES)}")
    if library == "arrow":
        return table
    if library == "polars":
        return _module("polars").from_arrow(table)
    _module("pandas")
    return table.to_pandas()


def _column(frame: Any, name: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    """A column of an Arrow table, a pandas or a polars DataFrame as float64."""
    if isinstance(frame, pa.Table):
        values: Any = frame.column(name).to_numpy(zero_copy_only=False)
    else:
        values = frame[name]
        values = values.to_numpy() if hasattr(values, "to_numpy") else values
    return np.asarray(values, dtype=np.float64)


def time_weighted(timeline: Any, column: str, end_s: float | None = None, time_column: str = "t_s") -> float:
    """The time-weighted mean of a change-point column: each row's value weighted by how long it held
    (until the next row, the last one until ``end_s``), over [first row, ``end_s``].

    ``timeline`` is an Arrow table, a pandas or polars DataFrame (one run's rows, in time order), or a
    :class:`fleetlab.api.Result` (its timeline, ending where the run ended). ``end_s`` defaults to the run's
    end for a Result and to the last row's time otherwise (the last value then weighs nothing)."""
    if hasattr(timeline, "timeline") and hasattr(timeline, "end_s"):
        end_s = timeline.end_s if end_s is None else end_s
        timeline = timeline.timeline
    t = _column(timeline, time_column)
    values = _column(timeline, column)
    if len(t) == 0:
        raise ValueError(f"{column}: the timeline has no rows")
    if np.any(np.diff(t) < 0):
        raise ValueError(f"{time_column} is not in time order: give one run's rows, sorted by {time_column}")
    end = float(t[-1]) if end_s is None else float(end_s)
    if end < t[-1]:
        raise ValueError(f"end_s {end:g} is before the last row ({float(t[-1]):g} s)")
    widths = np.diff(np.append(t, end))
    span = end - float(t[0])
    if span <= 0:
        return float(values[-1])
    return float(np.dot(widths, values) / span)


def records_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Plain dict rows (summaries, baseline groups) as an Arrow table, columns in first-seen order."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    return pa.table({name: [row.get(name) for row in rows] for name in names})
