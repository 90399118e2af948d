"""The simulator's pending verdict: a pod kept off the only nodes big enough by a taint is blocked by a
constraint, not "too-large" (kube-scheduler reports TaintToleration first for those nodes)."""

from __future__ import annotations

from builders import job, pool, scenario
from fleetlab.experiment.run import run_one


def test_taint_on_the_only_gpu_nodes_is_a_constraint_not_too_large() -> None:
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    resolved = scenario(
        [pool("gpu", count=2, taints=[gpu_taint]), pool("cpu", count=1, gpus=0)],
        [job("untolerated", gpus=8)],
    )
    (pending,) = run_one(resolved, "default").result.pending
    assert pending.message == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint(s)."
    )
    assert pending.blocked_by == "constraints"
    assert "2 node(s) are large enough but filtered out (2 by TaintToleration)" in pending.detail


def test_too_large_stays_too_large_when_no_node_is_big_enough() -> None:
    resolved = scenario([pool("gpu", count=2)], [job("huge", gpus=16)])
    (pending,) = run_one(resolved, "default").result.pending
    assert pending.blocked_by == "too-large"
