"""Kueue's DRA quota charge (``resources.deviceClassMappings``).

Upstream table: kubernetes-sigs/kueue ``pkg/dra/claims_test.go``, ``Test_GetResourceRequests`` at commit
6ee03ca338ce858408c9812d29c67b797c415838 (6 cases, ported below with the table's names). The remaining
cases follow the rules of ``pkg/dra/claims.go`` (``chargesForClaimSpec``, ``chargeForFirstAvailable``,
``validateCELSelectorsAgainstDevices``) at commit 05a9e7e3fbe94129b1835f89a486d941c6886570 and KEP 2941's
"Device Class Mapping Uniqueness", each worked by hand.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from dra_builders import cel, dev, first, klass, req, slice_, sub
from fleetlab.admission.dra_quota import DraChargeError, pod_dra_charge, podset_dra_usage
from fleetlab.model.dra import DraObjects, PodClaimRef, ResourceClaimTemplate
from fleetlab.model.kueue_config import KueueConfiguration
from fleetlab.placement.dra.quota_check import selector_check

MAPPINGS = {"test-deviceclass-1": "res-1", "test-deviceclass-2": "res-2"}


def template(name: str, *requests: dict[str, Any]) -> ResourceClaimTemplate:
    return ResourceClaimTemplate.model_validate(
        {
            "metadata": {"name": name, "namespace": "ns1"},
            "spec": {"spec": {"devices": {"requests": list(requests)}}},
        }
    )


TEMPLATES = {
    "claim-tmpl-1": template("claim-tmpl-1", req("device-request", "test-deviceclass-1", 2)),
    "claim-tmpl-2": template("claim-tmpl-2", req("device-request", "test-deviceclass-2", 1)),
    "claim-tmpl-3": template("claim-tmpl-3", req("device-request", "test-deviceclass-1", 2)),
}


def by_template(name: str, template_name: str) -> PodClaimRef:
    return PodClaimRef(name=name, template_name=template_name)


# (upstream name, pod's resourceClaims, mapping, per-pod charge or None when refused)
UPSTREAM: list[tuple[str, tuple[PodClaimRef, ...], dict[str, str], dict[str, int] | None]] = [
    # The base workload names claim-tmpl-1 (2 × class-1) and the ResourceClaim claim-2 directly. The
    # upstream function skips the named claim; Kueue's reconciler refuses such workloads before charging
    # (KEP 2941 step 3), which the named-claim case below covers, so the table's base pod here carries the
    # template reference only.
    (
        "Single claim template with single device",
        (by_template("req-1", "claim-tmpl-1"),),
        MAPPINGS,
        {"res-1": 2},
    ),
    ("Unmapped DeviceClass returns error", (by_template("req-1", "claim-tmpl-1"),), {}, None),
    (
        "Two containers each using different claim templates",
        (by_template("req-a", "claim-tmpl-1"), by_template("req-b", "claim-tmpl-2")),
        MAPPINGS,
        {"res-1": 2, "res-2": 1},
    ),
    # Two containers naming the same pod claim: the claim is charged once, 2 devices.
    (
        "Two containers sharing one claim template",
        (by_template("req-a", "claim-tmpl-1"),),
        MAPPINGS,
        {"res-1": 2},
    ),
    (
        "Single template requesting two devices",
        (by_template("req-x", "claim-tmpl-3"),),
        MAPPINGS,
        {"res-1": 2},
    ),
    # An init container and a regular container share "rc": still 2, not 4.
    (
        "Init and regular container sharing one template",
        (by_template("rc", "claim-tmpl-1"),),
        MAPPINGS,
        {"res-1": 2},
    ),
]


@pytest.mark.parametrize(("name", "refs", "mapping", "want"), UPSTREAM, ids=[c[0] for c in UPSTREAM])
def test_upstream_get_resource_requests(
    name: str, refs: tuple[PodClaimRef, ...], mapping: dict[str, str], want: dict[str, int] | None
) -> None:
    if want is None:
        with pytest.raises(DraChargeError, match="no deviceClassMapping"):
            pod_dra_charge(refs, TEMPLATES, mapping)
        return
    assert dict(pod_dra_charge(refs, TEMPLATES, mapping).per_pod) == want


def test_podset_usage_is_per_pod_charge_times_pods() -> None:
    # 4 pods × (2 × class-1 + 1 × class-2) = res-1: 8, res-2: 4.
    refs = (by_template("a", "claim-tmpl-1"), by_template("b", "claim-tmpl-2"))
    assert podset_dra_usage(refs, 4, TEMPLATES, MAPPINGS) == {"res-1": 8, "res-2": 4}


def test_a_named_resource_claim_is_refused() -> None:
    refs = (PodClaimRef(name="req-2", claim_name="claim-2"),)
    with pytest.raises(DraChargeError, match='ResourceClaim "claim-2" is named directly'):
        pod_dra_charge(refs, TEMPLATES, MAPPINGS)


def test_admin_access_costs_nothing_and_all_is_refused() -> None:
    templates = {
        "admin": template(
            "admin", req("monitor", "test-deviceclass-1", 1, admin=True), req("gpu", "test-deviceclass-2", 1)
        ),
        "all": template("all", req("every", "test-deviceclass-1", None, mode="All")),
    }
    assert dict(pod_dra_charge((by_template("m", "admin"),), templates, MAPPINGS).per_pod) == {"res-2": 1}
    with pytest.raises(DraChargeError, match="AllocationMode 'All' is not supported"):
        pod_dra_charge((by_template("e", "all"),), templates, MAPPINGS)


def test_first_available_alternatives_must_agree() -> None:
    mapping = {"big": "gpus", "small": "gpus", "other": "cpus"}
    templates = {
        "same": template("same", first("gpu", sub("a", "big", 2), sub("b", "small", 2))),
        "counts": template("counts", first("gpu", sub("a", "big", 2), sub("b", "small", 1))),
        "names": template("names", first("gpu", sub("a", "big", 1), sub("b", "other", 1))),
    }
    assert dict(pod_dra_charge((by_template("g", "same"),), templates, mapping).per_pod) == {"gpus": 2}
    with pytest.raises(DraChargeError, match="must have count 2, this one has 1"):
        pod_dra_charge((by_template("g", "counts"),), templates, mapping)
    with pytest.raises(DraChargeError, match='must map to "gpus", this one maps to "cpus"'):
        pod_dra_charge((by_template("g", "names"),), templates, mapping)


def test_cel_selectors_checked_against_every_device_in_the_cluster() -> None:
    # Three devices of driver-a: memory 40Gi, 80Gi, 80Gi. "≥ 80Gi" matches 2 of them: a request for 2
    # passes, one for 3 is refused; two requests of 1 and 2 in one claim need 3 distinct devices (a
    # device matched for the first request is not counted for the second), so they are refused too.
    objects = DraObjects(
        classes=(klass("class-a", "driver-a"),),
        slices=(
            slice_(
                "s", "node-1", "pool-1", "driver-a",
                dev("d0", {"memory": "40Gi"}), dev("d1", {"memory": "80Gi"}), dev("d2", {"memory": "80Gi"}),
            ),
        ),
    )  # fmt: skip
    big = cel('device.capacity["driver-a"].memory.compareTo(quantity("80Gi")) >= 0')
    templates = {
        "two": template("two", req("gpu", "class-a", 2, big)),
        "three": template("three", req("gpu", "class-a", 3, big)),
        "split": template("split", req("one", "class-a", 1, big), req("two", "class-a", 2, big)),
    }
    check = selector_check(objects)
    mapping = {"class-a": "gpus"}
    assert dict(pod_dra_charge((by_template("g", "two"),), templates, mapping, check).per_pod) == {"gpus": 2}
    for name in ("three", "split"):
        with pytest.raises(DraChargeError, match="insufficient matching devices for CEL selector"):
            pod_dra_charge((by_template("g", name),), templates, mapping, check)


def test_configuration_mapping_is_unique_per_device_class() -> None:
    ok = KueueConfiguration.model_validate(
        {
            "resources": {
                "deviceClassMappings": [{"name": "whole-gpus", "deviceClassNames": ["gpu.nvidia.com"]}]
            }
        }
    )
    assert ok.resources is not None and ok.resources.resource_of() == {"gpu.nvidia.com": "whole-gpus"}
    assert ok.notes == []
    with pytest.raises(ValidationError, match=r'"gpus\.example\.com" is mapped to both'):
        KueueConfiguration.model_validate(
            {
                "resources": {
                    "deviceClassMappings": [
                        {"name": "whole-gpus", "deviceClassNames": ["gpus.example.com"]},
                        {"name": "fast-gpus", "deviceClassNames": ["gpus.example.com"]},
                    ]
                }
            }
        )
