"""ResourceQuota, LimitRange, AdmissionCheck and ProvisioningRequestConfig round-trip: snapshot -> scenario ->
export, each exported object validated against its schema (core/v1 through kubernetes-validate 1.35,
strict; the Kueue kinds against their v1beta2 CRD schemas, unknown fields refused). Then the provisioning
check's decisions, worked by hand from Kueue's provisioning controller and the autoscaler's classes
(admission/provisioning.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from fleetlab.admission.provisioning import (
    ATOMIC_SCALE_UP,
    CHECK_CAPACITY,
    Condition,
    autoscaler_conditions,
    check_state,
    request_needed,
    retry_delay_s,
)
from fleetlab.export.write import render
from fleetlab.kube.to_scenario import snapshot_scenario
from fleetlab.model.kueue_extra import RetryStrategy
from fleetlab.model.scenario import Scenario
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_snapshot import load_snapshot
from kube_builders import node, write_list
from test_export import DATA, strict

QUOTA = {
    "apiVersion": "v1", "kind": "ResourceQuota",
    "metadata": {"name": "team-a-gpus", "namespace": "team-a", "uid": "u1", "resourceVersion": "7"},
    "spec": {"hard": {"requests.nvidia.com/gpu": "8", "pods": "20"},
             "scopeSelector": {"matchExpressions": [
                 {"scopeName": "PriorityClass", "operator": "In", "values": ["batch"]}]}},
    "status": {"hard": {"requests.nvidia.com/gpu": "8"}, "used": {"requests.nvidia.com/gpu": "7"}},
}  # fmt: skip
LIMITS = {
    "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults", "namespace": "team-a"},
    "spec": {"limits": [{"type": "Container", "default": {"cpu": "2", "memory": "4Gi"},
                         "defaultRequest": {"cpu": "1", "memory": "2Gi"}, "max": {"nvidia.com/gpu": "8"}}]},
}  # fmt: skip
CHECK = {
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "prov"},
    "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
             "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "gpu-prov"}},
    "status": {"conditions": []},
}  # fmt: skip
PRC = {
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig", "metadata": {"name": "gpu-prov"},
    "spec": {"provisioningClassName": ATOMIC_SCALE_UP, "managedResources": ["nvidia.com/gpu"],
             "retryStrategy": {"backoffLimitCount": 2, "backoffBaseSeconds": 30, "backoffMaxSeconds": 300}},
}  # fmt: skip


def crd(kind: str) -> jsonschema.Draft7Validator:
    name = {"AdmissionCheck": "admissionchecks", "ProvisioningRequestConfig": "provisioningrequestconfigs"}[
        kind
    ]
    return jsonschema.Draft7Validator(
        strict(yaml.safe_load((DATA / "kueue_crds" / f"{name}.v1beta2.yaml").read_text()))
    )


def exported(
    tmp_path: Path, extra: list[dict[str, Any]] | None = None
) -> tuple[Scenario, dict[str, str], list[str]]:
    items = [node("n1"), QUOTA, LIMITS, CHECK, PRC, *(extra or [])]
    snap = load_snapshot([write_list(tmp_path / "snap.json", items)])
    assert [p.kind for p in snap.namespace_policies] == ["ResourceQuota", "LimitRange"]
    resolved = snapshot_scenario(snap)
    scenario = resolved.scenario
    return scenario, render(scenario), list(resolved.warnings)


def test_namespace_policies_round_trip_and_validate(tmp_path: Path) -> None:
    scenario, files, warnings = exported(tmp_path)
    assert len(scenario.namespace_policies) == 2
    assert not any("namespace_policies" in w for w in warnings)  # enforced in the run: nothing to warn of
    docs = list(yaml.safe_load_all(files["namespace-policies.yaml"]))
    assert [d["kind"] for d in docs] == ["ResourceQuota", "LimitRange"]
    for doc in docs:
        assert kubernetes_validate.validate(doc, "1.35", strict=True) == "1.35"
    quota = docs[0]
    assert "status" not in quota and quota["metadata"] == {"name": "team-a-gpus", "namespace": "team-a"}
    assert quota["spec"] == QUOTA["spec"]
    assert docs[1]["spec"] == LIMITS["spec"]


def test_admission_checks_round_trip_and_pass_the_crd_schemas(tmp_path: Path) -> None:
    scenario, files, warnings = exported(tmp_path)
    assert scenario.kueue is not None and {o.kind for o in scenario.kueue.ignored} == {
        "AdmissionCheck",
        "ProvisioningRequestConfig",
    }
    assert not any("Kueue keeps the check inactive" in w for w in warnings)
    docs = [
        d
        for d in yaml.safe_load_all(files["kueue.yaml"])
        if d["kind"] in ("AdmissionCheck", "ProvisioningRequestConfig")
    ]
    assert [d["kind"] for d in docs] == ["AdmissionCheck", "ProvisioningRequestConfig"]
    for doc in docs:
        assert [e.message for e in crd(doc["kind"]).iter_errors(doc)] == []
    assert docs[0]["spec"] == CHECK["spec"]
    assert docs[1]["spec"] == PRC["spec"]


def test_a_check_naming_a_missing_config_is_warned(tmp_path: Path) -> None:
    items = [
        node("n1"),
        {**CHECK, "spec": {**CHECK["spec"], "parameters": {**CHECK["spec"]["parameters"], "name": "nope"}}},
    ]  # type: ignore[dict-item]
    resolved = snapshot_scenario(load_snapshot([write_list(tmp_path / "snap.json", items)]))
    assert any("Kueue keeps the check inactive" in w for w in resolved.warnings)


def test_a_quota_the_api_server_would_refuse_is_refused(tmp_path: Path) -> None:
    bad = {**QUOTA, "metadata": {"name": "bad", "namespace": "team-a"},
           "spec": {"scopes": ["BestEffort", "NotBestEffort"]}}  # fmt: skip
    with pytest.raises(SpecError, match="mutually exclusive"):
        load_snapshot([write_list(tmp_path / "snap.json", [node("n1"), bad])])


RETRY = RetryStrategy.model_validate(
    {"backoffLimitCount": 2, "backoffBaseSeconds": 30, "backoffMaxSeconds": 300}
)


def test_provisioning_classes() -> None:
    """check-capacity provisions only what fits now; best-effort-atomic also after one scale-up; neither
    adds anything partial; ``noRetry`` turns "try later" into a failure."""
    fits = autoscaler_conditions(CHECK_CAPACITY, fits_now=True, fits_after_scale_up=False)
    assert check_state(fits, 1, RETRY, admitted=False) == ("Ready", "Capacity is found")
    later = autoscaler_conditions(CHECK_CAPACITY, fits_now=False, fits_after_scale_up=True)
    assert check_state(later, 1, RETRY, admitted=False) == ("Pending", "")
    atomic = autoscaler_conditions(ATOMIC_SCALE_UP, fits_now=False, fits_after_scale_up=True)
    assert check_state(atomic, 1, RETRY, admitted=False)[0] == "Ready"
    failed = autoscaler_conditions(ATOMIC_SCALE_UP, False, False, {"noRetry": "true"})
    assert check_state(failed, 1, RETRY, admitted=False) == (
        "Retry",
        "Retrying after failure: CA could not find requested capacity",
    )
    with pytest.raises(ValueError, match="fleetlab models"):
        autoscaler_conditions("queued-provisioning.gke.io", True, True)


def test_retries_back_off_then_reject() -> None:
    """backoffBaseSeconds 30, max 300, limit 2: attempt 1 fails → wait 30 s; attempt 2 fails → 60 s;
    attempt 3 fails → Rejected (3 > 2); the delays would go 30, 60, 120, 240, 300, 300 … s."""
    failed = [Condition("Failed", True, "out of stock")]
    assert [retry_delay_s(n, RETRY) for n in range(1, 7)] == [30, 60, 120, 240, 300, 300]
    assert check_state(failed, 2, RETRY, admitted=False)[0] == "Retry"
    assert check_state(failed, 3, RETRY, admitted=False) == ("Rejected", "out of stock")
    expired = [Condition("BookingExpired", True, "booking expired")]
    assert check_state(expired, 1, RETRY, admitted=True) == ("Ready", "")  # already running: nothing to do
    assert check_state(expired, 1, RETRY, admitted=False)[0] == "Retry"
    revoked = [Condition("CapacityRevoked", True, "nodes deleted")]
    assert check_state(revoked, 1, RETRY, admitted=True) == ("Rejected", "nodes deleted")


def test_request_needed_only_for_managed_resources() -> None:
    assert request_needed([["cpu", "nvidia.com/gpu"]], ["nvidia.com/gpu"])
    assert not request_needed([["cpu", "memory"]], ["nvidia.com/gpu"])
    assert request_needed([["cpu"]], [])  # no managed list: every workload gets a request
