"""The last Event of each reason per pod, from ``kubectl get events -A -o json`` (core/v1 or
events.k8s.io/v1 shapes): what the cluster itself last said about scheduling, mounts and pulls."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fleetlab.spec.kube_snapshot import parse_time

#: Reasons the diagnosis reads; everything else in an events dump is ignored (and never printed).
READ_REASONS = frozenset(
    {
        "FailedScheduling",
        "FailedMount",
        "FailedAttachVolume",
        "FailedCreatePodSandBox",
        "Pulling",
        "Failed",
        "BackOff",
    }
)
MAX_MESSAGE = 400


@dataclass(frozen=True)
class PodEvent:
    """One reason's latest event for a pod: its message (shortened), first and last time, count; ``first``
    is None when the event does not say when its series began."""

    reason: str
    message: str
    first: datetime | None
    last: datetime | None
    count: int


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 4] + " ..."


def _fields(event: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, datetime | None, datetime | None, int]:
    target = event.get("involvedObject") or event.get("regarding") or {}
    message = str(event.get("message") or event.get("note") or "")
    series = event.get("series") or {}
    last = parse_time(
        event.get("lastTimestamp")
        or series.get("lastObservedTime")
        or event.get("deprecatedLastTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
    )
    # When the series began: core/v1 firstTimestamp, or events.k8s.io eventTime (the first observation of a
    # series). Unknown stays unknown (the caller falls back to the pod's own times), never the last one.
    first = parse_time(
        event.get("firstTimestamp") or event.get("deprecatedFirstTimestamp") or event.get("eventTime")
    )
    count = int(event.get("count") or series.get("count") or 1)
    return target, message, first, last, count


def pod_events(events: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, PodEvent]]:
    """``namespace/name`` -> reason -> the latest event of that reason."""
    out: dict[str, dict[str, PodEvent]] = {}
    for event in events:
        reason = str(event.get("reason") or "")
        if reason not in READ_REASONS:
            continue
        try:
            target, message, first, last, count = _fields(event)
            if target.get("kind") != "Pod":
                continue
        except (AttributeError, TypeError, ValueError):
            continue  # an event of an unexpected shape is advisory only: skip it
        key = f"{target.get('namespace') or 'default'}/{target.get('name')}"
        found = PodEvent(reason, _shorten(message), first, last, count)
        per_pod = out.setdefault(key, {})
        old = per_pod.get(reason)
        if old is None or _not_older(found, old):
            per_pod[reason] = found
    return out


def _not_older(new: PodEvent, old: PodEvent) -> bool:
    if new.last is None:
        return old.last is None
    return old.last is None or new.last >= old.last
