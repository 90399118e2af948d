"""Kueue's provisioning AdmissionCheck and the Cluster Autoscaler's ProvisioningRequest classes, as pure
decisions the simulator's admission-check subscriber applies.

The flow (Kueue v0.13+ ``pkg/controller/admissionchecks/provisioning/controller.go``; cluster-autoscaler
``provisioningrequest`` classes): a workload that reserved quota in a ClusterQueue with a provisioning
check gets a ProvisioningRequest (only when one of its PodSets asks for a ``managedResources`` entry — or
for anything when the list is empty; otherwise the check is Ready at once). The autoscaler answers by
class:

* ``check-capacity.autoscaling.x-k8s.io``: the pods fit the cluster as it is → ``Provisioned=True``
  (CapacityIsFound); otherwise ``Provisioned=False`` "Capacity is not found, CA will try to find it later"
  (checked again every loop), or ``Failed=True`` when the request's parameter ``noRetry`` is "true";
* ``best-effort-atomic-scale-up.autoscaling.x-k8s.io``: all the pods fit after one scale-up within the node
  groups' limits → the nodes are added and ``Provisioned=True``; otherwise nothing is added and
  ``Provisioned=False`` (tried again later; ``Failed`` with ``noRetry``).

Capacity found is booked for the workload for 10 minutes (``BookingExpired`` after that if its pods have
not used it). Kueue maps the conditions to the check's state: Failed → Pending and a new request after
``backoffBaseSeconds·2^(n−1)`` (capped at ``backoffMaxSeconds``) while attempts ≤ ``backoffLimitCount``,
then Rejected (the workload is deactivated); CapacityRevoked on a running workload → Rejected;
BookingExpired before admission → retried like a failure; Provisioned → Ready; anything else → Pending.
The time from quota reservation to Ready is the workload's provisioning wait (its own bucket).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from fleetlab.model.kueue_extra import RetryStrategy

__all__ = [
    "ATOMIC_SCALE_UP",
    "BOOKING_S",
    "CHECK_CAPACITY",
    "CheckState",
    "Condition",
    "autoscaler_conditions",
    "check_state",
    "request_needed",
    "retry_delay_s",
]

CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
ATOMIC_SCALE_UP = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
NO_RETRY = "noRetry"
#: How long the autoscaler keeps capacity for a Provisioned request before BookingExpired.
BOOKING_S = 600.0
NOT_FOUND = "Capacity is not found, CA will try to find it later."

CheckState = Literal["Pending", "Ready", "Retry", "Rejected"]


@dataclass(frozen=True)
class Condition:
    """One ProvisioningRequest condition: its type, status and message."""

    type: Literal["Accepted", "Provisioned", "Failed", "BookingExpired", "CapacityRevoked"]
    status: bool
    message: str = ""


def request_needed(podset_resources: Iterable[Iterable[str]], managed_resources: Iterable[str]) -> bool:
    """Whether Kueue makes a ProvisioningRequest: always with no managed resources, else when some PodSet
    requests one of them."""
    managed = set(managed_resources)
    if not managed:
        return True
    return any(managed & set(names) for names in podset_resources)


def autoscaler_conditions(
    class_name: str, fits_now: bool, fits_after_scale_up: bool, parameters: Mapping[str, str] | None = None
) -> list[Condition]:
    """The conditions the autoscaler sets after one look at the request (see the module docstring)."""
    no_retry = (parameters or {}).get(NO_RETRY) == "true"
    if class_name == CHECK_CAPACITY:
        ok = fits_now
    elif class_name == ATOMIC_SCALE_UP:
        ok = fits_now or fits_after_scale_up
    else:
        raise ValueError(
            f"provisioning class {class_name!r}: fleetlab models {CHECK_CAPACITY} and {ATOMIC_SCALE_UP}"
        )
    if ok:
        return [Condition("Accepted", True), Condition("Provisioned", True, "Capacity is found")]
    if no_retry:
        failed = Condition("Failed", True, "CA could not find requested capacity")
        return [Condition("Accepted", True), failed]
    return [Condition("Accepted", True), Condition("Provisioned", False, NOT_FOUND)]


def retry_delay_s(attempt: int, retry: RetryStrategy) -> float:
    """Seconds before attempt ``attempt + 1`` (``attempt`` ≥ 1 failed so far): base·2^(attempt−1), capped."""
    if attempt < 1:
        raise ValueError("attempts are counted from 1")
    exponent = min(attempt - 1, 62)
    return float(min(retry.backoff_base_seconds * 2**exponent, retry.backoff_max_seconds))


def check_state(
    conditions: Iterable[Condition],
    attempt: int,
    retry: RetryStrategy,
    admitted: bool,
    finished: bool = False,
) -> tuple[CheckState, str]:
    """The AdmissionCheck state Kueue sets from the request's conditions (first match wins, in Kueue's
    order: Failed, CapacityRevoked, BookingExpired, Provisioned, Accepted). ``Retry`` means Pending with a
    new request after :func:`retry_delay_s`."""
    on = {c.type: c for c in conditions if c.status}
    if "Failed" in on:
        if attempt <= retry.backoff_limit_count:
            return "Retry", f"Retrying after failure: {on['Failed'].message}"
        return "Rejected", on["Failed"].message
    if "CapacityRevoked" in on:
        if not finished:
            return "Rejected", on["CapacityRevoked"].message
        return "Pending", ""
    if "BookingExpired" in on:
        if admitted:
            return "Ready", ""
        if attempt <= retry.backoff_limit_count:
            return "Retry", f"Retrying after booking expired: {on['BookingExpired'].message}"
        return "Rejected", on["BookingExpired"].message
    if "Provisioned" in on:
        return "Ready", on["Provisioned"].message
    return "Pending", ""
