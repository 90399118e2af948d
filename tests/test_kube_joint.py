"""Pending pods judged together in kube-scheduler's queue order (PrioritySort: priority, then creation),
each placed with the simulator's own Scheduler before the next is judged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kube_builders import container, diagnose_items, gpu_operator_node, pod

MIG = "nvidia.com/mig-1g.12gb"


run = diagnose_items


def mig_node() -> dict[str, Any]:
    """H100 NVL (94 GB) under the mixed strategy: 7 x 1g.12gb advertised on one GPU."""
    return gpu_operator_node(
        "h100nvl-0",
        "NVIDIA-H100-NVL",
        gpus=0,
        extra_labels={"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-1g.12gb"},
        extra_resources={MIG: "7"},
    )


def mig_pod(name: str, created: str, node: str | None = None, priority: int = 0, **kw: Any) -> dict[str, Any]:
    out = pod(
        name,
        [container("c", {"cpu": "1"}, {MIG: "1"})],
        node=node,
        phase="Running" if node else "Pending",
        priority=priority,
        **kw,
    )
    out["metadata"]["creationTimestamp"] = created
    return out


def test_three_pods_two_free_slices(tmp_path: Path) -> None:
    """7 slices, 5 held by running pods -> 2 free. Pending a (09:01), b (09:02), c (09:03), equal
    priority: a and b are placed in that order, c waits behind them."""
    running = [mig_pod(f"run-{i}", "2026-11-30T08:00:00Z", node="h100nvl-0") for i in range(5)]
    pending = [
        mig_pod("c", "2026-11-30T09:03:00Z"),
        mig_pod("a", "2026-11-30T09:01:00Z"),
        mig_pod("b", "2026-11-30T09:02:00Z"),
    ]
    d = run(tmp_path, [mig_node(), *running, *pending])
    by = {p.pod: p for p in d.pending}
    assert [p.pod for p in d.pending] == ["default/a", "default/b", "default/c"]
    assert (by["default/a"].placed_on, by["default/b"].placed_on, by["default/c"].placed_on) == (
        "h100nvl-0",
        "h100nvl-0",
        None,
    )
    c = by["default/c"]
    assert c.blocked_by == "queued-behind"
    assert "2 pending pod(s) ahead of it" in c.detail
    assert "default/a -> h100nvl-0, default/b -> h100nvl-0" in c.detail
    assert c.message == f"0/1 nodes are available: 1 Insufficient {MIG}."
    assert c.queue_position == 3


def test_priority_goes_first_whatever_the_creation_time(tmp_path: Path) -> None:
    """6 of 7 slices held -> 1 free. old (09:00, priority 0) and urgent (09:30, priority 1000): the
    queue pops urgent first, so urgent gets the slice and old waits."""
    running = [mig_pod(f"run-{i}", "2026-11-30T08:00:00Z", node="h100nvl-0") for i in range(6)]
    d = run(
        tmp_path,
        [
            mig_node(),
            *running,
            mig_pod("old", "2026-11-30T09:00:00Z"),
            mig_pod("urgent", "2026-11-30T09:30:00Z", priority=1000),
        ],
    )
    by = {p.pod: p for p in d.pending}
    assert by["default/urgent"].placed_on == "h100nvl-0" and by["default/urgent"].queue_position == 1
    assert by["default/old"].blocked_by == "queued-behind"
    assert "default/urgent -> h100nvl-0" in by["default/old"].detail


def test_pods_on_other_nodes_do_not_count_as_ahead(tmp_path: Path) -> None:
    """Two MIG nodes with 1 free slice each: the first pod takes one node, the second the other; neither
    waits, since the node the first took is not one the second needed."""
    second = mig_node()
    second["metadata"]["name"] = "h100nvl-1"
    second["metadata"]["labels"]["kubernetes.io/hostname"] = "h100nvl-1"
    running = [mig_pod(f"run-{i}", "2026-11-30T08:00:00Z", node="h100nvl-0") for i in range(6)]
    running += [mig_pod(f"run1-{i}", "2026-11-30T08:00:00Z", node="h100nvl-1") for i in range(6)]
    d = run(
        tmp_path,
        [
            mig_node(),
            second,
            *running,
            mig_pod("a", "2026-11-30T09:01:00Z"),
            mig_pod("b", "2026-11-30T09:02:00Z"),
        ],
    )
    assert sorted(p.placed_on or "" for p in d.pending) == ["h100nvl-0", "h100nvl-1"]
    assert {p.blocked_by for p in d.pending} == {"none"}


def test_a_gang_that_fits_is_placed_whole_before_later_pods(tmp_path: Path) -> None:
    """Kueue plain-pod group of 2 pods x 4 GPUs (created 09:01) on one 8-GPU node; a single 4-GPU pod
    created at 09:02 comes later in the queue: the gang takes all 8, the single pod waits behind it."""
    node = gpu_operator_node("h100-0", "NVIDIA-H100-80GB-HBM3", gpus=8)

    def gpu_pod(name: str, created: str, group: str | None = None) -> dict[str, Any]:
        out = pod(name, [container("c", {"cpu": "1"}, {"nvidia.com/gpu": "4"})])
        out["metadata"]["creationTimestamp"] = created
        if group:
            out["metadata"]["labels"] = {"kueue.x-k8s.io/pod-group-name": group}
            out["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": "2"}
        return out

    d = run(
        tmp_path,
        [
            node,
            gpu_pod("g-0", "2026-11-30T09:01:00Z", "g"),
            gpu_pod("g-1", "2026-11-30T09:01:00Z", "g"),
            gpu_pod("solo", "2026-11-30T09:02:00Z"),
        ],
    )
    by = {p.pod: p for p in d.pending}
    assert by["default/g-0"].placed_on == by["default/g-1"].placed_on == "h100-0"
    assert (
        "placed together in queue order: default/g-0 -> h100-0, default/g-1 -> h100-0"
        in by["default/g-0"].detail
    )
    solo = by["default/solo"]
    assert solo.blocked_by == "queued-behind" and solo.placed_on is None
    assert "default/g-0 -> h100-0, default/g-1 -> h100-0" in solo.detail
