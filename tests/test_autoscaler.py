"""Cluster Autoscaler decisions worked by hand (upstream cluster-autoscaler FAQ behaviour).

Pools default to the builders' 8×H100, 64 CPU, 512Gi, $8/h nodes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from builders import job, pool, scenario
from fleetlab.cost.billing import node_costs
from fleetlab.experiment.run import run_one
from fleetlab.sim.lifecycle_result import LifecycleRecord
from fleetlab.sim.result import SimulationResult
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load

FIRST = {"tie_break": "first"}


def _run(
    pools: list[dict[str, Any]],
    jobs: list[dict[str, Any]],
    autoscaler: dict[str, Any] | None = None,
    **extra: Any,
) -> SimulationResult:
    extra.setdefault("scheduler", FIRST)
    if autoscaler is not None:
        extra["cluster"] = {"pools": pools, "autoscaler": autoscaler}
    return run_one(scenario(pools, jobs, **extra), "scenario").result


def _life(result: SimulationResult) -> LifecycleRecord:
    assert result.lifecycle is not None
    return result.lifecycle


def _half_node_jobs(n: int, **extra: Any) -> list[dict[str, Any]]:
    """n pods of 4 GPUs, 16 CPU, 128Gi each (two per big node, one per small node)."""
    requests = {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": 4}
    return [job(f"j{i}", requests=requests, runtime=3600, preemptible=True, **extra) for i in range(n)]


def _two_pools(**small: Any) -> list[dict[str, Any]]:
    big = pool("big", count=0, autoscaling={"min": 0, "max": 5, "priority": 1})
    little = pool("small", count=0, gpus=4, cpu="16", memory="128Gi", price_per_hour=5.0)
    little["autoscaling"] = {"min": 0, "max": 5, **small}
    return [big, little]


def test_scale_up_least_waste_picks_the_pool_with_no_unused_cpu_memory() -> None:
    """CA expander least-waste: big nodes would leave 62.5 % of cpu and memory unused for 3 pods
    (2 nodes, 48/128 CPU), small nodes 0 % (3 nodes exactly full): 3 small nodes."""
    life = _life(_run(_two_pools(), _half_node_jobs(3), autoscaler={"expander": "least-waste"}))
    up = [e for e in life.scale_events if e.kind == "up"]
    assert [(e.t_ms, e.pool, e.nodes, e.pods) for e in up] == [(0, "small", 3, 3)]


def test_scale_up_price_expander_picks_the_cheaper_capacity() -> None:
    """price: big $8 × 2 nodes / 12 GPUs = $1.33 per GPU; small at $6 × 3 / 12 = $1.50: big wins."""
    pools = _two_pools()
    pools[1]["price_per_hour"] = 6.0
    life = _life(_run(pools, _half_node_jobs(3), autoscaler={"expander": "price"}))
    assert [(e.pool, e.nodes) for e in life.scale_events if e.kind == "up"] == [("big", 2)]


def test_scale_up_priority_expander_picks_the_highest_priority_pool() -> None:
    life = _life(_run(_two_pools(), _half_node_jobs(3), autoscaler={"expander": "priority"}))
    assert [(e.pool, e.nodes) for e in life.scale_events if e.kind == "up"] == [("big", 2)]


def test_scale_up_never_exceeds_max_and_says_why_pods_wait() -> None:
    """Three full-node pods, max 2: two nodes; the third pod waits and names the pool's max size."""
    pools = [pool("auto", count=0, autoscaling={"min": 0, "max": 2})]
    jobs = [job(f"j{i}", gpus=8, runtime=7200, preemptible=True) for i in range(3)]
    result = _run(pools, jobs, horizon_s=3600)
    life = _life(result)
    assert [(e.pool, e.nodes) for e in life.scale_events if e.kind == "up"] == [("auto", 2)]
    assert len(result.pending) == 1
    assert "pool auto is at its max size" in result.pending[0].detail


def test_account_gpu_quota_caps_scale_up_across_pools() -> None:
    """Quota 16 GPUs, a fixed 8-GPU node already counts: only one autoscaled node may be added."""
    pools = [pool("fixed", count=1), pool("auto", count=0, autoscaling={"min": 0, "max": 4})]
    jobs = [job(f"j{i}", gpus=8, runtime=7200, preemptible=True) for i in range(4)]
    result = _run(pools, jobs, horizon_s=3600, autoscaler={"gpu_quota": 16})
    life = _life(result)
    assert [(e.pool, e.nodes) for e in life.scale_events if e.kind == "up"] == [("auto", 1)]
    assert any("account GPU quota" in p.detail for p in result.pending)


def test_new_node_is_billed_from_request_with_boot_in_its_own_bucket() -> None:
    """Requested at 0, ready at 5 min, pod runs 1 h (image pull paid on the fresh node): billed 65 min,
    5 of them in the boot bucket; every bucket adds up to the bill exactly."""
    pools = [pool("auto", count=0, boot_time_s="5m", autoscaling={"min": 0, "max": 1})]
    image = {"name": "img", "size": 200 * 1024**2}
    result = _run(pools, [job("a", gpus=8, runtime=3600, image=image)])
    cost = node_costs(result)
    assert result.nodes.billed_start_ms[0] == 0
    assert result.pods.bound_ms[0] == 300_000
    assert result.pods.image_wait_ms[0] == 1000  # 200Mi at the default 200Mi/s
    assert cost.billed[0] == Fraction(8 * (3600 + 300 + 1), 3600)
    assert cost.dollars["boot"][0] == Fraction(8 * 300, 3600)
    assert sum(cost.dollars[b][0] for b in cost.dollars) == cost.billed[0]
    assert _life(result).capacity_wait_ms == 300_000


def test_booting_nodes_count_as_upcoming_capacity() -> None:
    """A second pod arriving while the first scale-up boots fits the booting node: no second scale-up."""
    pools = [pool("auto", count=0, boot_time_s="5m", autoscaling={"min": 0, "max": 3})]
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 4}
    jobs = [job("a", requests=requests, runtime=600), job("b", submit_s=60, requests=requests, runtime=600)]
    life = _life(_run(pools, jobs))
    assert [(e.t_ms, e.nodes) for e in life.scale_events if e.kind == "up"] == [(0, 1)]


def test_empty_node_removed_after_the_unneeded_time() -> None:
    """Two nodes, one job on the first: the empty second node is unneeded from the first scan (t=0)
    and deleted at 10 min (scale-down-unneeded-time); the busy one stays; billing stops at removal."""
    pools = [pool("auto", count=2, autoscaling={"min": 0, "max": 2})]
    result = _run(pools, [job("a", gpus=8, runtime=3600)])
    life = _life(result)
    assert [(e.t_ms, e.kind, e.nodes) for e in life.scale_events] == [(600_000, "down", 1)]
    assert [(w.node, w.removed_ms) for w in life.windows] == [(0, -1), (1, 600_000)]
    assert node_costs(result).billed[1] == Fraction(8 * 600, 3600)


def test_scale_down_respects_min_size() -> None:
    pools = [pool("auto", count=2, autoscaling={"min": 2, "max": 2})]
    life = _life(_run(pools, [job("a", gpus=8, runtime=3600)]))
    assert [e for e in life.scale_events if e.kind == "down"] == []


def test_scale_down_waits_scale_down_delay_after_add() -> None:
    """b finds no node at 0, the scan at 10 s scales up; that blocks every scale-down until 10 min after
    it (scale-down-delay-after-add): the spare left idle when b ends goes at 610 s, not 1 min after."""
    pools = [pool("auto", count=1, autoscaling={"min": 0, "max": 3, "scale_down_unneeded_time": "1m"})]
    jobs = [job("a", gpus=8, runtime=7200, preemptible=False), job("b", gpus=8, runtime=60, submit_s=0)]
    life = _life(_run(pools, jobs))
    downs = [(e.t_ms, e.nodes) for e in life.scale_events if e.kind == "down"]
    assert downs and downs[0][0] == 610_000


def test_node_with_a_pod_that_cannot_move_is_never_removed() -> None:
    """Utilisation 2/8 GPUs is under 0.5, but the pod is not preemptible (not safe to evict): kept."""
    pools = [pool("auto", count=2, autoscaling={"min": 0, "max": 2})]
    jobs = [job("a", gpus=2, runtime=7200, preemptible=False), job("b", gpus=8, runtime=7200)]
    life = _life(_run(pools, jobs))
    assert [e for e in life.scale_events if e.kind == "down"] == []


def test_underused_node_with_movable_pod_is_drained() -> None:
    """A 2-GPU preemptible pod on its own node (utilisation 0.25) moves to the half-empty other node."""
    pools = [pool("auto", count=2, autoscaling={"min": 0, "max": 2})]
    jobs = [
        job("a", gpus=4, runtime=7200, preemptible=False),
        job("b", gpus=2, runtime=7200, preemptible=True, nodeSelector={"kubernetes.io/hostname": "auto-1"}),
    ]
    result = _run(pools, jobs)
    # b is pinned to auto-1 so it cannot move: nothing is removed.
    assert [e for e in _life(result).scale_events if e.kind == "down"] == []
    jobs[1] = job("b", gpus=2, runtime=7200, preemptible=True, submit_s=1)
    pools = [pool("auto", count=2, autoscaling={"min": 0, "max": 2})]
    result = _run(pools, jobs, scheduler={"policy": "least-allocated", "tie_break": "first"})
    downs = [(e.t_ms, e.nodes) for e in _life(result).scale_events if e.kind == "down"]
    assert downs == [(600_000, 1)]
    assert int(result.jobs.evictions.sum()) == 1


def test_stockout_backs_the_pool_off_and_leaves_pods_pending_with_the_reason() -> None:
    """Every request refused: retries after 5, 10, 20 min backoffs (upstream doubling), so attempts at
    0, 5, 15 and 35 min within the hour; the pod stays pending and says stockout."""
    pools = [pool("auto", count=0, autoscaling={"min": 0, "max": 2, "stockout": {"probability": 1.0}})]
    result = _run(pools, [job("a", gpus=8, runtime=600)], horizon_s=3600)
    life = _life(result)
    assert [e.t_ms for e in life.scale_events if e.kind == "stockout"] == [0, 300_000, 900_000, 2_100_000]
    assert "stockout" in result.pending[0].detail
    assert node_costs(result).total_billed == 0


def test_stockout_window_from_a_capacity_trace() -> None:
    """No capacity in the first 20 min: attempts at 0, 5 and 15 min fail, the one at 35 min succeeds."""
    stockout = {"windows": [{"start_s": 0, "end_s": "20m"}]}
    pools = [pool("auto", count=0, autoscaling={"min": 0, "max": 2, "stockout": stockout})]
    life = _life(_run(pools, [job("a", gpus=8, runtime=600)]))
    assert [(e.t_ms, e.kind) for e in life.scale_events] == [
        (0, "stockout"),
        (300_000, "stockout"),
        (900_000, "stockout"),
        (2_100_000, "up"),
    ]


def test_pods_no_template_fits_do_not_trigger_scale_up() -> None:
    """A pod asking for 16 GPUs fits no template node: CA does not scale up for it."""
    pools = [pool("auto", count=0, autoscaling={"min": 0, "max": 2})]
    life = _life(_run(pools, [job("a", gpus=16, runtime=600)], horizon_s=600))
    assert life.scale_events == []


def test_autoscaling_spec_errors_are_clear(tmp_path: Any) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "cluster: {pools: [{name: a, count: 5, cpu: '8', memory: 8Gi, autoscaling: {min: 0, max: 2}}]}\n"
        "workload: {jobs: [{id: j, submit_s: 0, requests: {cpu: '1'}, runtime: 1}]}\n"
    )
    with pytest.raises(SpecError, match=r"min\.\.max"):
        load(str(path))


def test_node_not_ready_within_max_node_provision_time_is_deleted_and_the_pool_backed_off() -> None:
    """Boots take 20 min, over the 15 min limit: the node requested at 0 is deleted at 15 min (billed
    15 min, all boot), the pool backs off 5 min, and the next request at 20 min times out again."""
    pools = [pool("auto", count=0, boot_time_s="20m", autoscaling={"min": 0, "max": 1})]
    result = _run(pools, [job("a", gpus=8, runtime=600)], horizon_s=3000)
    life = _life(result)
    assert [(e.t_ms, e.kind) for e in life.scale_events][:3] == [
        (0, "up"),
        (900_000, "timeout"),
        (1_200_000, "up"),
    ]
    assert life.windows[0].removed_ms == 900_000
    cost = node_costs(result)
    assert cost.dollars["boot"][0] == cost.billed[0]


def test_gang_counts_a_node_that_just_became_ready_plus_one_still_booting() -> None:
    """A 2-pod full-node gang gets two nodes with different boot times; when the first is ready the
    gang fits it plus the one still booting, so no second scale-up (filterOutSchedulable + upcoming)."""
    boot = {"kind": "uniform", "low": "4m", "high": "8m"}
    pools = [pool("auto", count=0, autoscaling={"min": 0, "max": 4, "boot_time": boot})]
    life = _life(_run(pools, [job("g", gpus=8, pods=2, gang=True, runtime=600)]))
    ready = sorted(w.ready_ms for w in life.windows)
    assert len(ready) == 2 and ready[0] < ready[1]
    assert [(e.kind, e.nodes) for e in life.scale_events if e.kind == "up"] == [("up", 2)]
