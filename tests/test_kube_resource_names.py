"""Container resource names as the API server's ``validateContainerResourceName`` takes them
(kubernetes/kubernetes ``pkg/apis/core/validation/validation.go``): an unprefixed name must be a standard
container resource, a prefixed name in the reserved ``kubernetes.io/`` domain is native and accepted with any
quantity, every other prefixed name is an extended resource (whole units). The scheduler counts a prefixed
native name as a scalar with ``Quantity.Value()`` (rounded up)."""

from __future__ import annotations

import pytest

from fleetlab.model.quantity import QuantityError
from fleetlab.model.resources import is_extended, parse_amount, parse_resource_list
from fleetlab.spec.kube_requests import pod_requests


def test_kubernetes_io_prefixed_name_is_accepted() -> None:
    assert parse_amount("kubernetes.io/batteries", "3") == 3
    # not an integer resource: a fraction is legal and the scheduler counts Value() = ceil(1.5) = 2
    assert parse_amount("kubernetes.io/batteries", "1500m") == 2
    assert not is_extended("kubernetes.io/batteries")


def test_snapshot_container_with_kubernetes_io_resource() -> None:
    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "kubernetes.io/widget": "2"}}}]
    }
    requests, _ = pod_requests(spec, "Pod p.spec", "t")
    assert requests == {"cpu": 1000, "kubernetes.io/widget": 2}


def test_unprefixed_unknown_name_is_still_refused() -> None:
    with pytest.raises(QuantityError, match="unknown resource name 'widgets'"):
        parse_resource_list({"widgets": "1"})


def test_extended_name_still_needs_whole_units() -> None:
    with pytest.raises(QuantityError, match="must be an integer"):
        parse_amount("example.com/widget", "1500m")
