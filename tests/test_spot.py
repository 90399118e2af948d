"""Spot interruptions in the simulator: lost work per interruption against the checkpoint model, the
provider's notice (AWS 2 min, GCP/Azure 30 s), replacements billed from the request, traces, determinism."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from builders import job, pool, scenario
from fleetlab.cost.billing import node_costs
from fleetlab.cost.checkpoint import lost_per_interruption
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize
from fleetlab.model.interruptions import SpotInterruptions
from fleetlab.spec.errors import SpecError
from fleetlab.spec.loader import load

MIN = 60_000


def _spot(count: int, interruptions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return pool("spot", count=count, capacity_type="spot", interruptions=interruptions, **extra)


def _long_jobs(n: int, interval: str, write: str) -> list[dict[str, Any]]:
    """One whole-node job per node that never finishes: every interruption evicts exactly one pod."""
    return [
        job(f"j{i}", gpus=8, runtime="10000h", checkpoint_interval_s=interval, checkpoint_write_s=write)
        for i in range(n)
    ]


def _expected_lost_ms(interval_ms: float, write_ms: float, notice_ms: float, mtbi_ms: float) -> float:
    """E[lost] when a pod starts as its node becomes ready and is killed notice + Exp(mtbi) later:
    the elapsed wall time modulo one checkpoint cycle (compute τ, then write C), capped at τ."""
    period = interval_ms + write_ms
    x = np.linspace(0.0, 40.0 * mtbi_ms, 4_000_001)
    density = np.exp(-x / mtbi_ms) / mtbi_ms
    lost = np.minimum(np.mod(notice_ms + x, period), interval_ms)
    trapezoid = getattr(np, "trapezoid", None) or np.trapz  # numpy < 2.0 (the minimum) names it trapz
    return float(trapezoid(lost * density, x))


def test_lost_work_per_interruption_matches_the_checkpoint_model() -> None:
    """Checkpoints every 30 min, 5 min writes, one interruption per 6 node-hours (AWS 120 s notice):
    over ~1,650 interruptions the mean lost compute per interruption is within 4 standard errors of the
    model's expectation, and within 5 % of the uniform-phase figure (τ²/2 + Cτ)/(τ + C) = 17.1 min."""
    nodes = 20
    resolved = scenario(
        [_spot(nodes, {"mtbi": "6h"})], _long_jobs(nodes, "30m", "5m"), horizon_s="500h", seed=3
    )
    result = run_one(resolved).result
    log = result.interruptions
    assert log is not None
    assert len(log) > 1500
    assert np.all(log.pods_evicted == 1)
    assert np.array_equal(log.reclaim_ms - log.notice_ms, np.full(len(log), 120_000))
    lost_ms = log.lost_gpu_ms / 8.0
    seg = result.segments
    assert lost_ms.sum() == seg.lost_ms[seg.evicted].sum()
    expected = _expected_lost_ms(30 * MIN, 5 * MIN, 120_000, 6 * 60 * MIN)
    standard_error = lost_ms.std(ddof=1) / np.sqrt(len(lost_ms))
    assert abs(lost_ms.mean() - expected) < 4 * standard_error, (lost_ms.mean(), expected, standard_error)
    uniform = lost_per_interruption(30 * MIN, 5 * MIN)
    assert abs(lost_ms.mean() - uniform) < 0.05 * uniform
    # Without checkpoints everything computed since the pod started is lost.
    bare = scenario(
        [_spot(nodes, {"mtbi": "6h"})],
        [job(f"j{i}", gpus=8, runtime="10000h") for i in range(nodes)],
        horizon_s="100h",
        seed=3,
    )
    bare_log = run_one(bare).result.interruptions
    assert bare_log is not None
    assert bare_log.lost_gpu_ms.mean() / 8 > 3 * uniform


def test_trace_interruptions_cordon_at_notice_evict_at_reclaim_and_bill_the_replacement_boot(
    tmp_path: Path,
) -> None:
    """A trace row for node 0 at 1000 s with a 30 s notice (GCP Spot): the pod there runs until 1030 s,
    the replacement boots for 300 s (billed, 'boot' bucket) and the job resumes from its checkpoint."""
    (tmp_path / "trace.csv").write_text("time,pool,node\n1000,spot,spot-0\n", encoding="utf-8")
    data = {
        "cluster": {
            "pools": [
                _spot(1, {"trace": "trace.csv", "notice_s": 30}, boot_time_s=300),
            ]
        },
        "workload": {"jobs": [job("a", gpus=8, runtime=2000, checkpoint_interval_s=600)]},
    }
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = run_one(load(str(file))).result
    log = result.interruptions
    assert log is not None
    assert log.notice_ms.tolist() == [1_000_000]
    assert log.reclaim_ms.tolist() == [1_030_000]
    assert log.ready_ms.tolist() == [1_330_000]
    seg = result.segments
    assert seg.evicted.tolist() == [True, False]
    assert seg.end_ms[0] == 1_030_000 and seg.lost_ms[0] == 430_000  # 1030 s − the 600 s checkpoint
    assert seg.bound_ms[1] == 1_330_000
    assert result.nodes.ready_ms.tolist() == [0]  # the slot's first node; the replacement's is in the log
    assert result.jobs.end_ms[0] == 1_330_000 + 1_400_000  # the 1400 s left after the checkpoint
    cost = node_costs(result)
    assert cost.units["boot"][0] == 8 * 300_000
    assert cost.unit_total[0] == 8 * result.end_ms
    summary = summarize(result)
    assert summary.interruptions == 1 and summary.interruption_pods_evicted == 1
    assert summary.interruption_gpu_hours_lost == pytest.approx(8 * 430 / 3600)
    assert summary.interruption_cost_lost == pytest.approx(8.0 * 430 / 3600)
    assert summary.cost_boot == pytest.approx(8.0 * 300 / 3600)


def test_trace_row_without_node_picks_a_running_node_and_skips_when_none(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("time,pool\n100,spot\n101,spot\n102,spot\n", encoding="utf-8")
    data = {
        "cluster": {"pools": [_spot(2, {"trace": "t.csv"}, boot_time_s=600)]},
        "workload": {"jobs": [job("a", gpus=8, runtime=3000), job("b", gpus=8, runtime=3000)]},
    }
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump(data), encoding="utf-8")
    log = run_one(load(str(file))).result.interruptions
    assert log is not None
    assert sorted(log.node.tolist()) == [0, 1]  # both nodes noticed; the third row finds none running
    assert log.skipped == 1


def test_default_notice_per_cloud() -> None:
    """AWS two-minute Spot interruption notice; GCP Spot VMs 30 s (ACPI soft-off to hard-off); Azure 30 s."""
    spec = SpotInterruptions(mtbi=3600)
    assert [spec.notice_for(c) for c in ("aws", "gcp", "azure", None)] == [120.0, 30.0, 30.0, 120.0]
    assert SpotInterruptions(rate_per_node_hour=0.5, notice_s=10).notice_for("aws") == 10.0
    assert SpotInterruptions(rate_per_node_hour=0.5).per_node_hour() == 0.5
    assert SpotInterruptions(mtbi="2h").per_node_hour() == 0.5


def test_interruption_times_depend_only_on_their_own_stream() -> None:
    """Changing the workload does not move any interruption; changing the seed does."""
    pools = [_spot(4, {"mtbi": "3h"})]
    a = run_one(scenario(pools, _long_jobs(4, "30m", "1m"), horizon_s="50h", seed=1)).result.interruptions
    b = run_one(scenario(pools, _long_jobs(2, "10m", "0s"), horizon_s="50h", seed=1)).result.interruptions
    c = run_one(scenario(pools, _long_jobs(4, "30m", "1m"), horizon_s="50h", seed=2)).result.interruptions
    assert a is not None and b is not None and c is not None
    assert a.notice_ms.tolist() == b.notice_ms.tolist() and a.node.tolist() == b.node.tolist()
    assert a.notice_ms.tolist() != c.notice_ms.tolist()


def test_run_without_horizon_ends_with_the_last_job() -> None:
    """Interruptions that can change nothing any more do not stretch the run past its last completion."""
    result = run_one(scenario([_spot(2, {"mtbi": "1h"})], [job("a", gpus=8, runtime="3h")])).result
    assert result.jobs.completed.all()
    assert result.end_ms == result.jobs.end_ms.max()


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("time,pool,node\nsoon,spot,0\n", "line 2, column time: 'soon' is not a duration"),
        ("time,pool\n10,gpu\n", "line 2, column pool: 'gpu' is not a spot pool with this trace (spot)"),
        ("time,pool,node\n10,spot,spot-7\n", "line 2, column node: node 'spot-7': pool spot has 2 node(s)"),
        ("when,where\n", "line 1: header must be 'time,pool' or 'time,pool,node'"),
    ],
)
def test_bad_interruption_trace_names_file_line_and_column(tmp_path: Path, rows: str, message: str) -> None:
    (tmp_path / "t.csv").write_text(rows, encoding="utf-8")
    data = {
        "cluster": {"pools": [_spot(2, {"trace": "t.csv"})]},
        "workload": {"jobs": [job("a")]},
    }
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load(str(file))
    assert str(tmp_path / "t.csv") in str(info.value)
    assert message in str(info.value)


def test_interruptions_need_a_spot_pool_and_one_source() -> None:
    with pytest.raises(ValueError, match="interruptions apply to spot pools"):
        scenario([pool("p", interruptions={"mtbi": "1h"})], [job("a")])
    with pytest.raises(ValueError, match="exactly one of rate_per_node_hour, mtbi or trace"):
        scenario([_spot(1, {"mtbi": "1h", "rate_per_node_hour": 1})], [job("a")])
    with pytest.raises(ValueError, match="mtbi must be a duration > 0"):
        scenario([_spot(1, {"mtbi": 0})], [job("a")])


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "spot"


def test_example_spot_scenarios_run_and_longer_intervals_lose_more() -> None:
    """examples/spot: the same interruptions hit every variant (their own stream); checkpointing every
    10 min loses less compute to them than every 120 min, and the trace variant replays its six rows."""
    lost = {}
    for name in ("spot-ckpt-10m", "spot-ckpt-120m"):
        summary = summarize(run_one(load(str(EXAMPLES / f"{name}.yaml"))).result)
        assert summary.interruptions > 0 and summary.jobs_completed == summary.jobs
        lost[name] = summary.interruption_gpu_hours_lost
    assert lost["spot-ckpt-10m"] < lost["spot-ckpt-120m"]
    trace = run_one(load(str(EXAMPLES / "spot-trace.yaml"))).result.interruptions
    assert trace is not None and len(trace) + trace.skipped == 6


def test_interruptions_stay_visible_while_a_replacement_boots() -> None:
    """With every pod evicted and only interruption events left, a booting replacement can still start a
    pending gang before the next interruption: that interruption must fire at its time, not after the
    boot (the clock never runs backwards, no stay ends before it began)."""
    from builders import scenario

    spot = {
        "name": "p0",
        "count": 3,
        "gpu_model": "H100",
        "gpus_per_node": 8,
        "cpu": "64",
        "memory": "512Gi",
        "capacity_type": "spot",
        "boot_time_s": 300,
        "initially_ready": False,
        "interruptions": {"mtbi": 300, "notice_s": 0},
    }
    gang = {
        "id": "j0",
        "submit_s": 0,
        "pods": 2,
        "requests": {"cpu": "1", "memory": "8Gi", "nvidia.com/gpu": 8},
        "runtime": 236,
        "gang": True,
    }
    resolved = scenario([spot], [gang], seed=0, scheduler={"gang_scheduling": True}, horizon_s=2000)
    result = run_one(resolved).result
    log = result.interruptions
    assert log is not None and len(log) >= 3
    seg = result.segments
    assert np.all(seg.end_ms >= seg.bound_ms)
    for node, reclaim, ready in zip(log.node, log.reclaim_ms, log.ready_ms, strict=True):
        on_node = seg.node == node
        assert not np.any((seg.bound_ms[on_node] >= reclaim) & (seg.bound_ms[on_node] < ready))


def test_interruptions_stay_visible_while_a_pending_pod_waits_for_a_repair() -> None:
    """An autoscaled spot pool of one node that also fails: while the only job waits for the node's
    repair, the interruptions due before the repair still fire in time order (the run used to resume them
    after the repair, in the past)."""
    from builders import scenario

    spot = {
        "name": "p0",
        "count": 0,
        "gpu_model": "H100",
        "gpus_per_node": 2,
        "cpu": "32",
        "memory": "256Gi",
        "price_per_hour": 1.37,
        "capacity_type": "spot",
        "interruptions": {"mtbi": 1200, "notice_s": 120},
        "autoscaling": {"min": 0, "max": 1, "scale_down_unneeded_time": 60},
        "failures": {"mtbf": 1800, "repair_time": 600},
    }
    one = {
        "id": "j0",
        "submit_s": 0,
        "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": 1},
        "runtime": 117,
    }
    result = run_one(scenario([spot], [one], seed=0, scheduler={"preemption": True})).result
    seg = result.segments
    assert np.all(seg.end_ms >= seg.bound_ms)
    assert result.jobs.end_ms[0] >= 0
