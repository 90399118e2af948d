"""GPU utilisation next to allocation and free-GPU blocks per node (fleetlab.sim.usage_meter).

Allocated GPUs count from bind to release (kube-scheduler's view); busy GPUs only while the pod computes,
scaled by the job's ``gpu_utilization`` (DCGM_FI_DEV_GPU_UTIL's share of time busy) and by time-slicing
slowdown. Blocks are free whole ``nvidia.com/gpu`` per ready node.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from builders import job, pool, scenario
from fleetlab.experiment.run import profile_for, run_one
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.tables import job_columns, timeline_columns
from fleetlab.model.job import Job
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator
from fleetlab.sim.usage_meter import BLOCK_SIZES


def _run(pools: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> SimulationResult:
    return run_one(scenario(pools, jobs), "default").result


def _at(columns: dict[str, Any], t_s: float) -> dict[str, Any]:
    """The step function's values in force at ``t_s``."""
    k = int(np.searchsorted(columns["t_s"], t_s, side="right")) - 1
    return {name: values[k] for name, values in columns.items()}


def test_gpus_downloading_data_are_allocated_but_not_busy() -> None:
    """4 GPUs bound at t=0 with 100 MiB of data at 1 MiB/s: allocated from 0, busy only from t=100 s, and
    then at the job's gpu_utilization (0.5 → 2 busy GPUs)."""
    jobs = [job("a", gpus=4, runtime=100, data_size="100Mi", gpu_utilization=0.5)]
    tl = timeline_columns(_run([pool(data_bandwidth="1Mi")], jobs))
    early, late = _at(tl, 50), _at(tl, 150)
    assert early["allocated_gpus"] == 4 and early["busy_gpus"] == 0
    assert late["allocated_gpus"] == 4 and late["busy_gpus"] == pytest.approx(2.0)
    assert _at(tl, 250)["busy_gpus"] == 0  # finished at 200
    summary = summarize(_run([pool(data_bandwidth="1Mi")], jobs))
    # allocated 4 of 8 GPUs for 200 s of 200 s; busy 2 of 8 for the last 100 s.
    assert summary.gpu_allocation_ratio == pytest.approx(0.5)
    assert summary.gpu_utilization_ratio == pytest.approx(0.125)


def test_time_sliced_pods_share_one_gpu_of_work() -> None:
    """Two replicas on one GPU with α = 1 each run at half speed: 2 allocated replicas, 1 busy GPU."""
    jobs = [job("a", runtime=100), job("b", runtime=100)]
    tl = timeline_columns(_run([pool(gpus=1, time_slicing={"replicas": 2})], jobs))
    now = _at(tl, 10)
    assert now["allocated_gpus"] == 2 and now["busy_gpus"] == pytest.approx(1.0)


def test_fractional_share_is_busy_for_its_milli() -> None:
    """A 300 milli-GPU share allocates a whole GPU (it is no longer idle) but keeps 0.3 of it busy."""
    tl = timeline_columns(_run([pool(gpus=2)], [job("s", gpus=0, gpu_milli=300, runtime=100)]))
    now = _at(tl, 10)
    assert now["allocated_gpus"] == 1 and now["busy_gpus"] == pytest.approx(0.3)


def test_largest_free_block_counts_nodes_per_block_size() -> None:
    """Two 8-GPU nodes; a 3-GPU pod on one (5 free there) and then a 6-GPU pod on the other (2 free)."""
    jobs = [job("three", gpus=3, runtime=1000), job("six", gpus=6, runtime=1000, submit_s=10)]
    tl = timeline_columns(_run([pool(count=2)], jobs))
    first, second = _at(tl, 5), _at(tl, 20)
    assert [first[f"free_block_ge{k}_nodes"] for k in BLOCK_SIZES] == [2, 2, 2, 1]
    assert first["largest_free_block"] == 8
    assert [second[f"free_block_ge{k}_nodes"] for k in BLOCK_SIZES] == [2, 2, 1, 0]
    assert second["largest_free_block"] == 5


def test_gpu_utilization_must_be_a_share() -> None:
    with pytest.raises(ValidationError, match="gpu_utilization"):
        Job.model_validate(job("x", gpu_utilization=1.5))


class CheckedSimulator(Simulator):
    """After every step, compares the incremental figures with a from-scratch count over pods and nodes."""

    def end_step(self) -> None:
        super().end_step()
        book, state = self.book, self.state
        busy = 0.0
        # A gang placed again after an eviction places only its unfinished pods: a pod that succeeded
        # never starts again (as a resumed Job keeps its succeeded pods).
        assert not np.any((book.end_ms >= 0) & (book.start_ms > book.end_ms))
        running = (book.node >= 0) & (book.start_ms >= 0) & (book.end_ms < 0)
        for pod in np.flatnonzero(running):
            p = int(pod)
            j = self.jobs[int(book.job[p])]
            gpus = 1000.0 * int(self.compiled[self.spec_of(int(book.job[p]))].request[state.gpu_col])
            milli = float(j.gpu_milli or 0) if j.shares_gpu else gpus
            pace = self.features.pace.paces.get(p) if self.features.pace else None
            slowdown = pace.slicing * pace.interference if pace is not None else 1.0
            busy += milli * j.gpu_utilization / slowdown
        row = self.features.timeline.series.last()  # the last recorded row holds until the figures change
        counted = state.ready & (state.allocatable[:, state.gpu_col] > 0)
        free = state.free[counted, state.gpu_col]
        blocks = tuple(int((free >= k).sum()) for k in BLOCK_SIZES)
        assert abs(row[5] - busy) <= 0.5 + 1e-6  # rounded to a whole milli-GPU
        assert row[6:] == (*blocks, int(free.max(initial=0)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_incremental_figures_match_a_full_recount_after_every_step(seed: int) -> None:
    """Whole, shared, time-sliced and gang pods with data downloads, preemption, checkpoints,
    gpu_utilization and interference (paced by time-slicing and interference at once)."""
    rng = np.random.default_rng(seed)
    pools = [
        pool("plain", count=3, gpus=4, data_bandwidth="10Mi"),
        pool("big", count=1, gpus=8),
        pool("sliced", count=1, gpus=2, time_slicing={"replicas": 3, "slowdown_per_extra_pod": 0.7}),
    ]
    jobs = []
    for j in range(60):
        extra: dict[str, Any] = {
            "submit_s": int(rng.integers(0, 300)),
            "runtime": int(rng.integers(5, 150)),
            "gpu_utilization": float(rng.choice([1.0, 0.6, 0.25])),
            "priority": int(rng.integers(0, 3)),
            "data_size": f"{int(rng.integers(0, 200))}Mi",
        }
        kind = int(rng.integers(3))
        if kind == 0:
            jobs.append(job(f"w{j}", gpus=int(rng.choice([1, 2, 4])), **extra))
        elif kind == 1:
            jobs.append(job(f"s{j}", gpus=0, gpu_milli=int(rng.integers(1, 1000)), **extra))
        else:
            jobs.append(job(f"g{j}", gpus=2, pods=2, gang=True, **extra))
        if rng.random() < 0.5:
            jobs[-1]["interference_demand"] = {"network": float(rng.choice([0.2, 0.5])), "disk": 0.1}
        if rng.random() < 0.3:
            jobs[-1]["checkpoint_interval_s"] = 20
    interference = {"alpha": float(rng.choice([0.5, 1.0])), "class_demand": {"batch": {"cpu": 0.15}}}
    resolved = scenario(pools, jobs, interference=interference)
    result = CheckedSimulator(resolved, profile_for(resolved, "default")).run()
    assert len(result.timeline.t_ms) > 0
    states = set(job_columns(result)["state"])
    assert states <= {"completed", "failed"}
    assert result.interference is not None and (result.interference.job_slowdown() >= 1.0 - 1e-9).all()
