"""GPU sharing: fractional requests (Alibaba 2023 ``gpu_milli``, KAI ``gpu-fraction`` / ``gpu-memory``),
NVIDIA device-plugin time-slicing (replicas, renameByDefault, failRequestsGreaterThanOne, no memory
isolation) and the FGD fragmentation measure (Weng et al., ATC 2023, reference fgd.md §3.3)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from builders import by_job, job, mig_pool, pool, scenario
from fleetlab.experiment.run import profile_for, run_one
from fleetlab.metrics.summary import summarize
from fleetlab.metrics.tables import job_columns, pod_columns, timeline_columns
from fleetlab.model.job import Job
from fleetlab.sim.result import SimulationResult
from fleetlab.sim.simulator import Simulator


def _run(
    pools: list[dict[str, Any]], jobs: list[dict[str, Any]], policy: str = "default"
) -> SimulationResult:
    return run_one(scenario(pools, jobs), policy).result


# --- spec validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"gpu_milli": 0}, "gpu_milli: 0 must be a whole number 1..1000"),
        ({"gpu_milli": 1001}, "gpu_milli: 1001 must be a whole number 1..1000"),
        ({"gpu_milli": 500, "requests": {"cpu": "1", "nvidia.com/gpu": 2}}, "a share of several GPUs"),
        ({"annotations": {"gpu-fraction": "1.5"}}, "0 < f <= 1"),
        ({"annotations": {"gpu-fraction": "0.5", "gpu-memory": "2000"}}, "not both"),
        ({"annotations": {"gpu-memory": "lots"}}, "whole number of MiB"),
        ({"gpu_milli": 300, "annotations": {"gpu-fraction": "0.5"}}, "not both"),
        ({"gpu_milli": 300, "gang": True, "pods": 2}, "gang jobs of shared-GPU pods"),
        ({"gpu_milli": 300, "requests": {"cpu": "1", "nvidia.com/mig-1g.10gb": 1}}, "cannot be combined"),
    ],
)
def test_share_fields_are_validated_with_clear_errors(extra: dict[str, Any], message: str) -> None:
    data = {"id": "j", "requests": {"cpu": "1"}, "runtime": 10, **extra}
    with pytest.raises(ValidationError, match=message):
        Job.model_validate(data)


def test_kai_annotations_and_alibaba_form_give_the_canonical_share() -> None:
    """KAI gpu-fraction 0.25 = 250 milli; gpu-memory is MiB; Alibaba num_gpu 1 + gpu_milli drops the GPU."""
    kai = Job.model_validate(
        {"id": "k", "requests": {}, "runtime": 1, "annotations": {"gpu-fraction": "0.25"}}
    )
    assert kai.gpu_milli == 250 and kai.shares_gpu and kai.gpus_per_pod == 0
    mem = Job.model_validate({"id": "m", "requests": {}, "runtime": 1, "annotations": {"gpu-memory": "2000"}})
    assert mem.gpu_memory == 2000 * 1024**2 and mem.gpu_milli is None and mem.shares_gpu
    ali = Job.model_validate({"id": "a", "requests": {"nvidia.com/gpu": 1}, "runtime": 1, "gpu_milli": 400})
    assert ali.gpu_milli == 400 and "nvidia.com/gpu" not in ali.requests
    whole = Job.model_validate({"id": "w", "requests": {}, "runtime": 1, "gpu_milli": 1000})
    assert not whole.shares_gpu and whole.requests == {"nvidia.com/gpu": 1}
    declared = Job.model_validate(
        {"id": "d", "requests": {"nvidia.com/gpu": 1}, "runtime": 1, "gpu_memory": "8Gi"}
    )
    assert not declared.shares_gpu and declared.gpu_memory == 8 * 1024**3


# --- fractional placement -------------------------------------------------------------------------------


def test_shares_pack_onto_partly_used_gpus_and_whole_pods_take_idle_ones() -> None:
    """Best fit on the GPU: a 400 share goes next to a 600 share, not onto the idle GPU; a 500 share then
    waits because GPU 1 is whole-taken and GPU 0 has 0 left."""
    jobs = [
        job("s600", gpus=0, runtime=100, gpu_milli=600),
        job("s400", gpus=0, runtime=100, gpu_milli=400, submit_s=1),
        job("whole", gpus=1, runtime=100, submit_s=2),
        job("s500", gpus=0, runtime=100, gpu_milli=500, submit_s=3),
    ]
    result = _run([pool(gpus=2)], jobs)
    gpus = dict(zip(job_columns(result)["job_id"], pod_columns(result)["gpus"], strict=True))
    assert gpus == {"s600": "0", "s400": "0", "whole": "1", "s500": "0"}
    waits = by_job(result, "queue_wait_s")
    assert waits["s400"] == 0 and waits["whole"] == 0
    assert waits["s500"] == pytest.approx(97.0)  # until s600 and s400 leave GPU 0 at t=100 / 101


def test_a_share_that_fits_no_single_gpu_is_reported_as_fragmentation() -> None:
    jobs = [job(f"s{i}", gpus=0, runtime=1000, gpu_milli=600) for i in range(2)]
    jobs.append(job("big", gpus=0, runtime=10, gpu_milli=500, submit_s=5))
    result = run_one(scenario([pool(gpus=2)], jobs, horizon_s=50)).result
    (pending,) = result.pending
    assert pending.job_id == "big" and pending.blocked_by == "fragmentation"
    assert "800 milli-GPU free across 2 GPU(s), at most 400 on one GPU" in pending.detail
    assert "Insufficient GPU share" in pending.message


def test_whole_gpu_pod_blocked_by_shares_names_the_stranded_share() -> None:
    jobs = [job(f"s{i}", gpus=0, runtime=1000, gpu_milli=300) for i in range(2)]
    jobs[1]["submit_s"] = 1
    jobs.append(job("two", gpus=2, runtime=10, submit_s=5))
    resolved = scenario([pool(gpus=2)], jobs, horizon_s=50)
    result = run_one(resolved, "default").result  # both shares on GPU 0 (best fit): GPU 1 idle, 1 GPU short
    (pending,) = result.pending
    assert pending.job_id == "two"
    assert "milli-GPU free on" in pending.detail and pending.blocked_by in ("shortage", "fragmentation")


# --- time-slicing ---------------------------------------------------------------------------------------


def _sliced(replicas: int = 4, **extra: Any) -> dict[str, Any]:
    return pool(gpus=2, time_slicing={"replicas": replicas, **extra})


def test_time_slicing_advertises_replicas_and_the_shared_name() -> None:
    """Device plugin: 2 GPUs × replicas 4 → nvidia.com/gpu: 8, or nvidia.com/gpu.shared: 8 when renamed;
    GFD labels gpu.replicas and the -SHARED product suffix (only when not renamed)."""
    plain = scenario([_sliced()], []).scenario.cluster.pools[0]
    assert plain.device_resources() == {"nvidia.com/gpu": 8}
    labels = plain.node_labels(0)
    assert labels["nvidia.com/gpu.replicas"] == "4" and labels["nvidia.com/gpu.product"].endswith("-SHARED")
    renamed = scenario([_sliced(renameByDefault=True)], []).scenario.cluster.pools[0]
    assert renamed.device_resources() == {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 8}
    assert not renamed.node_labels(0)["nvidia.com/gpu.product"].endswith("-SHARED")


def test_requests_over_one_fail_on_fail_requests_greater_than_one_nodes() -> None:
    result = _run([_sliced(failRequestsGreaterThanOne=True)], [job("two", gpus=2), job("one", gpus=1)])
    (pending,) = result.pending
    assert pending.job_id == "two"
    assert "request for 'nvidia.com/gpu: 2' too large: maximum request size for shared resources is 1" in (
        pending.message
    )
    assert by_job(result, "state")["one"] == "completed"


def test_replicas_spread_over_gpus_and_slow_each_other_down() -> None:
    """Two pods on a 2-GPU node get different GPUs (no slowdown); a third shares GPU 0: with α = 1 both
    pods there run at half speed while together."""
    jobs = [job("a", runtime=100), job("b", runtime=100), job("c", runtime=100, submit_s=50)]
    result = _run([_sliced(slowdown_per_extra_pod=1.0)], jobs)
    gpus = dict(zip(job_columns(result)["job_id"], pod_columns(result)["gpus"], strict=True))
    assert gpus == {"a": "0", "b": "1", "c": "0"}
    end = by_job(result, "completion_s")
    # a: 50 s alone, then 50 s of work at half speed = 100 s → ends at 150; c: 50 work at half speed
    # (t 50..150) then 50 s alone → ends at 200 (completion 150 after its submit at 50).
    assert end["a"] == pytest.approx(150.0) and end["b"] == pytest.approx(100.0)
    assert end["c"] == pytest.approx(150.0)
    extra = by_job(result, "time_slicing_extra_s")
    assert extra["a"] == pytest.approx(50.0) and extra["c"] == pytest.approx(50.0) and extra["b"] == 0
    slow = by_job(result, "time_slicing_slowdown")
    assert slow["a"] == pytest.approx(1.5) and slow["b"] == pytest.approx(1.0)


def test_slowdown_parameter_scales_interference() -> None:
    """α = 0.5 with two pods on one GPU from t=0: factor 1.5, both end at 150."""
    jobs = [job("a", runtime=100), job("b", runtime=100)]
    result = _run([pool(gpus=1, time_slicing={"replicas": 2, "slowdown_per_extra_pod": 0.5})], jobs)
    end = by_job(result, "completion_s")
    assert end == {"a": pytest.approx(150.0), "b": pytest.approx(150.0)}


def test_co_located_pods_over_gpu_memory_oom_kill_the_newest() -> None:
    """No memory isolation: 30 + 30 + 30 GiB declared on one 80 GB H100 → the third to start is killed."""
    jobs = [job(f"t{i}", runtime=100, gpu_memory="30Gi", submit_s=i) for i in range(3)]
    result = _run([pool(gpus=1, time_slicing={"replicas": 4})], jobs)
    assert by_job(result, "oom_kills") == {"t0": 0, "t1": 0, "t2": 1}
    assert by_job(result, "state") == {"t0": "completed", "t1": "completed", "t2": "failed"}
    summary = summarize(result)
    assert summary.oom_kills == 1 and summary.jobs_failed == 1


# --- fragmentation --------------------------------------------------------------------------------------


def test_fragmentation_matches_the_fgd_definition_on_a_hand_worked_node() -> None:
    """Typical pods M = {share 400, whole 1, share 600}, p = 1/3 each. With 400 used on GPU 0 (600 free) and
    GPU 1 idle: F(share 400) = 0, F(whole) = 600 (GPU 0 too small), F(share 600) = 0 → F_n(M) = 200;
    idle 1600, frag rate 0.125."""
    jobs = [
        job("s4", gpus=0, runtime=1000, gpu_milli=400),
        job("w", gpus=1, runtime=10, submit_s=10),
        job("s6", gpus=0, runtime=10, gpu_milli=600, submit_s=100),
    ]
    result = _run([pool(gpus=2)], jobs)
    tl = timeline_columns(result)
    first = {k: v[0] for k, v in tl.items()}
    assert first["t_s"] == 0 and first["idle_gpu_milli"] == 1600 and first["partial_gpus"] == 1
    assert first["frag_gpu_milli"] == 200 and first["frag_rate"] == pytest.approx(0.125)
    assert first["stranded_gpu_milli"] == 600
    summary = summarize(result)
    assert 0 < summary.frag_rate_mean <= 1


def test_runs_without_sharing_report_whole_gpu_fragmentation() -> None:
    """Whole-GPU workloads have M = whole-GPU shapes: a node with 3 of 4 GPUs free cannot run a 4-GPU pod,
    so all its 3 idle GPUs are fragments for it."""
    jobs = [job("one", gpus=1, runtime=1000), job("four", gpus=4, runtime=10, submit_s=1)]
    tl = timeline_columns(_run([pool(gpus=4)], jobs))
    assert tl["idle_gpu_milli"][0] == 3000
    assert tl["frag_gpu_milli"][0] == 1500  # p = 1/2 each: F(one) = 0, F(four) = 3000


# --- invariants -----------------------------------------------------------------------------------------


class CheckedSimulator(Simulator):
    """Checks the per-GPU invariants after every step of the event loop."""

    def end_step(self) -> None:
        super().end_step()
        devices = self.state.devices
        assert devices is not None
        assert (devices.milli_used <= devices.milli_cap).all() and (devices.milli_used >= 0).all()
        assert (devices.mem_used <= devices.mem_cap).all() and (devices.mem_used >= 0).all()
        assert (devices.replica_used <= devices.replica_cap).all()
        for slots in devices.mig_slots.values():
            assert (slots >= 0).all()
        plain_idle = ((devices.milli_cap > 0) & (devices.pods == 0)).sum(axis=1)
        single = devices.single_mig | (devices.kind == 1)
        free_gpu = self.state.free[:, self.state.gpu_col]
        assert (free_gpu[~single] == plain_idle[~single]).all()
        whole_on: dict[tuple[int, int], int] = {}
        for pod, holdings in self.features.tenancy.holdings.items():
            node = int(self.book.node[pod])
            for h in holdings:
                if h.kind == 0 and not h.shared:
                    for g in h.gpus:
                        whole_on[(node, g)] = whole_on.get((node, g), 0) + 1
        for (node, g), count in whole_on.items():
            assert count == 1 and devices.pods[node, g] == 1, "a whole GPU is shared"
        # The fragmentation meter's memoised per-node terms equal a from-scratch pass over every node (up to
        # the last bits of F_n(M)'s dot product, which BLAS may sum in another order for one row).
        meter = self.features.fragmentation
        fresh = meter._node_totals(np.arange(self.state.n, dtype=np.int64))
        terms = [meter.node_terms(node) for node in range(self.state.n)]
        assert np.allclose(terms, fresh, rtol=1e-12, atol=1e-9)
        # The incremental totals equal the per-node terms summed over ready nodes: exactly for the whole
        # milli-GPU and GPU counts (kept as ints), up to float rounding for F_n(M).
        ready = [t for t, up in zip(terms, self.state.ready.tolist(), strict=True) if up]
        whole = [0, 1, 2, 4, 5]
        assert [meter.totals[k] for k in whole] == [sum(t[k] for t in ready) for k in whole]
        assert all(isinstance(meter.totals[k], int) for k in whole)
        assert meter.totals[3] == pytest.approx(sum(t[3] for t in ready), abs=1e-6)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from(["default", "most-allocated"]))
def test_invariants_with_mixed_whole_share_mig_and_sliced_pools(seed: int, policy: str) -> None:
    """No GPU over 1000 milli or its memory, no MIG instance or whole GPU shared, replicas within
    ``replicas``, and the nvidia.com/gpu column equal to the idle plain GPUs — after every step."""
    rng = np.random.default_rng(seed)
    pools = [
        pool("plain", count=3, gpus=4),
        mig_pool(count=2),
        pool("sliced", count=2, gpus=2, time_slicing={"replicas": 3}),
    ]
    jobs = []
    for j in range(120):
        kind = rng.integers(5)
        submit = int(rng.integers(0, 400))
        runtime = int(rng.integers(5, 200))
        if kind == 0:
            jobs.append(job(f"w{j}", gpus=int(rng.choice([1, 2, 4])), submit_s=submit, runtime=runtime))
        elif kind == 1:
            jobs.append(
                job(f"s{j}", gpus=0, gpu_milli=int(rng.integers(1, 1000)), submit_s=submit, runtime=runtime)
            )
        elif kind == 2:
            extra = {"annotations": {"gpu-memory": str(int(rng.integers(1000, 60000)))}}
            jobs.append(job(f"m{j}", gpus=0, submit_s=submit, runtime=runtime, **extra))
        elif kind == 3:
            mig = str(
                rng.choice(["nvidia.com/mig-3g.40gb", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb"])
            )
            jobs.append(job(f"g{j}", gpus=0, submit_s=submit, runtime=runtime, requests={"cpu": "1", mig: 1}))
        else:
            jobs.append(
                job(
                    f"t{j}",
                    gpus=1,
                    submit_s=submit,
                    runtime=runtime,
                    gpu_memory=f"{int(rng.integers(5, 40))}Gi",
                )
            )
    resolved = scenario(pools, jobs)
    result = CheckedSimulator(resolved, profile_for(resolved, policy)).run()
    assert len(result.pending) == 0
    states = set(job_columns(result)["state"])
    assert states <= {"completed", "failed"}


def test_shares_do_not_trigger_default_preemption() -> None:
    """kube-scheduler's DefaultPreemption counts nvidia.com/gpu, not shares of one GPU: a high-priority
    share waits instead of evicting whole-GPU pods it could not use the room of anyway."""
    jobs = [
        job("low", gpus=1, runtime=100, priority=0),
        job("hi", gpus=0, gpu_milli=500, priority=10, submit_s=1),
    ]
    result = _run([pool(gpus=1)], jobs)
    assert by_job(result, "evictions") == {"low": 0, "hi": 0}
    assert by_job(result, "queue_wait_s")["hi"] == pytest.approx(99.0)


# --- consolidation --------------------------------------------------------------------------------------


def _consolidation_run(on: bool, cpu: str = "1") -> SimulationResult:
    requests = {"cpu": cpu, "memory": "1Gi", "nvidia.com/gpu": 1}
    jobs = [
        job("a", runtime=1000, preemptible=True, requests=requests),
        job("b", runtime=1000, preemptible=True, submit_s=1, requests=requests),
        job("p", gpus=2, runtime=10, submit_s=10),
    ]
    resolved = scenario([pool(count=2, gpus=2)], jobs, scheduler={"consolidation": on, "tie_break": "first"})
    return run_one(resolved).result


def test_consolidation_moves_a_preemptible_pod_to_open_a_whole_node() -> None:
    """KAI consolidation: a and b sit on different nodes, p needs 2 GPUs on one; moving a next to b (which
    fits) lets p start at once. a is evicted once and loses its 10 s of work."""
    off = _consolidation_run(False)
    assert by_job(off, "queue_wait_s")["p"] == pytest.approx(990.0)
    on = _consolidation_run(True)
    assert by_job(on, "queue_wait_s")["p"] == 0
    evictions = by_job(on, "evictions")
    assert evictions["a"] + evictions["b"] == 1 and summarize(on).consolidation_evictions == 1
    assert set(by_job(on, "state").values()) == {"completed"}


def test_consolidation_is_not_committed_when_an_evicted_pod_would_not_fit_again() -> None:
    """a and b each take 40 of a node's 64 CPUs: either could leave its node, but neither fits next to the
    other, so nothing is evicted and p waits."""
    on = _consolidation_run(True, cpu="40")
    assert summarize(on).consolidation_evictions == 0 and sum(by_job(on, "evictions").values()) == 0
    assert by_job(on, "queue_wait_s")["p"] > 900
