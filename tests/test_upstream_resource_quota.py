"""Namespace ResourceQuota and LimitRange as the API server applies them to pods.

Upstream tables: kubernetes/kubernetes ``pkg/quota/v1/evaluator/core/pods_test.go`` at commit
008b3652959ca58af8be3fb5b6ecfe9ae7638282: ``TestPodEvaluatorUsage`` (20 cases, the three pod-level ones
with PodLevelResources on as in v1.35), ``TestPodConstraintsFunc`` (6 cases) and
``TestPodEvaluatorUsageStats`` (5 cases). The admission message, GPU quota, retry and LimitRange cases are
worked by hand from the ResourceQuota and LimitRanger admission plugins (v1.35).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest

from fleetlab.admission.limit_range import apply_limit_ranges, defaulted_item
from fleetlab.admission.resource_quota import (
    JOB_CONTROLLER_BACKOFF,
    ControllerBackoff,
    admit_pod,
    creation_retry_delay_s,
    pod_constraints,
    pod_usage,
    status_used,
    usage_stats,
)
from fleetlab.model.quantity import parse_quantity
from fleetlab.model.resource_quota import LimitRange, LimitRangeItem, ResourceQuota

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def c(
    requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, name: str = ""
) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests:
        res["requests"] = requests
    if limits:
        res["limits"] = limits
    return {"name": name, "resources": res}


def pod(
    containers: list[dict[str, Any]] = (), init: list[dict[str, Any]] = (), **extra: Any
) -> dict[str, Any]:  # type: ignore[assignment]
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    meta = extra.pop("metadata", {})
    status = extra.pop("status", {})
    spec.update(extra)
    return {"metadata": meta, "spec": spec, "status": status}


def q(values: dict[str, str]) -> dict[str, Fraction]:
    return {k: parse_quantity(v) for k, v in values.items()}


BASE = {"pods": "1", "count/pods": "1"}
DONGLE = "example.com/dongle"
IMPLICIT = "deviceclass.resource.kubernetes.io/dongle"
PAST_GRACE = (NOW - timedelta(seconds=60)).isoformat().replace("+00:00", "Z")

USAGE: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "init container CPU": (pod(init=[c({"cpu": "1m"}, {"cpu": "2m"})]),
                           {"requests.cpu": "1m", "limits.cpu": "2m", "cpu": "1m", **BASE}),
    "init container MEM": (pod(init=[c({"memory": "1m"}, {"memory": "2m"})]),
                           {"requests.memory": "1m", "limits.memory": "2m", "memory": "1m", **BASE}),
    "init container local ephemeral storage": (
        pod(init=[c({"ephemeral-storage": "32Mi"}, {"ephemeral-storage": "64Mi"})]),
        {"ephemeral-storage": "32Mi", "requests.ephemeral-storage": "32Mi", "limits.ephemeral-storage": "64Mi", **BASE},
    ),
    "init container hugepages": (pod(init=[c({"hugepages-2Mi": "100Mi"})]),
                                 {"hugepages-2Mi": "100Mi", "requests.hugepages-2Mi": "100Mi", **BASE}),
    "init container extended resources": (pod(init=[c({DONGLE: "3"}, {DONGLE: "3"})]), {f"requests.{DONGLE}": "3", **BASE}),
    "init container implicit extended resources": (
        pod(init=[c({IMPLICIT: "3"}, {IMPLICIT: "3"})]), {f"requests.{IMPLICIT}": "3", **BASE}),
    "container CPU": (pod([c({"cpu": "1m"}, {"cpu": "2m"})]),
                      {"requests.cpu": "1m", "limits.cpu": "2m", "cpu": "1m", **BASE}),
    "container MEM": (pod([c({"memory": "1m"}, {"memory": "2m"})]),
                      {"requests.memory": "1m", "limits.memory": "2m", "memory": "1m", **BASE}),
    "container local ephemeral storage": (
        pod([c({"ephemeral-storage": "32Mi"}, {"ephemeral-storage": "64Mi"})]),
        {"ephemeral-storage": "32Mi", "requests.ephemeral-storage": "32Mi", "limits.ephemeral-storage": "64Mi", **BASE},
    ),
    "container hugepages": (pod([c({"hugepages-2Mi": "100Mi"})]),
                            {"hugepages-2Mi": "100Mi", "requests.hugepages-2Mi": "100Mi", **BASE}),
    "container extended resources": (pod([c({DONGLE: "3"}, {DONGLE: "3"})]), {f"requests.{DONGLE}": "3", **BASE}),
    "container implicit extended resources": (pod([c({IMPLICIT: "3"}, {IMPLICIT: "3"})]), {f"requests.{IMPLICIT}": "3", **BASE}),
    "terminated generic count still appears": (
        pod([c({DONGLE: "3"}, {DONGLE: "3"})], status={"phase": "Succeeded"}), {"count/pods": "1"}),
    "init container maximums override sum of containers": (
        pod(
            [c({"cpu": "1", "memory": "50M", DONGLE: "1"}, {"cpu": "2", "memory": "100M", DONGLE: "1"}),
             c({"cpu": "2", "memory": "25M", DONGLE: "2"}, {"cpu": "5", "memory": "50M", DONGLE: "2"})],
            init=[c({"cpu": "4", "memory": "100M", DONGLE: "4"}, {"cpu": "8", "memory": "200M", DONGLE: "4"}),
                  c({"cpu": "1", "memory": "50M", DONGLE: "2"}, {"cpu": "2", "memory": "100M", DONGLE: "2"})],
        ),
        {"requests.cpu": "4", "requests.memory": "100M", "limits.cpu": "8", "limits.memory": "200M", "cpu": "4",
         "memory": "100M", f"requests.{DONGLE}": "4", **BASE},
    ),
    "pod deletion timestamp exceeded": (
        pod([c({"cpu": "1", "memory": "50M"}, {"cpu": "2", "memory": "100M"})],
            metadata={"deletionTimestamp": PAST_GRACE, "deletionGracePeriodSeconds": 30},
            status={"reason": "NodeLost"}, terminationGracePeriodSeconds=30),
        {"count/pods": "1"},
    ),
    "pod deletion timestamp not exceeded": (
        pod([c({"cpu": "1"}, {"cpu": "2"})],
            metadata={"deletionTimestamp": NOW.isoformat().replace("+00:00", "Z"), "deletionGracePeriodSeconds": 30},
            status={"reason": "NodeLost"}),
        {"requests.cpu": "1", "limits.cpu": "2", "cpu": "1", **BASE},
    ),
    "count pod overhead as usage": (pod([c({"cpu": "1"}, {"cpu": "2"})], overhead={"cpu": "1"}),
                                    {"requests.cpu": "2", "limits.cpu": "3", "cpu": "2", **BASE}),
    "pod-level CPU": (pod([], resources={"requests": {"cpu": "1m"}, "limits": {"cpu": "2m"}}),
                      {"requests.cpu": "1m", "limits.cpu": "2m", "cpu": "1m", **BASE}),
    "pod-level Memory": (pod([], resources={"requests": {"memory": "1Mi"}, "limits": {"memory": "2Mi"}}),
                         {"requests.memory": "1Mi", "limits.memory": "2Mi", "memory": "1Mi", **BASE}),
    "pod-level memory with container-level ephemeral storage": (
        pod([c({"ephemeral-storage": "32Mi"}, {"ephemeral-storage": "64Mi"})],
            resources={"requests": {"memory": "1Mi"}, "limits": {"memory": "2Mi"}}),
        {"ephemeral-storage": "32Mi", "requests.ephemeral-storage": "32Mi", "limits.ephemeral-storage": "64Mi",
         "requests.memory": "1Mi", "limits.memory": "2Mi", "memory": "1Mi", **BASE},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(USAGE))
def test_pod_evaluator_usage(name: str) -> None:
    p, want = USAGE[name]
    assert pod_usage(p, NOW) == q(want)


CONSTRAINTS: dict[str, tuple[dict[str, Any], list[str], str | None]] = {
    "init container resource missing": (
        pod(init=[c({"cpu": "1m"}, {"cpu": "2m"}, "dummy")]), ["memory"], "must specify memory for: dummy"),
    "multiple init container resource missing": (
        pod(init=[c({"cpu": "1m"}, {"cpu": "2m"}, "foo"), c({"cpu": "1m"}, {"cpu": "2m"}, "bar")]), ["memory"],
        "must specify memory for: bar,foo"),
    "container resource missing": (pod([c({"cpu": "1m"}, {"cpu": "2m"}, "dummy")]), ["memory"],
                                   "must specify memory for: dummy"),
    "multiple container resource missing": (
        pod([c({"cpu": "1m"}, {"cpu": "2m"}, "foo"), c({"cpu": "1m"}, {"cpu": "2m"}, "bar")]), ["memory"],
        "must specify memory for: bar,foo"),
    "container resource missing multiple": (
        pod([c(name="foo"), c(name="bar")]), ["memory", "cpu"], "must specify cpu for: bar,foo; memory for: bar,foo"),
    "pod-level resource set, container-level required resources missing": (
        pod([c(name="foo"), c(name="bar")], resources={"requests": {"cpu": "1m"}}), ["memory", "cpu"], None),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CONSTRAINTS))
def test_pod_constraints_func(name: str) -> None:
    p, required, want = CONSTRAINTS[name]
    assert pod_constraints(required, p) == want


def running(name: str, priority_class: str, cpu: str | None, phase: str) -> dict[str, Any]:
    containers = [c({"cpu": cpu}, {"cpu": cpu})] if cpu else [c()]
    return pod(containers, metadata={"name": name}, status={"phase": phase}, priorityClassName=priority_class)


def quota(scopes: tuple[str, ...] = (), selector: list[dict[str, Any]] | None = None) -> ResourceQuota:
    spec: dict[str, Any] = {"hard": {}}
    if scopes:
        spec["scopes"] = list(scopes)
    if selector:
        spec["scopeSelector"] = {"matchExpressions": selector}
    return ResourceQuota.model_validate({"metadata": {"name": "q"}, "spec": spec})


HIGH = [{"scopeName": "PriorityClass", "operator": "In", "values": ["high-priority"]}]
CPU2 = {"pods": "2", "count/pods": "2", "cpu": "2", "requests.cpu": "2", "limits.cpu": "2"}
CPU1 = {"pods": "1", "count/pods": "2", "cpu": "1", "requests.cpu": "1", "limits.cpu": "1"}
STATS: dict[str, tuple[list[dict[str, Any]], ResourceQuota, dict[str, str]]] = {
    "nil case": ([], quota(), {}),
    "all pods in running state": ([running("p1", "", "1", "Running"), running("p2", "", "1", "Running")], quota(), CPU2),
    "one pods in terminal state": ([running("p1", "", "1", "Running"), running("p2", "", "1", "Succeeded")], quota(), CPU1),
    "partial pods matching quotaScopeSelector": (
        [running("p1", "high-priority", "1", "Running"), running("p2", "high-priority", "1", "Succeeded"),
         running("p3", "low-priority", "1", "Running")], quota(selector=HIGH), CPU1),
    "partial pods matching quotaScopeSelector - w/ scopeName specified": (
        [running("p1", "high-priority", "1", "Running"), running("p2", "high-priority", "1", "Succeeded"),
         running("p3", "low-priority", "1", "Running")], quota(("PriorityClass",), HIGH), CPU1),
    "partial pods matching quotaScopeSelector - w/ multiple scopeNames specified": (
        [running("p1", "high-priority", "1", "Running"), running("p2", "high-priority", "1", "Succeeded"),
         running("p3", "low-priority", "1", "Running"), running("p4", "high-priority", None, "Failed")],
        quota(("PriorityClass", "BestEffort"), HIGH), {"count/pods": "1"}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(STATS))
def test_pod_evaluator_usage_stats(name: str) -> None:
    pods, qt, want = STATS[name]
    assert usage_stats(qt, pods, NOW) == q(want)


GPU_QUOTA = ResourceQuota.model_validate(
    {
        "metadata": {"name": "team-a-gpus", "namespace": "team-a"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "8"}},
    }
)


def gpu_pod(gpus: str, phase: str = "Pending") -> dict[str, Any]:
    return pod([c({"nvidia.com/gpu": gpus}, {"nvidia.com/gpu": gpus}, "train")], status={"phase": phase})


def test_gpu_quota_refuses_the_pod_that_would_exceed_it() -> None:
    """8 GPUs of quota, 7 used by running pods: a 2-GPU pod would make 9 > 8 and is refused with the API
    server's message; a 1-GPU pod fits (7 + 1 = 8); finished pods free their GPUs."""
    pods = [gpu_pod("4", "Running"), gpu_pod("3", "Running"), gpu_pod("8", "Succeeded")]
    used = {"team-a-gpus": status_used(GPU_QUOTA, pods, NOW)}
    assert used["team-a-gpus"] == {"requests.nvidia.com/gpu": Fraction(7)}
    refused = admit_pod(gpu_pod("2"), [GPU_QUOTA], used, NOW)
    assert not refused.admitted
    assert refused.message == (
        "exceeded quota: team-a-gpus, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=7, "
        "limited: requests.nvidia.com/gpu=8"
    )
    ok = admit_pod(gpu_pod("1"), [GPU_QUOTA], used, NOW)
    assert ok.admitted and ok.charged == {"team-a-gpus": {"requests.nvidia.com/gpu": Fraction(1)}}
    # a pod without GPUs is not charged to a GPU-only quota
    assert admit_pod(pod([c({"cpu": "1"})]), [GPU_QUOTA], used, NOW).charged == {"team-a-gpus": {}}


def test_cpu_quota_needs_every_container_to_say_its_cpu() -> None:
    cpu_quota = ResourceQuota.model_validate(
        {"metadata": {"name": "cpu"}, "spec": {"hard": {"requests.cpu": "10"}}}
    )
    got = admit_pod(pod([c({"nvidia.com/gpu": "1"}, name="train")]), [cpu_quota], {}, NOW)
    assert got.message == "failed quota: cpu: must specify requests.cpu for: train"


def test_controller_retries_with_client_go_backoff() -> None:
    # 5 ms, 10 ms, 20 ms … doubling; the 19th refusal waits 5 ms · 2^18 = 1310.72 s, capped at 1000 s
    assert [creation_retry_delay_s(n) for n in (1, 2, 3)] == [0.005, 0.01, 0.02]
    assert creation_retry_delay_s(18) == pytest.approx(655.36)
    assert creation_retry_delay_s(19) == 1000.0


def test_item_exponential_failure_rate_limiter() -> None:
    """kubernetes/kubernetes ``staging/src/k8s.io/client-go/util/workqueue/default_rate_limiters_test.go``
    at 78fc8e44052f699bf598f84b697b41e5a328c9c5, ``TestItemExponentialFailureRateLimiter``: base 1 ms,
    max 1 s: the failures of one item wait 1, 2, 4, 8, 16 ms (5 requeues); another item starts again at
    1 ms, 2 ms; once forgotten (a successful sync) an item starts at 1 ms again."""
    limiter = ControllerBackoff(0.001, 1.0)
    assert [limiter.delay_s(n) for n in range(1, 6)] == [0.001, 0.002, 0.004, 0.008, 0.016]
    assert [limiter.delay_s(n) for n in (1, 2)] == [0.001, 0.002]  # "two", counted on its own
    assert limiter.delay_s(1) == 0.001  # after Forget
    assert limiter.delay_s(11) == 1.0  # 1 ms · 2^10 = 1.024 s: capped
    with pytest.raises(ValueError):
        limiter.delay_s(0)


def test_job_controller_backs_off_from_one_second_to_a_minute() -> None:
    """kubernetes/kubernetes ``pkg/controller/job/job_controller.go`` at
    6ae037f1db843e99547258d7dd292301a74ba0eb: the Job queue's rate limiter is
    ``NewTypedItemExponentialFailureRateLimiter(DefaultJobApiBackOff = 1 s, MaxJobApiBackOff = 1 min)``
    and a sync whose pod creation failed is requeued rate-limited: 1, 2, 4, 8, 16, 32 s, then 60 s."""
    assert [JOB_CONTROLLER_BACKOFF.delay_s(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]


def test_limit_range_defaults_and_bounds() -> None:
    """Container defaults: max 4 GPU-node CPUs becomes the default limit and (no default request) the
    default request; min 100m memory becomes the memory default request. A container with only a cpu
    limit of 2 keeps request 2 (its own defaulting comes first)."""
    lr = LimitRange.model_validate({
        "metadata": {"name": "defaults", "namespace": "team-a"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "4"}, "min": {"memory": "100Mi"},
                             "maxLimitRequestRatio": {"cpu": "2"}}]},
    })  # fmt: skip
    item = defaulted_item(lr.spec.limits[0])
    assert (item.default, item.default_request) == ({"cpu": "4"}, {"memory": "100Mi", "cpu": "4"})
    out, problems = apply_limit_ranges(pod([c(name="a"), c(limits={"cpu": "2"}, name="b")]), [lr])
    a, b = out["spec"]["containers"]
    assert a["resources"] == {"requests": {"cpu": "4", "memory": "100Mi"}, "limits": {"cpu": "4"}}
    assert b["resources"] == {"requests": {"cpu": "2", "memory": "100Mi"}, "limits": {"cpu": "2"}}
    assert problems == []
    # a limit over max, and a limit/request ratio of 8/1 > 2, are refused
    _, problems = apply_limit_ranges(pod([c({"cpu": "1"}, {"cpu": "8"}, "big")]), [lr])
    assert problems == [
        "maximum cpu usage per Container is 4, but limit is 8",
        "cpu max limit to request ratio per Container is 2, but provided ratio is 8.000000",
    ]
    with pytest.raises(ValueError, match="apply to type Container only"):
        LimitRangeItem.model_validate({"type": "Pod", "default": {"cpu": "1"}})
