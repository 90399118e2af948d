"""Job-table columns parsed whole: numbers with one Arrow cast, repeated text once per distinct value.

The cell-by-cell parsers of :mod:`fleetlab.spec.table_cells` stay the single definition of what a cell may
hold and of every error message: a column that passes the vectorised checks is exactly what they would
have accepted, and a column that does not is handed to them, so bad cells are reported as before (row,
column, value, what is allowed), only without a Python object per good cell.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from fleetlab.spec.errors import SpecError
from fleetlab.spec.table_cells import CellProblems, _Bad, _strings, _try, seconds_cells

__all__ = ["CodedColumn", "coded_column", "report_rows", "seconds_column", "text_array"]


def text_array(column: pa.Array, name: str, source: str) -> pa.Array:
    """A column as Arrow text (null where empty in Parquet), rendered as the cell readers render it."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column = column.cast(kind.value_type)
        kind = kind.value_type
    if pa.types.is_string(kind):
        return column
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return column.cast(pa.string())
    if pa.types.is_null(kind):
        return pa.nulls(len(column), pa.string())
    if pa.types.is_boolean(kind):
        return pc.if_else(column, "true", "false")
    if pa.types.is_integer(kind):
        return column.cast(pa.string())  # str(int), as the cell reader renders it
    return pa.array(_strings(column, name, source), pa.string())  # floats and decimals: Python's repr


def report_rows(
    problems: CellProblems, rows: npt.NDArray[np.int64], order: int, column: str, value: Any, reason: Any
) -> None:
    """Record bad cells at ``rows`` (ascending); ``value(row)`` and ``reason(row)`` give each message.

    Only the first rows get a message (the rest are counted), so a column of a million bad cells costs
    no more than a few."""
    for row in rows[: problems.limit].tolist():
        problems.add(row, order, column, value(row), reason(row))
    problems.total += max(0, len(rows) - problems.limit)


def seconds_column(
    column: pa.Array, positive: bool, name: str, order: int, problems: CellProblems, source: str
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """A seconds column as float64, NaN where the cell is empty or bad (bad cells are recorded), and
    where the cell is empty.

    Every value must be finite and > 0 (``positive``) or >= 0. Numbers and text that Arrow parses in one
    cast are checked as a whole; anything else (blank cells, units, spaces) goes cell by cell."""
    kind = column.type
    values: npt.NDArray[np.float64] | None = None
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        values = pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        try:
            values = pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            values = None
    if values is not None and column.null_count == 0:
        good = np.isfinite(values) & ((values > 0) if positive else (values >= 0))
        if good.all():
            return np.asarray(values, dtype=np.float64), np.zeros(len(values), dtype=bool)
    cells = _strings(column, name, source)
    parsed = seconds_cells(cells, positive, name, order, problems)
    n = len(parsed)
    out = np.fromiter((v if type(v) is float else np.nan for v in parsed), dtype=np.float64, count=n)
    return out, np.fromiter((v is None for v in parsed), dtype=bool, count=n)


@dataclass(frozen=True)
class CodedColumn:
    """A column with few distinct texts: per row the code of its text (-1 where the cell is null), and
    per code the parsed value (None for a blank cell, the default)."""

    codes: npt.NDArray[np.int32]
    values: list[Any]

    def at(self, row: int) -> Any:
        """The parsed value of ``row`` (None: empty, use the default)."""
        code = int(self.codes[row])
        return None if code < 0 else self.values[code]

    def present(self) -> npt.NDArray[np.bool_]:
        """Rows whose cell gives a value (not null, not blank)."""
        given = np.asarray([v is not None for v in self.values] + [False], dtype=bool)
        out: npt.NDArray[np.bool_] = given[self.codes]  # code -1 indexes the final False
        return out


def coded_column(
    text: pa.Array,
    parse: Callable[[str], Any],
    name: str,
    order: int,
    problems: CellProblems,
) -> CodedColumn:
    """Parse each distinct text of ``text`` once; rows whose text is bad are recorded."""
    encoded = pc.dictionary_encode(text)
    if isinstance(encoded, pa.ChunkedArray):  # pragma: no cover - callers pass combined arrays
        encoded = encoded.combine_chunks()
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    texts: list[str] = encoded.dictionary.to_pylist()
    values = [_try(parse, raw) for raw in texts]
    bad = [k for k, v in enumerate(values) if type(v) is _Bad]
    if bad:
        rows = np.flatnonzero(np.isin(codes, np.asarray(bad, dtype=np.int32)))
        report_rows(
            problems,
            rows,
            order,
            name,
            lambda row: texts[codes[row]],
            lambda row: values[codes[row]].reason,
        )
        values = [None if type(v) is _Bad else v for v in values]
    return CodedColumn(codes, values)


def shape_codes(columns: list[npt.NDArray[np.int64]], rows: int) -> npt.NDArray[np.int64]:
    """One code per row for the combination of the given per-row codes (each >= -1): rows with equal
    codes in every column get equal shape codes."""
    key = np.zeros(rows, dtype=np.int64)
    span = 1
    for codes in columns:
        width = int(codes.max()) + 2 if rows else 1
        if span * width >= 1 << 62:  # re-number the combinations so far before they overflow
            _, inverse = np.unique(key, return_inverse=True)
            key, span = inverse.reshape(-1).astype(np.int64), int(inverse.max()) + 1
        key = key * width + (codes + 1)
        span *= width
    return key


def unique_ids(
    ids: pa.Array, order: int, problems: CellProblems, raw: pa.Array
) -> tuple[pa.Array, npt.NDArray[np.bool_]]:
    """Ids trimmed of spaces; blank ids and repeats are recorded (naming the row first used)."""
    trimmed = pc.utf8_trim_whitespace(ids)
    blank = pc.fill_null(pc.equal(pc.utf8_length(trimmed), 0), True).to_numpy(zero_copy_only=False)
    if blank.any():
        raw_cells = raw.to_pylist()
        report_rows(
            problems,
            np.flatnonzero(blank),
            order,
            "id",
            lambda row: raw_cells[row] or "",
            lambda row: "every job needs an id",
        )
    encoded = pc.dictionary_encode(trimmed)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    given = (codes >= 0) & ~blank
    if int(given.sum()) > len(encoded.dictionary) - int(bool(blank.any())):
        first = np.full(len(encoded.dictionary), -1, dtype=np.int64)
        rows = np.arange(len(codes), dtype=np.int64)
        # the first row of each id: assign in reverse so the earliest row is written last
        first[codes[given][::-1]] = rows[given][::-1]
        repeat = np.flatnonzero(given & (first[np.maximum(codes, 0)] != rows))
        names = encoded.dictionary
        report_rows(
            problems,
            repeat,
            order,
            "id",
            lambda row: names[int(codes[row])].as_py(),
            lambda row: f"id already used on row {int(first[codes[row]]) + 1}; ids must be unique",
        )
    return trimmed, blank


def require(source: str, cells: dict[str, Any], required: tuple[str, ...], names: list[str]) -> None:
    """Every required column is present, or one SpecError naming each missing one."""
    missing = [c for c in required if c not in cells]
    if missing:
        found = ", ".join(names) or "none"
        raise SpecError(
            source, [f"required column {c!r} is missing (columns found: {found})" for c in missing]
        )
