"""The measured baseline (fleetlab.metrics.baseline) on small histories worked out by hand.

The four-job history of tests/history_builders.py ends at t = 100 s:

| job | state | submit | admitted | scheduled | running | end | GPUs (pods × per pod) |
|---|---|---|---|---|---|---|---|
| j1 | completed | 0 | 4 | 10 | 15 | 45 | 1 × 2 |
| j2 | failed | 10 | 25 | 30 | 30 | 50 | 2 × 1 |
| j3 | pending | 20 | — | — | — | — | 1 × 1 |
| j4 | running | 40 | — | 40 | 50 | — | 1 × 4 |
"""

from __future__ import annotations

import math

import pytest

from fleetlab.metrics.baseline import compute_baseline
from fleetlab.metrics.baseline_cost import catalog_price, cluster_cost
from fleetlab.metrics.survival import kaplan_meier
from fleetlab.spec.catalog import builtin_catalog
from history_builders import HAND_BILL, HAND_JOBS, HAND_NODES, history

H = 3600.0


def _all(bill: bool = True):  # type: ignore[no-untyped-def]
    result = compute_baseline(history(HAND_JOBS, HAND_NODES, HAND_BILL if bill else None))
    return result, {(r.group_by, r.group): r for r in result.rows}


def test_counts_by_state_sit_next_to_every_average() -> None:
    _, rows = _all()
    r = rows[("all", "all")]
    assert (r.jobs_submitted, r.completed, r.failed, r.cancelled, r.running, r.pending) == (4, 1, 1, 0, 1, 1)
    assert (r.started, r.wait_censored) == (3, 1)


def test_wait_is_kaplan_meier_with_the_pending_job_censored_at_the_record_end() -> None:
    # Waits: j4 0, j1 10, j2 20 observed; j3 censored at 100 − 20 = 80.
    # S(0) = 3/4, S(10) = 3/4 · 2/3 = 1/2, S(20) = 1/2 · 1/2 = 1/4; the curve never reaches 1 − 0.95.
    _, rows = _all()
    r = rows[("all", "all")]
    assert (r.wait_p50_s, r.wait_p50_lower_bound) == (10.0, False)
    assert (r.wait_p95_s, r.wait_p95_lower_bound) == (80.0, True)
    assert (r.wait_p99_s, r.wait_p99_lower_bound) == (80.0, True)
    # Restricted mean = area under S on [0, 80]: 10 · 3/4 + 10 · 1/2 + 60 · 1/4 = 7.5 + 5 + 15 = 27.5 (≥).
    assert r.wait_mean_s == pytest.approx(27.5)
    assert r.wait_mean_lower_bound


def test_km_without_censoring_is_the_plain_mean_and_lower_median() -> None:
    km = kaplan_meier([2.0, 4.0, 9.0], [True, True, True])  # type: ignore[arg-type]
    assert km.restricted_mean().value == pytest.approx(5.0)  # (2 + 4 + 9) / 3
    assert not km.restricted_mean().lower_bound
    assert km.quantile(0.5).value == 4.0  # F(4) = 2/3 ≥ 0.5
    assert kaplan_meier([], []).quantile(0.5).value is None  # type: ignore[arg-type]


def test_quota_and_node_wait_from_kueue_admission() -> None:
    # j1: quota 4 − 0 = 4, node 10 − 4 = 6; j2: quota 25 − 10 = 15, node 30 − 25 = 5.
    _, rows = _all()
    r = rows[("all", "all")]
    assert r.kueue_jobs == 2
    assert r.quota_wait_mean_s == pytest.approx(9.5)
    assert r.node_wait_mean_s == pytest.approx(5.5)
    assert rows[("team", "b")].quota_wait_mean_s is None


def test_prep_compute_and_gpu_hours() -> None:
    _, rows = _all()
    r = rows[("all", "all")]
    # prep: j1 15 − 10 = 5, j2 0, j4 50 − 40 = 10 -> mean 5.
    assert (r.prep_jobs, r.prep_mean_s) == (3, pytest.approx(5.0))
    # compute of finished jobs: j1 30, j2 20 -> mean 25.
    assert (r.compute_jobs, r.compute_mean_s) == (2, pytest.approx(25.0))
    # allocated (scheduled -> end or 100): 2·35 + 2·20 + 4·60 = 70 + 40 + 240 = 350 GPU-s.
    assert r.gpu_hours_allocated == pytest.approx(350 / H)
    # computing (running -> end or 100): 2·30 + 2·20 + 4·50 = 60 + 40 + 200 = 300 GPU-s.
    assert r.gpu_hours_compute == pytest.approx(300 / H)
    # lost = compute of the failed job j2: 40 GPU-s.
    assert r.gpu_hours_lost == pytest.approx(40 / H)
    assert (r.restarts, r.evictions) == (1, 1)


def test_measured_utilisation_is_weighted_by_compute_gpu_hours() -> None:
    # j1 60 GPU-s at 0.5, j4 200 GPU-s at 0.25: (30 + 50) / 260; coverage 260 / 300.
    _, rows = _all()
    r = rows[("all", "all")]
    assert r.gpu_util_measured == pytest.approx(80 / 260)
    assert r.gpu_util_coverage == pytest.approx(260 / 300)


def test_idle_capacity_and_idle_node_hours() -> None:
    result, _ = _all()
    c = result.cluster
    # n1 8 GPUs × 100 s + n2 4 GPUs × (100 − 50) s = 1000 GPU-s; allocated 350.
    assert c["gpu_capacity_hours"] == pytest.approx(1000 / H)
    assert c["gpu_hours_idle"] == pytest.approx(650 / H)
    assert c["node_hours"] == pytest.approx(150 / H)
    # n1 busy [10, 45] ∪ [30, 50] = 40 s of 100 -> idle 60; n2 alive [50, 100], busy [50, 100] -> 0.
    assert c["node_hours_idle"] == pytest.approx(60 / H)


def test_cost_per_completed_job_from_the_bill_split_by_allocated_gpu_hours() -> None:
    result, rows = _all()
    assert (result.cluster["cost_source"], result.cluster["currency"]) == ("bill", "USD")
    assert result.cluster["cost_total"] == pytest.approx(40.0)  # effective 30 + 10
    # team a holds 110 of 350 allocated GPU-s: 40 · 110 / 350, one completed job.
    assert rows[("team", "a")].cost_per_completed_job == pytest.approx(40 * 110 / 350)
    assert rows[("team", "b")].cost_per_completed_job is None  # no completed job: no figure
    assert rows[("all", "all")].cost_per_completed_job == pytest.approx(40.0)


def test_cost_from_the_catalog_names_its_source_and_unpriced_nodes() -> None:
    offers = [o for o in builtin_catalog("aws").offers if o.instance_type == "p5.48xlarge"]
    assert offers, "the shipped AWS catalog has p5.48xlarge"
    nodes = [
        {"node": "n1", "gpus": 8, "instance_type": "p5.48xlarge", "capacity_type": "on-demand"},
        {"node": "n2", "gpus": 4},
    ]
    h = history(HAND_JOBS, nodes, None, end_s=7200.0)
    cost = cluster_cost(h)
    price = catalog_price(offers, None, "on-demand")
    assert price is not None and price == min(o.price for o in offers if o.price is not None)
    assert cost.source == "catalog" and cost.currency == "USD"
    assert cost.total == pytest.approx(price * 2.0)  # 7200 s = 2 h
    assert (cost.nodes_priced, cost.nodes_unpriced) == (1, 1)
    assert any("1 of 2 node(s)" in n for n in cost.notes)


def test_mixed_currencies_give_no_cost_and_say_why() -> None:
    bill = [dict(HAND_BILL[0]), {**HAND_BILL[1], "currency": "EUR"}]
    result = compute_baseline(history(HAND_JOBS, HAND_NODES, bill))
    assert result.cluster["cost_total"] is None
    assert any("mixes currencies EUR, USD" in n for n in result.notes)


def test_groups_cover_class_team_and_queue_with_unset_named() -> None:
    _, rows = _all()
    assert set(rows) == {
        ("all", "all"),
        ("job_class", "batch"),
        ("job_class", "training"),
        ("team", "a"),
        ("team", "b"),
        ("queue", "q1"),
        ("queue", "(none)"),
    }
    assert sum(rows[("team", t)].jobs_submitted for t in "ab") == 4


def test_empty_history_has_one_empty_row_and_no_nan() -> None:
    result = compute_baseline(history([], []))
    (row,) = result.rows
    assert row.jobs_submitted == 0 and row.wait_p50_s is None
    assert not any(isinstance(v, float) and math.isnan(v) for v in row.as_dict().values())
