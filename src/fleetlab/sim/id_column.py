"""The result's job ids as one Arrow string array, read as a sequence of ``str``.

A run's job table is the workload's own ids in scenario order: a list of Python strings held about 75 bytes
a job beside the Arrow array the workload already holds (a million jobs: about 70 MiB of the run's peak).
The column keeps that array and makes a ``str`` only where one is read; iterating converts a block of rows
at a time, so a writer that walks every id holds one block of strings beside the array, not a list of all.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import index
from typing import Any, overload

import numpy as np
import pyarrow as pa

#: Rows converted to Python strings at once while iterating.
BLOCK_ROWS = 65_536


class IdColumn(Sequence[str]):
    """Job ids (Arrow strings) as a read-only sequence of ``str``; equal to any sequence of the same ids."""

    __slots__ = ("array",)

    def __init__(self, ids: pa.Array | Sequence[str]) -> None:
        self.array: pa.Array = ids if isinstance(ids, pa.Array) else pa.array(list(ids), pa.large_string())

    def __len__(self) -> int:
        return len(self.array)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> IdColumn: ...

    def __getitem__(self, i: Any) -> Any:
        """One id for an integer; a column for a slice, a boolean mask or an array of positions."""
        if isinstance(i, slice):
            return IdColumn(self.array[i])
        if isinstance(i, np.ndarray):
            if i.dtype == bool:
                return IdColumn(self.array.filter(pa.array(i)))
            return IdColumn(self.array.take(pa.array(np.asarray(i, dtype=np.int64))))
        at = index(i)
        if not -len(self.array) <= at < len(self.array):
            raise IndexError(f"job id index {at} out of range for {len(self.array)} jobs")
        value: str = self.array[at].as_py()
        return value

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self.array), BLOCK_ROWS):
            yield from self.array.slice(start, BLOCK_ROWS).to_pylist()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdColumn):
            return self.array.equals(other.array) or list(self) == list(other)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking sequences are unhashable, as lists are

    def __repr__(self) -> str:
        return f"IdColumn({len(self)} ids)"
