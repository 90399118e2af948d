"""Billing rules beyond price × seconds: a 60 s minimum per VM start (AWS EC2 and Compute Engine bill per
second with a one-minute minimum), committed nodes billed whether used or not (GCP 1-year resource CUD,
37 % off by default), and per-GB data transfer and storage lines (AWS S3 pricing defaults)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from builders import job, pool, scenario
from fleetlab.cost.billing import BUCKETS, extra_lines, node_costs
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.model.billing_rules import PoolBilling
from fleetlab.spec.loader import load


def test_every_vm_start_is_billed_at_least_the_minimum(tmp_path: Path) -> None:
    """Reclaimed 10 s after start (no notice), the first VM is billed 60 s; its replacement lives 100 s."""
    (tmp_path / "t.csv").write_text("time,pool,node\n10,spot,0\n", encoding="utf-8")
    spot = pool(
        "spot",
        count=1,
        capacity_type="spot",
        interruptions={"trace": "t.csv", "notice_s": 0},
        billing={"minimum_billed_s": 60},
    )
    data = {"cluster": {"pools": [spot]}, "workload": {"jobs": [job("a", gpus=8, runtime=100)]}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    result = run_one(load(str(tmp_path / "s.yaml"))).result
    assert result.end_ms == 110_000
    cost = node_costs(result)
    assert cost.units["minimum"][0] == 8 * 50_000
    assert cost.unit_total[0] == 8 * (110_000 + 50_000)
    assert np.array_equal(sum(cost.units[b] for b in BUCKETS), cost.unit_total)
    assert sum(cost.dollars[b][0] for b in BUCKETS) == cost.billed[0]
    assert summarize(result).cost_minimum == pytest.approx(8.0 * 50 / 3600)


def test_default_minimum_per_cloud() -> None:
    rules = PoolBilling()
    assert [rules.minimum_for(c) for c in ("aws", "gcp", "azure", None)] == [60.0, 60.0, 0.0, 60.0]


def test_committed_nodes_pay_the_committed_rate_used_or_not() -> None:
    """Three committed nodes on a two-node pool at $10/h: both nodes bill $6.30/h (37 % off) and the
    third commitment is an unused-commitment line for the whole run."""
    resolved = scenario(
        [pool("od", count=2, price_per_hour=10.0, billing={"committed_nodes": 3})],
        [job("a", gpus=8, runtime=3600)],
    )
    result = run_one(resolved).result
    assert result.nodes.price_per_hour.tolist() == [6.3, 6.3]
    assert float(node_costs(result).total_billed) == pytest.approx(2 * 6.3)
    assert extra_lines(result).commitment_unused == pytest.approx(6.3)
    summary = summarize(result)
    assert summary.cost_total == pytest.approx(3 * 6.3)
    explicit = scenario(
        [
            pool(
                "od",
                count=2,
                price_per_hour=10.0,
                billing={"committed_nodes": 1, "committed_price_per_hour": 4},
            )
        ],
        [job("a", gpus=8, runtime=3600)],
    )
    assert run_one(explicit).result.nodes.price_per_hour.tolist() == [4.0, 10.0]


def test_three_year_commitments_take_the_three_year_discount() -> None:
    """pricing.md §2.3: 1-year resource CUD 37 %, 3-year 55–65 % (the low end, 55 %, is the default)."""
    three = scenario(
        [pool("od", count=1, price_per_hour=10.0, billing={"committed_nodes": 1, "commitment_term": "3y"})],
        [job("a", gpus=8, runtime=3600)],
    )
    assert run_one(three).result.nodes.price_per_hour.tolist() == [4.5]
    with pytest.raises(ValidationError, match="commitment_term"):
        scenario([pool("od", billing={"commitment_term": "5y"})], [job("a")])


def test_data_transfer_per_download_and_storage_until_completion() -> None:
    """10 GB downloaded once at $0.02/GB and stored from submission to completion at $0.023/GB-month."""
    resolved = scenario(
        [pool("od", count=1, billing={"data_transfer_per_gb": 0.02})],
        [job("a", gpus=8, runtime=3600, data_size=10_000_000_000)],
    )
    result = run_one(resolved).result
    lines = extra_lines(result)
    assert lines.data_transfer == pytest.approx(10 * 0.02)
    hours = result.jobs.end_ms[0] / 3_600_000
    assert lines.storage == pytest.approx(10 * 0.023 * hours / 730)
    assert summarize(result).cost_total == pytest.approx(float(node_costs(result).total_billed) + lines.total)


def test_no_billing_section_means_no_extra_lines() -> None:
    result = run_one(scenario([pool("od")], [job("a", data_size=10_000_000_000)])).result
    assert result.billing is None
    assert extra_lines(result).total == 0.0
    assert node_costs(result).units["minimum"].sum() == 0


def test_commitments_are_for_on_demand_pools() -> None:
    with pytest.raises(ValueError, match="commitments apply to on-demand pools"):
        scenario([pool("s", capacity_type="spot", billing={"committed_nodes": 1})], [job("a")])
