"""Cost ledger rows add up to the bill split, GCP prices split into host and GPU parts as the catalog's two
rows do, and reconciliation against the fixture bill written in the standard usage cost export layout
(service.description, sku.description, usage_start_time, usage_end_time, project.id, labels, cost,
currency, usage.amount, usage.unit, credits, cost_type)."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.cost.ledger import gpu_price_share
from fleetlab.cost.ledger_io import ledger_table
from fleetlab.cost.reconcile import category, reconcile, spread
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.spec.billing_export import parse_billing_export, read_billing_export
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plan"
SCENARIO = EXAMPLES / "gcp-cluster.yaml"
BILL = EXAMPLES / "gcp-billing-export.csv"
runner = CliRunner()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ledger") / "run"
    result = runner.invoke(cli.app, ["plan", "ledger", str(SCENARIO), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_ledger_adds_up_to_the_bill_split() -> None:
    resolved = load(str(SCENARIO))
    run = run_one(resolved)
    ledger = ledger_table(resolved.scenario.cluster.pools, run.result, "t").to_pydict()
    summary = summarize(run.result)
    assert sum(ledger["cost_usd"]) == pytest.approx(summary.cost_total, rel=1e-12)
    idle = sum(c for c, b in zip(ledger["cost_usd"], ledger["category"], strict=True) if b == "idle")
    assert idle == pytest.approx(summary.cost_idle, rel=1e-12)
    for host, gpu, total in zip(
        ledger["host_cost_usd"], ledger["gpu_cost_usd"], ledger["cost_usd"], strict=True
    ):
        assert host + gpu == pytest.approx(total)
    assert set(ledger["currency"]) == {"USD"} and set(ledger["tax_included"]) == {False}
    jobs = {j for j in ledger["job_id"] if j}
    assert jobs and all(p for p, j in zip(ledger["project"], ledger["job_id"], strict=True) if j)


def test_gcp_gpu_share_is_the_accelerator_row() -> None:
    pools = {p.name: p for p in load(str(SCENARIO)).scenario.cluster.pools}
    # a3-highgpu-8g us-central1: host 9.46006 + 8x H100 33.60609 (pricing notes §3.1)
    assert gpu_price_share(pools["h100"]) == pytest.approx(33.60609 / 43.06615)
    assert gpu_price_share(pools["l4"]) == pytest.approx(2.24016 / 4.00166)
    assert gpu_price_share(pools["cpu"]) is None


def test_spread_over_periods() -> None:
    a = datetime(2026, 11, 2, 23, 30, tzinfo=UTC)
    b = datetime(2026, 11, 3, 1, 0, tzinfo=UTC)
    parts = spread(a, b, 90.0, "day")
    assert parts == [(datetime(2026, 11, 2, tzinfo=UTC), 30.0), (datetime(2026, 11, 3, tzinfo=UTC), 60.0)]
    assert spread(a, a, 5.0, "hour") == [(datetime(2026, 11, 2, 23, tzinfo=UTC), 5.0)]


def _bill_rows() -> list[dict[str, str]]:
    with BILL.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_fixture_reconciles_by_category(run_dir: Path) -> None:
    raw = _bill_rows()
    ledger = pq.read_table(run_dir / "ledger.parquet").to_pydict()
    export = read_billing_export(BILL)
    result = reconcile(export.rows, ledger, datetime(2026, 11, 2, tzinfo=UTC))
    cats = {c.category: c for c in result.categories}
    credits = sum(float(x["amount"]) for r in raw for x in json.loads(r["credits"]))
    assert result.bill_total_usd == pytest.approx(sum(float(r["cost"]) for r in raw) + credits)
    assert result.credits_usd == pytest.approx(credits) and credits < 0
    gpu_rows = [r for r in raw if "GPU running" in r["sku.description"]]
    assert cats["gpu"].bill_usd == pytest.approx(sum(float(r["cost"]) for r in gpu_rows))
    assert cats["egress"].bill_usd == pytest.approx(
        sum(float(r["cost"]) for r in raw if "Egress" in r["sku.description"])
    )
    storage = [
        r for r in raw if "PD Capacity" in r["sku.description"] or r["service.description"] == "Cloud Storage"
    ]
    assert cats["storage"].bill_usd == pytest.approx(sum(float(r["cost"]) for r in storage))
    summary = json.loads((run_dir / "summary.json").read_text())["summary"]
    assert result.estimate_total_usd == pytest.approx(summary["cost_total"])
    assert cats["gpu"].estimate_usd == pytest.approx(sum(ledger["gpu_cost_usd"]))
    assert result.idle_estimate_usd == pytest.approx(summary["cost_idle"])
    assert result.missing_in_estimate_usd == pytest.approx(
        cats["storage"].bill_usd + cats["egress"].bill_usd + cats["other"].bill_usd + cats["tax"].bill_usd
    )
    # the fixture bills H100 hours at the us-east4 GPU rate: that is the whole GPU gap
    h100_bill = sum(float(r["cost"]) for r in gpu_rows if "H100" in r["sku.description"])
    h100_est = sum(g for g, p in zip(ledger["gpu_cost_usd"], ledger["pool"], strict=True) if p == "h100")
    assert h100_bill == pytest.approx(h100_est * 9.79655 / 4.20076, rel=1e-4)
    assert cats["gpu"].gap_usd == pytest.approx(h100_bill - h100_est, rel=1e-3)
    groups = result.by_group
    assert sum(b for b, _ in groups.values()) == pytest.approx(result.bill_total_usd)
    assert sum(e for _, e in groups.values()) == pytest.approx(result.estimate_total_usd)
    assert {g for g, _ in groups} == {"(unallocated)", "research", "serving", "data"}


def test_reconcile_cli_table_and_json(run_dir: Path) -> None:
    args = ["plan", "reconcile", "--bill", str(BILL), "--run", str(run_dir)]
    table = runner.invoke(cli.app, args)
    assert table.exit_code == 0, table.output
    assert "storage (missing in estimate)" in table.stdout and "research" in table.stdout
    data = json.loads(runner.invoke(cli.app, [*args, "--json", "--period", "hour"]).stdout)
    assert data["period"] == "hour" and len({r["period_start"] for r in data["by_project_period"]}) == 7
    assert data["gap_usd"] == pytest.approx(data["bill_total_usd"] - data["estimate_total_usd"])


HEADER = "service.description,sku.description,usage_start_time,usage_end_time,project.id,labels,cost,currency,currency_conversion_rate,cost_type\n"


def test_export_reader_formats_and_categories() -> None:
    text = HEADER + (
        "Compute Engine,Nvidia L4 GPU running in Americas,2026-11-02T00:00:00Z,2026-11-02T01:00:00Z,p,team=a;env=prod,9.2,EUR,0.92,regular\n"
        "Invoice,Tax,2026-11-02 00:00:00 UTC,2026-11-02 01:00:00 UTC,p,,1.5,USD,1,tax\n"
        "Compute Engine,N2 Instance Core running in Americas,2026-11-02T00:00:00Z,2026-11-02T01:00:00Z,p,,2,USD,1,regular\n"
    )
    rows = parse_billing_export("b.csv", text).rows
    assert rows[0].cost_usd == pytest.approx(10.0) and rows[0].labels == {"team": "a", "env": "prod"}
    assert [category(r) for r in rows] == ["gpu", "tax", "compute"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("service.description,cost\nx,1\n", "line 1: missing column(s) sku.description"),
        (
            HEADER + "C,s,2026-11-02T00:00:00Z,2026-11-02T01:00:00Z,p,,abc,USD,1,regular\n",
            "line 2, column cost: 'abc' is not a number",
        ),
        (
            HEADER + "C,s,yesterday,2026-11-02T01:00:00Z,p,,1,USD,1,regular\n",
            "line 2, column usage_start_time/usage_end_time",
        ),
        (
            HEADER + "C,s,2026-11-02T02:00:00Z,2026-11-02T01:00:00Z,p,,1,USD,1,regular\n",
            "line 2: usage_end_time is before",
        ),
        (
            HEADER + "C,s,2026-11-02T00:00:00Z,2026-11-02T01:00:00Z,p,,1,EUR,,regular\n",
            "needs a currency_conversion_rate",
        ),
        (
            HEADER + 'C,s,2026-11-02T00:00:00Z,2026-11-02T01:00:00Z,p,"[1,2]",1,USD,1,regular\n',
            "line 2, column labels",
        ),
    ],
)
def test_export_reader_errors_name_line_and_column(body: str, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_billing_export("b.csv", body)


def test_reconcile_cli_bad_input_exit_2(tmp_path: Path, run_dir: Path) -> None:
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    cases = [
        (["--bill", str(tmp_path / "none.csv"), "--run", str(run_dir)], "billing export CSV not found"),
        (["--bill", str(tmp_path / "bad.csv"), "--run", str(run_dir)], "missing column(s)"),
        (["--bill", str(BILL), "--run", str(tmp_path)], "simulate SCENARIO --out DIR"),
        (["--bill", str(BILL), "--run", str(run_dir), "--period", "week"], "allowed: hour, day, month"),
        (["--bill", str(BILL), "--run", str(run_dir), "--start", "noon"], "not a timestamp"),
    ]
    for args, message in cases:
        result = runner.invoke(cli.app, ["plan", "reconcile", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)


def test_gpu_gap_splits_into_price_and_quantity(run_dir: Path) -> None:
    """Price effect (p_bill − p_est) × q_bill plus quantity effect p_est × (q_bill − q_est) is the whole
    GPU gap; the quantities are the bill's usage seconds and the ledger's GPU-hours."""
    raw = _bill_rows()
    ledger = pq.read_table(run_dir / "ledger.parquet").to_pydict()
    result = reconcile(read_billing_export(BILL).rows, ledger, datetime(2026, 11, 2, tzinfo=UTC))
    split = result.gpu_split
    assert split is not None
    gpu_rows = [r for r in raw if "GPU running" in r["sku.description"]]
    assert {r["usage.unit"] for r in gpu_rows} == {"seconds"}
    assert split.bill_quantity == pytest.approx(sum(float(r["usage.amount"]) for r in gpu_rows) / 3600)
    gpu_node_hours = sum(h for h, u in zip(ledger["unit_hours"], ledger["unit"], strict=True) if u == "gpu")
    assert split.estimate_quantity == pytest.approx(gpu_node_hours)
    cats = {c.category: c for c in result.categories}
    assert split.price_effect_usd + split.quantity_effect_usd == pytest.approx(cats["gpu"].gap_usd)
    # by hand: p = dollars / GPU-hours on each side
    p_bill = cats["gpu"].bill_usd / split.bill_quantity
    p_est = cats["gpu"].estimate_usd / split.estimate_quantity
    assert split.price_effect_usd == pytest.approx((p_bill - p_est) * split.bill_quantity)
    assert result.as_dict()["price_quantity"][0]["unit"] == "GPU-hours"
