"""Integer step functions kept as their changes: per row only the columns whose value differs from the
row before.

A Kueue run samples every quota-tree node's usage after each admission, release and eviction (about 1.7
samples a job, 30 values a sample in the cohort benchmark), yet a sample changes a handful of them (6.5
on average there). Holding every value cost about 400 B a job while the run went on, and the result's
usage and lent matrices as much again at its end; the changes alone are about 12 B each.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from itertools import compress
from operator import ne
from typing import Any

import numpy as np
from numpy.typing import NDArray

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class StepColumns:
    """``rows`` values per column, each column kept as the rows where it changes and its value from there
    on (0 before its first change)."""

    rows: int
    #: Per column: the rows where its value changes (ascending) and the value from each of them on.
    changes: list[tuple[NDArray[np.integer[Any]], IntArray]]

    def column(self, k: int) -> IntArray:
        """Column ``k`` written out, one value per row."""
        at, values = self.changes[k]
        index = np.zeros(self.rows, dtype=np.int64)
        index[at] = np.arange(1, len(at) + 1)
        np.maximum.accumulate(index, out=index)
        return np.concatenate((np.zeros(1, dtype=np.int64), values))[index]

    def matrix(self) -> IntArray:
        """Every column written out: (rows × columns). For small runs and checks; a report reads columns."""
        out = np.zeros((self.rows, len(self.changes)), dtype=np.int64)
        for k in range(len(self.changes)):
            out[:, k] = self.column(k)
        return out


def _row_dtype(rows: int) -> type[np.integer[Any]]:
    """Row numbers in 4 bytes where they fit."""
    return np.int32 if rows < 2**31 else np.int64


def changes_of(values: IntArray, rows: int) -> tuple[NDArray[np.integer[Any]], IntArray]:
    """A written-out column of ``rows`` values as (rows where it changes, value from each on)."""
    at = np.flatnonzero(np.diff(values, prepend=0))
    return at.astype(_row_dtype(rows)), np.asarray(values[at], dtype=np.int64)


class ChangeLog:
    """Rows of ``width`` integers, recorded one row at a time as the (column, value) pairs that differ from
    the row before (the row before the first is all zeros). A row recorded at the same time as the last
    replaces it, as a step function's later change at one instant does."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.times = array("q")
        self._ends = array("q")  # per row, where its changes end in _columns / _values
        self._columns = array("i")
        self._values = array("q")
        self._last = [0] * width
        self._before_last = [0] * width
        self._numbers = range(width)

    def record(self, now: int, row: list[int]) -> None:
        """Append ``row`` at ``now``, or replace the last row when it was recorded at ``now`` too."""
        if self.times and self.times[-1] == now:
            base = self._before_last
            start = self._ends[-2] if len(self._ends) > 1 else 0
            del self._columns[start:]
            del self._values[start:]
            self._ends.pop()
        else:
            base = self._before_last = self._last
            self.times.append(now)
        differs = list(map(ne, row, base))
        self._columns.extend(compress(self._numbers, differs))
        self._values.extend(compress(row, differs))
        self._ends.append(len(self._columns))
        self._last = row

    def steps(self) -> StepColumns:
        """Every column as a step column (the log itself is left as it is)."""
        rows = len(self.times)
        ends = np.frombuffer(self._ends, dtype=np.int64)
        columns = np.frombuffer(self._columns, dtype=np.int32)
        values = np.frombuffer(self._values, dtype=np.int64)
        dtype = _row_dtype(rows)
        changes = []
        for k in range(self.width):
            where = np.flatnonzero(columns == k)
            at = np.searchsorted(ends, where, side="right").astype(dtype)
            changes.append((at, values[where]))
        del ends, columns, values  # the views: the arrays can grow again once none is left
        return StepColumns(rows, changes)
