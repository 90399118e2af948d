"""A process parses each distinct trace once (fleetlab.spec.traces): repeated loads of the same bytes and
options share the parsed jobs; changed bytes, another option or another spelling of the path parse anew."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetlab.model.job import Job
from fleetlab.model.workload import TraceSource
from fleetlab.spec.errors import SpecError
from fleetlab.spec.native_trace_writer import write_native_trace
from fleetlab.spec.traces import clear_trace_cache, load_trace


def jobs(runtime: float) -> list[Job]:
    return [
        Job.model_validate(
            {"id": f"j{i}", "submit_s": float(i), "requests": {"cpu": "1"}, "runtime": runtime}
        )
        for i in range(3)
    ]


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    clear_trace_cache()


def test_same_bytes_and_options_share_the_parse(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    write_native_trace(jobs(60.0), path)
    first, _ = load_trace(path, TraceSource(path=str(path)))
    again, _ = load_trace(path, TraceSource(path=str(path)))
    assert again is first  # the same immutable JobTable, not a copy
    assert len(load_trace(path, TraceSource(path=str(path)))[0]) == 3


def test_rewritten_file_of_the_same_size_is_parsed_again(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    write_native_trace(jobs(60.0), path)
    size = path.stat().st_size
    first, _ = load_trace(path, TraceSource(path=str(path)))
    write_native_trace(jobs(70.0), path)  # same length, other bytes, likely within one mtime tick
    assert path.stat().st_size == size
    second, _ = load_trace(path, TraceSource(path=str(path)))
    assert [j.runtime.default for j in first] == [60.0] * 3
    assert [j.runtime.default for j in second] == [70.0] * 3


def test_options_are_part_of_the_key(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    write_native_trace(jobs(60.0), path)
    assert len(load_trace(path, TraceSource(path=str(path)))[0]) == 3
    assert len(load_trace(path, TraceSource(path=str(path), limit=2))[0]) == 2
    scaled, _ = load_trace(path, TraceSource(path=str(path), time_scale=2.0))
    assert [j.submit_s for j in scaled] == [0.0, 2.0, 4.0]


def test_errors_are_not_cached(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("id,submit_s,runtime_s\na,0,-1\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(SpecError, match="runtime_s"):
            load_trace(path, TraceSource(path=str(path)))
    missing = tmp_path / "missing.csv"
    with pytest.raises(SpecError, match="file not found"):
        load_trace(missing, TraceSource(path=str(missing)))
