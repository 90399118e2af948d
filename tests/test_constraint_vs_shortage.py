"""The constraint whose removal opens room is the block, not a shortage.

Hand case (the issue's): n1 has 8 GPUs, all held by a running pod; n4 has 8 GPUs free behind the taint
``dedicated=inference:NoSchedule``. A pod asking for 4 GPUs without the toleration: on the one node it may
use (n1) 0 GPUs are free, which alone reads as a shortage; but lifting the taint opens n4, which has
8 >= 4 free, so the verdict is ``taint``, naming it. With the toleration it fits n4; with n4 full too it is
a real shortage.
"""

from __future__ import annotations

from pathlib import Path

from fleetlab.model.resources import GPU
from kube_builders import container, diagnose_items, node, pod

TAINT = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}


def _world(tolerate: bool = False, n4_busy: bool = False) -> list[dict[str, object]]:
    items: list[dict[str, object]] = [node("n1"), node("n4", taints=[TAINT])]
    items.append(pod("holder", [container("c", limits={GPU: "8"})], node="n1", phase="Running"))
    if n4_busy:
        toleration = [{"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"}]
        items.append(
            pod(
                "infer",
                [container("c", limits={GPU: "8"})],
                node="n4",
                phase="Running",
                tolerations=toleration,
            )
        )
    extra = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]} if tolerate else {}
    items.append(pod("train", [container("c", limits={GPU: "4"})], **extra))
    return items


def test_free_gpus_behind_a_taint_are_the_taint(tmp_path: Path) -> None:
    d = diagnose_items(tmp_path, _world())
    (p,) = d.pending
    assert p.message == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s)."
    )
    assert p.blocked_by == "taint"
    assert p.detail.startswith(
        "all 1 node(s) with room for the pod now are ruled out: 1 taint; lifting the taint rule alone opens "
        "1 node(s); untolerated taints: dedicated=inference:NoSchedule (1); on the nodes it may use: shortage, "
        "0 nvidia.com/gpu free in total on 1 eligible node(s)"
    )
    assert p.capacity_verdict == "shortage"


def test_tolerating_pod_fits(tmp_path: Path) -> None:
    (p,) = diagnose_items(tmp_path, _world(tolerate=True)).pending
    assert p.blocked_by == "none" and p.placed_on == "n4"


def test_no_room_anywhere_is_a_shortage(tmp_path: Path) -> None:
    (p,) = diagnose_items(tmp_path, _world(n4_busy=True)).pending
    assert p.blocked_by == "shortage"
    assert p.capacity_verdict == ""
