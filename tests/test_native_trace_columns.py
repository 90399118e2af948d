"""The native trace reader checks whole columns; its errors must still name file, row, id, column, value and
what is allowed, however far down the table the bad cell is and however many there are."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fleetlab.model.job_table import JobTable
from fleetlab.spec.errors import SpecError
from fleetlab.spec.native_trace import MAX_PROBLEMS, load_native_trace


def csv_rows(path: Path, rows: list[str], header: str = "id,submit_s,runtime_s,class,gpus") -> Path:
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def good_rows(n: int) -> list[str]:
    return [f"j{i},{i},{60 + i % 7},batch,{i % 3}" for i in range(n)]


def problems_of(path: Path, time_scale: float = 1.0) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_native_trace(path, time_scale=time_scale)
    assert info.value.source == str(path)
    return info.value.problems


def test_a_bad_cell_deep_in_a_long_table_is_named_by_row_and_id(tmp_path: Path) -> None:
    rows = good_rows(50_000)
    rows[40_000] = "j40000,40000,60,serving,1"  # row 40,001 (1-based, header not counted)
    [message] = problems_of(csv_rows(tmp_path / "t.csv", rows))
    assert message.startswith("row 40001 (id 'j40000'), column 'class', value 'serving': must be one of")


def test_repeated_id_names_the_row_first_using_it(tmp_path: Path) -> None:
    rows = good_rows(1000)
    rows[900] = "j2,900,60,batch,1"
    [message] = problems_of(csv_rows(tmp_path / "t.csv", rows))
    assert (
        message == "row 901 (id 'j2'), column 'id', value 'j2': id already used on row 3; ids must be unique"
    )


def test_many_bad_cells_are_counted_but_only_the_first_listed(tmp_path: Path) -> None:
    rows = [f"j{i},{i},60,serving,1" for i in range(1000)]
    problems = problems_of(csv_rows(tmp_path / "t.csv", rows))
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[0].startswith("row 1 (id 'j0'), column 'class'")
    assert problems[MAX_PROBLEMS - 1].startswith("row 10 (id 'j9')")
    assert problems[-1].startswith(f"{1000 - MAX_PROBLEMS} more bad cell(s)")


def test_time_scale_that_overflows_or_exceeds_a_century_is_named(tmp_path: Path) -> None:
    path = csv_rows(tmp_path / "t.csv", ["a,0,60,batch,1", "b,2e9,60,batch,1"])
    [message] = problems_of(path, time_scale=2.0)  # 4e9 s is beyond 100 years (3,153,600,000 s)
    assert message.startswith("row 2 (id 'b'), column 'submit_s', value '2e9': ")
    assert "longer than 3,153,600,000 s" in message
    path = csv_rows(tmp_path / "u.csv", ["a,1e300,60,batch,1"])
    submit, runtime = problems_of(path, time_scale=1e10)
    assert "column 'submit_s'" in submit and "out of range once multiplied by time_scale" in submit
    assert "column 'runtime_s', value '60'" in runtime and "longer than" in runtime  # 6e11 s


def test_typed_parquet_columns_are_checked_whole(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    table = pa.table(
        {
            "id": ["a", "b", "c"],
            "submit_s": pa.array([0, 5, 9], pa.int64()),
            "runtime_s": pa.array([10.5, -1.0, None], pa.float64()),
            "runtime_s[H100]": pa.array([5.0, None, 1.0], pa.float64()),
        }
    )
    pq.write_table(table, path)
    problems = problems_of(path)
    assert problems[0] == "row 2 (id 'b'), column 'runtime_s', value '-1.0': must be a number of seconds > 0"
    assert problems[1].startswith("row 3 (id 'c'), column 'runtime_s'") and "required" in problems[1]
    good = table.set_column(2, "runtime_s", pa.array([10.5, 1.0, 2.0]))
    pq.write_table(good, path)
    jobs, _ = load_native_trace(path)
    assert isinstance(jobs, JobTable)
    assert [j.runtime.by_gpu for j in jobs] == [{"H100": 5.0}, {}, {"H100": 1.0}]
    assert [j.submit_s for j in jobs] == [0.0, 5.0, 9.0]


def test_a_shape_refused_by_the_job_model_is_reported_on_each_of_its_rows(tmp_path: Path) -> None:
    # priorities are int32 (PriorityClass.value); the cell parses as an integer, the Job model refuses it
    rows = ["a,0,60,1", "b,1,60,3000000000", "c,2,60,1", "d,3,60,3000000000"]
    problems = problems_of(csv_rows(tmp_path / "t.csv", rows, "id,submit_s,runtime_s,priority"))
    assert [p.split(",")[0] for p in problems] == ["row 2 (id 'b')", "row 4 (id 'd')"]
    assert all("column 'priority', value '3000000000'" in p and "less than or equal" in p for p in problems)


def test_rows_of_one_shape_share_a_template_and_keep_their_own_fields(tmp_path: Path) -> None:
    jobs, warnings = load_native_trace(csv_rows(tmp_path / "t.csv", good_rows(3000)))
    assert warnings == [] and len(jobs) == 3000
    assert len(jobs.templates) == 3  # one per GPU count; class, team and the rest are equal
    assert [j.id for j in jobs[:3]] == ["j0", "j1", "j2"]
    assert [j.runtime.default for j in jobs[:8]] == [60 + i % 7 for i in range(8)]
    assert jobs.column("submit_s")[2999] == 2999.0
