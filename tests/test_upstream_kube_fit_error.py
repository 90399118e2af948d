"""kube-scheduler's aggregate ``FailedScheduling`` message with PreFilter and PostFilter failures.

Source: kubernetes/kubernetes ``pkg/scheduler/framework/types_test.go``, ``TestFitError_Error`` (the
version with the ``fwk`` package and the Permit / Reserve cases, read from the search index; the pinned
kubernetes/kubernetes copy is @98be7dfc). Each case's node statuses become fleetlab filter failures; a
PreFilter failure's per-node copies are left out of the message, as upstream does.
"""

from __future__ import annotations

import pytest

from fleetlab.placement.framework import FilterFailure, FitError

PRE = "Node(s) failed PreFilter plugin FalsePreFilter"
POST = "Error running PostFilter plugin FailedPostFilter"
F1 = "Node(s) failed Filter plugin FalseFilter-1"
F2 = "Node(s) failed Filter plugin FalseFilter-2"


def _failures(reasons: dict[str, int]) -> tuple[FilterFailure, ...]:
    return tuple(FilterFailure("Plugin", {r: n}, n, unresolvable=False) for r, n in reasons.items())


CASES = [
    ("nodes failed Prefilter plugin", 3, PRE, {PRE: 3}, "", f"0/3 nodes are available: {PRE}."),
    (
        "nodes failed Prefilter plugin and the preemption also failed",
        3,
        PRE,
        {PRE: 3},
        POST,
        f"0/3 nodes are available: {PRE}. {POST}",
    ),
    (
        "nodes failed one Filter plugin with an empty PostFilterMsg",
        3,
        "",
        {F1: 3},
        "",
        f"0/3 nodes are available: 3 {F1}.",
    ),
    (
        "nodes failed one Filter plugin with a non-empty PostFilterMsg",
        3,
        "",
        {F1: 3},
        POST,
        f"0/3 nodes are available: 3 {F1}. {POST}",
    ),
    (
        "nodes failed two Filter plugins with an empty PostFilterMsg",
        3,
        "",
        {F1: 2, F2: 1},
        "",
        f"0/3 nodes are available: 1 {F2}, 2 {F1}.",
    ),
    (
        "nodes failed two Filter plugins with a non-empty PostFilterMsg",
        3,
        "",
        {F1: 2, F2: 1},
        POST,
        f"0/3 nodes are available: 1 {F2}, 2 {F1}. {POST}",
    ),
    (
        "failed to Permit on node",
        1,
        "",
        {"Node failed Permit plugin Permit-1": 1},
        "",
        "0/1 nodes are available: 1 Node failed Permit plugin Permit-1.",
    ),
    (
        "failed to Reserve on node",
        1,
        "",
        {"Node failed Reserve plugin Reserve-1": 1},
        "",
        "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1.",
    ),
]


@pytest.mark.parametrize(
    ("nodes", "pre", "reasons", "post", "want"), [pytest.param(*c[1:], id=c[0]) for c in CASES]
)
def test_upstream_fit_error_message(
    nodes: int, pre: str, reasons: dict[str, int], post: str, want: str
) -> None:
    """One ``TestFitError_Error`` case (name in the test id)."""
    error = FitError(nodes, _failures(reasons), pre_filter_msg=pre, post_filter_msg=post)
    assert error.message == want
