"""The engine's calls for several pods at once (a gang's binds and starts, a shared prep-done or
finish entry's pods: ``Engine.bind_each``, ``start_each``, ``prepared_each``, ``finish_each``) and the
usage meter's kept weight give the run that one call per pod gives: the same pod stays, segments,
timeline and end, on small worlds with gangs that share nodes, data at unequal bandwidths, checkpoints,
a node failure and random tie-breaks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from builders import assert_same_pod_tables, job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.sim.engine import Engine
from fleetlab.sim.usage_meter import UsageMeter

_bind_each, _start_each, _finish_each = Engine.bind_each, Engine.start_each, Engine.finish_each
_prepared_each = Engine.prepared_each
_started = UsageMeter.started


def _run(resolved: Any, batched: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """The run's result, and how many calls took more than one pod."""
    several = 0

    def bind_each(sim: Engine, pods: Sequence[int], nodes: Sequence[int], before: Sequence[int]) -> None:
        nonlocal several
        several += len(pods) > 1
        if batched:
            _bind_each(sim, pods, nodes, before)
        else:
            for p, n, b in zip(pods, nodes, before, strict=True):
                _bind_each(sim, (p,), (n,), (b,))

    def start_each(sim: Engine, pods: Sequence[int], total_ms: int) -> None:
        nonlocal several
        several += len(pods) > 1
        if batched:
            _start_each(sim, pods, total_ms)
        else:
            for p in pods:
                _start_each(sim, (p,), total_ms)

    def prepared_each(sim: Engine, pods: Sequence[int], attempts: Sequence[int]) -> None:
        nonlocal several
        several += len(pods) > 1
        if batched:
            _prepared_each(sim, pods, attempts)
        else:
            for p, a in zip(pods, attempts, strict=True):
                _prepared_each(sim, (p,), (a,))

    def finish_each(sim: Engine, pods: Sequence[int], attempts: Sequence[int]) -> int:
        nonlocal several
        several += len(pods) > 1
        if batched:
            return _finish_each(sim, pods, attempts)
        return sum(_finish_each(sim, (p,), (a,)) for p, a in zip(pods, attempts, strict=True))

    def started(meter: UsageMeter, pod: int, wall_ms: int) -> None:
        if not batched:
            meter._last_job = -1  # the weight worked out again for every pod
        _started(meter, pod, wall_ms)

    monkeypatch.setattr(Engine, "bind_each", bind_each)
    monkeypatch.setattr(Engine, "start_each", start_each)
    monkeypatch.setattr(Engine, "prepared_each", prepared_each)
    monkeypatch.setattr(Engine, "finish_each", finish_each)
    monkeypatch.setattr(UsageMeter, "started", started)
    return run_one(resolved, "default").result, several


def _both(resolved: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    batched, several = _run(resolved, True, monkeypatch)
    one_by_one, _ = _run(resolved, False, monkeypatch)
    assert several > 0  # the world did give the engine several pods in one call
    assert_same_pod_tables(batched, one_by_one)
    return batched


def test_gangs_on_shared_nodes_with_data_and_random_ties(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two pools of three 2-GPU nodes, data at 50 and 100 MiB/s; gangs of 3, 4 and 5 one-GPU pods (two
    # members may share a node) and one-pod jobs at the same times, placed with random tie-breaks.
    resolved = scenario(
        [
            pool("slow", count=3, gpus=2, data_bandwidth="50Mi"),
            pool("fast", count=3, gpus=2, data_bandwidth="100Mi"),
        ],
        [
            job("g3", gpus=1, runtime=100, pods=3, gang=True, data_size="100Mi"),
            job("g4", gpus=1, runtime=60, pods=4, gang=True),
            job("s1", gpus=1, runtime=60),
            job("s2", gpus=1, runtime=60),
            job("g5", gpus=1, submit_s=5, runtime=80, pods=5, gang=True, data_size="50Mi"),
            job("s3", gpus=1, submit_s=5, runtime=80),
        ],
        seed=3,
    )
    result = _both(resolved, monkeypatch)
    # Every pod ran once: 3 + 4 + 5 gang pods and 3 one-pod jobs.
    assert len(result.segments.pod) == 15


def test_gang_evicted_by_a_node_failure_resumes_from_its_checkpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    # Four 1-GPU nodes; a gang of 4 checkpointing every 30 s (a write takes 1 s) runs from 0 s, four
    # one-pod jobs of 50 s submitted at 1 s wait. gpu-1 fails at 70 s (repaired at 90 s): the whole gang
    # is evicted with 2 checkpoints saved (60 of its 100 s) and queued behind the one-pod jobs; three of
    # them run 70-120 s (one finish entry for the three), the fourth 90-140 s on gpu-1; the gang runs
    # again from 140 s with 40 s left: 40 s + one write (at 30 s of compute) = 41 s, ending at 181 s.
    failures = {"trace": [{"node": "gpu-1", "at_s": 70, "repair_s": 20}]}
    resolved = scenario(
        [pool("gpu", count=4, gpus=1, failures=failures)],
        [
            job("g", gpus=1, runtime=100, pods=4, gang=True, checkpoint_interval_s=30, checkpoint_write_s=1),
            *(job(f"s{i}", gpus=1, submit_s=1, runtime=50) for i in range(4)),
        ],
        scheduler={"tie_break": "first"},
    )
    result = _both(resolved, monkeypatch)
    seg = result.segments
    assert seg.evicted.sum() == 4
    assert sorted(seg.end_ms.tolist()) == [70_000] * 4 + [120_000] * 3 + [140_000] + [181_000] * 4
