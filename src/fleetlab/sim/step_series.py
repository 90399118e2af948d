"""A step function recorded over a run: ``(t_ms, *values)`` rows in one flat int64 buffer.

The simulator samples the cluster after every step but keeps a row only when the values changed, and a
later sample at the same ``t_ms`` replaces the earlier one (a step at the same instant). The last row is
held apart until the next change (it may still be replaced), so appending costs one buffer extend and a
row costs 8 bytes a column instead of a tuple of Python ints (about five times less). A row goes into the
buffer packed by one ``struct`` call: ``array.extend`` converts item by item through ``PyArg_Parse``,
several times slower per row. At the end of a run ``close`` hands the buffer itself over as the rows (a
copy of every row beside the buffer was part of the run's peak of memory).
"""

from __future__ import annotations

from array import array
from struct import Struct

import numpy as np
from numpy.typing import NDArray


class StepSeries:
    """Rows of ``width`` integers: the time, then ``width - 1`` values."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._flat: array[int] = array("q")
        self._pack = Struct(f"{width}q").pack  # native int64, as the array's items
        self._t = 0
        self._values: tuple[int, ...] | None = None

    def record(self, now: int, values: tuple[int, ...]) -> None:
        """The values at ``now``: kept if they differ from the last row's, replacing it at the same time."""
        last = self._values
        if last is not None:
            if values == last:
                return
            if self._t != now:
                self._flat.frombytes(self._pack(self._t, *last))
        elif len(values) != self.width - 1:
            raise ValueError(f"a row of {len(values)} values in a series of {self.width - 1}")
        self._t = now
        self._values = values

    def __len__(self) -> int:
        return len(self._flat) // self.width + (self._values is not None)

    def __bool__(self) -> bool:
        return self._values is not None

    def last(self) -> tuple[int, ...]:
        """The last row, ``(t_ms, *values)``."""
        if self._values is None:
            raise IndexError("no row recorded yet")
        return (self._t, *self._values)

    def rows(self) -> NDArray[np.int64]:
        """Every row as an (n, width) int64 array (a copy)."""
        out = np.empty((len(self), self.width), dtype=np.int64)
        done = len(self._flat) // self.width
        if done:
            out[:done] = np.frombuffer(self._flat, dtype=np.int64).reshape(done, self.width)
        if self._values is not None:
            out[done, 0] = self._t
            out[done, 1:] = self._values
        return out

    def close(self) -> NDArray[np.int64]:
        """Every row as an (n, width) int64 array that is the series' own buffer, not a copy, for the end of
        a run: the series is left empty. Its transpose gives the columns as strided views (``close().T[k]``
        is column k)."""
        if self._values is not None:
            self._flat.frombytes(self._pack(self._t, *self._values))
            self._values = None
        rows = np.frombuffer(self._flat, dtype=np.int64).reshape(-1, self.width)
        self._flat = array("q")  # the rows own the buffer now; the series holds none of it
        return rows

    def columns(self) -> NDArray[np.int64]:
        """Every column as a (width, n) int64 array: ``columns()[k]`` is column k, contiguous, so result
        tables can hold the columns as views of one block instead of a copy each."""
        out = np.empty((self.width, len(self)), dtype=np.int64)
        done = len(self._flat) // self.width
        if done:
            out[:, :done] = np.frombuffer(self._flat, dtype=np.int64).reshape(done, self.width).T
        if self._values is not None:
            out[0, done] = self._t
            out[1:, done] = self._values
        return out
