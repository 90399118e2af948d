"""Inference services in the simulator: replicas placed like pods, lost to failures and preemption,
scaled by the HPA algorithm, their latency from the queueing model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from builders import job, pool, scenario, service
from fleetlab.cost.billing import MS_PER_HOUR, node_costs
from fleetlab.experiment.output import write_results
from fleetlab.experiment.run import run_one
from fleetlab.metrics.services import service_columns, service_rows
from fleetlab.metrics.summary import summarize
from fleetlab.services.hpa import HpaState, desired_replicas, raw_recommendation
from fleetlab.services.queueing import response_percentile
from fleetlab.sim.result import SimulationResult


def _run(
    pools: list[dict[str, Any]],
    services: list[dict[str, Any]],
    jobs: list[dict[str, Any]] | None = None,
    policy: str = "scenario",
    horizon: float = 3600,
    default_spreading: bool = True,
) -> SimulationResult:
    sched: dict[str, Any] = {"tie_break": "first"}
    if not default_spreading:  # no cluster-level default constraints (PodTopologySpreadArgs List, empty)
        sched["podTopologySpread"] = {"defaultingType": "List"}
    resolved = scenario(pools, jobs or [], services=services, horizon_s=horizon, scheduler=sched)
    return run_one(resolved, policy).result


def _at(result: SimulationResult, t_s: float) -> dict[str, Any]:
    cols = service_columns(result)
    i = cols["time_s"].index(t_s)
    return {k: v[i] for k, v in cols.items()}


def test_static_replicas_run_to_the_horizon_and_their_latency_is_the_mmc_percentile() -> None:
    result = _run([pool("gpu", count=1)], [service()])
    assert result.services is not None
    # Placed in the first step's cycle, so ready from the second tick on; each replica is 4 servers of 5/s.
    assert _at(result, 0.0)["ready_replicas"] == 0
    row = _at(result, 60.0)
    assert (row["ready_replicas"], row["servers"]) == (3, 12)
    assert row["p99_ms"] == pytest.approx(1000 * float(response_percentile(0.99, 30, 5.0, 12)))
    assert row["slo_met"]
    [summary] = service_rows(result)
    assert summary.slo_attainment_pct == pytest.approx(100 * (3600 - 60) / 3600)
    assert summary.requests == pytest.approx(30 * 3600)
    assert (summary.replicas_lost_to_failures, summary.replicas_lost_to_preemption) == (0, 0)
    # Replica GPU time is billed as compute, and the split still adds up to the bill.
    cost = node_costs(result)
    assert float(cost.units["compute"].sum()) / MS_PER_HOUR == pytest.approx(3.0)
    for i, billed in enumerate(cost.billed):
        assert sum(cost.dollars[b][i] for b in cost.dollars) == billed
    # Job figures describe the workload only.
    assert summarize(result).jobs == 0


def test_a_node_failure_evicts_the_replicas_on_it_and_they_come_back_elsewhere() -> None:
    """Pack (MostAllocated without default spreading) puts both replicas on gpu-0, spread one per node:
    the failure takes both or one."""
    failures = {"trace": [{"node": "gpu-0", "at_s": 600, "repair_s": 1200}]}
    pools = [pool("gpu", count=2, failures=failures)]
    # 15 rps: one replica (4 servers of 5/s) still meets the 2 s p99 target, no replica cannot.
    svc = [service(replicas={"min": 2}, rate={"kind": "constant", "rps": 15})]
    packed = _run(pools, svc, policy="most-allocated", default_spreading=False)
    spread = _run(pools, svc, policy="least-allocated")
    assert _at(packed, 600.0)["ready_replicas"] == 0
    assert _at(packed, 660.0)["ready_replicas"] == 2
    assert service_rows(packed)[0].replicas_lost_to_failures == 2
    assert _at(spread, 600.0)["ready_replicas"] == 1
    assert service_rows(spread)[0].replicas_lost_to_failures == 1
    assert _at(spread, 600.0)["slo_met"] and not _at(packed, 600.0)["slo_met"]
    assert service_rows(spread)[0].slo_attainment_pct > service_rows(packed)[0].slo_attainment_pct


def test_a_higher_priority_job_preempts_replicas_and_the_service_misses_its_slo_meanwhile() -> None:
    jobs = [job("big", gpus=8, submit_s=300, runtime=600, priority=100)]
    result = _run([pool("gpu", count=1)], [service(replicas={"min": 8})], jobs)
    [summary] = service_rows(result)
    assert summary.replicas_lost_to_preemption == 8
    assert summarize(result).service_replicas_lost == 8
    assert _at(result, 600.0)["ready_replicas"] == 0 and not _at(result, 600.0)["slo_met"]
    assert _at(result, 960.0)["ready_replicas"] == 8
    # Saturated steps count every request as late: 30 rps from 300 s (the tick after the preemption is
    # the first to see it) to 900 s + one tick.
    late = _at(result, 600.0)["late_requests"]
    assert late == pytest.approx(30 * 60)
    assert summarize(result).jobs_completed == 1


def test_hpa_scales_up_within_policy_limits_and_down_after_the_stabilisation_window(tmp_path: Path) -> None:
    trace = tmp_path / "rate.csv"
    trace.write_text("time,rps\n0,10\n600,100\n1800,10\n", encoding="utf-8")
    svc = service(
        replicas={"min": 1, "max": 12},
        performance={"H100": {"throughput_rps": 20}},
        rate={"kind": "trace", "path": str(trace)},
        autoscaling={"target_utilization": 0.5},
    )
    from fleetlab.spec.service_trace import resolve_service_traces

    raw: dict[str, Any] = {"services": [svc]}
    resolve_service_traces(raw, "test", None)
    result = _run([pool("gpu", count=2)], raw["services"])
    desired = {t: _at(result, t)["desired_replicas"] for t in (540.0, 600.0, 660.0, 1800.0, 2040.0, 2160.0)}
    assert desired == {540.0: 1, 600.0: 5, 660.0: 10, 1800.0: 10, 2040.0: 10, 2160.0: 1}
    assert _at(result, 720.0)["ready_replicas"] == 10
    # Deleted replicas were released, not evicted, and their stays are billed exactly.
    assert result.segments.evicted.sum() == 0
    cost = node_costs(result)
    for i, billed in enumerate(cost.billed):
        assert sum(cost.dollars[b][i] for b in cost.dollars) == billed


def test_same_scenario_and_seed_give_identical_service_series_and_files(tmp_path: Path) -> None:
    pools = [pool("gpu", count=3, failures={"mtbf": "2h", "repair_time": "20m"})]
    jobs = [job(f"b{i}", gpus=2, submit_s=120 * i, runtime=1800) for i in range(20)]
    svc = [service(replicas={"min": 2, "max": 8}, autoscaling={"target_utilization": 0.6})]
    a = _run(pools, svc, jobs, horizon=7200)
    b = _run(pools, svc, jobs, horizon=7200)
    assert service_columns(a) == service_columns(b)
    resolved = scenario(pools, jobs, services=svc, horizon_s=7200)
    run = run_one(resolved, "default")
    write_results([run], tmp_path / "one", single=True)
    write_results([run_one(resolved, "default")], tmp_path / "two", single=True)
    first = (tmp_path / "one" / "services.parquet").read_bytes()
    assert first == (tmp_path / "two" / "services.parquet").read_bytes()
    table = pq.read_table(tmp_path / "one" / "services.parquet")
    assert table.column_names[:4] == ["time_s", "service", "ready_replicas", "desired_replicas"]
    assert np.all(np.diff(table.column("time_s").to_numpy()) == 60.0)


def test_runs_without_services_record_none() -> None:
    result = run_one(scenario([pool("gpu")], [job("a")]), "default").result
    assert result.services is None
    as_json = summarize(result).as_dict()
    assert as_json["service_slo_attainment_pct"] is None and as_json["service_replicas_lost"] == 0


def test_hpa_keeps_the_count_within_tolerance_and_follows_the_ratio_outside_it() -> None:
    """Upstream replica_calculator: |ratio - 1| <= 0.1 keeps the count; else ceil(ratio × ready)."""
    assert raw_recommendation(4, 4, 0.65, 0.6, 0.1) == 4
    assert raw_recommendation(4, 4, 0.9, 0.6, 0.1) == 6
    assert raw_recommendation(4, 4, 0.3, 0.6, 0.1) == 2
    assert raw_recommendation(4, 0, 0.9, 0.6, 0.1) == 4


def test_hpa_scale_down_waits_for_the_highest_recommendation_of_its_window() -> None:
    state = HpaState(up_window_ms=0, down_window_ms=300_000)
    args = (0.6, 0.1, (1, 20))
    assert desired_replicas(state, 0, 10, 10, 0.6, *args) == 10
    assert desired_replicas(state, 60_000, 10, 10, 0.06, *args) == 10  # 1 recommended, 10 in window
    assert desired_replicas(state, 300_000, 10, 10, 0.06, *args) == 10  # t=0 is still in the window
    assert desired_replicas(state, 360_000, 10, 10, 0.06, *args) == 1
    # Scale-up is limited to max(2 × current, current + 4) per step (the default scaleUp policies).
    assert desired_replicas(state, 420_000, 1, 1, 6.0, *args) == 5


def test_replicas_on_a_gpu_model_without_performance_serve_nothing_and_say_so() -> None:
    """A replica placed on a node whose GPU model has no performance entry adds no server: warned."""
    svc = service(replicas={"min": 1}, performance={"A100-80GB": {"throughput_rps": 20}})
    result = _run([pool("gpu", count=1)], [svc])
    assert _at(result, 60.0)["ready_replicas"] == 1 and _at(result, 60.0)["servers"] == 0
    assert not _at(result, 60.0)["slo_met"]
    assert any("H100" in w and "performance section does not list" in w for w in result.warnings)


def test_a_gpu_model_no_node_has_leaves_the_replicas_pending_with_a_warning() -> None:
    svc = service(gpu_model="A100-80GB", performance={"default": {"throughput_rps": 20}})
    result = _run([pool("gpu", count=1)], [svc])
    assert service_rows(result)[0].slo_attainment_pct == 0.0
    assert any("service/chat/0" in w for w in result.warnings)
    assert {p.job_id for p in result.pending} == {"service/chat/0", "service/chat/1", "service/chat/2"}


def test_a_spot_reclaim_counts_as_a_replica_lost_to_spot(tmp_path: Path) -> None:
    """A trace reclaim of spot-0 at 600 s (30 s notice) evicts both replicas there at 630 s."""
    import yaml

    from fleetlab.spec.loader import load

    (tmp_path / "trace.csv").write_text("time,pool,node\n600,spot,spot-0\n", encoding="utf-8")
    spot = pool("spot", count=2, capacity_type="spot", interruptions={"trace": "trace.csv", "notice_s": 30})
    data = {
        "horizon_s": 3600,
        "cluster": {"pools": [spot]},
        "workload": {"jobs": []},
        "scheduler": {
            "tie_break": "first",
            "policy": "most-allocated",
            "podTopologySpread": {"defaultingType": "List"},  # no default spreading: both on spot-0
        },
        "services": [service(replicas={"min": 2})],
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    result = run_one(load(str(tmp_path / "s.yaml"))).result
    [summary] = service_rows(result)
    assert (summary.replicas_lost_to_spot, summary.replicas_lost_to_failures) == (2, 0)
    assert summary.replicas_lost_to_preemption == 0


def test_replicas_honour_required_anti_affinity_per_node() -> None:
    """A service's anti-affinity term reaches its replicas (InterPodAffinity): with one replica per
    hostname and two nodes, the third replica stays pending and the service runs on two."""
    anti = [{"topologyKey": "kubernetes.io/hostname"}]
    result = _run([pool("gpu", count=2)], [service(anti_affinity=anti)])
    nodes = {
        int(n)
        for n, j in zip(result.pods.node, result.pods.job, strict=True)
        if n >= 0 and result.jobs.ids[int(j)].startswith("service/chat/")
    }
    assert len(nodes) == 2
    assert max(service_columns(result)["ready_replicas"]) == 2
    packed = _run([pool("gpu", count=2)], [service()])
    assert max(service_columns(packed)["ready_replicas"]) == 3
