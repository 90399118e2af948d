"""Stage (c): pods bound to a node but not Running — where the kubelet is stuck, and since when.

The kubelet's order is: mount volumes (PVCs attached and mounted), create the sandbox
(``PodReadyToStartContainers``), run init containers (``Initialized``), pull images and start the
containers. The first unfinished step, read from conditions and container states, names the stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from fleetlab.kube.events import PodEvent
from fleetlab.spec.kube_snapshot import ContainerState, KubePod

IMAGE_PULL_FAILING = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})
CONTAINER_FAILING = frozenset(
    {"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError"}
)


@dataclass
class StartingPod:
    """One bound, not yet running pod: the stage it is in, the evidence, and seconds spent there."""

    pod: str
    node: str
    stage: str
    reason: str
    waiting_s: float | None


def seconds_between(now: datetime | None, then: datetime | None) -> float | None:
    """Non-negative seconds from ``then`` to ``now`` (None when either is unknown)."""
    if now is None or then is None:
        return None
    return max(0.0, (now - then).total_seconds())


def _condition(pod: KubePod, kind: str) -> tuple[str, datetime | None] | None:
    found = pod.conditions.get(kind)
    return None if found is None else (found[0], found[2])


def _first(states: list[ContainerState], reasons: frozenset[str]) -> ContainerState | None:
    return next((c for c in states if c.reason in reasons), None)


def diagnose_starting(
    pod: KubePod, now: datetime | None, events: Mapping[str, PodEvent] | None = None
) -> StartingPod:
    """Where a bound Pending pod stands: volumes, sandbox, init containers, image pull, or a failing start.

    Events, when given, sharpen it: FailedMount/FailedAttachVolume name the volume problem, Pulling says
    since when the image is being pulled, FailedCreatePodSandBox names a CNI/runtime failure."""
    events = events or {}
    states = list(pod.container_states)
    scheduled = _condition(pod, "PodScheduled")
    since = scheduled[1] if scheduled and scheduled[0] == "True" else pod.created
    sandbox = _condition(pod, "PodReadyToStartContainers")
    node = pod.node_name or ""

    def result(stage: str, reason: str, start: datetime | None) -> StartingPod:
        return StartingPod(pod.key, node, stage, reason, seconds_between(now, start or since))

    sandbox_ok = sandbox is not None and sandbox[0] == "True"
    for reason in ("FailedAttachVolume", "FailedMount"):
        event = events.get(reason)
        if event is not None and not sandbox_ok:
            return result("waiting for volume", f"{reason} x{event.count}: {event.message}", event.first)
    failed_sandbox = events.get("FailedCreatePodSandBox")
    if failed_sandbox is not None and not sandbox_ok:
        return result(
            "sandbox failing", f"FailedCreatePodSandBox: {failed_sandbox.message}", failed_sandbox.first
        )
    pull = _first(states, IMAGE_PULL_FAILING)
    if pull is not None:
        return result("image pull failing", f"{pull.name}: {pull.reason}", None)
    broken = _first(states, CONTAINER_FAILING)
    if broken is not None:
        return result("container failing", f"{broken.name}: {broken.reason}", None)
    if sandbox is None or sandbox[0] != "True":
        if pod.claims:
            claims = ", ".join(pod.claims)
            return result(
                "waiting for volume",
                f"sandbox not created yet; PersistentVolumeClaim(s) {claims} attach/mount first",
                None,
            )
        if not states:
            return result("creating sandbox", "no container status reported yet", None)
    init_pending = [c for c in states if c.init and c.state != "terminated"]
    if init_pending:
        c = init_pending[0]
        detail = f"init container {c.name} {c.state}" + (
            f" ({c.reason})" if c.reason not in ("", "Running") else ""
        )
        start = c.since if c.state == "running" else None
        return result("initialising", detail, start)
    waiting = [c for c in states if not c.init and c.state == "waiting"]
    if waiting:
        c = waiting[0]
        if c.reason in ("ContainerCreating", ""):
            start = sandbox[1] if sandbox and sandbox[0] == "True" else None
            pulling = events.get("Pulling")
            if pulling is not None:
                return result("pulling image", f"{c.name}: {pulling.message}", pulling.first)
            return result(
                "pulling image", f"{c.name}: {c.reason or 'waiting'} (image pull / container create)", start
            )
        if c.reason == "PodInitializing":
            return result("initialising", f"{c.name}: PodInitializing", None)
        return result("waiting", f"{c.name}: {c.reason}", None)
    if not states:
        return result("creating sandbox", "no container status reported yet", None)
    return result("starting", "containers created; waiting for the kubelet to report Running", None)
