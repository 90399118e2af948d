"""``fleetlab baseline`` end to end: Alibaba-format inputs (invented rows), history folders, bad input, and a
checker that recomputes the headline figures from the written files."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.cli.baseline import load_history_checked
from fleetlab.metrics.baseline import compute_baseline
from fleetlab.report.baseline_files import write_baseline_files
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.alibaba import load_alibaba_history
from fleetlab.spec.history.store import write_history
from history_builders import HAND_BILL, HAND_JOBS, HAND_NODES, history
from shared_data import shared_path

runner = CliRunner()
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
OPENB = shared_path("traces", "alibaba-gpu-v2023")


def _write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_alibaba_phases_become_states_with_censoring(tmp_path: Path) -> None:
    pods = _write(
        tmp_path / "pods.csv",
        POD_HEADER,
        [
            "p0,4000,8192,1,1000,,LS,Running,0,1000,5",  # deleted at the last instant: still running
            "p1,4000,8192,1,500,,BE,Succeeded,10,300,40",
            "p2,4000,8192,2,1000,,BE,Failed,20,200,20",
            "p3,4000,8192,1,1000,,BE,Pending,30,130,",  # deleted while pending: cancelled, censored
            "p4,1000,1024,0,0,,Burstable,Running,50,600,60",  # deleted while running: completed
        ],
    )
    nodes = _write(tmp_path / "nodes.csv", NODE_HEADER, ["a,64000,262144,8,V100M32", "b,32000,131072,0,"])
    h = load_alibaba_history(pods, nodes)
    assert h.end_s == 1000.0
    jobs = h.jobs.to_pylist()
    assert [j["state"] for j in jobs] == ["running", "completed", "failed", "cancelled", "completed"]
    assert jobs[0]["end_s"] is None and jobs[3]["end_s"] == 130.0
    assert jobs[1]["gpus_per_pod"] == 0.5 and jobs[1]["gpu_milli_per_pod"] == 500
    assert [j["job_class"] for j in jobs] == ["inference", "batch", "batch", "batch", "experiment"]
    assert h.nodes.column("gpus").to_pylist() == [8, 0]
    row = {(r.group_by, r.group): r for r in compute_baseline(h).rows}[("all", "all")]
    # waits: 5, 30, 0, 10 observed; p3 censored at 130 − 30 = 100. KM at 0: 4/5, 5: 3/5, 10: 2/5 -> p50 = 10.
    assert (row.wait_p50_s, row.wait_censored, row.cancelled) == (10.0, 1, 1)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("p1,4000,8192,1,1000,,BE,Succeeded,100,50,100", "deletion_time"),
        ("p1,4000,8192,1,1000,,BE,Succeeded,100,500,90", "is earlier than creation_time"),
        ("p1,4000,8192,1,1000,,BE,Succeeded,100,500,", "must have been scheduled"),
        ("p1,4000,8192,1,1000,,XX,Succeeded,100,500,100", "must be one of LS"),
        ("p1,4000,8192,1,1000,,BE,Succeeded,1e999,500,100", "creation_time"),
    ],
)
def test_bad_alibaba_rows_name_row_column_and_value(tmp_path: Path, row: str, expected: str) -> None:
    pods = _write(tmp_path / "pods.csv", POD_HEADER, [row])
    with pytest.raises(SpecError) as info:
        load_alibaba_history(pods)
    assert "row 1" in str(info.value) and expected in str(info.value)


def test_cli_reads_the_import_folder_and_refuses_broken_ones(tmp_path: Path) -> None:
    h = history(HAND_JOBS, HAND_NODES, HAND_BILL)
    write_history(h, tmp_path / "h")
    back = load_history_checked(tmp_path / "h")
    assert back.jobs.equals(h.jobs) and back.nodes.equals(h.nodes) and back.bill.equals(h.bill)
    meta = tmp_path / "h" / "history.json"
    meta.write_text('{"format": "fleetlab-history/1", "end_s": 1')
    result = runner.invoke(app, ["baseline", str(tmp_path / "h")])
    assert result.exit_code == 2 and "invalid JSON" in result.output and "Traceback" not in result.output
    with pytest.raises(SpecError, match="not a folder"):
        load_history_checked(tmp_path / "missing")


def test_cli_writes_parquet_json_html_and_fails_cleanly(tmp_path: Path) -> None:
    write_history(history(HAND_JOBS, HAND_NODES, HAND_BILL), tmp_path / "h")
    result = runner.invoke(app, ["baseline", str(tmp_path / "h"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "measured baseline: 4 jobs" in result.output
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        ".fleetlab-output",  # the output writer's marker (spec.out_folder)
        "baseline.parquet",
        "baseline.json",
        "baseline.html",
    }
    html = (tmp_path / "out" / "baseline.html").read_text()
    assert "<td>≥ 80s</td>" in html and "<script" not in html
    as_json = runner.invoke(app, ["baseline", str(tmp_path / "h"), "--json"])
    assert json.loads(as_json.output)["cluster"]["cost_source"] == "bill"
    bad = runner.invoke(app, ["baseline", str(tmp_path / "nope")])
    assert bad.exit_code == 2 and "not a folder" in bad.output and "Traceback" not in bad.output
    both = runner.invoke(app, ["baseline"])
    assert both.exit_code == 2 and "give a history folder or --alibaba-pods" in both.output


def test_cli_output_is_byte_identical_across_runs(tmp_path: Path) -> None:
    write_history(history(HAND_JOBS, HAND_NODES, HAND_BILL), tmp_path / "h")
    for out in ("a", "b"):
        assert (
            runner.invoke(app, ["baseline", str(tmp_path / "h"), "--out", str(tmp_path / out)]).exit_code == 0
        )
    for name in ("baseline.parquet", "baseline.json", "baseline.html"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


_STATES = st.sampled_from(["completed", "failed", "running", "pending", "cancelled"])


@st.composite
def _jobs(draw: st.DrawFn) -> list[dict[str, object]]:
    rows = []
    for i in range(draw(st.integers(1, 12))):
        state = draw(_STATES)
        submit = float(draw(st.integers(0, 50)))
        row: dict[str, object] = {"job_id": f"j{i}", "state": state, "submit_s": submit,
                                  "team": draw(st.sampled_from(["a", "b"])),
                                  "gpus_per_pod": float(draw(st.integers(0, 4)))}  # fmt: skip
        if state != "pending" and (state != "cancelled" or draw(st.booleans())):
            sched = submit + draw(st.integers(0, 20))
            row.update(scheduled_s=float(sched), running_s=float(sched + draw(st.integers(0, 5))))
        if state in ("completed", "failed", "cancelled"):
            row["end_s"] = float(max(row.get("running_s", submit), submit) + draw(st.integers(0, 20)))  # type: ignore[call-overload]
        rows.append(row)
    return rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=_jobs())
def test_checker_recomputes_headline_figures_from_the_parquet(
    tmp_path: Path, jobs: list[dict[str, object]]
) -> None:
    h = history(jobs, HAND_NODES, None, end_s=100.0)
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    write_baseline_files(compute_baseline(h), folder, "t")
    table = pq.read_table(folder / "baseline.parquet").to_pylist()
    payload = json.loads((folder / "baseline.json").read_text())
    assert table == payload["rows"]
    # Independent recount from the jobs themselves.
    overall = next(r for r in table if r["group_by"] == "all")
    assert overall["jobs_submitted"] == len(jobs)
    for state in ("completed", "failed", "running", "pending", "cancelled"):
        assert overall[state] == sum(j["state"] == state for j in jobs)
    held = sum(
        float(j["gpus_per_pod"]) * (j.get("end_s", 100.0) - j["scheduled_s"])  # type: ignore[operator]
        for j in jobs
        if "scheduled_s" in j
    )
    assert overall["gpu_hours_allocated"] == pytest.approx(held / 3600.0)
    started = [j for j in jobs if "scheduled_s" in j]
    assert overall["started"] == len(started)
    if len(started) == len(jobs):  # no censoring: the KM mean is the plain mean of the waits
        waits = [j["scheduled_s"] - j["submit_s"] for j in started]  # type: ignore[operator]
        assert overall["wait_mean_s"] == pytest.approx(sum(waits) / len(waits))
        assert not overall["wait_mean_lower_bound"]
    for team in ("a", "b"):
        row = next((r for r in table if r["group_by"] == "team" and r["group"] == team), None)
        mine = [j for j in jobs if j["team"] == team]
        assert (row["jobs_submitted"] if row else 0) == len(mine)


@pytest.mark.skipif(not (OPENB / "openb_pod_list_default.csv").is_file(), reason="shared openb trace absent")
def test_real_alibaba_default_pod_list_baselines(tmp_path: Path) -> None:
    h = load_alibaba_history(OPENB / "openb_pod_list_default.csv", OPENB / "openb_node_list_gpu_node.csv")
    row = {(r.group_by, r.group): r for r in compute_baseline(h).rows}[("all", "all")]
    assert row.jobs_submitted == 8152
    assert (row.completed, row.failed, row.cancelled, row.running) == (5351, 1870, 897, 34)
    assert row.started == 7255 and row.wait_censored == 897


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"end_s": 12.0}, "have end_s before running_s (the clock goes backwards)"),
        ({"scheduled_s": -1.0, "admitted_s": None, "running_s": None}, "negative scheduled_s"),
        ({"submit_s": float("nan")}, "submit_s that is not a finite number"),
        ({"gpu_util_mean": 1.5}, "gpu_util_mean outside 0..1"),
        ({"end_s": 500.0}, "end_s after the record's end_s"),
        ({"state": "pending"}, "are pending yet have a scheduled_s"),
        ({"state": "running"}, "are still open yet have an end_s"),
    ],
)
def test_history_folders_with_impossible_rows_are_refused(
    tmp_path: Path, change: dict[str, object], expected: str
) -> None:
    jobs = [{**HAND_JOBS[0], **change}, *HAND_JOBS[1:]]
    write_history(history(jobs, HAND_NODES), tmp_path / "h")
    result = runner.invoke(app, ["baseline", str(tmp_path / "h")])
    assert result.exit_code == 2, result.output
    assert expected in result.output and "job 'j1'" in result.output and "Traceback" not in result.output


def test_truncated_parquet_is_a_clear_error(tmp_path: Path) -> None:
    write_history(history(HAND_JOBS, HAND_NODES), tmp_path / "h")
    data = (tmp_path / "h" / "jobs.parquet").read_bytes()
    (tmp_path / "h" / "jobs.parquet").write_bytes(data[: len(data) // 2])
    result = runner.invoke(app, ["baseline", str(tmp_path / "h")])
    assert result.exit_code == 2 and "cannot be read as Parquet" in result.output


def test_duration_only_history_folder_is_accepted_and_ended_jobs_need_a_time(tmp_path: Path) -> None:
    ok = [{"job_id": "p1", "state": "completed", "submit_s": 0.0, "run_s": 600.0, "gpus_per_pod": 1.0}]
    write_history(history(ok, HAND_NODES, end_s=1000.0), tmp_path / "ok")
    assert runner.invoke(app, ["baseline", str(tmp_path / "ok")]).exit_code == 0
    bad = [{"job_id": "p1", "state": "failed", "submit_s": 0.0}]
    write_history(history(bad, HAND_NODES), tmp_path / "bad")
    result = runner.invoke(app, ["baseline", str(tmp_path / "bad")])
    assert result.exit_code == 2 and "ended without an end_s or a run_s" in result.output


def test_markup_in_names_is_printed_as_text(tmp_path: Path) -> None:
    jobs = [{**HAND_JOBS[0], "team": "[/bold]x[red]"}, *HAND_JOBS[1:]]
    write_history(history(jobs, HAND_NODES), tmp_path / "h")
    result = runner.invoke(app, ["baseline", str(tmp_path / "h")])
    assert result.exit_code == 0, result.output
    assert "team=[/bold]x[red]" in result.output
    cal = runner.invoke(app, ["calibrate", str(tmp_path / "h"), "--no-fit"])
    assert cal.exit_code == 0, cal.output
