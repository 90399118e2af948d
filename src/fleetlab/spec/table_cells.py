"""Reading job tables cell by cell: text columns from CSV or Parquet, cell parsers that collect every bad
cell (row, column, value, what is allowed) before one clear error, shared by every trace reader."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from pydantic import ValidationError

from fleetlab.model.quantity import QuantityError
from fleetlab.spec.bounded import check_file
from fleetlab.spec.errors import SpecError, problems_from_validation

#: Bad cells listed before a load gives up.
MAX_PROBLEMS = 10

CSV_SUFFIXES = (".csv",)
PARQUET_SUFFIXES = (".parquet", ".pq")


class _Bad:
    """A cell that failed to parse; ``reason`` says why and what is allowed."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class CellProblems:
    """Bad cells of one table, kept in row order; the first :data:`MAX_PROBLEMS` get a message."""

    def __init__(self, source: str, limit: int = MAX_PROBLEMS) -> None:
        self.source = source
        self.limit = limit
        self.total = 0
        self._items: list[tuple[int, int, str, str, str]] = []

    def add(self, row: int, column_order: int, column: str, value: str, reason: str) -> None:
        """Record a bad cell at 0-based ``row``; ``column_order`` orders cells within a row."""
        self.total += 1
        self._items.append((row, column_order, column, value, reason))
        if len(self._items) > 4 * self.limit:
            self._items.sort()
            del self._items[self.limit :]

    def add_row(self, row: int, reason: str) -> None:
        """Record a problem that belongs to a row rather than one cell."""
        self.add(row, 1 << 30, "", "", reason)

    def __bool__(self) -> bool:
        return self.total > 0

    def raise_if_any(self, ids: Sequence[str | None] | None = None) -> None:
        """Raise :class:`SpecError` listing the first problems (row, job id, column, value, reason)."""
        if not self.total:
            return
        self._items.sort()
        out: list[str] = []
        for row, _, column, value, reason in self._items[: self.limit]:
            job = ids[row] if ids is not None and row < len(ids) else None
            where = f"row {row + 1}" + (f" (id {job!r})" if job else "")
            if column:
                out.append(f"{where}, column {column!r}, value {value!r}: {reason}")
            else:
                out.append(f"{where}: {reason}")
        shown = min(self.total, self.limit)
        if self.total > shown:
            out.append(f"{self.total - shown} more bad cell(s) not listed; fix the ones above first")
        raise SpecError(self.source, out)


def _strings(column: Any, name: str, source: str) -> list[str | None]:
    """One Arrow column as text cells (None where null); typed Parquet columns are rendered exactly."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        column = column.cast(kind.value_type)
        kind = kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        values: list[str | None] = column.to_pylist()
        return values
    if pa.types.is_null(kind):
        return [None] * len(column)
    if pa.types.is_boolean(kind):
        return [None if v is None else ("true" if v else "false") for v in column.to_pylist()]
    if pa.types.is_integer(kind) or pa.types.is_decimal(kind):
        return [None if v is None else str(v) for v in column.to_pylist()]
    if pa.types.is_floating(kind):
        return [None if v is None else repr(float(v)) for v in column.to_pylist()]
    raise SpecError(source, [f"column {name!r} has type {kind}; use text or number columns"])


def _csv_header(path: Path, source: str) -> list[str]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        try:
            header = next(csv.reader(handle))
        except StopIteration:
            raise SpecError(source, ["the file is empty; it needs a header row naming the columns"]) from None
    return [name.strip() for name in header]


def read_string_columns(
    path: Path, limit: int | None = None, source: str | None = None
) -> tuple[list[str], dict[str, list[str | None]]]:
    """Column names and text cells of a CSV or Parquet table (first ``limit`` rows), or a SpecError."""
    label = source or str(path)
    names, table = read_table(path, limit, label)
    return names, {n: _strings(table.column(i), n, label) for i, n in enumerate(names)}


def _restored(table: pa.Table) -> pa.Table:
    """Text cells with the ``'`` fleetlab's CSV writer puts before a formula lead taken off again
    (``spec.csv_out``), so a trace written and read back is unchanged."""
    import pyarrow.compute as pc

    columns = [
        pc.replace_substring_regex(c, pattern=r"^'([=+\-@\t\r])", replacement=r"\1") for c in table.columns
    ]
    return pa.Table.from_arrays(columns, names=table.column_names)


def read_table(path: Path, limit: int | None, label: str) -> tuple[list[str], pa.Table]:
    """Column names and the Arrow table of a CSV (every column text) or Parquet file (first ``limit``
    rows, chunks combined), or a SpecError naming the file (regular files only, bounded in size)."""
    suffix = path.suffix.lower()
    if suffix not in CSV_SUFFIXES + PARQUET_SUFFIXES:
        raise SpecError(label, [f"unknown table suffix {path.suffix!r}: use .csv, .parquet or .pq"])
    check_file(path, "file not found", label=label)
    try:
        if suffix in CSV_SUFFIXES:
            names = _csv_header(path, label)
            dups = sorted({n for n in names if names.count(n) > 1})
            if dups:
                raise SpecError(label, [f"column {n!r} appears more than once in the header" for n in dups])
            table = pacsv.read_csv(
                path,
                read_options=pacsv.ReadOptions(column_names=names, skip_rows=1),
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                convert_options=pacsv.ConvertOptions(
                    column_types={n: pa.string() for n in names},
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
            table = _restored(table)
        else:
            table = pq.read_table(path)
            names = [str(n) for n in table.column_names]
            if len(set(names)) != len(names):
                dups = sorted({n for n in names if names.count(n) > 1})
                raise SpecError(label, [f"column {n!r} appears more than once" for n in dups])
    except FileNotFoundError:
        raise SpecError(label, ["file not found"]) from None
    except IsADirectoryError:
        raise SpecError(label, ["is a directory, not a trace file"]) from None
    except UnicodeDecodeError as exc:
        raise SpecError(label, [f"is not UTF-8 text: {exc}"]) from None
    except (pa.ArrowInvalid, pa.ArrowException, OSError) as exc:
        kind = "CSV" if suffix in CSV_SUFFIXES else "Parquet"
        raise SpecError(label, [f"cannot be read as {kind}: {exc}"]) from None
    if limit is not None:
        table = table.slice(0, limit)
    return names, table.combine_chunks()


def require_columns(source: str, cells: dict[str, Any], required: Sequence[str], hint: str) -> None:
    """A SpecError naming every required column the table lacks, each with ``hint`` (what the table is)."""
    missing = [c for c in required if c not in cells]
    if missing:
        raise SpecError(source, [f"required column {c!r} is missing; {hint}" for c in missing])


def parse_cells(
    cells: Sequence[str | None],
    parse: Callable[[str], Any],
    column: str,
    order: int,
    problems: CellProblems,
    cache: bool = True,
) -> list[Any]:
    """Parse one column: None for empty cells, the parsed value, or a :class:`_Bad` (recorded).

    With ``cache`` each distinct text is parsed once, which suits columns with few distinct values."""
    if cache:
        memo: dict[str | None, Any] = {raw: None if raw is None else _try(parse, raw) for raw in set(cells)}
        out = [memo[raw] for raw in cells]
        if not any(type(v) is _Bad for v in memo.values()):
            return out
    else:
        out = [None if raw is None else _try(parse, raw) for raw in cells]
    for row, value in enumerate(out):
        if type(value) is _Bad:
            problems.add(row, order, column, cells[row] or "", value.reason)
    return out


def seconds_cells(
    cells: Sequence[str | None], positive: bool, column: str, order: int, problems: CellProblems
) -> list[Any]:
    """A seconds column: one bulk float() pass when every cell is good, else cell by cell."""
    try:
        values = [float(raw) for raw in cells]  # type: ignore[arg-type]  # None -> TypeError
    except (TypeError, ValueError):
        pass
    else:
        isfinite = math.isfinite
        if all(isfinite(v) and (v > 0 or (v == 0 and not positive)) for v in values):
            return values
    return parse_cells(cells, seconds_gt0 if positive else seconds_ge0, column, order, problems, cache=False)


def _try(parse: Callable[[str], Any], raw: str) -> Any:
    text = raw.strip()
    if not text:
        return None
    try:
        return parse(text)
    except (ValueError, QuantityError) as exc:
        return _Bad(str(exc))
    except ValidationError as exc:
        return _Bad("; ".join(problems_from_validation(exc)))


# --- cell parsers: each raises ValueError with what is allowed -------------------------------------------


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("not a number") from None
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def seconds_ge0(text: str) -> float:
    try:
        value = _number(text)
    except ValueError:
        raise ValueError("must be a number of seconds >= 0") from None
    if value < 0:
        raise ValueError("must be a number of seconds >= 0")
    return value


def seconds_gt0(text: str) -> float:
    try:
        value = _number(text)
    except ValueError:
        raise ValueError("must be a number of seconds > 0") from None
    if value <= 0:
        raise ValueError("must be a number of seconds > 0")
    return value


def parse_int(text: str) -> int:
    """An integer cell (``5``, ``-3``, or an integral float such as ``5.0`` from a typed column)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise ValueError("must be an integer") from None
    if not value.is_integer():
        raise ValueError("must be an integer")
    return int(value)


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = parse_int(text)
        except ValueError:
            raise ValueError(f"must be an integer >= {minimum}") from None
        if value < minimum:
            raise ValueError(f"must be an integer >= {minimum}")
        return value

    return parse


def any_int(text: str) -> int:
    return parse_int(text)
