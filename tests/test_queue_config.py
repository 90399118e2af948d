"""Kueue objects pasted as YAML (queues.md §1.12) and the configuration errors, each naming object and field.

Field names and validation rules follow kubernetes-sigs/kueue ``apis/kueue/v1beta2`` (clusterqueue_types.go,
cohort_types.go) and its webhooks; CEL messages are quoted where upstream has them.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from fleetlab.model.queues import QueueConfigError, queue_config_from_objects

# queues.md §1.12, as a user would paste it (plus kubectl-style noise the model must ignore).
EXAMPLE_YAML = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100-reserved, uid: 1234, labels: {team: ml}, annotations: {note: x}}
spec:
  nodeLabels: {cloud.provider.com/accelerator: h100, cloud.provider.com/capacity: reserved}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  topologyName: default
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100-spot}
spec:
  nodeLabels: {cloud.provider.com/accelerator: h100, cloud.provider.com/capacity: spot}
  nodeTaints: [{key: spot, value: "true", effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: ml-org}
spec:
  parentName: root-cohort
  fairSharing: {weight: "0.75"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a-gpu, resourceVersion: "42"}
spec:
  cohortName: ml-org
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team-a}}
  queueingStrategy: BestEffortFIFO
  fairSharing: {weight: "2"}
  stopPolicy: None
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: h100-reserved
      resources:
      - {name: cpu,            nominalQuota: 192}
      - {name: memory,         nominalQuota: 1536Gi}
      - {name: nvidia.com/gpu, nominalQuota: 16, borrowingLimit: 16, lendingLimit: 8}
    - name: h100-spot
      resources:
      - {name: cpu,            nominalQuota: 96}
      - {name: memory,         nominalQuota: 768Gi}
      - {name: nvidia.com/gpu, nominalQuota: 8}
  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}
  preemption:
    withinClusterQueue: LowerPriority
    reclaimWithinCohort: Any
status:
  pendingWorkloads: 3
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team-a, name: gpu}
spec: {clusterQueue: team-a-gpu}
"""


def example_objects() -> list[dict[str, Any]]:
    return [o for o in yaml.safe_load_all(EXAMPLE_YAML) if o]


def test_example_yaml_parses_with_kueue_field_names() -> None:
    """§1.12 pasted verbatim: quantities parsed to integer units, defaults and aliases as in v1beta2."""
    config = queue_config_from_objects(example_objects())
    cq = config.cluster_queues[0]
    assert cq.name == "team-a-gpu" and cq.spec.cohort_name == "ml-org"
    reserved = cq.spec.resource_groups[0].flavors[0]
    quotas = {r.name: r for r in reserved.resources}
    assert quotas["cpu"].nominal_quota == 192_000  # milli-cores
    assert quotas["memory"].nominal_quota == 1536 * 1024**3
    gpu = quotas["nvidia.com/gpu"]
    assert (gpu.nominal_quota, gpu.borrowing_limit, gpu.lending_limit) == (16, 16, 8)
    assert cq.spec.flavor_fungibility.when_can_borrow == "TryNextFlavor"
    assert cq.spec.preemption.reclaim_within_cohort == "Any"
    assert cq.spec.preemption.within_cluster_queue == "LowerPriority"
    assert cq.spec.fair_sharing is not None and cq.spec.fair_sharing.weight_milli == 2000
    assert config.cohorts[0].spec.fair_sharing is not None
    assert config.cohorts[0].spec.fair_sharing.weight_milli == 750
    lq = config.local_queues[0]
    assert lq.key == ("team-a", "gpu") and lq.spec.cluster_queue == "team-a-gpu"
    spot = config.resource_flavors[1]
    assert spot.spec.node_taints[0].key == "spot"
    # Kueue creates the parent cohort implicitly (cohort_types.go: "References a non-existent Cohort").
    assert config.implicit_cohorts() == ["root-cohort"]
    assert config.cohort_parents() == {"ml-org": "root-cohort", "root-cohort": None}


def test_defaults_aliases_and_list_objects() -> None:
    """Kueue defaults (BestEffortFIFO, MayStopSearch/TryNextFlavor), v1beta1 ``cohort``, the old fungibility
    names ``Borrow``/``Preempt``, a ``kind: List`` from kubectl, and the implicit Cohort for a cohortName."""
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "f"}},
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta1",
                    "kind": "ClusterQueue",
                    "metadata": {"name": "q"},
                    "spec": {
                        "cohort": "shared",
                        "resourceGroups": [
                            {
                                "coveredResources": ["nvidia.com/gpu"],
                                "flavors": [
                                    {
                                        "name": "f",
                                        "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4"}],
                                    }
                                ],
                            }
                        ],
                        "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
                    },
                },
            ],
        },
        {"kind": "ClusterQueue", "metadata": {"name": "plain"}},
    ]
    config = queue_config_from_objects(objects)
    q, plain = config.cluster_queues
    assert q.spec.cohort_name == "shared"
    assert q.spec.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert q.spec.flavor_fungibility.when_can_preempt == "MayStopSearch"
    assert plain.spec.queueing_strategy == "BestEffortFIFO"
    assert plain.spec.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert plain.spec.flavor_fungibility.when_can_preempt == "TryNextFlavor"
    assert plain.spec.preemption.reclaim_within_cohort == "Never"
    assert config.implicit_cohorts() == ["shared"]


def _cq(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == "ClusterQueue")


def _gpu_row(objects: list[dict[str, Any]], flavor: int = 0) -> dict[str, Any]:
    return _cq(objects)["spec"]["resourceGroups"][0]["flavors"][flavor]["resources"][2]


def _unknown_flavor(o: list[dict[str, Any]]) -> None:
    _cq(o)["spec"]["resourceGroups"][0]["flavors"][1]["name"] = "h100-spott"


def _flavor_in_two_groups(o: list[dict[str, Any]]) -> None:
    _cq(o)["spec"]["resourceGroups"].append(
        {
            "coveredResources": ["pods"],
            "flavors": [{"name": "h100-spot", "resources": [{"name": "pods", "nominalQuota": 10}]}],
        }
    )


def _resource_in_two_groups(o: list[dict[str, Any]]) -> None:
    o.append({"kind": "ResourceFlavor", "metadata": {"name": "extra"}})
    _cq(o)["spec"]["resourceGroups"].append(
        {
            "coveredResources": ["cpu"],
            "flavors": [{"name": "extra", "resources": [{"name": "cpu", "nominalQuota": 1}]}],
        }
    )


def _resources_mismatch(o: list[dict[str, Any]]) -> None:
    _cq(o)["spec"]["resourceGroups"][0]["flavors"][1]["resources"].pop(1)


def _borrowing_limit_without_cohort(o: list[dict[str, Any]]) -> None:
    del _cq(o)["spec"]["cohortName"]
    del _gpu_row(o)["lendingLimit"]


def _lending_limit_without_cohort(o: list[dict[str, Any]]) -> None:
    del _cq(o)["spec"]["cohortName"]
    del _gpu_row(o)["borrowingLimit"]


def _lending_over_nominal(o: list[dict[str, Any]]) -> None:
    _gpu_row(o)["lendingLimit"] = 17


def _cohort_cycle(o: list[dict[str, Any]]) -> None:
    o.append({"kind": "Cohort", "metadata": {"name": "root-cohort"}, "spec": {"parentName": "ml-org"}})


def _negative_quota(o: list[dict[str, Any]]) -> None:
    _gpu_row(o, 1)["nominalQuota"] = "-2"


def _bad_quantity(o: list[dict[str, Any]]) -> None:
    _cq(o)["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = "16GG"


def _unknown_cluster_queue(o: list[dict[str, Any]]) -> None:
    o[-1]["spec"]["clusterQueue"] = "team-b-gpu"


def _duplicate_flavor(o: list[dict[str, Any]]) -> None:
    o.append(copy.deepcopy(o[1]))


def _unknown_spec_field(o: list[dict[str, Any]]) -> None:
    _cq(o)["spec"]["cohortNmae"] = "x"


def _preference_without_try_next(o: list[dict[str, Any]]) -> None:
    _cq(o)["spec"]["flavorFungibility"] = {
        "whenCanBorrow": "MayStopSearch",
        "preference": "PreemptionOverBorrowing",
    }


def _unknown_kind(o: list[dict[str, Any]]) -> None:
    o.append({"kind": "Workload", "metadata": {"name": "w"}})


def _cohort_limit_without_parent(o: list[dict[str, Any]]) -> None:
    o.append(
        {
            "kind": "Cohort",
            "metadata": {"name": "root-cohort"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "h100-spot",
                                "resources": [
                                    {"name": "nvidia.com/gpu", "nominalQuota": 4, "lendingLimit": 2}
                                ],
                            }
                        ],
                    }
                ]
            },
        }
    )


ERROR_CASES = [
    (
        "unknown flavor",
        _unknown_flavor,
        [
            'ClusterQueue "team-a-gpu"',
            "spec.resourceGroups[0].flavors[1].name",
            '"h100-spott" is not defined',
        ],
    ),
    (
        "flavor in two groups",
        _flavor_in_two_groups,
        ['ClusterQueue "team-a-gpu"', "spec.resourceGroups[1].flavors[0].name", "only one resource group"],
    ),
    (
        "resource in two groups",
        _resource_in_two_groups,
        ['ClusterQueue "team-a-gpu"', "spec.resourceGroups[1].coveredResources", "'cpu' is already covered"],
    ),
    (
        "resources != coveredResources",
        _resources_mismatch,
        [
            'ClusterQueue "team-a-gpu"',
            "spec.resourceGroups[0].flavors[1].resources",
            "must match coveredResources",
        ],
    ),
    (
        "borrowingLimit without cohort",
        _borrowing_limit_without_cohort,
        [
            'ClusterQueue "team-a-gpu"',
            "resources[2].borrowingLimit",
            "borrowingLimit must be nil when cohort is empty",
        ],
    ),
    (
        "lendingLimit without cohort",
        _lending_limit_without_cohort,
        [
            'ClusterQueue "team-a-gpu"',
            "resources[2].lendingLimit",
            "lendingLimit must be nil when cohort is empty",
        ],
    ),
    (
        "lendingLimit > nominalQuota",
        _lending_over_nominal,
        [
            'ClusterQueue "team-a-gpu"',
            "flavors[0].resources[2].lendingLimit",
            "(17) must be less than or equal to nominalQuota (16)",
        ],
    ),
    ("cohort cycle", _cohort_cycle, ["Cohort ", "spec.parentName", "cycle", "ml-org -> root-cohort"]),
    (
        "negative quota",
        _negative_quota,
        [
            'ClusterQueue "team-a-gpu"',
            "flavors[1].resources[2].nominalQuota",
            "must be greater than or equal to 0",
        ],
    ),
    (
        "malformed quantity",
        _bad_quantity,
        ['ClusterQueue "team-a-gpu"', "flavors[0].resources[1].nominalQuota", "16GG"],
    ),
    (
        "LocalQueue to unknown CQ",
        _unknown_cluster_queue,
        ['LocalQueue "team-a/gpu"', "spec.clusterQueue", '"team-b-gpu" is not defined'],
    ),
    ("duplicate names", _duplicate_flavor, ['ResourceFlavor "h100-spot"', "metadata.name", "duplicate"]),
    (
        "unknown spec field",
        _unknown_spec_field,
        ['ClusterQueue "team-a-gpu"', "spec.cohortNmae", "unknown field"],
    ),
    (
        "preference needs TryNextFlavor",
        _preference_without_try_next,
        ['ClusterQueue "team-a-gpu"', "spec.flavorFungibility", "preference can only be set when both"],
    ),
    ("unknown kind", _unknown_kind, ["objects[5]", "'Workload'"]),
    (
        "cohort limit without parent",
        _cohort_limit_without_parent,
        ['Cohort "root-cohort"', "resources[0].lendingLimit", "no parentName"],
    ),
]


@pytest.mark.parametrize(("case", "mutate", "expected"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_config_errors_name_object_and_field(case: str, mutate: Any, expected: list[str]) -> None:
    """Each invalid configuration Kueue's webhooks reject gives one message naming the object and field."""
    objects = example_objects()
    mutate(objects)
    with pytest.raises(QueueConfigError) as info:
        queue_config_from_objects(objects)
    problems = info.value.problems
    assert any(all(piece in p for piece in expected) for p in problems), problems


def test_every_problem_is_reported_at_once() -> None:
    """Two independent mistakes give two problems, not one at a time."""
    objects = example_objects()
    _unknown_flavor(objects)
    _unknown_cluster_queue(objects)
    with pytest.raises(QueueConfigError) as info:
        queue_config_from_objects(objects)
    assert len(info.value.problems) == 2
