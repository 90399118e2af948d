"""The event loop's lifecycles: submit → bound → preparing → running → succeeded, and node boot."""

from __future__ import annotations

import pytest

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one
from fleetlab.metrics.tables import job_columns


def _times(resolved, policy: str = "default"):  # type: ignore[no-untyped-def]
    run = run_one(resolved, policy)
    cols = job_columns(run.result)
    return run, {jid: i for i, jid in enumerate(cols["job_id"])}, cols


def test_single_job_time_split_adds_up() -> None:
    """Queue wait + prep + compute = completion time, with image pull at the pool's bandwidth."""
    resolved = scenario(
        [pool(image_pull_bandwidth="100Mi", data_bandwidth="50Mi")],
        [
            job(
                "a",
                gpus=2,
                submit_s=10,
                runtime=300,
                image={"name": "img", "size": "1000Mi"},
                data_size="500Mi",
            )
        ],
    )
    run, idx, cols = _times(resolved)
    i = idx["a"]
    assert cols["queue_wait_s"][i] == 0
    assert cols["prep_s"][i] == pytest.approx(10 + 10)  # 1000Mi at 100Mi/s, then 500Mi at 50Mi/s
    assert cols["compute_s"][i] == 300
    assert cols["completion_s"][i] == pytest.approx(320)
    assert run.result.end_ms == (10 + 320) * 1000


def test_image_cached_on_node_skips_pull() -> None:
    """The second pod on the same node finds the image there (kubelet image cache): no pull."""
    resolved = scenario(
        [pool(image_pull_bandwidth="100Mi")],
        [
            job("a", gpus=1, submit_s=0, runtime=100, image={"name": "img", "size": "1000Mi"}),
            job("b", gpus=1, submit_s=50, runtime=100, image={"name": "img", "size": "1000Mi"}),
        ],
    )
    _, idx, cols = _times(resolved)
    assert cols["prep_s"][idx["a"]] == pytest.approx(10)
    assert cols["prep_s"][idx["b"]] == 0


def test_concurrent_pull_waits_for_the_same_pull() -> None:
    """A pod bound while the node is still pulling its image waits for that pull, not a new one."""
    resolved = scenario(
        [pool(image_pull_bandwidth="100Mi")],
        [
            job("a", gpus=1, submit_s=0, runtime=100, image={"name": "img", "size": "1000Mi"}),
            job("b", gpus=1, submit_s=4, runtime=100, image={"name": "img", "size": "1000Mi"}),
        ],
    )
    _, idx, cols = _times(resolved)
    assert cols["prep_s"][idx["b"]] == pytest.approx(6)


def test_runtime_per_gpu_model() -> None:
    """A job's runtime override for the node's GPU model is used."""
    resolved = scenario([pool()], [job("a", runtime={"default": 1000, "by_gpu": {"H100": 400}})])
    _, idx, cols = _times(resolved)
    assert cols["compute_s"][idx["a"]] == 400


def test_queue_wait_until_gpus_free_and_priority_order() -> None:
    """With one 8-GPU node busy, waiting pods start when it frees up, higher priority first (PrioritySort)."""
    resolved = scenario(
        [pool()],
        [
            job("big", gpus=8, submit_s=0, runtime=100),
            job("low", gpus=8, submit_s=1, runtime=100, priority=0),
            job("high", gpus=8, submit_s=2, runtime=100, priority=10),
        ],
    )
    _, idx, cols = _times(resolved)
    assert cols["queue_wait_s"][idx["high"]] == pytest.approx(98)
    assert cols["queue_wait_s"][idx["low"]] == pytest.approx(199)


def test_node_boot_delays_placement() -> None:
    """Nodes that are not initially ready boot for boot_time_s; pods wait for them."""
    resolved = scenario([pool(initially_ready=False, boot_time_s="5m")], [job("a")])
    run, idx, cols = _times(resolved)
    assert cols["queue_wait_s"][idx["a"]] == 300
    assert run.result.nodes.ready_ms[0] == 300_000


def test_unsatisfiable_job_pending_with_reason_and_warning() -> None:
    """A 16-GPU pod on 8-GPU nodes stays pending with kube-scheduler's message and a preflight warning."""
    resolved = scenario([pool(count=2)], [job("huge", gpus=16), job("ok", gpus=1)])
    run, idx, cols = _times(resolved)
    assert cols["state"][idx["huge"]] == "pending"
    assert cols["state"][idx["ok"]] == "completed"
    (pending,) = run.result.pending
    assert pending.message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    assert pending.blocked_by == "too-large"
    assert any("huge" in w for w in run.result.warnings)


def test_fragmentation_is_named() -> None:
    """12 GPUs free in total but no node has 8: kube-scheduler says Insufficient, fleetlab says fragmentation."""
    resolved = scenario(
        [pool(count=3)],
        [
            job("a", gpus=4, runtime=10_000),
            job("b", gpus=4, runtime=10_000),
            job("c", gpus=4, runtime=10_000),
            job("wants8", gpus=8, submit_s=1, runtime=100),
        ],
        horizon_s=50,
    )
    run = run_one(resolved, "least-allocated")
    pending = {p.job_id: p for p in run.result.pending}
    assert pending["wants8"].blocked_by == "fragmentation"
    assert "12 nvidia.com/gpu free across 3 node(s), at most 4 on one node" in pending["wants8"].detail


def test_horizon_stops_the_clock() -> None:
    """With a horizon, nodes are billed to the horizon and unfinished jobs are reported as running."""
    resolved = scenario([pool()], [job("a", runtime=1000)], horizon_s=100)
    run, idx, cols = _times(resolved)
    assert run.result.end_ms == 100_000
    assert cols["state"][idx["a"]] == "running"


def test_same_seed_same_result_and_seed_changes_ties() -> None:
    """Ties are broken by a seeded RNG: the same seed replays identically."""
    jobs = [job(f"j{i}", gpus=1, submit_s=i, runtime=50) for i in range(40)]
    resolved = scenario([pool(count=6)], jobs)
    a = run_one(resolved, "default", seed=1).result
    b = run_one(resolved, "default", seed=1).result
    assert a.pods.node.tolist() == b.pods.node.tolist()
    c = run_one(resolved, "default", seed=2).result
    assert a.pods.node.tolist() != c.pods.node.tolist()


def test_class_profiles_spread_inference_and_pack_batch() -> None:
    """Per-class profiles (kube-scheduler profiles): least-allocated for inference, most-allocated for batch."""
    jobs = [job(f"inf{i}", gpus=1, runtime=1000, submit_s=i, **{"class": "inference"}) for i in range(2)]
    jobs += [job(f"bat{i}", gpus=1, runtime=1000, submit_s=10 + i, **{"class": "batch"}) for i in range(2)]
    resolved = scenario(
        [pool(count=4)],
        jobs,
        scheduler={
            "policy": "default",
            "class_profiles": {"inference": "least-allocated", "batch": "most-allocated"},
        },
    )
    result = run_one(resolved, "scenario").result
    node_of = dict(zip(result.jobs.ids, [None] * 4, strict=True))
    for p, j in enumerate(result.pods.job):
        node_of[result.jobs.ids[int(j)]] = int(result.pods.node[p])
    assert node_of["inf0"] != node_of["inf1"]
    assert node_of["bat0"] == node_of["bat1"]
