"""Arrow arrays from numpy columns and Python strings, without pyarrow's pandas check.

``pa.array``, ``Array.to_numpy`` and ``np.asarray(array)`` ask pyarrow's pandas shim whether pandas is
installed, and the first ask imports pandas: 0.1-0.2 s of every process that runs a scenario, wherever
pandas happens to be installed (apache/arrow#34994). A numeric column is one buffer and a string column
two (offsets and UTF-8 bytes), so these build the Arrow arrays from their buffers: the same values and
types as ``pa.array`` gives, and no pandas. Anything else goes through ``pa.array``."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

#: Rows from which a string column is left to ``pa.array``: joining the UTF-8 bytes in Python costs about
#: 0.16 µs a row more than Arrow's own conversion, and a run writes a dozen or more string columns, so past
#: this size the one pandas import (0.1-0.2 s) is the cheaper of the two (small runs still avoid it).
CONVERT_FROM_ROWS = 65_536
#: numpy dtypes whose bytes are an Arrow primitive column's data buffer as they are.
_ARROW_TYPES: dict[np.dtype[Any], pa.DataType] = {
    np.dtype(np.int64): pa.int64(),
    np.dtype(np.int32): pa.int32(),
    np.dtype(np.int16): pa.int16(),
    np.dtype(np.int8): pa.int8(),
    np.dtype(np.uint64): pa.uint64(),
    np.dtype(np.uint32): pa.uint32(),
    np.dtype(np.uint16): pa.uint16(),
    np.dtype(np.uint8): pa.uint8(),
    np.dtype(np.float64): pa.float64(),
    np.dtype(np.float32): pa.float32(),
}


def arrow_array(values: np.ndarray[Any, Any]) -> pa.Array:
    """``pa.array(values)`` for a one-dimensional numeric or boolean numpy column (NaN stays a value, as
    ``pa.array`` leaves it without ``from_pandas``)."""
    if values.ndim != 1:
        raise ValueError(f"arrow_array takes one column, got shape {values.shape}")
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    arrow_type = _ARROW_TYPES.get(values.dtype)  # (a byte-swapped dtype is not among them)
    if arrow_type is None:
        return pa.array(values)
    data = np.ascontiguousarray(values)
    return pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data)])


def string_scalar(text: str, arrow_type: pa.DataType) -> pa.Scalar:
    """``pa.scalar(text, arrow_type)`` for a string or large string (as a compute function's argument)."""
    data = text.encode("utf-8")
    large = pa.types.is_large_string(arrow_type)
    if not large and not pa.types.is_string(arrow_type):
        raise ValueError(f"string_scalar makes string or large_string scalars, not {arrow_type}")
    offsets = np.array([0, len(data)], dtype=np.int64 if large else np.int32)
    one = pa.Array.from_buffers(arrow_type, 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return one[0]


def _pa_array_is_cheaper(rows: int) -> bool:
    """Whether ``pa.array`` is the cheaper way to a string column: pandas already imported (its check then
    costs nothing) or a column long enough to repay the import."""
    return rows >= CONVERT_FROM_ROWS or "pandas" in sys.modules


def string_array(values: Sequence[str], arrow_type: pa.DataType) -> pa.Array:
    """``pa.array(values, arrow_type)`` for Python strings (no nulls) as a string or large string column:
    for a short column, the UTF-8 bytes joined and their offsets; a long one through ``pa.array``
    (:data:`CONVERT_FROM_ROWS`)."""
    large = pa.types.is_large_string(arrow_type)
    if not large and not pa.types.is_string(arrow_type):
        raise ValueError(f"string_array makes string or large_string columns, not {arrow_type}")
    if _pa_array_is_cheaper(len(values)):
        return pa.array(values, arrow_type)
    encoded = [text.encode("utf-8") for text in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    if not large:
        if offsets[-1] > np.iinfo(np.int32).max:
            return pa.array(values, arrow_type)  # (Arrow raises there as it would)
        offsets = offsets.astype(np.int32)
    data = pa.py_buffer(b"".join(encoded))
    return pa.Array.from_buffers(arrow_type, len(encoded), [None, pa.py_buffer(offsets), data])


def arrow_column(values: Any, arrow_type: pa.DataType | None = None) -> pa.Array:
    """``pa.array(values, arrow_type)`` for a result column: an Arrow array as it is, a numeric or boolean
    numpy column wrapped, a short list of strings joined; anything else (nulls, other types, chunked arrays)
    through ``pa.array``, which infers the same types."""
    if isinstance(values, pa.Array):
        if arrow_type is None or values.type == arrow_type:
            return values
    elif isinstance(values, np.ndarray):
        if values.ndim == 1 and (values.dtype == np.bool_ or values.dtype in _ARROW_TYPES):
            column = arrow_array(values)
            if arrow_type is None or column.type == arrow_type:
                return column
    elif (
        isinstance(values, list)
        and values
        and not _pa_array_is_cheaper(len(values))
        and (arrow_type is None or pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))
        and all(type(value) is str for value in values)
    ):
        return string_array(values, arrow_type or pa.string())
    return pa.array(values) if arrow_type is None else pa.array(values, arrow_type)


def arrow_table(columns: Mapping[str, Any]) -> pa.Table:
    """``pa.table(columns)`` for a mapping of column name to :func:`arrow_column`'s kinds of column (a
    chunked array kept in its chunks, as ``pa.table`` keeps it)."""
    arrays = [v if isinstance(v, pa.ChunkedArray) else arrow_column(v) for v in columns.values()]
    return pa.Table.from_arrays(arrays, names=list(columns))
