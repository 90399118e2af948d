"""The cost ledger written with every run folder reconciles exactly with the run's bill: node rows carry
the integer unit-ms and micro-dollar prices the bill split uses (per-second billing, 60 s minimum per VM
start, committed nodes at the committed rate), data rows carry each job's transfer and storage charges,
and unused commitments get pool rows. Checked as a property over small random scenarios (hypothesis)."""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from builders import scenario
from fleetlab import cli
from fleetlab.cost.billing import BUCKETS, MICRO, MS_PER_HOUR, extra_lines, node_costs
from fleetlab.cost.ledger import CATEGORIES
from fleetlab.cost.ledger_io import ledger_table
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.spec.loader import load

runner = CliRunner()


@st.composite
def billed_worlds(draw: st.DrawFn) -> Any:
    pools = []
    for p in range(draw(st.integers(1, 3))):
        entry: dict[str, Any] = {
            "name": f"p{p}",
            "count": draw(st.integers(1, 3)),
            "cpu": "64",
            "memory": "512Gi",
            "price_per_hour": draw(st.sampled_from([0.0, 1.37, 17.6289, 98.32])),
            "initially_ready": draw(st.booleans()),
            "boot_time_s": draw(st.sampled_from([0, 45])),
        }
        if draw(st.booleans()):
            entry.update(gpu_model="H100", gpus_per_node=draw(st.sampled_from([2, 8])))
        spot = draw(st.booleans())
        if spot:
            entry["capacity_type"] = "spot"
            entry["interruptions"] = {"mtbi": draw(st.sampled_from([600, 3600])), "notice_s": 30}
        if draw(st.booleans()):
            entry["billing"] = {
                "minimum_billed_s": draw(st.sampled_from([60, 600])),
                "committed_nodes": 0 if spot else draw(st.integers(0, 4)),
                "data_transfer_per_gb": draw(st.sampled_from([0.0, 0.02])),
            }
        if not spot and draw(st.booleans()):
            entry["failures"] = {"trace": [{"node": f"p{p}-0", "at_s": draw(st.sampled_from([50, 500])),
                                            "repair_s": draw(st.sampled_from([60, 900]))}]}  # fmt: skip
        pools.append(entry)
    jobs = []
    for j in range(draw(st.integers(1, 12))):
        requests: dict[str, Any] = {"cpu": f"{draw(st.sampled_from([1, 8]))}", "memory": "8Gi"}
        g = draw(st.sampled_from([0, 1, 2, 8]))
        if g:
            requests["nvidia.com/gpu"] = g
        jobs.append(
            {
                "id": f"j{j}",
                "team": draw(st.sampled_from(["a", "b", ""])),
                "submit_s": draw(st.integers(0, 600)),
                "pods": draw(st.integers(1, 2)),
                "requests": requests,
                "runtime": draw(st.integers(1, 2000)),
                "data_size": draw(st.sampled_from([0, 5_000_000_000])),
                "image": {"name": "img", "size": "2Gi"},
            }
        )
    return scenario(pools, jobs, seed=draw(st.integers(0, 3)), horizon_s=4000)


def _exact(ledger: dict[str, Any], i: int) -> Fraction:
    """The row's exact dollars from its integer inputs (as Python ints: numpy int64 columns would overflow
    in the product for a CPU node's milli-CPU-ms)."""
    units = int(ledger["node_units"][i])
    if not units:
        return Fraction(0)
    price, unit_ms = int(ledger["price_micro_per_hour"][i]), int(ledger["unit_ms"][i])
    return Fraction(price * unit_ms, units * MS_PER_HOUR * MICRO)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(billed_worlds())
def test_ledger_reconciles_exactly_with_the_bill(resolved: Any) -> None:
    result = run_one(resolved).result
    ledger = ledger_table(resolved.scenario.cluster.pools, result, "r").to_pydict()
    cost = node_costs(result)
    rows = range(len(ledger["cost_usd"]))
    exact: dict[str, Fraction] = defaultdict(Fraction)
    for i in rows:
        exact[ledger["category"][i]] += _exact(ledger, i)
        assert ledger["category"][i] in CATEGORIES
        assert ledger["cost_usd"][i] >= 0 and ledger["currency"][i] == "USD"
        assert ledger["period_end_s"][i] >= ledger["period_start_s"][i]
    for bucket in BUCKETS:  # every bucket of every node's bill, to the micro-dollar fraction
        assert exact[bucket] == cost.total(bucket), bucket
    assert sum(exact.values(), Fraction(0)) == cost.total_billed
    for i in rows:  # each float dollar figure is its exact row value rounded once
        if ledger["node_units"][i]:
            assert ledger["cost_usd"][i] == pytest.approx(float(_exact(ledger, i)), rel=1e-15, abs=1e-300)
    extras = extra_lines(result)
    by_extra = defaultdict(list)
    for i in rows:
        if not ledger["node_units"][i]:
            by_extra[ledger["category"][i]].append(ledger["cost_usd"][i])
    assert math.fsum(by_extra["data_transfer"]) == pytest.approx(extras.data_transfer, rel=1e-12, abs=1e-12)
    assert math.fsum(by_extra["storage"]) == pytest.approx(extras.storage, rel=1e-12, abs=1e-12)
    assert math.fsum(by_extra["commitment_unused"]) == pytest.approx(
        extras.commitment_unused, rel=1e-12, abs=1e-12
    )
    summary = summarize(result)
    assert math.fsum(ledger["cost_usd"]) == pytest.approx(summary.cost_total, rel=1e-12, abs=1e-9)
    committed = {m for m, n in zip(ledger["billing_mode"], ledger["node_units"], strict=True) if n}
    assert committed <= {"on-demand", "spot", "committed"}


def test_simulate_out_writes_the_ledger_and_reconcile_reads_it(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[1] / "examples" / "plan"
    out = tmp_path / "run"
    made = runner.invoke(cli.app, ["simulate", str(examples / "gcp-cluster.yaml"), "--out", str(out)])
    assert made.exit_code == 0, made.output
    table = pq.read_table(out / "ledger.parquet").to_pydict()
    summary = summarize(run_one(load(str(examples / "gcp-cluster.yaml"))).result)
    assert math.fsum(table["cost_usd"]) == pytest.approx(summary.cost_total, rel=1e-12)
    assert {"region", "gpu_model", "node_gpus", "instance_type", "billing_mode", "currency"} <= set(table)
    assert {"tax_included", "project", "team", "job_id", "category", "seconds", "cost_usd"} <= set(table)
    assert set(table["region"]) >= {"us-central1"}
    bill = examples / "gcp-billing-export.csv"
    result = runner.invoke(
        cli.app, ["cost", "reconcile", "--run", str(out), "--billing", str(bill), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert '"research"' in result.stdout


def test_data_charges_are_compared_with_the_bill_storage_and_egress() -> None:
    """A run with data charges estimates the bill's storage and egress categories instead of reporting
    them as missing."""
    from datetime import UTC, datetime

    from fleetlab.cost.reconcile import reconcile
    from fleetlab.spec.billing_export import parse_billing_export

    resolved = scenario(
        [{"name": "od", "count": 1, "cpu": "64", "memory": "512Gi", "price_per_hour": 8.0,
          "gpu_model": "H100", "gpus_per_node": 8, "billing": {"data_transfer_per_gb": 0.02}}],
        [{"id": "a", "team": "t", "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 8},
          "runtime": 3600, "data_size": 10_000_000_000}],
    )  # fmt: skip
    ledger = ledger_table(resolved.scenario.cluster.pools, run_one(resolved).result, "r").to_pydict()
    assert {"data_transfer", "storage"} <= set(ledger["category"])
    header = "service.description,sku.description,usage_start_time,usage_end_time,project.id,labels,cost,currency,cost_type\n"
    bill = parse_billing_export(
        "b.csv",
        header
        + "Cloud Storage,Standard Storage US,2026-11-02T00:00:00Z,2026-11-02T01:00:00Z,p,,0.5,USD,regular\n",
    ).rows
    result = reconcile(bill, ledger, datetime(2026, 11, 2, tzinfo=UTC))
    cats = {c.category: c for c in result.categories}
    storage = sum(c for c, k in zip(ledger["cost_usd"], ledger["category"], strict=True) if k == "storage")
    assert cats["storage"].estimate_usd == pytest.approx(storage) and storage > 0
    assert cats["egress"].estimate_usd == pytest.approx(0.2)
    assert result.missing_in_estimate_usd == 0.0


def test_experiment_run_folders_hold_a_ledger(tmp_path: Path) -> None:
    from test_experiment import EXPERIMENT, write_experiment

    path = write_experiment(tmp_path, EXPERIMENT.replace("[1, 2, 3]", "[1]"))
    out = tmp_path / "out"
    result = runner.invoke(cli.app, ["experiment", "run", str(path), "--out", str(out), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    folders = sorted((out / "runs").glob("*/seed-1"))
    assert len(folders) == 3
    for folder in folders:
        ledger = pq.read_table(folder / "ledger.parquet").to_pydict()
        costs = pq.read_table(folder / "costs.parquet").to_pydict()
        assert set(ledger["variant"]) == {folder.parent.name}
        assert math.fsum(ledger["cost_usd"]) == pytest.approx(math.fsum(costs["cost_billed_usd"]), rel=1e-12)
