"""Per-job columns of the event loop (sim/job_arrays.py) and the spec keys that share one pod spec."""

from __future__ import annotations

from typing import Any

import numpy as np

from builders import pool, scenario
from fleetlab.experiment.run import profile_for
from fleetlab.model.job import Job
from fleetlab.placement.devices import GpuDevices
from fleetlab.placement.framework import CompiledPod, PodSpec
from fleetlab.placement.plugins.image_locality import ImageLocalityScore
from fleetlab.placement.plugins.inter_pod_affinity import InterPodAffinityScore
from fleetlab.placement.plugins.node_affinity import NodeAffinityScore
from fleetlab.placement.plugins.pod_topology_spread import PodTopologySpreadScore
from fleetlab.placement.plugins.taint_toleration import TaintTolerationScore
from fleetlab.placement.state import ClusterState, NodeInfo
from fleetlab.sim import spec_table as spec_table_module
from fleetlab.sim.job_arrays import NO_CHECKPOINT, job_arrays, spec_keys
from fleetlab.sim.simulator import Simulator

GI = 1024**3


def job(name: str, **extra: Any) -> Job:
    fields: dict[str, Any] = {"id": name, "requests": {"cpu": "4", "nvidia.com/gpu": 1}, "runtime": 60}
    fields.update(extra)
    return Job.model_validate(fields)


def test_columns_hold_each_jobs_fields() -> None:
    jobs = [
        job(
            "a",
            pods=3,
            gang=True,
            priority=5,
            image={"name": "trainer:1", "size": 2 * GI},
            topology_required="rack",
        ),
        job("b", checkpoint_interval_s=90.5, checkpoint_write_s=2.25, preemptionPolicy="Never"),
        job("c", queue="team-a", data_size=10**9, **{"class": "training"}),
    ]
    cols = job_arrays(jobs)
    assert len(cols) == 3
    assert cols.pods.tolist() == [3, 1, 1]
    assert cols.priority.tolist() == [5, 0, 0]
    assert cols.gang.tolist() == [True, False, False]
    assert cols.job_class.tolist() == ["batch", "batch", "training"]
    assert cols.kueue_managed.tolist() == [False, False, True]
    assert cols.image_name.tolist() == ["trainer:1", None, None]
    assert cols.image_size.tolist() == [2 * GI, 0, 0]
    assert cols.data_size.tolist() == [0, 0, 10**9]
    # 90.5 s = 90,500 ms; 2.25 s = 2,250 ms; no interval: NO_CHECKPOINT.
    assert cols.checkpoint_interval_ms.tolist() == [NO_CHECKPOINT, 90_500, NO_CHECKPOINT]
    assert cols.checkpoint_write_ms.tolist() == [0, 2_250, 0]
    assert cols.preempt_never.tolist() == [False, True, False]
    assert cols.prebound.tolist() == [False, False, False]
    assert cols.topology_required.tolist() == ["rack", None, None]
    # b and c differ only in fields the pod spec does not hold (checkpoints, class, queue, data): one key.
    assert cols.spec_key.tolist() == [0, 1, 1]
    assert repr(cols) == "JobArrays(3 jobs, 2 pod specs)"


def test_empty_workload_has_empty_columns() -> None:
    cols = job_arrays([])
    assert len(cols) == 0 and cols.spec_key.dtype == np.int64
    assert repr(cols) == "JobArrays(0 jobs, 0 pod specs)"


def test_equal_pod_specs_share_a_key_in_order_of_first_appearance() -> None:
    jobs = [
        job("a"),
        job("b", priority=7, pods=4, submit_s=30),  # priority, pods and time are not in the pod spec
        job("c", requests={"cpu": "4", "nvidia.com/gpu": 2}),  # other requests
        job("d", nodeSelector={"pool": "x"}),
        job("e", image={"name": "img", "size": 1}),
        job("f", image={"name": "img", "size": 2}),  # same image name, other size: ImageLocality differs
        job("g", requests={"nvidia.com/gpu": 1, "cpu": "4"}),  # same requests in another order
    ]
    assert spec_keys(jobs).tolist() == [0, 0, 1, 2, 3, 4, 0]


def test_jobs_with_labels_in_their_spec_get_keys_of_their_own() -> None:
    spread = {"topology_spread": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname"}]}
    jobs = [job("a"), job("b", **spread), job("c", **spread), job("d")]
    assert spec_keys(jobs).tolist() == [0, 1, 2, 0]
    # A selector naming other pods' labels: every pod's labels matter, so no two jobs share a key.
    selecting = {
        "anti_affinity": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "x"}}}
        ]
    }
    assert spec_keys([job("a"), job("b"), job("c", **selecting)]).tolist() == [0, 1, 2]


def test_simulator_builds_one_pod_spec_per_key(monkeypatch: Any) -> None:
    calls: list[str] = []
    real = spec_table_module.pod_spec

    def counting(j: Job, with_labels: bool = False) -> PodSpec:
        calls.append(j.id)
        return real(j, with_labels)

    monkeypatch.setattr(spec_table_module, "pod_spec", counting)
    jobs = [
        {"id": f"j{i}", "submit_s": i, "requests": {"cpu": "4", "nvidia.com/gpu": 1 + i % 2}, "runtime": 60}
        for i in range(6)
    ]
    resolved = scenario([pool(count=2)], jobs)
    sim = Simulator(resolved, profile_for(resolved, None))
    result = sim.run()
    assert int(result.jobs.completed.sum()) == 6
    # Two keys (1 and 2 GPUs): one pod spec each, built for the first job of each key.
    assert calls == ["j0", "j1"]
    assert sim.job_spec.tolist() == [0, 1, 0, 1, 0, 1]


def test_whole_gpus_taken_and_given_back_adjacent_or_not() -> None:
    devices = GpuDevices(1, 8)
    devices.milli_cap[0] = 1000
    devices.mem_cap[0] = 80 * GI
    first = devices.take_whole(0, 3)  # GPUs 0-2: one slice each
    second = devices.take_whole(0, 2)  # GPUs 3-4
    assert (first.gpus, second.gpus) == ((0, 1, 2), (3, 4))
    devices.release(0, first)
    third = devices.take_whole(0, 5)  # idle now: 0, 1, 2, 5, 6 (not adjacent)
    assert third.gpus == (0, 1, 2, 5, 6)
    assert devices.pods[0].tolist() == [1, 1, 1, 1, 1, 1, 1, 0]
    assert devices.milli_used[0].tolist() == [1000] * 7 + [0]
    assert devices.mem_used[0].tolist() == [80 * GI] * 7 + [0]
    devices.release(0, third)
    assert devices.pods[0].tolist() == [0, 0, 0, 1, 1, 0, 0, 0]
    assert devices.milli_used[0].tolist() == [0, 0, 0, 1000, 1000, 0, 0, 0]
    assert devices.take_whole(0, 0).gpus == ()


def test_plugins_that_call_themselves_uniform_score_every_node_alike() -> None:
    nodes = [
        NodeInfo(f"n{i}", 0, {"kubernetes.io/hostname": f"n{i}"}, (), {"cpu": 8000, "pods": 110})
        for i in range(3)
    ]
    state = ClusterState(nodes)
    for i in range(3):
        state.set_ready(i)
    state.add_image(1, "other:1", 10**9)
    spec = PodSpec(requests=(("cpu", 1000),))
    pod = CompiledPod(
        spec,
        spec,
        np.zeros(len(state.resource_names), dtype=np.int64),
        np.zeros(2, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        (),
    )
    everywhere = np.arange(3, dtype=np.int64)
    for plugin in (
        ImageLocalityScore(),
        InterPodAffinityScore(),
        NodeAffinityScore(),
        PodTopologySpreadScore(),
        TaintTolerationScore(),
    ):
        assert plugin.uniform_for(state, pod), plugin.name
        scores = plugin.score(state, pod, everywhere)
        assert scores is None or isinstance(scores, int), plugin.name
