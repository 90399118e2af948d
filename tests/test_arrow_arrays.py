"""Arrow arrays built from their buffers (fleetlab.model.arrow_arrays) equal what ``pa.array`` builds, type
and values, for every kind of column the results are written from; and running a scenario no longer
imports pandas through pyarrow's check for it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from fleetlab.model import arrow_arrays
from fleetlab.model.arrow_arrays import arrow_array, arrow_column, arrow_table, string_array, string_scalar
from test_cli_startup import imported_modules

NUMERIC = [
    np.array([3, -1, 2**62], dtype=np.int64),
    np.array([1, 2], dtype=np.int32),
    np.array([7], dtype=np.int16),
    np.array([-3], dtype=np.int8),
    np.array([2**63 + 5], dtype=np.uint64),
    np.array([9], dtype=np.uint32),
    np.array([9], dtype=np.uint16),
    np.array([255, 0], dtype=np.uint8),
    np.array([0.5, np.nan, -np.inf, 1e300], dtype=np.float64),
    np.array([1.5], dtype=np.float32),
    np.array([], dtype=np.int64),
    np.array([True, False, True, True, False, False, True, False, True], dtype=bool),
    np.array([], dtype=bool),
    np.arange(20, dtype=np.int64)[::3],  # strided: a copy, as pa.array makes
]


@pytest.mark.parametrize("values", NUMERIC, ids=lambda v: f"{v.dtype}-{len(v)}")
def test_arrow_array_equals_pa_array(values: np.ndarray[Any, Any]) -> None:
    built, expected = arrow_array(values), pa.array(values)
    assert built.type == expected.type
    assert built.null_count == 0
    assert built.equals(expected) or (  # NaN != NaN: compare the bytes of float columns
        pa.types.is_floating(built.type)
        and np.array_equal(built.to_numpy(), expected.to_numpy(), equal_nan=True)
    )


def test_arrow_array_takes_one_column_only() -> None:
    with pytest.raises(ValueError, match="one column"):
        arrow_array(np.zeros((2, 2)))


def test_arrow_array_leaves_other_dtypes_to_pa_array() -> None:
    """A byte-swapped column goes to ``pa.array``, which refuses it, as it did before."""
    with pytest.raises(pa.ArrowNotImplementedError):
        pa.array(np.array([1, 2], dtype=">i8"))
    with pytest.raises(pa.ArrowNotImplementedError):
        arrow_array(np.array([1, 2], dtype=">i8"))


@pytest.fixture
def joined(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strings joined in Python whatever the column's length and whether pandas is loaded (this process
    may have imported it), so the tests below compare the joining with ``pa.array``."""
    monkeypatch.setattr(arrow_arrays, "_pa_array_is_cheaper", lambda rows: False)


def test_long_string_columns_and_a_loaded_pandas_go_to_pa_array(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    assert not arrow_arrays._pa_array_is_cheaper(arrow_arrays.CONVERT_FROM_ROWS - 1)
    assert arrow_arrays._pa_array_is_cheaper(arrow_arrays.CONVERT_FROM_ROWS)
    monkeypatch.setitem(sys.modules, "pandas", sys)  # (any module object: only its presence is read)
    assert arrow_arrays._pa_array_is_cheaper(1)


@pytest.mark.usefixtures("joined")
@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string()])
@pytest.mark.parametrize("values", [[], ["a"], ["job-00001", "", "ünï-çødé ✓", "x" * 1000]])
def test_string_array_equals_pa_array(values: list[str], arrow_type: pa.DataType) -> None:
    built = string_array(values, arrow_type)
    assert built.equals(pa.array(values, arrow_type))
    assert built.type == arrow_type


def test_string_helpers_refuse_other_types() -> None:
    with pytest.raises(ValueError, match="string or large_string"):
        string_array(["a"], pa.binary())
    with pytest.raises(ValueError, match="string or large_string"):
        string_scalar("a", pa.int64())


def test_string_scalar_as_a_compute_argument() -> None:
    numbers = pc.utf8_lpad(pc.cast(arrow_array(np.arange(3)), pa.large_string()), width=5, padding="0")
    prefix, empty = string_scalar("gang-", pa.large_string()), string_scalar("", pa.large_string())
    assert prefix.equals(pa.scalar("gang-", pa.large_string()))
    ids = pc.binary_join_element_wise(prefix, numbers, empty)
    assert ids.to_pylist() == ["gang-00000", "gang-00001", "gang-00002"]


@pytest.mark.usefixtures("joined")
@pytest.mark.parametrize(
    ("values", "arrow_type"),
    [
        (np.array([1, 2], dtype=np.int64), None),
        (np.array([1.0, 2.0]), pa.float64()),
        (np.array([True]), None),
        (np.array([1, 2], dtype=np.int64), pa.float64()),  # a cast asked for: pa.array does it
        (["a", "b"], None),
        (["a", "b"], pa.large_string()),
        (["a", None], None),  # nulls: pa.array
        ([None, None], pa.string()),
        ([1, 2], None),
        ([], None),
        ([], pa.string()),
        (np.array(["a", "b"]), None),  # numpy strings: pa.array
        (pa.array([1, 2]), None),
        (pa.array([1, 2]), pa.float64()),
        (pa.chunked_array([[1], [2, 3]]), None),
    ],
)
def test_arrow_column_equals_pa_array(values: Any, arrow_type: pa.DataType | None) -> None:
    built = arrow_column(values, arrow_type)
    expected = pa.array(values) if arrow_type is None else pa.array(values, arrow_type)
    assert built.type == expected.type
    assert built.equals(expected)


@pytest.mark.usefixtures("joined")
def test_arrow_table_equals_pa_table() -> None:
    columns = {
        "id": ["a", "b", "c"],
        "start_s": np.array([0.0, np.nan, 2.5]),
        "pods": np.array([1, 2, 3], dtype=np.int32),
        "evicted": np.array([False, True, False]),
        "pool": pa.array(["x", "y", "x"]),
        "note": ["", None, "z"],
    }
    columns_chunked: dict[str, Any] = {**columns, "chunked": pa.chunked_array([[1], [2, 3]])}
    built, expected = arrow_table(columns_chunked), pa.table(columns_chunked)
    assert built.column("chunked").num_chunks == expected.column("chunked").num_chunks == 2
    assert built.schema == expected.schema
    for name in columns:
        assert built.column(name).to_pylist() == expected.column(name).to_pylist() or name == "start_s"
    assert np.array_equal(
        built.column("start_s").to_numpy(), expected.column("start_s").to_numpy(), equal_nan=True
    )


def test_a_run_written_out_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow imports pandas the first time it converts anything, where pandas is installed (0.1-0.2 s of
    every run); the path from scenario to written results builds its Arrow arrays without it."""
    pytest.importorskip("pandas")  # (without pandas the probe has nothing to import)
    modules = imported_modules(["simulate", "--out", str(tmp_path / "run")])
    assert (tmp_path / "run" / "jobs.parquet").is_file()
    assert "pyarrow" in modules
    assert "pandas" not in modules
