"""Toleration matching with the numeric operators ``Lt`` and ``Gt`` (Kubernetes v1.35, alpha gate
TaintTolerationComparisonOperators, KEP-5471): Gt tolerates a taint whose integer value is above the
toleration's, Lt one below; values are strict int64 (no plus sign, no leading zeros).

Source: kubernetes/kubernetes ``staging/src/k8s.io/api/core/v1/toleration_test.go`` at commit
4a0608cb77f6a53af41cb4a453af104a4d4a0610: ``TestTolerationToleratesTaint`` (13 cases, all with the gate on)
and ``TestCompareNumericValues`` (29 cases). Before this round the operators were refused when reading a pod.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fleetlab.model.kube import Taint, Toleration, compare_numeric, tolerates

SLA = "node.kubernetes.io/sla"
NS = "NoSchedule"

TOLERATES: list[tuple[str, dict[str, str], dict[str, str], bool]] = [
    (
        "same key and effect, Exists, taint has no value",
        {"key": "foo", "operator": "Exists", "effect": NS},
        {"key": "foo", "effect": NS},
        True,
    ),
    (
        "same key and effect, Exists, taint has some value",
        {"key": "foo", "operator": "Exists", "effect": NS},
        {"key": "foo", "value": "bar", "effect": NS},
        True,
    ),
    (
        "empty key with Exists matches all",
        {"key": "", "operator": "Exists", "effect": NS},
        {"key": "foo", "value": "bar", "effect": NS},
        True,
    ),
    (
        "same key, effect and value, Equal",
        {"key": "foo", "operator": "Equal", "value": "bar", "effect": NS},
        {"key": "foo", "value": "bar", "effect": NS},
        True,
    ),
    (
        "different values, Equal",
        {"key": "foo", "operator": "Equal", "value": "value1", "effect": NS},
        {"key": "foo", "value": "value2", "effect": NS},
        False,
    ),
    (
        "different effects, Equal",
        {"key": "foo", "operator": "Equal", "value": "bar", "effect": NS},
        {"key": "foo", "value": "bar", "effect": "NoExecute"},
        False,
    ),
    (
        "Gt, taint value less than toleration value",
        {"key": SLA, "operator": "Gt", "value": "950", "effect": NS},
        {"key": SLA, "value": "800", "effect": NS},
        False,
    ),
    (
        "Gt, taint value greater than toleration value",
        {"key": SLA, "operator": "Gt", "value": "750", "effect": NS},
        {"key": SLA, "value": "950", "effect": NS},
        True,
    ),
    (
        "Lt, taint value greater than toleration value",
        {"key": SLA, "operator": "Lt", "value": "800", "effect": NS},
        {"key": SLA, "value": "950", "effect": NS},
        False,
    ),
    (
        "Lt, taint value less than toleration value",
        {"key": SLA, "operator": "Lt", "value": "950", "effect": NS},
        {"key": SLA, "value": "800", "effect": NS},
        True,
    ),
    (
        "Gt, equal numeric value",
        {"key": SLA, "operator": "Gt", "value": "950", "effect": NS},
        {"key": SLA, "value": "950", "effect": NS},
        False,
    ),
    (
        "Gt, non-numeric taint value",
        {"key": SLA, "operator": "Gt", "value": "950", "effect": NS},
        {"key": SLA, "value": "high", "effect": NS},
        False,
    ),
    (
        "Gt, negative values, taint below threshold",
        {"key": "test-key", "operator": "Gt", "value": "-100", "effect": NS},
        {"key": "test-key", "value": "-200", "effect": NS},
        False,
    ),
    (
        "Gt, large int64 threshold",
        {"key": "test-key", "operator": "Gt", "value": "9223372036854775806", "effect": NS},
        {"key": "test-key", "value": "100", "effect": NS},
        False,
    ),
]


@pytest.mark.parametrize(("name", "tol", "taint", "want"), TOLERATES, ids=[c[0] for c in TOLERATES])
def test_toleration_tolerates_taint(
    name: str, tol: dict[str, str], taint: dict[str, str], want: bool
) -> None:
    assert tolerates(Toleration.model_validate(tol), Taint.model_validate(taint)) is want


COMPARE: list[tuple[str, str, str, str, bool]] = [
    ("Gt taint greater", "100", "200", "Gt", True),
    ("Gt taint less", "200", "100", "Gt", False),
    ("Gt equal", "100", "100", "Gt", False),
    ("Gt negative, taint greater", "-100", "-50", "Gt", True),
    ("Gt negative, taint less", "-50", "-100", "Gt", False),
    ("Gt zero and positive", "0", "1", "Gt", True),
    ("Gt large int64, taint greater", "9223372036854775806", "9223372036854775807", "Gt", True),
    ("Lt taint less", "200", "100", "Lt", True),
    ("Lt taint greater", "100", "200", "Lt", False),
    ("Lt equal", "100", "100", "Lt", False),
    ("Lt negative, taint less", "-50", "-100", "Lt", True),
    ("Lt negative, taint greater", "-100", "-50", "Lt", False),
    ("Lt zero and negative", "0", "-1", "Lt", True),
    ("Gt toleration non-numeric", "abc", "100", "Gt", False),
    ("Gt toleration empty", "", "100", "Gt", False),
    ("Gt toleration leading zero", "0100", "200", "Gt", False),
    ("Gt toleration plus sign", "+100", "200", "Gt", False),
    ("Gt toleration floating point", "100.5", "200", "Gt", False),
    ("Gt toleration just minus", "-", "100", "Gt", False),
    ("Gt taint non-numeric", "100", "xyz", "Gt", False),
    ("Gt taint empty", "100", "", "Gt", False),
    ("Gt taint leading zero", "100", "0200", "Gt", False),
    ("Lt taint plus sign", "100", "+200", "Lt", False),
    ("Lt taint spaces", "100", " 200 ", "Lt", False),
    ("Equal is not numeric", "100", "100", "Equal", False),
    ("Exists is not numeric", "100", "100", "Exists", False),
    ("Gt both zero", "0", "0", "Gt", False),
    ("Lt both zero", "0", "0", "Lt", False),
    ("Gt max int64 taint", "0", "9223372036854775807", "Gt", True),
    ("Lt min int64 taint", "0", "-9223372036854775808", "Lt", True),
]


@pytest.mark.parametrize(("name", "tol", "taint", "op", "want"), COMPARE, ids=[c[0] for c in COMPARE])
def test_compare_numeric_values(name: str, tol: str, taint: str, op: str, want: bool) -> None:
    assert compare_numeric(tol, taint, op) is want


@pytest.mark.parametrize("value", ["abc", "+5", "05", "-0", "1.5", "", "9223372036854775808"])
def test_numeric_operator_needs_an_integer_value(value: str) -> None:
    """The API server refuses Lt / Gt tolerations whose value is not an integer (KEP-5471 validation)."""
    with pytest.raises(ValidationError, match="needs an integer value"):
        Toleration(key="k", operator="Gt", value=value)


def test_pod_with_gt_toleration_is_read_and_placed() -> None:
    """A real pod with a Gt toleration is read from a snapshot and tolerates only the node whose SLA taint
    is above its threshold (hand case: threshold 900; n-high has 950, n-low 800)."""
    from fleetlab.kube.cluster import build_live_cluster, pod_spec
    from fleetlab.spec.kube_snapshot import Snapshot, parse_node, parse_pod

    def node(name: str, sla: str) -> dict[str, object]:
        return {
            "kind": "Node",
            "metadata": {"name": name},
            "spec": {"taints": [{"key": SLA, "value": sla, "effect": NS}]},
            "status": {
                "allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }

    pod = parse_pod(
        {
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {
                "containers": [{"name": "c"}],
                "tolerations": [{"key": SLA, "operator": "Gt", "value": "900", "effect": NS}],
            },
            "status": {"phase": "Pending"},
        },
        "t",
    )
    nodes = [parse_node(node("n-high", "950"), "t"), parse_node(node("n-low", "800"), "t")]
    live = build_live_cluster(Snapshot(nodes, [], None, []))
    compiled = live.scheduler.compile(pod_spec(pod))
    fits = live.scheduler.feasible_nodes(compiled)
    assert [live.snapshot.nodes[i].name for i in fits] == ["n-high"]
