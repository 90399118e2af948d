"""Shortcuts on the simulator's hot path and in the writers give exactly what the long way gives.

* The fragmentation meter skips per-node updates on a cluster without GPUs (every term is zero there).
* The ledger's string columns are built from codes into a dictionary, not from a Python string per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from builders import job, pool, scenario
from fleetlab.cost.ledger import coded
from fleetlab.experiment.run import run_one
from fleetlab.sim import gpu_fragments


def _cpu_world() -> Any:
    # Two 64-CPU nodes without GPUs; jobs of 40 CPUs: a third waits until one of the first two ends.
    jobs = [
        job(f"j{k}", gpus=0, submit_s=10 * k, runtime=100, requests={"cpu": "40", "memory": "1Gi"})
        for k in range(3)
    ]
    return scenario([pool("cpu", count=2, gpus=0)], jobs)


def test_cpu_only_cluster_fragmentation_is_zero_with_or_without_the_shortcut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast = run_one(_cpu_world()).result
    seen: list[bool] = []
    original = gpu_fragments.FragmentationMeter.sample

    def long_way(self: gpu_fragments.FragmentationMeter, now: int) -> None:
        seen.append(self._no_gpu_slots)
        self._no_gpu_slots = False  # every touched node's terms computed as on a GPU cluster
        original(self, now)

    monkeypatch.setattr(gpu_fragments.FragmentationMeter, "sample", long_way)
    slow = run_one(_cpu_world()).result
    assert seen and seen[0] is True  # the shortcut applies to this cluster
    # Same samples either way: t = 0, 10, 20 (binds), 100, 110 (ends) ... every term 0 milli-GPU.
    assert fast.sharing is not None and slow.sharing is not None
    np.testing.assert_array_equal(fast.sharing.fragmentation, slow.sharing.fragmentation)
    np.testing.assert_array_equal(fast.sharing.stranded, slow.sharing.stranded)
    assert len(fast.sharing.fragmentation) and not fast.sharing.fragmentation[:, 1:].any()
    assert fast.jobs.completed.all()


def test_gpu_cluster_does_not_take_the_shortcut() -> None:
    resolved = scenario([pool("gpu", count=1, gpus=8)], [job("a", gpus=2)])
    seen: list[bool] = []
    original = gpu_fragments.FragmentationMeter.sample

    def spy(self: gpu_fragments.FragmentationMeter, now: int) -> None:
        seen.append(self._no_gpu_slots)
        original(self, now)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gpu_fragments.FragmentationMeter, "sample", spy)
        result = run_one(resolved).result
    assert seen and not any(seen)
    # While "a" runs, 6 of 8 GPUs are idle: 6,000 milli-GPU (the samples' idle column).
    assert result.sharing is not None
    assert 6000 in result.sharing.fragmentation[:, 1].tolist()


def test_coded_strings_are_the_list_column() -> None:
    # codes 1, -1, 0, 1 over ("a", "bb"): "bb", the missing value, "a", "bb".
    column = coded(["a", "bb"], np.asarray([1, -1, 0, 1], dtype=np.int64))
    assert column.type == pa.string()
    assert column.to_pylist() == ["bb", "", "a", "bb"]
    assert column.equals(pa.array(["bb", "", "a", "bb"]))
    other = coded(["x"], np.asarray([-1, 0], dtype=np.int64), missing="(none)")
    assert other.to_pylist() == ["(none)", "x"]


def test_coded_with_a_missing_name_keeps_the_null() -> None:
    # A None among the values: the rows as a list (pa.table infers the type, nulls kept).
    column = coded(["a", None], np.asarray([1, 0, -1], dtype=np.int64))
    assert pa.array(column).to_pylist() == [None, "a", ""]


def test_coded_empty() -> None:
    column = coded(["a"], np.zeros(0, dtype=np.int64))
    assert len(column) == 0 and column.type == pa.string()
