"""Flat memoryviews of numpy arrays, for one-element reads and writes on the simulator's hot paths.

Indexing a memoryview gives a Python int or float, about twice as fast as a numpy scalar and with no
``int()`` to follow, and a write goes straight into the array, which stays the storage that vector code
reads. A view is valid only while its array is not replaced; an array with a view cannot be resized.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray


def int_elements(array: NDArray[np.int64]) -> memoryview[int]:
    """A writable 1-D view of a C-contiguous int64 array's elements in row-major order (element
    ``row * width + column`` of a 2-D array)."""
    if array.dtype != np.int64:
        raise TypeError(f"int_elements wants an int64 array, not {array.dtype}")
    return array.reshape(-1).data.cast("B").cast("q")  # 1-D first: a view of no rows cannot be cast


def int64_elements(column: NDArray[np.integer[Any]]) -> memoryview[int]:
    """An element view of any 1-D integer column as int64: the column's own storage where it is a
    C-contiguous int64 array, else a converted copy (8 bytes an element, no int object per element)."""
    return int_elements(np.ascontiguousarray(column, dtype=np.int64))


def float_elements(array: NDArray[np.float64]) -> memoryview[float]:
    """A writable 1-D view of a C-contiguous float64 array's elements in row-major order."""
    if array.dtype != np.float64:
        raise TypeError(f"float_elements wants a float64 array, not {array.dtype}")
    return array.reshape(-1).data.cast("B").cast("d")
