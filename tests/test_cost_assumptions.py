"""Cost answers show their assumptions: buy-vs-rent prints its inputs and compares owning with on-demand,
committed and spot renting; cost gpus names each price's source, date and billing mode and flags the
catalog rows its notes call anomalous; --help shows the defaults within 80 columns."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.cost.tco import INPUTS, default_server
from fleetlab.model.billing_rules import COMMITTED_DISCOUNT
from fleetlab.spec.catalog import snapshot_date

runner = CliRunner()


def test_buy_vs_rent_shows_inputs_and_every_way_of_renting() -> None:
    result = runner.invoke(
        cli.app, ["cost", "buy-vs-rent", "--utilisation", "0.6", "--staff-usd-per-year", "30000", "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    inputs = {row["input"]: row for row in payload["inputs"]}
    assert list(inputs) == [name for name, _, _ in INPUTS] + ["utilisation"]
    assert inputs["staff_usd_per_year"] == {
        "input": "staff_usd_per_year", "label": "staff", "value": 30000.0, "unit": "USD per year",
        "source": "given",
    }  # fmt: skip
    assert inputs["utilisation"]["value"] == 0.6 and inputs["utilisation"]["source"] == "given"
    assert inputs["pue"]["source"].startswith("industry-average PUE")  # a default names where it is from
    modes = {m["billing_mode"]: m for m in payload["rental_options"]}
    assert set(modes) == {"on-demand", "committed 1y", "committed 3y", "spot"}
    on_demand = modes["on-demand"]["usd_per_gpu_hour"]
    assert on_demand == pytest.approx(55.04 / 8)  # p5.48xlarge us-east-1: $55.04 per hour for 8 GPUs
    # Committed: on-demand less the billing rules' discount (1 year 37 %: 6.88 × 0.63 = 4.3344).
    assert modes["committed 1y"]["usd_per_gpu_hour"] == pytest.approx(
        on_demand * (1 - COMMITTED_DISCOUNT["1y"])
    )
    # Break-even utilisation = owned dollars per year / (GPU-hours per year × rented price per GPU-hour).
    server = default_server(staff_usd_per_year=30000.0)
    for mode in modes.values():
        expected = server.yearly()["total"] / (server.gpu_hours_per_year * mode["usd_per_gpu_hour"])
        assert mode["break_even_utilisation"] == pytest.approx(expected)
        assert mode["cheaper_at_utilisation"] == ("owning" if expected < 0.6 else "renting")
    table = runner.invoke(cli.app, ["cost", "buy-vs-rent", "--utilisation", "0.6"])
    assert "committed 3y" in table.stdout and "depreciation period" in table.stdout


def test_cost_gpus_names_price_source_date_and_flags_anomalies() -> None:
    args = ["cost", "gpus", "--reference-gpu", "H100", "--throughput", "1000", "--steps", "100"]
    args += ["--samples-per-step", "256", "--gpu", "H100", "--cloud", "azure", "--top", "100"]
    payload = json.loads(runner.invoke(cli.app, [*args, "--json"]).stdout)
    rows = payload["rows"]
    assert {r["price_date"] for r in rows} == {snapshot_date()} == {"2026-12-03"}
    assert {r["price_source"] for r in rows} == {"<built-in azure catalog azure.csv>"}
    assert {r["billing_mode"] for r in rows} == {"on-demand", "spot"}
    # SOURCE.md: Azure ND96isr_H100_v5 lists 12 GPUs; it has 8 -- flagged on every row priced from it.
    flagged = {r["instance_type"] for r in rows if r["anomalies"]}
    assert flagged == {"Standard_ND96isr_H100_v5"}
    assert all("AcceleratorCount 12" in r["anomalies"][0] for r in rows if r["anomalies"])
    table = runner.invoke(cli.app, args).stdout
    assert "azure catalog 2026-12-03" in table and "anomalous catalog row" in table


@pytest.mark.parametrize("command", [["cost", "buy-vs-rent"], ["cost", "gpus"], ["compare"], ["report"]])
def test_help_fits_80_columns_and_shows_defaults(command: list[str]) -> None:
    result = runner.invoke(cli.app, [*command, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    if command == ["cost", "buy-vs-rent"]:
        assert "[default: 310000]" in result.stdout and "[default: 1.56]" in result.stdout


def test_checkpoint_json() -> None:
    result = runner.invoke(cli.app, ["cost", "checkpoint", "--write-time", "5m", "--mtbi", "6h", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["young_s"] == pytest.approx(3600.0)  # √(2 · 300 s · 21,600 s) = √12,960,000 = 3,600 s
    assert [row["label"] for row in payload["intervals"]][2:4] == ["Daly", "Young"]
