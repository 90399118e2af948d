"""Streamed Parquet row groups: byte-identical to ``pq.write_table`` for the same row-group cut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fleetlab.experiment.parquet_stream import ROW_GROUP_ROWS, write_parquet_columns


def columns(n: int) -> dict[str, Any]:
    """The kinds of columns the run files hold: int64, float64 with NaN, bool, numpy and Python strings."""
    k = np.arange(n, dtype=np.int64)
    return {
        "pod": k,
        "wait_s": np.where(k % 3 == 0, np.nan, k / 7.0),
        "completed": k % 2 == 0,
        "state": np.asarray(["pending", "running", "completed"])[k % 3],
        "job_id": [f"job-{i}" for i in range(n)],
        "node": ["" if i % 5 else "node-1" for i in range(n)],
    }


def test_a_table_within_one_row_group_has_the_bytes_of_write_table(tmp_path: Path) -> None:
    for n in (0, 1, 1000):
        cols = columns(n)
        pq.write_table(pa.table(cols), tmp_path / "ref.parquet", compression="zstd")
        assert write_parquet_columns(cols, tmp_path / "out.parquet") == n
        assert (tmp_path / "out.parquet").read_bytes() == (tmp_path / "ref.parquet").read_bytes()
    assert ROW_GROUP_ROWS == 1024 * 1024  # pyarrow's default: write_table cuts groups at the same rows


def test_a_long_table_is_written_in_row_groups_with_write_tables_bytes(tmp_path: Path) -> None:
    """1,000 rows in groups of 128: 7 full groups and one of 1000 - 7 × 128 = 104 rows, exactly the cut
    ``pq.write_table(row_group_size=128)`` makes, so the files are equal byte for byte."""
    cols = columns(1000)
    pq.write_table(pa.table(cols), tmp_path / "ref.parquet", compression="zstd", row_group_size=128)
    write_parquet_columns(cols, tmp_path / "out.parquet", row_group_rows=128)
    assert (tmp_path / "out.parquet").read_bytes() == (tmp_path / "ref.parquet").read_bytes()
    meta = pq.ParquetFile(tmp_path / "out.parquet").metadata
    assert meta.num_row_groups == 8
    assert [meta.row_group(i).num_rows for i in range(8)] == [128] * 7 + [104]
    back = pq.read_table(tmp_path / "out.parquet")
    assert back.column("job_id").to_pylist() == cols["job_id"]
    assert back.column("state").to_pylist() == cols["state"].tolist()
    np.testing.assert_array_equal(back.column("wait_s").to_numpy(), cols["wait_s"])


def test_schema_metadata_is_kept_in_every_file(tmp_path: Path) -> None:
    write_parquet_columns(columns(300), tmp_path / "out.parquet", {b"k": b"1"}, row_group_rows=100)
    assert pq.read_schema(tmp_path / "out.parquet").metadata == {b"k": b"1"}


def test_columns_of_unequal_length_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\[1, 2\]"):
        write_parquet_columns({"a": [1], "b": [1, 2]}, tmp_path / "out.parquet")
