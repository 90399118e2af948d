"""Upstream kube-scheduler's ImageLocality table, ported case by case.

Source: kubernetes/kubernetes ``pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go``,
``TestImageLocalityPriority`` and ``TestNormalizedImageName``, in the form with init containers and the
``1000 MiB × containers`` maximum (v1.27 onwards; the search index holds this version without its commit,
the pinned kubernetes/kubernetes copy @3e4a7900 is the 2019 form). Nodes report their images with sizes
(``status.images``); the pod's containers (init containers included) name the images. MB = 1 MiB, as in
the upstream file.
"""

from __future__ import annotations

import numpy as np
import pytest

from fleetlab.placement.framework import PodSpec
from fleetlab.placement.state import normalized_image_name
from spread_builders import make_cluster, make_node

MB = 1024 * 1024
N40_300_2000 = {
    "gcr.io/40:latest": 40,
    "gcr.io/40:v1": 40,
    "gcr.io/300:latest": 300,
    "gcr.io/300:v1": 300,
    "gcr.io/2000:latest": 2000,
}
N250_10 = {"gcr.io/250:latest": 250, "gcr.io/10:latest": 10, "gcr.io/10:v1": 10}
N600_40_900 = {"gcr.io/600:latest": 600, "gcr.io/40:latest": 40, "gcr.io/900:latest": 900}
N300_600_900 = {"gcr.io/300:latest": 300, "gcr.io/600:latest": 600, "gcr.io/900:latest": 900}
N4000_30 = {"gcr.io/4000:latest": 4000, "gcr.io/30:latest": 30}
N20_30_40 = {"gcr.io/20:latest": 20, "gcr.io/30:latest": 30, "gcr.io/40:latest": 40}
NONE: dict[str, int] = {}

CASES = [
    # 250M/2 = 125M on node2: 100 × (125 − 23) / (2000 − 23) = 5.
    (
        "two images spread on two nodes, prefer the larger image one",
        ("gcr.io/40", "gcr.io/250"),
        [N40_300_2000, N250_10],
        [0, 5],
    ),
    # (40M + 300M)/2 = 170M: 100 × 147 / 1977 = 7.
    (
        "two images on one node, prefer this node",
        ("gcr.io/40", "gcr.io/300"),
        [N40_300_2000, N250_10],
        [7, 0],
    ),
    # 4000M/2 = 2000M ≥ 2 × 1000M: 100.
    ("if exceed limit, use limit", ("gcr.io/10", "gcr.io/4000"), [N4000_30, N250_10], [100, 0]),
    # 4000M/3 = 1333M: 100 × 1310 / 1977 = 66.
    (
        "if exceed limit, use limit (with node which has no images present)",
        ("gcr.io/10", "gcr.io/4000"),
        [N4000_30, N250_10, NONE],
        [66, 0, 0],
    ),
    # node1: 600×2/3 + 900×2/3 = 1000M -> 100 × 977 / 2977 = 32; node2: + 300/3 = 1100M -> 36.
    (
        "pod with multiple large images, node2 is preferred",
        ("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        [N600_40_900, N300_600_900, NONE],
        [32, 36, 0],
    ),
    # node1: 30M + 40M/2 = 50M -> 100 × 27 / 1977 = 1; node2: 30M -> 100 × 7 / 1977 = 0.
    ("pod with multiple small images", ("gcr.io/30", "gcr.io/40"), [N20_30_40, N4000_30], [1, 0]),
    # init container gcr.io/300 counts: node1 300M/2 = 150M -> 100 × 127 / 1977 = 6.
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        ("gcr.io/30", "gcr.io/300"),
        [N40_300_2000, N20_30_40],
        [6, 0],
    ),
]


@pytest.mark.parametrize(("images", "nodes", "expected"), [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_upstream_image_locality(
    images: tuple[str, ...], nodes: list[dict[str, int]], expected: list[int]
) -> None:
    """One ``TestImageLocalityPriority`` case (name in the test id)."""
    state, sched = make_cluster([make_node(f"node{i + 1}", None) for i in range(len(nodes))])
    for i, listed in enumerate(nodes):
        for name, size in listed.items():
            state.add_image(i, name, size * MB)
    spec = PodSpec(requests=(("cpu", 100),), images=images, containers=len(images))
    compiled = sched.compile(spec)
    plugin = next(p for p, _ in sched.scorers if p.name == "ImageLocality")
    scores = plugin.score(state, compiled, np.arange(state.n))
    got = [int(s) for s in scores] if not isinstance(scores, int) else [scores] * state.n
    assert got == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        (
            "root@sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2",
            "root@sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2",
        ),
    ],
)
def test_upstream_normalized_image_name(name: str, expected: str) -> None:
    """``TestNormalizedImageName``: ``:latest`` only when there is neither a tag nor a digest."""
    assert normalized_image_name(name) == expected
