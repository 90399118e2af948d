"""OpenCost allocation exports into a history's bill lines: the ``/allocation`` API response (JSON) and the
CSV export, with upstream's own CSV export vectors (opencost/opencost pkg/costmodel/csv_export_test.go
@0c0eb271, Test_UpdateCSV); every allocation's lines add up to its totalCost, and ``baseline`` reports
the history's cost from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.metrics.baseline_cost import cluster_cost
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.opencost import read_opencost
from fleetlab.spec.history.sources import detect_format, import_sources

HISTORY = Path(__file__).resolve().parents[1] / "examples" / "history"
KUBECTL = [HISTORY / n for n in ("pods-jobs.json", "workloads.json", "events.json", "nodes.json")]
runner = CliRunner()

#: Test_UpdateCSV "previous data doesn't exist, upload new data": the file OpenCost writes for one
#: allocation on 2021-01-01 (CPUCost 0.3, RAMCost 0.6, NetworkCost 0.9, PVCost 2, GPUCost 0.8, GPUs 2).
UPSTREAM_EXPORT = (
    "Date,Namespace,ControllerKind,ControllerName,Pod,Container,Labels,CPUCoreUsageAverage,CPUCoreRequestAverage,"
    "RAMBytesUsageAverage,RAMBytesRequestAverage,NetworkReceiveBytes,NetworkTransferBytes,GPUs,PVBytes,CPUCost,"
    "RAMCost,NetworkCost,PVCost,GPUCost,TotalCost\n"
    '2021-01-01,test-namespace,test-controller-kind,test-controller-name,test-pod,test-container,"{""test-label1"":'
    '""test-value1"",""test-label2"":""test-value2""}",0.1,0.2,0.4,0.5,11,10,2,2,0.3,0.6,0.9,2,0.8,4.6000000000000005\n'
)
#: Test_UpdateCSV "merge new data with previous data (with different CSV structure)": the merged file, whose
#: first row predates most columns (TotalCost empty) and whose second row has CPUCost 1 only.
UPSTREAM_MERGED = (
    "Date,Namespace,CPUCoreUsageAverage,CPUCoreRequestAverage,CPUCost,RAMBytesUsageAverage,RAMBytesRequestAverage,"
    "RAMCost,ControllerKind,ControllerName,Pod,Container,Labels,NetworkReceiveBytes,NetworkTransferBytes,GPUs,"
    "PVBytes,NetworkCost,PVCost,GPUCost,TotalCost\n"
    "2021-01-01,test-namespace,0.1,0.2,0.3,0.4,0.5,0.6,,,,,,,,,,,,,\n"
    "2021-01-02,test-namespace,0,0,1,0,0,0,,,,,,0,0,0,0,0,0,0,1\n"
)
DAY = 86400.0
JAN_1_2021 = 1609459200.0


def _lines(tmp_path: Path, text: str, name: str = "export.csv") -> list[dict[str, object]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert detect_format(path) == "opencost"
    data = read_opencost(path)
    assert data.bill is not None
    return list(data.bill.to_pylist())


def test_upstream_csv_export_row_becomes_one_line_per_cost_component(tmp_path: Path) -> None:
    rows = _lines(tmp_path, UPSTREAM_EXPORT)
    assert {r["sku"]: r["billed_cost"] for r in rows} == {
        "opencost:gpu": 0.8, "opencost:cpu": 0.3, "opencost:ram": 0.6, "opencost:pv": 2.0, "opencost:network": 0.9,
    }  # fmt: skip
    # 0.3 + 0.6 + 0.9 + 2 + 0.8 = 4.6; TotalCost's 4.6000000000000005 differs by rounding only: no other line
    assert sum(r["effective_cost"] for r in rows) == pytest.approx(4.6)
    first = rows[0]
    assert (first["charge_start_s"], first["charge_end_s"]) == (JAN_1_2021, JAN_1_2021 + DAY)
    assert first["resource_id"] == "test-namespace/test-controller-kind:test-controller-name/test-pod"
    tags = json.loads(str(first["tags_json"]))
    assert tags["namespace"] == "test-namespace" and tags["label:test-label2"] == "test-value2"
    assert {r["currency"] for r in rows} == {"USD"}


def test_upstream_merged_csv_rows_without_total_sum_their_components(tmp_path: Path) -> None:
    rows = _lines(tmp_path, UPSTREAM_MERGED)
    day1 = [r for r in rows if r["charge_start_s"] == JAN_1_2021]
    day2 = [r for r in rows if r["charge_start_s"] == JAN_1_2021 + DAY]
    assert {r["sku"]: r["billed_cost"] for r in day1} == {"opencost:cpu": 0.3, "opencost:ram": 0.6}
    assert [(r["sku"], r["billed_cost"]) for r in day2] == [("opencost:cpu", 1.0)]


def test_allocation_api_response_lines_add_up_to_total_cost(tmp_path: Path) -> None:
    """The shipped response: three pods and the cluster's __idle__ allocation over 10:00-11:00 UTC."""
    doc = json.loads((HISTORY / "opencost-allocation.json").read_text(encoding="utf-8"))
    allocations = doc["data"][0]
    data = read_opencost(HISTORY / "opencost-allocation.json")
    assert data.bill is not None
    rows = data.bill.to_pylist()
    for name, alloc in allocations.items():
        resource = "ml-prod" if name == "__idle__" else None
        mine = [
            r for r in rows if json.loads(str(r["tags_json"])).get("pod") == alloc["properties"].get("pod")
        ]
        assert sum(r["billed_cost"] for r in mine) == pytest.approx(alloc["totalCost"]), (name, resource)
    train = [r for r in rows if r["resource_id"] == "team-a/job:train-1/train-1-0-abcde"]
    assert {r["sku"] for r in train} == {"opencost:gpu", "opencost:cpu", "opencost:ram", "opencost:network"}
    assert (
        train[0]["charge_end_s"] - train[0]["charge_start_s"] == 56 * 60
    )  # its own start/end, not the window
    # a rounding residue beyond the components becomes an "other" line, so lines still sum to totalCost
    alloc = dict(allocations["__idle__"], totalCost=146.5)
    (tmp_path / "a.json").write_text(
        json.dumps({"code": 200, "data": [{"__idle__": alloc}]}), encoding="utf-8"
    )
    idle = read_opencost(tmp_path / "a.json").bill
    assert idle is not None
    other = [r for r in idle.to_pylist() if r["sku"] == "opencost:other"]
    assert [r["billed_cost"] for r in other] == pytest.approx([146.5 - 146.17531])


def test_import_and_baseline_cost_from_opencost_beside_kubectl(tmp_path: Path) -> None:
    history = import_sources([*map(str, KUBECTL), str(HISTORY / "opencost-allocation.json")])
    cost = cluster_cost(history)
    # 37.27948 + 37.1685 + 52.39306 + 146.17531 (the idle allocation) = 273.01635
    assert (cost.source, cost.currency) == ("bill", "USD")
    assert cost.total == pytest.approx(273.01635)
    assert history.jobs.num_rows == 5  # the jobs are the kubectl capture's; OpenCost adds cost only
    out = tmp_path / "history"
    result = runner.invoke(
        app, ["import", *map(str, KUBECTL), str(HISTORY / "opencost-export.csv"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "from 5 source(s)" in result.output
    baseline = runner.invoke(app, ["baseline", str(out), "-o", "json"])
    cluster = json.loads(baseline.stdout)["cluster"]
    assert (cluster["cost_source"], cluster["cost_total"]) == ("bill", pytest.approx(37.27948 + 52.39306))


@pytest.mark.parametrize(
    ("text", "name", "message"),
    [
        ('{"code": 500, "data": null, "message": "boom"}', "a.json", "'code' is 500"),
        (
            '{"code": 200, "data": [{"x": {"totalCost": "a lot", "start": "2024-05-01T10:00:00Z", '
            '"end": "2024-05-01T11:00:00Z"}}]}',
            "b.json",
            "data[0].x.totalCost: 'a lot' is not a number",
        ),
        ('{"code": 200, "data": [{"x": {"totalCost": 1}}]}', "c.json", "needs start and end"),
        (
            "Date,Namespace,TotalCost\nyesterday,ns,1\n",
            "d.csv",
            "line 2, column Date: 'yesterday' is not a date",
        ),
        ("Date,Namespace,TotalCost\n2024-05-01,ns,1e400\n", "e.csv", "line 2, column TotalCost"),
    ],
)
def test_bad_exports_name_the_place(tmp_path: Path, text: str, name: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace("[", r"\[")):
        import_sources([f"opencost:{path}"])
