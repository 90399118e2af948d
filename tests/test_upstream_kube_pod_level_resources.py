"""Pod-level resources (``spec.resources``, PodLevelResources on by default since v1.34) in the requests
kube-scheduler fits, scores and explains with.

Source: kubernetes/kubernetes ``staging/src/k8s.io/component-helpers/resource/helpers_test.go``,
``TestPodLevelResourceRequests`` (the cases with ``SkipPodLevelResources: false``, which is what the
scheduler uses), at commit 6c5cf687229f4699334a13393e38b3ca4b8a9293. cpu in milli-cores, memory in bytes.
Not expressible: the two cases requesting ``storage``, a name fleetlab refuses in a pod request.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleetlab.spec.kube_requests import pod_requests

MI = 1 << 20


def _c(memory: str, cpu: str, sidecar: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "c", "resources": {"requests": {"memory": memory, "cpu": cpu}}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


CASES: list[tuple[str, dict[str, Any], dict[str, int]]] = [
    (
        "pod level memory resource with SkipPodLevelResources false",
        {"resources": {"requests": {"memory": "2Mi"}}},
        {"memory": 2 * MI},
    ),
    (
        "pod level memory and container level cpu resources with SkipPodLevelResources false",
        {
            "resources": {"requests": {"memory": "2Mi"}},
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "2m"}}}],
        },
        {"memory": 2 * MI, "cpu": 2},
    ),
    (
        "only container level resources set with SkipPodLevelResources false",
        {"containers": [_c("3Mi", "2m")]},
        {"memory": 3 * MI, "cpu": 2},
    ),
    (
        "both container-level and pod-level resources set with SkipPodLevelResources false",
        {"resources": {"requests": {"memory": "6Mi", "cpu": "8m"}}, "containers": [_c("3Mi", "2m")]},
        {"memory": 6 * MI, "cpu": 8},
    ),
    (
        "container-level resources and init container set with SkipPodLevelResources false",
        {"containers": [_c("3Mi", "2m")], "initContainers": [_c("5Mi", "4m")]},
        {"memory": 5 * MI, "cpu": 4},
    ),
    (
        "container-level resources and sidecar container set with SkipPodLevelResources false",
        {"containers": [_c("3Mi", "2m")], "initContainers": [_c("5Mi", "4m", sidecar=True)]},
        {"memory": 8 * MI, "cpu": 6},
    ),
    (
        "container-level resources, init and sidecar container set with SkipPodLevelResources false",
        {"containers": [_c("3Mi", "2m")], "initContainers": [_c("5Mi", "4m", sidecar=True), _c("6Mi", "8m")]},
        {"memory": 11 * MI, "cpu": 12},
    ),
    (
        "pod-level resources, container-level resources, init and sidecar container set with SkipPodLevelResources "
        "false",
        {
            "resources": {"requests": {"memory": "15Mi", "cpu": "18m"}},
            "containers": [_c("3Mi", "2m")],
            "initContainers": [_c("5Mi", "4m", sidecar=True), _c("6Mi", "8m")],
        },
        {"memory": 15 * MI, "cpu": 18},
    ),
]


@pytest.mark.parametrize(("spec", "expected"), [pytest.param(c[1], c[2], id=c[0]) for c in CASES])
def test_upstream_pod_level_resource_requests(spec: dict[str, Any], expected: dict[str, int]) -> None:
    """One ``TestPodLevelResourceRequests`` case (name in the test id)."""
    requests, explicit = pod_requests(spec, "Pod default/p", "pods.json")
    assert requests == expected
    assert set(expected) <= explicit  # a pod-level value is explicit: no non-zero default in scoring


def test_pod_level_limit_stands_for_a_missing_request() -> None:
    """API defaulting: a pod-level limit with no pod-level request sets the request (cpu 2 → 2000m)."""
    requests, _ = pod_requests(
        {"resources": {"limits": {"cpu": "2"}}, "containers": [_c("1Gi", "500m")]}, "p", "s"
    )
    assert requests == {"cpu": 2000, "memory": 1 << 30}
