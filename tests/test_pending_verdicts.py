"""Every pending job says whether it waits on a total shortage or on fragmentation (across nodes, across
partly used GPUs, or a share no single GPU can hold), and every run reports the free GPU capacity that no
pending job or typical pod shape can use. kube-scheduler itself only says "Insufficient nvidia.com/gpu"."""

from __future__ import annotations

from typing import Any

import pytest

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.summary import summarize


def _pending(pools: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> dict[str, Any]:
    result = run_one(scenario(pools, jobs, horizon_s=50), "default").result
    return {p.job_id: p for p in result.pending}


def test_a_total_gpu_shortage_outranks_fragmented_cpu() -> None:
    """CPU: 54 + 24 cores free (78 ≥ 60 but at most 54 on a node); GPUs: 2 free, 4 wanted. The pod waits on
    the GPU shortage; fragmentation of CPU would not free it."""
    big = job("big", gpus=8, runtime=1000)
    big["requests"]["cpu"] = "10"
    mid = job("mid", gpus=6, runtime=1000)
    mid["requests"]["cpu"] = "40"
    want = job("want", gpus=4, submit_s=1, runtime=10)
    want["requests"]["cpu"] = "60"
    pending = _pending([pool("g", count=2, gpus=8)], [big, mid, want])["want"]
    assert pending.blocked_by == "shortage"
    assert pending.detail.startswith("2 nvidia.com/gpu free in total on 2 eligible node(s)")


def test_whole_gpu_pod_blocked_by_shares_on_every_gpu_is_fragmentation() -> None:
    """Four 600-milli shares, one per GPU (600 + 600 > 1000): no idle GPU but 4 × 400 = 1.6 GPUs free in
    fragments; a whole-GPU pod waits on fragmentation, a 500-milli share too (no GPU has 500 free)."""
    jobs = [job(f"s{i}", gpus=0, gpu_milli=600, submit_s=i, runtime=1000) for i in range(4)]
    jobs.append(job("whole", gpus=1, submit_s=10, runtime=10))
    jobs.append(job("half", gpus=0, gpu_milli=500, submit_s=11, runtime=10))
    pending = _pending([pool("g", count=1, gpus=4)], jobs)
    whole = pending["whole"]
    assert whole.blocked_by == "fragmentation"
    assert (
        "0 whole nvidia.com/gpu free" in whole.detail
        and "1600 milli-GPU free on 4 partly used" in whole.detail
    )
    half = pending["half"]
    assert half.blocked_by == "fragmentation"
    assert half.detail.startswith("1.6 GPUs free in fragments, no GPU has 500 milli free")


def test_mig_shortage_names_the_other_profiles_left_free() -> None:
    """Mixed MIG (A100-80GB, one 3g.40gb + 2g.20gb + 1g.10gb per MIG GPU): with both 3g.40gb instances
    taken a third waits on a shortage, and the free 2g/1g instances are named (layouts are fixed)."""
    mig = pool("m", count=1, gpus=2, gpu_model="A100-80GB", mig={"layout": ["3g.40gb", "2g.20gb", "1g.10gb"]})
    jobs = [job(f"m{i}", gpus=0, submit_s=i, runtime=1000) for i in range(3)]
    for entry in jobs:
        entry["requests"]["nvidia.com/mig-3g.40gb"] = 1
    pending = _pending([mig], jobs)["m2"]
    assert pending.blocked_by == "shortage"
    assert "other MIG instances free: 2 nvidia.com/mig-1g.10gb, 2 nvidia.com/mig-2g.20gb" in pending.detail


def test_stranded_gpus_count_free_share_no_pending_or_typical_shape_fits() -> None:
    """Two 700-milli shares alone on two GPUs of a 2-GPU node, one 600-milli share pending: 300 + 300
    milli are free, too little for any shape of the workload (700, 600): 0.6 GPUs stranded. A 250-milli
    typical shape would use them: nothing stranded."""
    jobs = [job(f"s{i}", gpus=0, gpu_milli=700, submit_s=i, runtime=1000) for i in range(2)]
    jobs.append(job("p", gpus=0, gpu_milli=600, submit_s=5, runtime=10))
    result = run_one(scenario([pool("g", count=1, gpus=2)], jobs, horizon_s=50), "default").result
    assert summarize(result).stranded_gpus_end == 0.6
    # over time: 300 milli stranded while one share runs (0-1 s), 600 from then on, over 50 s
    assert summarize(result).stranded_gpus_mean == pytest.approx((0.3 * 1 + 0.6 * 49) / 50)
    jobs.append(job("small", gpus=0, gpu_milli=250, submit_s=6, runtime=1))
    jobs.append(job("small2", gpus=0, gpu_milli=250, submit_s=7, runtime=1))
    jobs.append(job("small3", gpus=0, gpu_milli=250, submit_s=8, runtime=1))
    result = run_one(scenario([pool("g", count=1, gpus=2)], jobs, horizon_s=50), "default").result
    assert summarize(result).stranded_gpus_end == 0.0
