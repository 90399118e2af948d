"""On a cluster without GPUs GPU tenancy subscribes to no bind or release and the usage meter to no start,
nor refreshes touched nodes' free GPU blocks (no pod can take a GPU, no node is counted): the run is the
one with those hooks subscribed and the refreshes made, and with GPUs anywhere (a whole GPU pool, GPUs
stated only as an extended resource) the hooks stay."""

from __future__ import annotations

from typing import Any

import pytest

import fleetlab.sim.gpu_tenancy as gpu_tenancy
import fleetlab.sim.usage_meter as usage_meter
from builders import assert_same_pod_tables, job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.sim.gpu_tenancy import GpuTenancy
from fleetlab.sim.usage_meter import UsageMeter

_init, _meter_init = GpuTenancy.__init__, UsageMeter.__init__


def _run(
    pools: list[dict[str, Any]], jobs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, hooks: bool
) -> tuple[Any, bool]:
    """The run's result and whether GPU tenancy and the usage meter both found the cluster GPU-less;
    ``hooks`` forces their hooks on."""
    seen: list[bool] = []

    def init(self: GpuTenancy, *args: Any) -> None:
        with monkeypatch.context() as m:
            if hooks:
                m.setattr(gpu_tenancy, "gpu_slots", lambda p: 1)
            _init(self, *args)
        seen.append(self.gpu_less)

    def meter_init(self: UsageMeter, *args: Any) -> None:
        with monkeypatch.context() as m:
            if hooks:
                m.setattr(usage_meter, "gpu_slots", lambda p: 1)
            _meter_init(self, *args)
        if hooks:
            self._any_gpu_node = True  # every touched node refreshed after each step, as before
        seen.append(self.gpu_less)

    with monkeypatch.context() as m:
        m.setattr(GpuTenancy, "__init__", init)
        m.setattr(UsageMeter, "__init__", meter_init)
        result = run_one(scenario(pools, jobs, scheduler={"gang_scheduling": True}), "default").result
    assert len(seen) == 2 and seen[0] == seen[1]
    return result, seen[0]


def _jobs() -> list[dict[str, Any]]:
    gangs = [job(f"g{k}", gpus=0, runtime=50 + 7 * k, pods=3, gang=True, submit_s=k) for k in range(6)]
    singles = [job(f"s{k}", gpus=0, runtime=30 + 11 * k, submit_s=2 * k) for k in range(6)]
    return gangs + singles


def test_cpu_only_cluster_runs_as_with_the_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    pools = [pool("cpu", count=2, gpus=0, cpu="4")]
    skipped, gpu_less = _run(pools, _jobs(), monkeypatch, hooks=False)
    hooked, forced = _run(pools, _jobs(), monkeypatch, hooks=True)
    assert gpu_less and not forced
    assert skipped.jobs.completed.all()
    assert_same_pod_tables(skipped, hooked)


def test_any_gpu_keeps_the_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = pool("cpu", count=2, gpus=0, cpu="4")
    _, gpu_less = _run([cpu, pool("gpu", count=1, gpus=2)], _jobs(), monkeypatch, hooks=False)
    assert not gpu_less
    stated = pool("snap", count=1, gpus=0, extended_resources={"nvidia.com/gpu": 2})
    _, gpu_less = _run([cpu, stated], _jobs(), monkeypatch, hooks=False)
    assert not gpu_less
