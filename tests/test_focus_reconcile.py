"""``plan reconcile`` on FOCUS bills: an AWS CUR 2.0 FOCUS export (the 48 columns of "FOCUS 1.0 with AWS
columns", AWS Data Exports table dictionary) tied to a run with its GPU gap split into price and quantity by
hand; Azure, OCI and GCP FOCUS lines classed and converted; stated exchange and tax rates; disk and egress
estimates from the attached-price catalog; grant evidence per project and support period, with bill lines
tied to jobs by a job label.

The run (examples/plan/aws-a10g-cluster.yaml): two g5.12xlarge nodes (4 A10G, $5.672/h on-demand, built-in
catalog), two 2-hour jobs, one per node — 16 GPU-hours and 2 × 2 h × $5.672 = $22.688 estimated. The bill
(examples/plan/aws-focus-bill.csv): node a10g-0 (train-2, team vision) billed 2 hours and node a10g-1
(train-1, research) 3 hours, all at the Savings Plan rate $4.5376/h; two 200 GB gp3 volumes for 3 hours;
50 GB of internet egress at $0.09; 10 % tax; a $10 credit.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.cost.attached import AttachedRequest, attached_lines
from fleetlab.cost.bill_lines import category, gpu_hours, instance_gpus
from fleetlab.cost.evidence import SupportPeriod, grant_evidence
from fleetlab.cost.reconcile import Rate, reconcile
from fleetlab.spec.attached_catalog import builtin_attached_catalog
from fleetlab.spec.errors import SpecError
from fleetlab.spec.focus_bill import read_focus_bill
from fleetlab.spec.history.sources import import_sources

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plan"
BILL = EXAMPLES / "aws-focus-bill.csv"
START = datetime(2026, 11, 2, tzinfo=UTC)
runner = CliRunner()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("aws") / "run"
    result = runner.invoke(app, ["simulate", str(EXAMPLES / "aws-a10g-cluster.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_aws_focus_bill_ties_to_the_run_with_price_and_quantity_split(run_dir: Path) -> None:
    ledger = pq.read_table(run_dir / "ledger.parquet").to_pydict()
    export, skipped = read_focus_bill(BILL)
    assert len(export.rows) == 10  # every column is FOCUS 1.0's or one of AWS's five x_ columns:
    assert {reason.split("'")[1] for reason in skipped.skipped} == {
        "x_CostCategories", "x_Discounts", "x_Operation", "x_ServiceCode", "x_UsageType"
    }  # fmt: skip
    assert [category(r) for r in export.rows] == ["gpu"] * 5 + ["storage"] * 2 + ["egress", "tax", "other"]
    assert {r.instance_type for r in export.rows[:5]} == {"g5.12xlarge"} and instance_gpus("g5.12xlarge") == 4
    assert [gpu_hours(r) for r in export.rows[:5]] == [4.0] * 5  # 1 instance-hour ("Hrs") x 4 GPUs
    prices = builtin_attached_catalog()
    attached = attached_lines(ledger, AttachedRequest(disk=("gp3", 200.0), egress=("internet", 50.0)), prices)
    tax = Rate("tax", "tax", 0.10, "the bill's tax line", "2026-11-02")
    result = reconcile(export.rows, ledger, START, "day", "user:team", attached=attached, tax=tax)
    cats = {c.category: c for c in result.categories}
    # GPU: bill 5 lines x $4.5376 = $22.688 for 5 instance-hours x 4 = 20 GPU-hours;
    # estimate 2 nodes x 2 h x $5.672 = $22.688 for 2 x 2 h x 4 = 16 GPU-hours. Gap 0, but:
    assert cats["gpu"].bill_usd == pytest.approx(22.688) and cats["gpu"].estimate_usd == pytest.approx(22.688)
    split = result.gpu_split
    assert split is not None
    assert (split.bill_quantity, split.estimate_quantity) == pytest.approx((20.0, 16.0))
    assert split.bill_price == pytest.approx(1.1344)  # 22.688 / 20 = 4.5376 / 4 per GPU-hour
    assert split.estimate_price == pytest.approx(1.418)  # 22.688 / 16 = 5.672 / 4
    # price effect (1.1344 - 1.418) x 20 = -5.672: the Savings Plan rate is 20 % below on-demand;
    # quantity effect 1.418 x (20 - 16) = +5.672: node a10g-1 was billed an hour after its job ended.
    assert split.price_effect_usd == pytest.approx(-5.672)
    assert split.quantity_effect_usd == pytest.approx(5.672)
    # storage: bill 2 x 200 GB x 3 h / 730 h x $0.08 = 2 x 0.065753 (rounded in the file) = 0.131506;
    # estimate 200 GB x (2 + 2) node-hours / 730 x $0.08 = 0.087671.
    assert cats["storage"].bill_usd == pytest.approx(0.131506)
    assert cats["storage"].estimate_usd == pytest.approx(200 * 4 / 730 * 0.08)
    # egress: 50 GB x $0.09 = $4.50 on both sides; tax: bill 10 % of 27.319506 = 2.731951,
    # estimate 10 % of (22.688 + 0.087671 + 4.5) = 2.727567.
    assert cats["egress"].bill_usd == cats["egress"].estimate_usd == pytest.approx(4.5)
    assert cats["tax"].bill_usd == pytest.approx(2.731951)
    assert cats["tax"].estimate_usd == pytest.approx(0.1 * (22.688 + 200 * 4 / 730 * 0.08 + 4.5))
    assert result.credits_usd == pytest.approx(-10.0) and result.missing_in_estimate_usd == 0.0
    assert result.bill_total_usd == pytest.approx(22.688 + 0.131506 + 4.5 + 2.731951 - 10.0)
    by = {p: v for (p, _), v in result.by_group.items()}
    assert by["research"] == pytest.approx((3 * 4.5376 + 0.065753, 11.344))
    assert by["vision"] == pytest.approx((2 * 4.5376 + 0.065753, 11.344))
    assert sum(e for _, e in result.by_group.values()) == pytest.approx(result.estimate_total_usd)


def test_grant_evidence_per_project_and_support_period_with_job_links(run_dir: Path) -> None:
    ledger = pq.read_table(run_dir / "ledger.parquet").to_pydict()
    rows = read_focus_bill(BILL)[0].rows
    periods = [SupportPeriod("2026-11", datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))]
    evidence = grant_evidence(rows, ledger, START, periods, "user:team", "user:job")
    table = {r.project: r for r in evidence.rows}
    research = table["research"]
    # 3 instance-hours at $4.5376 + one gp3 volume $0.065753; 12 GPU-hours billed, 8 estimated.
    assert research.bill_usd == pytest.approx(13.6128 + 0.065753) and research.bill_lines == 4
    assert (research.gpu_hours_billed, research.gpu_hours_estimated) == pytest.approx((12.0, 8.0))
    assert research.estimate_usd == pytest.approx(11.344)
    unallocated = table["(unallocated)"]
    assert unallocated.credits_usd == pytest.approx(-10.0) and unallocated.bill_lines == 3
    assert evidence.outside_usd == 0.0
    links = {j.job: j for j in evidence.jobs}
    assert links["train-1"].bill_usd == pytest.approx(3 * 4.5376) and links["train-1"].project == "research"
    assert links["train-2"].bill_usd == pytest.approx(2 * 4.5376) and links["train-2"].bill_lines == 2
    assert links["train-2"].estimate_usd == pytest.approx(11.344) and evidence.unlinked_lines == 5
    # two support periods split a line by time: 00:00-01:30 and 01:30-03:00 halve the 3-hour lines
    halves = [
        SupportPeriod("a", START, datetime(2026, 11, 2, 1, 30, tzinfo=UTC)),
        SupportPeriod("b", datetime(2026, 11, 2, 1, 30, tzinfo=UTC), datetime(2026, 11, 2, 3, tzinfo=UTC)),
    ]
    split = grant_evidence(rows, ledger, START, halves, "user:team")
    egress = [r for r in split.rows if r.project == "(unallocated)"]
    assert [r.bill_usd for r in egress] == pytest.approx([(4.5 + 2.731951) / 2] * 2)


def test_reconcile_cli_reads_focus_with_stated_inputs_and_evidence(run_dir: Path) -> None:
    args = ["plan", "reconcile", "--bill", str(BILL), "--run", str(run_dir), "--group-label", "user:team",
            "--disk", "gp3=200", "--egress", "internet=50", "--tax-rate", "0.1", "--tax-source", "bill",
            "--tax-date", "2026-11-02", "--support-period", "2026-11=2026-11-01..2026-12-01",
            "--job-label", "user:job"]  # fmt: skip
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "price -5.67" in table.stdout and "quantity +5.67" in table.stdout
    assert "disk gp3" in table.stdout and "Stated inputs" in table.stdout and "train-1" in table.stdout
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert data["price_quantity"][0]["price_effect_usd"] == pytest.approx(-5.672)
    assert [r["kind"] for r in data["rates"]] == ["tax"]
    assert {a["item"] for a in data["attached"]} == {"disk gp3", "egress internet"}
    assert all(a["source"].startswith("https://") for a in data["attached"])
    assert {r["project"] for r in data["evidence"]["rows"]} == {"(unallocated)", "research", "vision"}


def _focus(tmp_path: Path, header: list[str], *rows: list[str]) -> Path:
    required = ["BilledCost", "EffectiveCost", "ChargePeriodStart", "ChargePeriodEnd", "BillingCurrency"]
    path = tmp_path / "focus.csv"
    lines = [",".join(required + header)]
    for row in rows:
        lines.append(
            ",".join(["1", row[0], "2026-11-02T00:00:00Z", "2026-11-02T01:00:00Z", row[1], *row[2:]])
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_azure_oci_gcp_and_focus_1_2_lines_are_classed(tmp_path: Path) -> None:
    header = ["ProviderName", "ChargeCategory", "ServiceCategory", "SkuMeter", "ChargeDescription",
              "ConsumedQuantity", "ConsumedUnit"]  # fmt: skip
    path = _focus(
        tmp_path,
        header,
        ["9.20", "EUR", "Microsoft", "Usage", "Compute", "NC24ads A100 v4", "NC24ads A100 v4", "1", "1 Hour"],
        [
            "8.00",
            "USD",
            "Oracle",
            "Usage",
            "Compute",
            "GPU",
            "BM.GPU.A100-v2.8 GPU Per Hour",
            "8",
            "GPU Hours",
        ],
        [
            "2.50",
            "USD",
            "Google Cloud",
            "Usage",
            "Compute",
            "",
            "Nvidia L4 GPU running in Americas",
            "3600",
            "seconds",
        ],
        ["5.67", "USD", "AWS", "Usage", "Compute", "USE1-BoxUsage:g5.12xlarge", "g5 usage", "1", "Hrs"],
        [
            "0.50",
            "EUR",
            "Microsoft",
            "Usage",
            "Compute",
            "Windows Server license",
            "Windows Server license",
            "1",
            "1 Hour",
        ],
    )
    with pytest.raises(SpecError, match=r"line 2, column BillingCurrency: EUR needs an exchange rate"):
        read_focus_bill(path)
    rows = read_focus_bill(path, {"EUR": 0.92})[0].rows
    assert rows[0].instance_type == "Standard_NC24ads_A100_v4" and rows[0].cost_usd == pytest.approx(10.0)
    assert [category(r) for r in rows] == ["gpu", "gpu", "gpu", "gpu", "license"]
    # Azure: 1 hour x 1 A100; OCI: 8 GPU-hours as billed; GCP: 3600 GPU-seconds; AWS 1 h x 4 A10G
    assert [gpu_hours(r) for r in rows[:4]] == [1.0, 8.0, 1.0, 4.0]
    assert rows[1].instance_type == "BM.GPU.A100-v2.8" and instance_gpus("BM.GPU.A100-v2.8") == 8


def test_import_reads_focus_1_0_pricing_categories() -> None:
    """FOCUS 1.0+ writes Standard / Committed / Dynamic; the import keeps them as written."""
    history = import_sources([str(BILL)])
    categories = history.bill.column("pricing_category").to_pylist()
    assert categories[:5] == ["Committed"] * 5 and categories[5:8] == ["Standard"] * 3
    assert sum(history.bill.column("effective_cost").to_pylist()) == pytest.approx(
        22.688 + 0.131506 + 4.5 + 2.731951 - 10
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tax-rate", "0.1"], "--tax-rate needs --tax-source"),
        (["--tax-rate", "0.1", "--tax-source", "x", "--tax-date", "today"], "--tax-date 'today': expected"),
        (["--tax-rate", "1.5", "--tax-source", "x", "--tax-date", "2026-11-02"], "allowed 0 <= fraction < 1"),
        (["--exchange-rate", "EUR"], "give CUR=UNITS_PER_USD"),
        (["--exchange-rate", "EUR=0.92", "--rate-source", "ECB"], "--exchange-rate needs --rate-date"),
        (["--disk", "floppy=2"], "no disk price 'floppy' for aws"),
        (["--disk", "gp3"], "give NAME=GB"),
        (["--support-period", "2026-12-01..2026-11-01"], "END after START"),
        (["--cloud", "ibm"], "--cloud ibm: allowed"),
    ],
)
def test_reconcile_stated_inputs_are_checked(run_dir: Path, extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["plan", "reconcile", "--bill", str(BILL), "--run", str(run_dir), *extra])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_exchange_rate_converts_and_is_reported(tmp_path: Path, run_dir: Path) -> None:
    eur = tmp_path / "eur.csv"
    eur.write_text(BILL.read_text(encoding="utf-8").replace(",USD,", ",EUR,"), encoding="utf-8")
    args = ["plan", "reconcile", "--bill", str(eur), "--run", str(run_dir), "--json"]
    assert "EUR needs an exchange rate" in runner.invoke(app, args).output
    rated = [*args, "--exchange-rate", "EUR=0.5", "--rate-source", "a stated reference rate",
             "--rate-date", "2026-11-02"]  # fmt: skip
    data = json.loads(runner.invoke(app, rated).stdout)
    gpu = next(c for c in data["categories"] if c["category"] == "gpu")
    assert gpu["bill_usd"] == pytest.approx(22.688 / 0.5)  # 0.5 EUR per USD: twice the dollars
    assert data["rates"] == [{"kind": "exchange", "name": "EUR", "value": 0.5,
                              "source": "a stated reference rate", "date": "2026-11-02"}]  # fmt: skip
