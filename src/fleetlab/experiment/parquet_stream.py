"""Write result columns to Parquet one row group at a time: a table of millions of rows is held as Arrow
one row group at a time, never whole.

The columns arrive as numpy arrays or Python lists (what ``metrics.tables`` builds); only the rows of the
row group being written are converted to Arrow. The schema is the first row group's (inferred exactly as
``pa.table`` infers it) and later row groups are converted to it. The groups are cut where
``pq.write_table`` cuts them, so a file has the bytes ``pq.write_table`` gives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from fleetlab.model.arrow_arrays import arrow_column, arrow_table

#: Rows per row group: pyarrow's own default cut, so every file keeps the bytes ``pq.write_table`` gave it
#: (with 131,072-row groups a 300,000-job run folder was 17 % larger: dictionaries and statistics per
#: group); only tables longer than this are converted to Arrow in parts.
ROW_GROUP_ROWS = 1024 * 1024


def column_rows(columns: Mapping[str, Any]) -> int:
    """The common length of the columns (0 for none); unequal lengths are a programming error."""
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise ValueError(f"columns of unequal lengths {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def write_parquet_columns(
    columns: Mapping[str, Any],
    path: Path,
    metadata: Mapping[bytes, bytes] | None = None,
    row_group_rows: int = ROW_GROUP_ROWS,
) -> int:
    """Write ``columns`` to ``path`` (zstd) in row groups of ``row_group_rows``; returns the row count.
    ``metadata`` is added to the schema's key-value metadata (e.g. the results schema version)."""
    n = column_rows(columns)
    first = arrow_table({name: values[:row_group_rows] for name, values in columns.items()})
    if metadata:
        first = first.replace_schema_metadata({**(first.schema.metadata or {}), **metadata})
    schema = first.schema
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        writer.write_table(first)
        for start in range(row_group_rows, n, row_group_rows):
            stop = start + row_group_rows
            arrays = [arrow_column(columns[f.name][start:stop], f.type) for f in schema]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
    return n
