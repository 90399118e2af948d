"""The cpu / memory the resource scorers (LeastAllocated, MostAllocated, RequestedToCapacityRatio) count for a
pod: the non-zero defaults (100m, 200Mi) are added to *each* container, init containers included, that
leaves the key out, before the sum and the init-container maximum; then overhead.

Source: kubernetes/kubernetes ``pkg/scheduler/framework/plugins/noderesources/resource_allocation_test.go``,
``TestResourceAllocationScorerCalculateRequests``, at commit 0132f9167943dc1362a3f7aeb4bfb6beba5bd329 (all 8
cases). Before this table was ported, fleetlab added the defaults pod-wide (``containers x 100m`` when no
container named cpu): 5 of the 8 cases gave another answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleetlab.kube.cluster import pod_spec
from fleetlab.placement.scheduler import Scheduler
from fleetlab.spec.kube_requests import scoring_requests
from fleetlab.spec.kube_snapshot import parse_pod

MI = 1 << 20
CPU_DEFAULT, MEM_DEFAULT = 100, 200 * MI


def _c(cpu: str | None = None, memory: str | None = None) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return {"name": "c", "resources": {"requests": requests}} if requests else {"name": "c"}


OVERHEAD = {"cpu": "1", "memory": "1Mi"}

CASES: list[tuple[str, dict[str, Any], tuple[int, int]]] = [
    ("overhead only", {"overhead": OVERHEAD}, (1000, MI)),
    ("1x requestless container", {"containers": [_c()]}, (CPU_DEFAULT, MEM_DEFAULT)),
    # one default per container without a request
    ("2x requestless container", {"containers": [_c(), _c()]}, (2 * CPU_DEFAULT, 2 * MEM_DEFAULT)),
    (
        "request container + requestless container",
        {"containers": [_c("1", "1Mi"), _c()]},
        (1000 + CPU_DEFAULT, MI + MEM_DEFAULT),
    ),
    (
        "container + requestless container + overhead",
        {"overhead": OVERHEAD, "containers": [_c("1", "1Mi"), _c()]},
        (2000 + CPU_DEFAULT, 2 * MI + MEM_DEFAULT),
    ),
    # init {cpu 3} gets memory 200Mi; app = 1.1 cpu, 201Mi; max = 3 cpu, 201Mi; + overhead 1, 1Mi
    (
        "init container + container + requestless container + overhead",
        {"overhead": OVERHEAD, "initContainers": [_c("3")], "containers": [_c("1", "1Mi"), _c()]},
        (4000, 2 * MI + MEM_DEFAULT),
    ),
    # inits: {} -> 100m/200Mi and 1m/1; app 3m/3; max per resource: 100m, 200Mi
    (
        "requestless init container + small init container + small container",
        {"initContainers": [_c(), _c("1m", "1")], "containers": [_c("3m", "3")]},
        (CPU_DEFAULT, MEM_DEFAULT),
    ),
    (
        "requestless init container + small init container + small container + requestless container",
        {"initContainers": [_c(), _c("1m", "1")], "containers": [_c("3m", "3"), _c()]},
        (3 + CPU_DEFAULT, 3 + MEM_DEFAULT),
    ),
]


@pytest.mark.parametrize(("name", "spec", "expected"), CASES, ids=[c[0] for c in CASES])
def test_calculate_requests(name: str, spec: dict[str, Any], expected: tuple[int, int]) -> None:
    assert scoring_requests(spec, "Pod p.spec", "t") == expected


def test_snapshot_pod_scores_with_per_container_defaults() -> None:
    """A snapshot pod with a request-less sidecar reaches the scheduler with the upstream vector: the
    compiled pod's non-zero request is 1100m / 201Mi (the old pod-wide rule gave 1000m / 1Mi)."""
    obj = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [_c("1", "1Mi"), _c()]},
        "status": {"phase": "Pending"},
    }
    pod = parse_pod(obj, "t")
    assert pod.scoring_requests == (1100, MI + MEM_DEFAULT)
    from fleetlab.spec.kube_snapshot import parse_node

    node = parse_node(
        {
            "kind": "Node",
            "metadata": {"name": "n"},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}},
        },
        "t",
    )
    from fleetlab.kube.cluster import build_live_cluster
    from fleetlab.spec.kube_snapshot import Snapshot

    live = build_live_cluster(Snapshot([node], [], None, []))
    scheduler: Scheduler = live.scheduler
    assert scheduler.compile(pod_spec(pod)).nonzero.tolist() == [1100, MI + MEM_DEFAULT]
