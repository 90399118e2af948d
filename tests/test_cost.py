"""Per-second billing and the exact compute / prep / idle split of every node's bill."""

from __future__ import annotations

from fractions import Fraction

import pytest

from builders import job, pool, scenario
from fleetlab.cost.billing import job_costs, node_costs, price_micro_per_hour
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize


def test_gpu_node_bill_split_by_gpu_time() -> None:
    """8-GPU node at $8/h for one hour; a 4-GPU pod preps 10 s and computes 3590 s.

    compute = $8 × 4·3590 / (8·3600), prep = $8 × 4·10 / (8·3600), idle = the other half: $4.
    """
    resolved = scenario(
        [pool(image_pull_bandwidth="100Mi")],
        [job("a", gpus=4, runtime=3590, image={"name": "img", "size": "1000Mi"})],
    )
    result = run_one(resolved, "default").result
    cost = node_costs(result)
    assert cost.billed == [Fraction(8)]
    assert cost.dollars["compute"] == [Fraction(8 * 4 * 3590, 8 * 3600)]
    assert cost.dollars["prep"] == [Fraction(8 * 4 * 10, 8 * 3600)]
    assert cost.dollars["idle"] == [Fraction(4)]
    assert cost.dollars["compute"][0] + cost.dollars["prep"][0] + cost.dollars["idle"][0] == cost.billed[0]
    assert job_costs(result).tolist() == pytest.approx(
        [float(cost.dollars["compute"][0] + cost.dollars["prep"][0])]
    )
    s = summarize(result)
    assert s.gpu_hours_billed == 8
    assert s.gpu_hours_idle == 4
    assert s.cost_per_completed_job == 8


def test_cpu_node_bill_split_by_cpu_share() -> None:
    """CPU-only nodes split their bill by milli-CPU: a 4-of-16-CPU pod for the whole run pays a quarter."""
    resolved = scenario(
        [pool(name="cpu", gpus=0, cpu="16", price_per_hour=1.6)],
        [job("etl", gpus=0, runtime=1800, requests={"cpu": "4", "memory": "8Gi"})],
    )
    cost = node_costs(run_one(resolved, "default").result)
    assert cost.billed == [Fraction(8, 10)]
    assert cost.dollars["compute"] == [Fraction(2, 10)]
    assert cost.dollars["idle"] == [Fraction(6, 10)]


def test_idle_nodes_are_billed_boot_included() -> None:
    """A node that boots for 5 minutes and then sits idle is billed for the whole run, boot included: the
    boot is its own bucket (5 of 60 minutes), the rest idle."""
    resolved = scenario(
        [pool(name="busy"), pool(name="spare", initially_ready=False, boot_time_s="5m")],
        [job("a", gpus=8, runtime=3600)],
    )
    result = run_one(resolved, "default").result
    cost = node_costs(result)
    assert [float(b) for b in cost.billed] == [8.0, 8.0]
    assert cost.dollars["boot"][1] == Fraction(8 * 5, 60)
    assert cost.dollars["idle"][1] == Fraction(8 * 55, 60)


def test_price_rounded_to_micro_dollars() -> None:
    """Catalog prices keep six decimals (p4d.24xlarge $21.957642/h)."""
    assert price_micro_per_hour(21.957642) == 21_957_642
