"""Parquet files fleetlab reads back (run folders, history folders) go through one bounded reader: what is
absent, a directory, a pipe or too large is refused before it is opened (a FIFO would block forever)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fleetlab.spec.bounded import read_parquet
from fleetlab.spec.errors import SpecError
from fleetlab.spec.run_dir import read_demand_curve, read_ledger


def test_a_small_file_is_read_with_only_the_columns_asked(tmp_path: Path) -> None:
    file = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), file)
    assert read_parquet(file, "not found", columns=["a"]).to_pydict() == {"a": [1, 2]}


def test_absent_directory_oversized_and_foreign_files_are_one_paragraph(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"t\.parquet: give a run"):
        read_parquet(tmp_path / "t.parquet", "give a run")
    (tmp_path / "d.parquet").mkdir()
    with pytest.raises(SpecError, match="is a directory"):
        read_parquet(tmp_path / "d.parquet", "not found")
    file = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": list(range(1000))}), file)
    size = file.stat().st_size
    with pytest.raises(SpecError, match=f"is {size:,} bytes; the most fleetlab reads is 100"):
        read_parquet(file, "not found", max_bytes=100)
    (tmp_path / "text.parquet").write_text("not parquet")
    with pytest.raises(SpecError, match="cannot be read as a cost ledger"):
        read_parquet(tmp_path / "text.parquet", "not found", "a cost ledger")


@pytest.mark.skipif(sys.platform == "win32", reason="no FIFOs")
def test_a_run_folder_whose_files_are_pipes_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "timeline.parquet")
    os.mkfifo(tmp_path / "ledger.parquet")
    with pytest.raises(SpecError, match="not a regular file"):
        read_demand_curve(tmp_path)
    with pytest.raises(SpecError, match="not a regular file"):
        read_ledger(tmp_path)
