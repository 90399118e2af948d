"""Recorded node windows (``recorded.windows``, sim/maintenance.py): a drain cordons a node (its pods run on),
a down window cordons it and evicts what runs, both end with an uncordon; windows of every node and of one
node of a pool — worked out by hand on two 8-GPU nodes, every job a whole node (``tie_break: first``: the
first of equally scored nodes, so j0 goes to a-0 and j1 to a-1)."""

from __future__ import annotations

from typing import Any

import pytest

from builders import by_job, job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.model.scenario import Scenario
from fleetlab.sim.result import SimulationResult


def _run(windows: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> SimulationResult:
    resolved = scenario([pool("a", count=2)], jobs, scheduler={"tie_break": "first"},
                        recorded={"windows": windows})  # fmt: skip
    return run_one(resolved).result


def _starts(result: SimulationResult) -> dict[str, float]:
    """Per job when its last stay began (submit + queue wait, evictions included)."""
    waits, submits, evicted = (by_job(result, c) for c in ("queue_wait_s", "submit_s", "evictions"))
    return {k: submits[k] + waits[k] for k in waits if not evicted[k]}


JOBS = [
    job("j0", gpus=8, runtime=1000),
    job("j1", gpus=8, runtime=300),
    job("j2", gpus=8, submit_s=310, runtime=100),
]


def test_a_drain_window_cordons_without_evicting() -> None:
    """a-1 drained 100 → 400: j1 (on a-1) runs on to 300; j2 at 310 finds a-1 idle but cordoned and a-0
    busy until 1000: it starts at 400, when the window ends."""
    result = _run([{"node": "a-1", "start_s": 100, "end_s": 400, "state": "drain"}], JOBS)
    assert by_job(result, "evictions") == {"j0": 0, "j1": 0, "j2": 0}
    assert _starts(result) == {"j0": 0, "j1": 0, "j2": 400}


def test_a_down_window_evicts_what_runs_and_gives_the_node_back_at_its_end() -> None:
    """a-1 down 100 → 400: j1 (no checkpoints) is evicted at 100, its 100 s lost, and waits (a-0 busy, a-1
    cordoned) until 400; it runs 400 → 700, whole again. j2 at 310 queues behind j1 (requeued at 100): it
    runs when j1 ends, 700 → 800."""
    result = _run([{"node": "a-1", "start_s": 100, "end_s": 400, "state": "down"}], JOBS)
    assert by_job(result, "evictions") == {"j0": 0, "j1": 1, "j2": 0}
    assert by_job(result, "completion_s") == {"j0": 1000.0, "j1": 700.0, "j2": 490.0}
    assert by_job(result, "queue_wait_s")["j1"] == 300.0  # 100 → 400 after the eviction
    assert by_job(result, "lost_gpu_hours")["j1"] == pytest.approx(100 * 8 / 3600)


def test_a_window_of_every_node_and_an_open_ended_one() -> None:
    """Every node drained 50 → 150: j3 at 60 waits until 150 although a-1 is idle. A drain of a-1 from 20
    with no end keeps it cordoned to the run's end: j4 at 200 waits for a-0, until j0 ends at 1000."""
    jobs = [job("j0", gpus=8, runtime=1000), job("j3", gpus=8, submit_s=60, runtime=10),
            job("j4", gpus=8, submit_s=200, runtime=10)]  # fmt: skip
    result = _run([{"start_s": 50, "end_s": 150, "state": "drain"}], jobs)
    assert _starts(result) == {"j0": 0, "j3": 150, "j4": 200}
    result = _run([{"node": "a-1", "start_s": 20, "state": "drain"}], jobs)
    assert _starts(result) == {"j0": 0, "j3": 1000, "j4": 1010}


def test_a_pool_window_takes_one_ready_node_no_other_window_holds() -> None:
    """Two down windows of "one node of pool a" (as a history records a node of an autoscaled pool), both
    100 → 400: the first takes a-0 (evicting j0), the second a-1 (evicting j1); both jobs wait until 400.
    j0 (1000 s, requeued first) runs 400 → 1400 on a-0, j1 400 → 700 on a-1."""
    windows = [{"pool": "a", "start_s": 100, "end_s": 400, "state": "down"}] * 2
    result = _run(windows, JOBS[:2])
    assert by_job(result, "evictions") == {"j0": 1, "j1": 1}
    assert by_job(result, "completion_s") == {"j0": 1400.0, "j1": 700.0}


def test_windows_must_name_nodes_and_pools_of_the_cluster() -> None:
    base: dict[str, Any] = {"cluster": {"pools": [pool("a")]}, "workload": {"jobs": [job("j")]}}
    for window, message in (
        ({"node": "b-0", "start_s": 0, "state": "down"}, "is not a node of the cluster"),
        ({"pool": "b", "start_s": 0, "state": "down"}, "is not a pool of the cluster"),
        ({"node": "a-0", "start_s": 10, "end_s": 5, "state": "down"}, "is before start_s"),
        ({"node": "a-0", "pool": "a", "start_s": 0, "state": "drain"}, "a node or a pool, not both"),
    ):
        with pytest.raises(ValueError, match=message):
            Scenario.model_validate({**base, "recorded": {"windows": [window]}})
