"""Node maintenance windows (scenario ``maintenance:``, sim/maintenance.py): cordon at the start, evict what is
still there after the grace period, take pods again at the end — worked out by hand on small worlds."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from builders import by_job, job, pool, scenario
from fleetlab.experiment.run import profile_for
from fleetlab.metrics.tables import pod_columns
from fleetlab.model.scenario import Scenario
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator


def _run(
    pools: list[dict[str, Any]], jobs: list[dict[str, Any]], **extra: Any
) -> tuple[Simulator, SimulationResult]:
    resolved = scenario(pools, jobs, **extra)
    sim = Simulator(resolved, profile_for(resolved, None))
    return sim, sim.run()


def _node_of(result: SimulationResult) -> dict[str, list[str]]:
    """Per job the node of each of its stays, in order (from the segments)."""
    out: dict[str, list[str]] = {}
    ids, names = result.jobs.ids, result.nodes.names
    order = sorted(range(len(result.segments.pod)), key=lambda k: (int(result.segments.bound_ms[k]), k))
    for k in order:
        job_id = ids[int(result.pods.job[int(result.segments.pod[k])])]
        out.setdefault(job_id, []).append(names[int(result.segments.node[k])])
    return out


def test_a_window_cordons_drains_after_the_grace_period_and_gives_the_node_back() -> None:
    """Node a-0 is the only ready node until b-0 has booted (t = 200 s). At t = 0 ``long`` (4 GPUs, 1000 s,
    a checkpoint every 100 s) and ``short`` (4 GPUs, 340 s) start on a-0. The window over pool a:
    cordon at 300 s, drain at 300 + 60 = 360 s, uncordon at 300 + 600 = 900 s.

    * ``short`` ends at 340 s, inside the grace period: not evicted.
    * ``late`` (4 GPUs, 100 s) arrives at 345 s: a-0 has 4 idle GPUs but is cordoned, so it runs on b-0,
      345 s → 445 s.
    * ``long`` is evicted at 360 s: 360 s computed, 300 s saved by checkpoints, 60 s × 4 GPUs = 240 GPU-s
      (0.0667 GPU-h) lost. It moves to b-0 at once (4 GPUs free there) with 1000 × (1 - 300/1000) = 700 s
      left: ends at 360 + 700 = 1060 s.
    * ``blocked`` (8 GPUs, 50 s) arrives at 800 s: b-0 holds ``long``, a-0 is cordoned until 900 s; it
      waits 100 s, runs on a-0 900 s → 950 s.
    """
    pools = [pool("a"), pool("b", initially_ready=False, boot_time_s=200)]
    ckpt = {"checkpoint_interval_s": 100, "checkpoint_write_s": 0}
    jobs = [
        job("long", gpus=4, runtime=1000, **ckpt),
        job("short", gpus=4, runtime=340),
        job("late", gpus=4, submit_s=345, runtime=100),
        job("blocked", gpus=8, submit_s=800, runtime=50),
    ]
    window = {"pool": "a", "start_s": 300, "duration_s": 600, "grace_period_s": 60}
    sim, result = _run(pools, jobs, maintenance=[window])
    assert sim.features.maintenance is not None
    assert by_job(result, "evictions") == {"long": 1, "short": 0, "late": 0, "blocked": 0}
    assert by_job(result, "completion_s") == {"long": 1060.0, "short": 340.0, "late": 100.0, "blocked": 150.0}
    assert by_job(result, "queue_wait_s")["blocked"] == 100.0
    assert by_job(result, "lost_gpu_hours")["long"] == pytest.approx(60 * 4 / 3600)
    assert _node_of(result) == {
        "long": ["a-0", "b-0"],
        "short": ["a-0"],
        "late": ["b-0"],
        "blocked": ["a-0"],
    }
    seg = result.segments
    evicted = [k for k in range(len(seg.pod)) if seg.evicted[k]]
    assert [(int(seg.start_ms[k]), int(seg.end_ms[k]), int(seg.lost_ms[k])) for k in evicted] == [
        (0, 360_000, 60_000)
    ]
    assert result.end_ms == 1_060_000


def test_without_the_window_the_same_world_never_evicts() -> None:
    """The control: no maintenance, so nothing is evicted and ``long`` ends at 1000 s on a-0."""
    pools = [pool("a"), pool("b", initially_ready=False, boot_time_s=200)]
    jobs = [job("long", gpus=4, runtime=1000, checkpoint_interval_s=100), job("short", gpus=4, runtime=340)]
    sim, result = _run(pools, jobs)
    assert sim.features.maintenance is None  # a scenario without windows never builds the feature
    assert by_job(result, "evictions") == {"long": 0, "short": 0}
    assert by_job(result, "completion_s")["long"] == 1000.0


def test_a_window_after_the_last_job_does_not_stretch_the_run() -> None:
    """One 100 s job; a window at 5000 s. Its events are optional: once nothing is bound, waiting or to
    arrive they cannot change anything, so the run still ends at 100 s and the node is billed 100 s."""
    window = {"nodes": ["gpu-0"], "start_s": 5000, "duration_s": 600}
    _, with_window = _run([pool()], [job("j", runtime=100)], maintenance=[window])
    _, without = _run([pool()], [job("j", runtime=100)])
    assert with_window.end_ms == without.end_ms == 100_000
    assert with_window.nodes.billed_end_ms.tolist() == without.nodes.billed_end_ms.tolist() == [100_000]


def test_overlapping_windows_hold_the_cordon_until_the_last_ends_and_a_gang_leaves_whole() -> None:
    """Two nodes. ``gang`` (2 pods × 8 GPUs, 1000 s, no checkpoints) starts at 0 on gpu-0 and gpu-1.
    Window 1 drains gpu-0 from 100 s with no grace; window 2 holds gpu-0 from 200 s to 500 s; window 1
    ends at 300 s. At 100 s both gang pods are evicted (a gang leaves whole): 100 s × 16 GPUs lost. The gang
    needs both nodes, and gpu-0 stays cordoned until window 2 ends at 500 s (not 300 s): it restarts at
    500 s from scratch and ends at 1500 s, after 400 s more of queue wait."""
    jobs = [job("gang", gpus=8, pods=2, gang=True, runtime=1000)]
    windows = [
        {"nodes": ["gpu-0"], "start_s": 100, "duration_s": 200, "grace_period_s": 0},
        {"nodes": ["gpu-0"], "start_s": 200, "duration_s": 300, "grace_period_s": 0},
    ]
    _, result = _run([pool(count=2)], jobs, maintenance=windows)
    assert by_job(result, "evictions") == {"gang": 2}
    assert by_job(result, "completion_s") == {"gang": 1500.0}
    assert by_job(result, "queue_wait_s") == {"gang": 400.0}
    assert by_job(result, "lost_gpu_hours")["gang"] == pytest.approx(100 * 16 / 3600)
    pods = pod_columns(result)
    assert list(pods["running_s"]) == [500.0, 500.0]


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"pool": "nope", "start_s": 0, "duration_s": 60}, "maintenance[0].pool 'nope' is not a pool"),
        ({"nodes": ["gpu-7"], "start_s": 0, "duration_s": 60}, "names 'gpu-7', not a node of the cluster"),
        ({"start_s": 0, "duration_s": 60}, "needs a pool or nodes"),
        ({"pool": "gpu", "start_s": 0, "duration_s": 0}, "duration_s must be > 0"),
        ({"pool": "gpu", "start_s": 0, "duration_s": 60, "grace_period_s": 90}, "must not exceed duration_s"),
        ({"pool": "gpu", "start_s": -5, "duration_s": 60}, "start_s"),
        ({"pool": "gpu", "start_s": 0, "duration_s": 60, "drain": True}, "drain"),
    ],
)
def test_bad_windows_are_refused_naming_the_field(window: dict[str, Any], message: str) -> None:
    data = {"cluster": {"pools": [pool(count=2)]}, "workload": {"jobs": [job("j")]}, "maintenance": [window]}
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Scenario.model_validate(data)
