"""SWF imports on hand-written lines: logs without wait times, started jobs without a run time, corrupt
lines, users and requested wall times, and the machine as the node list (``--swf-nodes`` or the header)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.metrics.baseline import compute_baseline
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.sources import import_sources
from fleetlab.spec.history.store import history_meta
from fleetlab.spec.history.swf import SwfNodes, parse_swf_nodes
from shared_data import shared_path

HEADER = "; UnixStartTime: 1714557600\n; MaxNodes: 4\n; MaxProcs: 8\n"
runner = CliRunner()


def _swf(tmp_path: Path, body: str, header: str = HEADER) -> Path:
    path = tmp_path / "log.swf"
    path.write_text(header + body)
    return path


def test_a_log_without_wait_times_keeps_its_jobs_with_the_wait_unmeasured(tmp_path: Path) -> None:
    # NASA iPSC/860 style: field 3 is -1 (submit times are start times, no wait recorded).
    path = _swf(tmp_path, "1 0 -1 1451 8 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"
                          "2 1460 -1 3726 4 -1 -1 -1 -1 -1 1 2 1 -1 -1 -1 -1 -1\n")  # fmt: skip
    history = import_sources([str(path)])
    assert history.epoch == "2024-05-01T10:00:00Z"  # not 1970: the jobs are there
    jobs = history.jobs.to_pylist()
    assert [(j["submit_s"], j["scheduled_s"], j["end_s"], j["run_s"], j["state"]) for j in jobs] == [
        (0.0, None, None, 1451.0, "completed"),
        (1460.0, None, None, 3726.0, "completed"),
    ]
    assert history.end_s == 1460.0 + 3726.0  # the latest instant the log implies (a start is >= submit)
    assert history_meta(history)["jobs_wait_unmeasured"] == 2
    row = compute_baseline(history).rows[0]
    # No wait figure, but compute and processor-hours are measured: 8 x 1451 + 4 x 3726 cpu-seconds.
    assert (row.wait_unmeasured, row.wait_p50_s, row.compute_jobs) == (2, None, 2)


def test_a_started_job_without_a_run_time_keeps_its_measured_wait(tmp_path: Path) -> None:
    path = _swf(tmp_path, "1 0 60 3600 2 -1 -1 2 7200 -1 1 1 1 -1 1 -1 -1 -1\n"
                          "2 100 40 -1 2 -1 -1 2 7200 -1 -1 1 1 -1 1 -1 -1 -1\n")  # fmt: skip
    history = import_sources([str(path)])
    j = history.jobs.to_pylist()[1]
    assert (j["scheduled_s"], j["end_s"], j["run_s"], j["state"]) == (140.0, None, None, "completed")
    baseline = compute_baseline(history)
    row = baseline.rows[0]
    # waits 60 and 40 are both measured; only job 1's compute (3600 s) is.
    assert (row.wait_unmeasured, row.wait_censored, row.compute_jobs, row.compute_mean_s) == (0, 0, 1, 3600.0)
    assert any("1 job(s) started and ended with no recorded end" in n for n in baseline.notes)


def test_corrupt_lines_are_skipped_and_counted_unless_no_line_is_good(tmp_path: Path) -> None:
    good = "1 0 60 3600 2 -1 -1 2 7200 -1 1 1 1 -1 1 -1 -1 -1\n"
    path = _swf(tmp_path, good + "2 100 40 oops 2 -1 -1 2 7200 -1 1 1 1 -1 1 -1 -1 -1\n" + "3 1 2\n")
    history = import_sources([str(path)])
    assert history.jobs.num_rows == 1
    assert history.skipped == {
        "swf: corrupt job line (the first: line 5: field 4 is 'oops', not a number)": 2
    }
    only_bad = _swf(tmp_path, "3 1 2\n")
    with pytest.raises(SpecError, match="line 4: 3 fields; SWF job lines have 18"):
        import_sources([str(only_bad)])


def test_users_wall_times_and_the_machine_from_the_header(tmp_path: Path) -> None:
    path = _swf(tmp_path, "1 0 60 3600 6 -1 -1 6 7200 1024 1 7 3 -1 2 -1 -1 -1\n")
    history = import_sources([str(path)])
    j = history.jobs.to_pylist()[0]
    assert (j["user"], j["team"], j["queue"], j["walltime_s"]) == ("user-7", "group-3", "queue-2", 7200.0)
    nodes = history.nodes.to_pylist()
    # MaxNodes 4, MaxProcs 8: four 2-CPU nodes; memory = the largest per-processor memory a job recorded
    # (1024 KB) x 2 processors.
    assert [(n["node"], n["cpu"], n["memory"]) for n in nodes] == [
        (f"log-node-{i}", 2.0, 2048 * 1024) for i in range(4)
    ]
    assert any("4 node(s) of 2 CPU(s) from the header" in n for n in history.notes)
    given = import_sources([str(path)], swf_nodes=SwfNodes(3, 4, 8 << 30))
    assert [(n["cpu"], n["memory"]) for n in given.nodes.to_pylist()] == [(4.0, 8 << 30)] * 3


@pytest.mark.parametrize(
    ("text", "expected"),
    [("120x2", SwfNodes(120, 2)), ("120 x 2 x 1Gi", SwfNodes(120, 2, 1 << 30)), ("3×4", SwfNodes(3, 4))],
)
def test_swf_nodes_option(text: str, expected: SwfNodes) -> None:
    assert parse_swf_nodes(text) == expected


def test_bad_swf_nodes_option_exits_2(tmp_path: Path) -> None:
    path = _swf(tmp_path, "1 0 60 3600 6 -1 -1 6 7200 1024 1 7 3 -1 2 -1 -1 -1\n")
    for bad in ("120", "0x2", "2x2xlots"):
        result = runner.invoke(app, ["import", str(path), "--swf-nodes", bad, "--out", str(tmp_path / "h")])
        assert result.exit_code == 2 and "--swf-nodes" in result.output, result.output


@pytest.mark.skipif(not shared_path("traces", "pwa-nasa-ipsc").is_dir(), reason="shared traces absent")
def test_nasa_ipsc_log_imports_every_job_with_its_wait_unmeasured() -> None:
    history = import_sources([str(shared_path("traces", "pwa-nasa-ipsc", "NASA-iPSC-1993-3.1-cln.swf"))])
    assert history.jobs.num_rows == 18_239 and history.epoch.startswith("1993-10-01")
    assert history_meta(history)["jobs_wait_unmeasured"] == 18_239 and history.nodes.num_rows == 128


@pytest.mark.parametrize(
    ("cell", "field", "shown"),
    [
        ("nan", 4, "nan"),  # a NaN anywhere in the line, even after good values
        ("-0.5", 4, "-0.5"),  # negative but not the -1 of "unknown"
        ("-2", 4, "-2"),
        ("inf", 4, "inf"),
        ("3.2e10", 4, "3.2e10"),  # past a hundred years of seconds
    ],
)
def test_a_field_outside_minus_one_or_0_to_max_is_a_corrupt_line(
    tmp_path: Path, cell: str, field: int, shown: str
) -> None:
    # field 4 (the run time) of the second line; the first line is good (fields of -1 and 0 included)
    good = "1 0 -1 3600 2 -1 -1 2 0 -1 1 1 1 -1 1 -1 -1 -1\n"
    bad = f"2 100 40 {cell} 2 -1 -1 2 7200 -1 1 1 1 -1 1 -1 -1 -1\n"
    history = import_sources([str(_swf(tmp_path, good + bad))])
    assert history.jobs.num_rows == 1
    assert history.skipped == {
        f"swf: corrupt job line (the first: line 5: field {field} is {shown}; allowed: -1 or 0..3.2e9)": 1
    }


def test_a_record_value_outside_its_range_is_named(tmp_path: Path) -> None:
    # job 2: 1,000,000 processors x 2e9 KB a processor = 2e9 x 1024 x 1e6 = 2.048e18 bytes, past 2**60
    # (1.15e18); job 1 is within every range
    good = "1 0 60 3600 2 -1 -1 2 7200 100 1 1 1 -1 1 -1 -1 -1\n"
    wide = "2 5 60 3600 1000000 -1 -1 1000000 7200 2000000000 1 1 1 -1 1 -1 -1 -1\n"
    with pytest.raises(
        SpecError, match="job log/2: memory_per_pod 2048000000000000000 is outside the allowed"
    ):
        import_sources([str(_swf(tmp_path, good + wide))])
