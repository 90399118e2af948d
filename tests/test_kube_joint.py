"""Pending pods judged together in kube-scheduler's queue order (PrioritySort: priority, then creation),
each placed with the simulator's own Scheduler before the next is judged."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fleetlab.experiment.run import run_one
from fleetlab.kube.queue_order import queue_key
from fleetlab.kube.to_scenario import snapshot_scenario
from fleetlab.metrics.tables import job_columns
from fleetlab.spec.kube_snapshot import KubePod, load_snapshot
from kube_builders import container, diagnose_items, gpu_operator_node, pod

MIG = "nvidia.com/mig-1g.12gb"
BASE = KubePod(
    namespace="default",
    name="p",
    uid="u",
    phase="Pending",
    node_name=None,
    requests={},
    containers=1,
    explicit_keys=frozenset(),
    tolerations=(),
    node_selector=(),
    affinity=None,
    owner_kind=None,
    labels={},
)


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


@pytest.mark.parametrize(
    ("p1", "p2", "p1_first"),
    [
        ((10, "09:00"), (100, "09:00"), False),  # p1.priority less than p2.priority
        ((100, "09:00"), (10, "09:00"), True),  # p1.priority greater than p2.priority
        ((100, "09:00"), (100, "09:01"), True),  # equal priority, p1 queued earlier
        ((100, "09:01"), (100, "09:00"), False),  # equal priority, p2 queued earlier
    ],
)
def test_queue_order_follows_priority_sort(p1: tuple[int, str], p2: tuple[int, str], p1_first: bool) -> None:
    """The cases of kubernetes/kubernetes pkg/scheduler/framework/plugins/queuesort/priority_sort_test.go
    TestLess @008b3652 (priorities 10 and 100; the queue timestamp is the pod's creation time here)."""

    def queued(name: str, priority: int, at: str) -> KubePod:
        created = datetime.fromisoformat(f"2026-11-30T{at}:00+00:00")
        return replace(BASE, name=name, priority=priority, created=created)

    first, second = queued("p1", *p1), queued("p2", *p2)
    assert (queue_key(first) < queue_key(second)) is p1_first


def test_a_bind_elsewhere_keeps_a_verdict_a_bind_on_its_nodes_renews_it(tmp_path: Path) -> None:
    """Pool A (zone a, one 8-GPU node) and pool B (zone b, one 8-GPU node, 4 held). Pending in queue
    order: x (4 GPUs, zone a) -> a-0; y (8 GPUs, zone b) cannot fit (4 free); z (4 GPUs, zone b) ->
    b-0; w (8 GPUs, zone b), same spec as y, now sees b-0 full: its verdict must count 0 free, not the
    4 y saw, so the cached verdict of y's spec is renewed after z's bind on b-0."""

    def zoned(name: str, zone: str) -> dict[str, Any]:
        out = gpu_operator_node(name, "NVIDIA-H100-80GB-HBM3", gpus=8)
        out["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone
        return out

    def want(name: str, gpus: int, zone: str, minute: int, on: str | None = None) -> dict[str, Any]:
        out = pod(
            name,
            [container("c", {"cpu": "1"}, {"nvidia.com/gpu": str(gpus)})],
            node=on,
            phase="Running" if on else "Pending",
            nodeSelector={"topology.kubernetes.io/zone": zone},
        )
        out["metadata"]["creationTimestamp"] = f"2026-11-30T09:{minute:02d}:00Z"
        return out

    d = run(
        tmp_path,
        [
            zoned("a-0", "a"),
            zoned("b-0", "b"),
            want("held", 4, "b", 0, on="b-0"),
            want("x", 4, "a", 1),
            want("y", 8, "b", 2),
            want("z", 4, "b", 3),
            want("w", 8, "b", 4),
        ],
    )
    by = {p.pod: p for p in d.pending}
    assert (by["default/x"].placed_on, by["default/z"].placed_on) == ("a-0", "b-0")
    assert "4 nvidia.com/gpu free" in by["default/y"].detail
    # w would not fit even without z (4 free < 8): a shortage, measured after z's bind
    assert by["default/w"].blocked_by == "shortage"
    assert by["default/w"].detail.startswith("0 nvidia.com/gpu free in total on 1 eligible node(s)")


def test_diagnose_and_simulate_from_snapshot_place_the_same_pods(tmp_path: Path) -> None:
    """2 free slices, three pending pods: c (09:01, priority 0), a (09:02, priority 0), b (09:03,
    priority 5). Queue order b, c, a: diagnose places b and c and leaves a waiting; the simulator,
    replaying the snapshot, starts b and c at t=0 and a only when a slice frees (runtime 600 s)."""
    running = [mig_pod(f"run-{i}", "2026-11-30T08:00:00Z", node="h100nvl-0") for i in range(5)]
    pending = [
        mig_pod("c", "2026-11-30T09:01:00Z"),
        mig_pod("a", "2026-11-30T09:02:00Z"),
        mig_pod("b", "2026-11-30T09:03:00Z", priority=5),
    ]
    d = run(tmp_path, [mig_node(), *running, *pending])
    placed = {p.pod for p in d.pending if p.placed_on}
    assert placed == {"default/b", "default/c"}
    snap = load_snapshot([tmp_path / "snap.json"])
    cols = job_columns(run_one(snapshot_scenario(snap, remaining_s=3600, runtime_s=600), "default").result)
    waits = dict(zip(cols["job_id"], cols["queue_wait_s"], strict=True))
    assert {j for j in ("default/a", "default/b", "default/c") if waits[j] == 0} == placed
    assert waits["default/a"] == 600
