"""Slurm, FOCUS, Philly and SWF imports from small hand-written files in tests/data/history/.

Every expected time is seconds from the history's epoch (its earliest submit), worked out in comments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.philly import NO_WAIT
from fleetlab.spec.history.slurm import expand_hostlist
from fleetlab.spec.history.sources import detect_format, import_sources
from shared_data import shared_path

DATA = Path(__file__).parent / "data" / "history"
GiB, MiB = 2**30, 2**20


def _jobs(*sources: str, **kw: Any) -> tuple[Any, dict[str, dict[str, Any]]]:
    history = import_sources(list(sources), **kw)
    return history, {row["job_id"]: row for row in history.jobs.to_pylist()}


def test_sacct_parsable2() -> None:
    history, jobs = _jobs(str(DATA / "sacct.txt"))
    assert history.epoch == "2024-05-01T10:00:00Z"
    assert history.end_s == 7500.0  # job 1001 ended 12:05 = 2 h 5 min after the epoch
    assert history.skipped == {"slurm: job ended before it started (clocks went backwards)": 1}  # 1006
    assert sorted(jobs) == ["1001", "1002", "1003", "1004", "1005"]  # steps 1001.batch / 1001.0 folded
    j = jobs["1001"]
    # 2 nodes: 16 GPUs, 64 CPUs, 1000G -> 8 GPUs, 32 CPUs, 500 GiB per node ("pod").
    assert (j["pods"], j["gpus_per_pod"], j["cpu_per_pod"], j["memory_per_pod"]) == (2, 8.0, 32.0, 500 * GiB)
    assert (j["submit_s"], j["scheduled_s"], j["running_s"], j["end_s"], j["run_s"]) == (
        0.0,
        300.0,
        300.0,
        7500.0,
        7200.0,
    )
    assert (j["state"], j["team"], j["queue"], j["gpu_model"], j["nodes"], j["priority"]) == (
        "completed", "vision", "gpu", "H100", "gpu01,gpu02", 1000
    )  # fmt: skip
    # 1002 ran twice (--duplicates): preempted 10:20-10:50, requeued, completed 11:00-11:30.
    j = jobs["1002"]
    assert (j["submit_s"], j["scheduled_s"], j["end_s"], j["state"], j["restarts"], j["evictions"]) == (
        600.0, 1200.0, 5400.0, "completed", 1, 1
    )  # fmt: skip
    assert (jobs["1003"]["state"], jobs["1003"]["end_reason"], jobs["1003"]["evictions"]) == (
        "failed",
        "NODE_FAIL",
        1,
    )
    j = jobs["1004"]
    assert (j["state"], j["scheduled_s"], j["end_s"], j["gpus_per_pod"], j["job_class"]) == (
        "cancelled",
        None,
        2160.0,
        0.0,
        "batch",
    )
    assert (jobs["1005"]["state"], jobs["1005"]["submit_s"], jobs["1005"]["end_s"]) == (
        "pending",
        3600.0,
        None,
    )


def test_sacct_json_v0040() -> None:
    _, jobs = _jobs(str(DATA / "sacct.json"))
    j = jobs["2001"]
    # submission 1714557600 (epoch), start +300, end +7500; mem 1024000 MB over 2 nodes = 512000 MiB each.
    assert (j["submit_s"], j["scheduled_s"], j["end_s"], j["state"]) == (0.0, 300.0, 7500.0, "completed")
    assert (j["pods"], j["gpus_per_pod"], j["cpu_per_pod"], j["memory_per_pod"], j["gpu_model"]) == (
        2, 8.0, 32.0, 512000 * MiB, "H100"
    )  # fmt: skip
    j = jobs["2002_3"]  # array task 3 of job 2002, pending: requested TRES stand in for allocated
    assert (j["state"], j["submit_s"], j["gpus_per_pod"], j["cpu_per_pod"], j["priority"]) == (
        "pending",
        3600.0,
        1.0,
        4.0,
        10,
    )


def test_slurm_hostlist_expansion() -> None:
    assert expand_hostlist("gpu[01-03,07],cpu1") == ["gpu01", "gpu02", "gpu03", "gpu07", "cpu1"]
    assert expand_hostlist("n[8-10]") == ["n8", "n9", "n10"]


def test_sacct_missing_column_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("JobID|State|Submit\n1|COMPLETED|2024-05-01T10:00:00\n")
    with pytest.raises(SpecError, match=r"missing column\(s\) Start, End"):
        import_sources([f"slurm:{bad}"])
    bad.write_text("JobID|Submit|Start|End|State\n1|2024-05-01T10:00:00|noon|Unknown|RUNNING\n")
    with pytest.raises(SpecError, match=r"line 2 Start: 'noon' is not a time"):
        import_sources([f"slurm:{bad}"])


def test_focus_bill() -> None:
    history, _ = _jobs(str(DATA / "focus.csv"))
    assert history.epoch == "2024-05-01T00:00:00Z"  # no jobs: the earliest charge (the daily credit)
    assert history.skipped == {
        "focus: bill line whose charge period ends before it starts": 1,
        "focus: column 'MyCustomColumn' is not a FOCUS column (ignored)": 1,
        "focus: column 'x_ResourceGroup' is not a FOCUS column (ignored)": 1,
    }
    rows = history.bill.to_pylist()
    assert [(r["charge_start_s"], r["charge_end_s"]) for r in rows] == [
        (36000.0, 39600.0),
        (39600.0, 43200.0),
        (0.0, 86400.0),
    ]
    assert [r["pricing_category"] for r in rows] == ["On-Demand", "Commitment-Based", "Other"]
    assert [(r["billed_cost"], r["effective_cost"]) for r in rows] == [
        (98.32, 98.32),
        (70.0, 52.5),
        (-10.0, -10.0),
    ]
    assert rows[0]["tags_json"] == '{"team":"research"}' and rows[0]["region"] == "us-central1"
    assert {r["currency"] for r in rows} == {"USD"}


def test_focus_unknown_currency_and_missing_columns(tmp_path: Path) -> None:
    text = (DATA / "focus.csv").read_text().replace(",USD,", ",XYZ,", 1)
    bad = tmp_path / "bill.csv"
    bad.write_text(text)
    with pytest.raises(SpecError, match=r"line 2, column BillingCurrency: 'XYZ' is not an ISO 4217"):
        import_sources([f"focus:{bad}"])
    bad.write_text("BilledCost,ChargePeriodStart\n1,2024-05-01T00:00:00Z\n")
    with pytest.raises(
        SpecError, match=r"missing FOCUS column\(s\) EffectiveCost, ChargePeriodEnd, BillingCurrency"
    ):
        import_sources([f"focus:{bad}"])


def test_swf() -> None:
    history, jobs = _jobs(str(DATA / "tiny.swf"))
    assert history.epoch == "2024-05-01T10:00:00Z"  # UnixStartTime 1714557600 + job 1's submit 0
    assert history.skipped == {"swf: partial execution line (status 2) folded into its job": 1}
    j = jobs["tiny/1"]
    assert (j["submit_s"], j["scheduled_s"], j["end_s"], j["state"], j["cpu_per_pod"], j["gpus_per_pod"]) == (
        0.0, 60.0, 3660.0, "completed", 8.0, 0.0
    )  # fmt: skip
    assert (jobs["tiny/2"]["state"], jobs["tiny/2"]["scheduled_s"], jobs["tiny/2"]["end_s"]) == (
        "cancelled",
        None,
        None,
    )
    j = jobs["tiny/3"]
    # submit 200 + wait 300 = 500; + run 1200 = 1700; memory 4096 KB x 16 processors = 64 MiB.
    assert (j["scheduled_s"], j["end_s"], j["state"], j["memory_per_pod"], j["team"], j["queue"]) == (
        500.0, 1700.0, "failed", 64 * MiB, "group-2", "queue-2"
    )  # fmt: skip
    j = jobs["tiny/4"]  # a checkpointed job: one partial line (status 2), then the last part (status 3)
    assert (j["submit_s"], j["scheduled_s"], j["end_s"], j["state"], j["restarts"]) == (
        1000.0,
        1050.0,
        1550.0,
        "completed",
        1,
    )
    _, as_gpus = _jobs(str(DATA / "tiny.swf"), swf_processors="gpus")
    assert (as_gpus["tiny/1"]["gpus_per_pod"], as_gpus["tiny/1"]["cpu_per_pod"]) == (8.0, 0.0)


def test_swf_bad_lines(tmp_path: Path) -> None:
    bad = tmp_path / "bad.swf"
    bad.write_text("; UnixStartTime: 1714557600\n1 0 60 3600 8\n")
    with pytest.raises(SpecError, match="line 2: 5 fields; SWF job lines have 18"):
        import_sources([str(bad)])
    bad.write_text("1 0 60 3600 8 -1 -1 8 7200 -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(SpecError, match="UnixStartTime"):
        import_sources([f"swf:{bad}"])


def test_philly_job_log() -> None:
    history, jobs = _jobs(str(DATA / "philly_log.json"))
    assert history.epoch == "2017-10-03T08:00:00Z"
    j = jobs["application_1506638472019_10238"]
    # Two attempts: first start 08:10 (600 s), last end 09:30 (5400 s); 2 machines x 2 GPUs each time, on
    # m1, m2 and then m3, m4: the job's nodes are all four.
    assert (j["submit_s"], j["scheduled_s"], j["end_s"], j["restarts"], j["pods"], j["gpus_per_pod"]) == (
        0.0, 600.0, 5400.0, 1, 2, 2.0
    )  # fmt: skip
    assert (j["state"], j["team"], j["nodes"], j["user"]) == ("completed", "6214e9", "m1,m2,m3,m4", "u1")
    killed = jobs["application_1506638472019_10239"]
    assert (killed["state"], killed["submit_s"], killed["end_s"]) == ("cancelled", 300.0, None)
    failed = jobs["application_1506638472019_10240"]
    assert (failed["state"], failed["scheduled_s"], failed["end_s"], failed["gpus_per_pod"]) == (
        "failed",
        390.0,
        420.0,
        1.0,
    )


def test_philly_summary_csv(tmp_path: Path) -> None:
    summary = tmp_path / "philly.csv"
    summary.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
                       "2017-10-09 06:13:03,2951.0,8,23608.0,6214e9\n")  # fmt: skip
    history, jobs = _jobs(str(summary))
    assert history.epoch == "2017-10-09T06:13:03Z"
    j = jobs["philly/2"]
    # No start instant in the summary: the job starts at submit (wait 0, an assumption shown among the
    # skip reasons) and ends its measured duration later.
    assert (j["submit_s"], j["scheduled_s"], j["end_s"], j["run_s"], j["gpus_per_pod"], j["state"]) == (
        0.0, 0.0, 2951.0, 2951.0, 8.0, "completed"
    )  # fmt: skip
    assert history.skipped == {f"philly: {NO_WAIT}": 2}
    assert jobs["philly/1"]["submit_s"] == 2932.0  # 07:01:55 - 06:13:03


@pytest.mark.skipif(
    not shared_path("traces", "pollux", "traces", "philly.csv").is_file(), reason="shared traces absent"
)
def test_pollux_philly_trace_imports_whole() -> None:
    history = import_sources([str(shared_path("traces", "pollux", "traces", "philly.csv"))])
    assert history.jobs.num_rows == 82_247 and history.skipped == {f"philly: {NO_WAIT}": 82_247}
    assert set(history.jobs.column("state").to_pylist()) == {"completed"}


def test_format_detection(tmp_path: Path) -> None:
    assert [detect_format(DATA / n) for n in ("sacct.txt", "sacct.json", "focus.csv", "tiny.swf", "philly_log.json")] == [
        "slurm", "slurm", "focus", "swf", "philly"
    ]  # fmt: skip
    odd = tmp_path / "notes.txt"
    odd.write_text("hello\n")
    with pytest.raises(SpecError, match="FORMAT:PATH"):
        detect_format(odd)


def test_gcp_billing_export_lands_in_usd(tmp_path: Path) -> None:
    export = tmp_path / "gcp.csv"
    export.write_text(
        "service.description,sku.description,usage_start_time,usage_end_time,project.id,labels,cost,currency,"
        "currency_conversion_rate,cost_type,credits\n"
        'Compute Engine,Nvidia H100 80GB GPU running in Americas,2024-05-01T10:00:00Z,2024-05-01T11:00:00Z,p,team=a,'
        '92.0,EUR,0.92,regular,"[{""name"": ""CUD"", ""amount"": -18.4, ""type"": ""COMMITTED_USAGE_DISCOUNT""}]"\n'
    )  # fmt: skip
    history = import_sources([str(export)])
    (row,) = history.bill.to_pylist()
    # 92 EUR at 0.92 EUR per USD = 100 USD billed; credits -18.4 EUR = -20 USD -> 80 USD effective.
    assert (row["billed_cost"], row["effective_cost"], row["currency"]) == (
        pytest.approx(100.0),
        pytest.approx(80.0),
        "USD",
    )
    assert (row["charge_start_s"], row["charge_end_s"], row["tags_json"]) == (0.0, 3600.0, '{"team":"a"}')


def test_values_out_of_range_are_errors_not_overflows(tmp_path: Path) -> None:
    bad = tmp_path / "huge.swf"
    # 1e7 processors x 3e9 KB each would overflow a 64-bit byte count.
    bad.write_text(
        "; UnixStartTime: 1714557600\n1 0 60 3600 10000000 -1 -1 8 7200 3000000000 1 1 1 -1 1 -1 -1 -1\n"
    )
    with pytest.raises(SpecError, match=r"job huge/1: memory_per_pod .* is outside the allowed"):
        import_sources([str(bad)])
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(
        "JobID|Submit|Start|End|State|Priority\n7|2024-05-01T10:00:00|Unknown|Unknown|PENDING|99999999999999999999\n"
    )
    with pytest.raises(SpecError, match=r"job 7: priority"):
        import_sources([f"slurm:{sacct}"])
