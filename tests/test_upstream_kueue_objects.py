"""Kueue objects as applied, and the admission rules they drive, checked against upstream.

* The administrator examples of Kueue's own documentation (``tests/fixtures/kueue_docs``, sources and
  commits in its SOURCE.md) load unchanged.
* The other kinds of a Kueue install (Topology, AdmissionCheck, ProvisioningRequestConfig, MultiKueue*,
  WorkloadPriorityClass) and a whole ``Configuration`` are accepted, with one warning naming what is not
  modelled; what Kueue's validation rejects stays rejected.
* Admission rules from kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner/flavorassigner.go`` @00372241
  (``checkFlavorForPodSets`` nodeTaints, ``canPreemptWhileBorrowing``) and
  ``pkg/cache/scheduler/fair_sharing.go`` @02c5bf46 (``CompareDRS`` on the precise share).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetlab.admission.fair_sharing import dominant_resource_share
from fleetlab.admission.flavors import AssignmentMode, PodSetRequest, assign_flavors
from fleetlab.admission.manager import AdmissionManager, Workload
from fleetlab.admission.preemption import ClassicPreemption
from fleetlab.admission.tree import FlavorResource
from fleetlab.model.job import Job
from fleetlab.model.kube import Toleration
from fleetlab.model.kueue_config import KueueConfiguration
from fleetlab.model.queues import QueueConfigError, queue_config_from_objects
from fleetlab.model.scenario import apply_priority_classes

DOCS = Path(__file__).parent / "fixtures" / "kueue_docs"
GPU = "nvidia.com/gpu"


def _load(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DOCS / name).read_text()) if d]


@pytest.mark.parametrize(
    ("name", "queues", "notes"),
    [
        ("single-clusterqueue-setup.yaml", ["cluster-queue"], []),
        ("resource-flavor-taints.yaml", [], []),
        (
            "concurrent-admission-setup.yaml",
            ["team-cluster-queue"],
            ['kueue: ClusterQueue "team-cluster-queue": concurrentAdmissionPolicy accepted but not modelled'],
        ),
        ("shared-quota-setup.yaml", ["team-cluster-queue"], []),
    ],
)
def test_kueue_documentation_examples_load_unchanged(name: str, queues: list[str], notes: list[str]) -> None:
    """Each example of Kueue's admin documentation is accepted as written."""
    config = queue_config_from_objects(_load(name))
    assert [cq.name for cq in config.cluster_queues] == queues
    assert [n.removesuffix(" (ignored)") for n in config.notes] == notes


def test_shared_quota_example_counts_cpu_credits_in_whole_units() -> None:
    """``cpu_credits`` (no domain prefix) is a valid Kueue quota name, counted like ``Quantity.Value()``."""
    config = queue_config_from_objects(_load("shared-quota-setup.yaml"))
    [cq] = config.cluster_queues
    assert cq.spec.resource_groups[1].flavors[0].resources[0].nominal_quota == 14


def _objects(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {
            "kind": "ClusterQueue",
            "metadata": {"name": "q"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": [GPU],
                        "flavors": [{"name": "default", "resources": [{"name": GPU, "nominalQuota": 8}]}],
                    }
                ]
            },
        },
        *extra,
    ]


def test_other_kueue_kinds_are_accepted_with_one_warning_each() -> None:
    """AdmissionCheck, ProvisioningRequestConfig, MultiKueue* and Topology load; each topic is named once."""
    config = queue_config_from_objects(
        _objects(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "AdmissionCheck",
                "metadata": {"name": "prov"},
                "spec": {
                    "controllerName": "kueue.x-k8s.io/provisioning-request",
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "ProvisioningRequestConfig",
                        "name": "p",
                    },
                },
            },
            {
                "kind": "ProvisioningRequestConfig",
                "metadata": {"name": "p"},
                "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io"},
            },
            {"kind": "MultiKueueCluster", "metadata": {"name": "w1"}, "spec": {}},
            {"kind": "MultiKueueCluster", "metadata": {"name": "w2"}, "spec": {}},
            {
                "apiVersion": "kueue.x-k8s.io/v1alpha1",
                "kind": "Topology",
                "metadata": {"name": "default"},
                "spec": {"levels": [{"nodeLabel": "cloud.google.com/gke-nodepool"}]},
            },
        )
    )
    notes = config.notes  # AdmissionCheck and ProvisioningRequestConfig act in the run: no note
    assert len(notes) == 2
    assert notes[0] == (  # no ResourceFlavor names the Topology (a TAS flavor would make the run use it)
        'kueue: Topology "default" accepted; no ResourceFlavor names it in topologyName, so nothing uses it'
    )
    assert notes[1] == (
        'kueue: MultiKueueCluster "w1", "w2" accepted but not modelled: '
        "workloads run in this cluster, not dispatched to workers"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"kind": "Topology", "metadata": {"name": "t"}, "spec": {"levels": []}}, "levels"),
        ({"kind": "WorkloadPriorityClass", "metadata": {"name": "w"}, "value": 2**31}, "value"),
        ({"kind": "Workload", "metadata": {"name": "w"}}, "kind 'Workload' is not one of"),
        # the v1beta2 CRD requires provisioningClassName and bounds the retry strategy
        (
            {"kind": "ProvisioningRequestConfig", "metadata": {"name": "p"}, "spec": {}},
            "provisioningClassName",
        ),
        (
            {
                "kind": "ProvisioningRequestConfig",
                "metadata": {"name": "p"},
                "spec": {"provisioningClassName": "x", "retryStrategy": {"backoffLimitCount": -1}},
            },
            "backoffLimitCount",
        ),
        (
            {"kind": "AdmissionCheck", "metadata": {"name": "a"}, "spec": {"controllerName": ""}},
            "controllerName",
        ),
    ],
)
def test_what_kueue_rejects_stays_rejected(extra: dict[str, Any], message: str) -> None:
    """Topology needs 1–16 levels; a WorkloadPriorityClass value is an int32; unknown kinds are refused."""
    with pytest.raises(QueueConfigError, match=message):
        queue_config_from_objects(_objects(extra))


def test_admission_checks_and_strategy_are_exclusive() -> None:
    """Kueue's CEL rule: admissionChecks and admissionChecksStrategy cannot both be set."""
    objects = _objects()
    objects[1]["spec"]["admissionChecks"] = ["prov"]
    objects[1]["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "prov"}]}
    with pytest.raises(QueueConfigError, match="Either AdmissionChecks or AdmissionCheckStrategy"):
        queue_config_from_objects(objects)
    del objects[1]["spec"]["admissionChecks"]
    objects[1]["spec"]["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    config = queue_config_from_objects(objects)
    assert config.notes == ['kueue: ClusterQueue "q": admissionScope accepted but not modelled (ignored)']


def test_workload_priority_class_sets_the_job_priority() -> None:
    """A job naming a WorkloadPriorityClass gets its value (no PriorityClass of that name exists)."""
    config = queue_config_from_objects(
        _objects({"kind": "WorkloadPriorityClass", "metadata": {"name": "urgent"}, "value": 10000})
    )
    wpcs = {c.metadata.name: c.value for c in config.workload_priority_classes}
    job = Job.model_validate(
        {"id": "j", "requests": {GPU: 1}, "runtime": {"default": 60}, "priorityClassName": "urgent"}
    )
    [out] = apply_priority_classes([job], (), wpcs)
    assert out.priority == 10000


def test_full_configuration_is_accepted_with_a_warning() -> None:
    """A whole Kueue Configuration loads; its modelled sections are read, the rest named once."""
    config = KueueConfiguration.model_validate(
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2",
            "kind": "Configuration",
            "namespace": "kueue-system",
            "manageJobsWithoutQueueName": False,
            "integrations": {"frameworks": ["batch/job"]},
            "waitForPodsReady": {"timeout": "5m"},
        }
    )
    assert config.wait_for_pods_ready is not None and config.wait_for_pods_ready.timeout == 300
    assert config.notes == [
        "kueue_configuration: integrations, manageJobsWithoutQueueName, namespace accepted but not "
        "modelled (ignored)"
    ]


# ---- flavorassigner: nodeTaints ---------------------------------------------------------------------------


def _tainted_manager() -> AdmissionManager:
    objects = [
        *_load("resource-flavor-taints.yaml"),
        {"kind": "ResourceFlavor", "metadata": {"name": "on-demand"}},
        {
            "kind": "ClusterQueue",
            "metadata": {"name": "q"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": [GPU],
                        "flavors": [
                            {"name": "spot", "resources": [{"name": GPU, "nominalQuota": 8}]},
                            {"name": "on-demand", "resources": [{"name": GPU, "nominalQuota": 8}]},
                        ],
                    }
                ]
            },
        },
        {"kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {"clusterQueue": "q"}},
    ]
    return AdmissionManager(queue_config_from_objects(objects))


def test_untolerated_flavor_taint_skips_the_flavor() -> None:
    """flavorassigner.go ``checkFlavorForPodSets``: a workload that does not tolerate ``spot=true:NoSchedule``
    is not admitted to "spot" and takes its quota from the next flavor; one that tolerates it takes spot."""
    m = _tainted_manager()
    plain = assign_flavors(m.tree, m.rules["q"], (PodSetRequest("main", 1, {GPU: 4}),))
    assert plain.flavors() == {"main": {GPU: "on-demand"}}
    assert plain.usage == {FlavorResource("on-demand", GPU): 4}
    tolerant = PodSetRequest("main", 1, {GPU: 4}, (Toleration(key="spot", operator="Exists"),))
    assert assign_flavors(m.tree, m.rules["q"], (tolerant,)).flavors() == {"main": {GPU: "spot"}}


def test_untolerated_taint_message_when_no_flavor_fits() -> None:
    """With "on-demand" full, the pending message names the taint as upstream prints it (Go's rendering of
    the Taint struct, as in flavorassigner_test.go "multiple flavors, fits while skipping tainted flavor")."""
    m = _tainted_manager()
    m.tree.add_cq_usage("q", {FlavorResource("on-demand", GPU): 8})
    result = assign_flavors(m.tree, m.rules["q"], (PodSetRequest("main", 1, {GPU: 4}),))
    # 4 ≤ nominal 8 on "on-demand": preemption could help, none has candidates (upstream Preempt mode).
    assert result.mode == AssignmentMode.PREEMPT
    assert result.message() == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
        "on-demand, 4 more needed, untolerated taint {spot true NoSchedule <nil>} in flavor spot"
    )


# ---- canPreemptWhileBorrowing ------------------------------------------------------------------------------


def _cohort(preemption: dict[str, Any]) -> AdmissionManager:
    def cq(name: str, nominal: int, pre: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "cohortName": "c",
                "preemption": pre,
                "resourceGroups": [
                    {
                        "coveredResources": [GPU],
                        "flavors": [
                            {"name": "default", "resources": [{"name": GPU, "nominalQuota": nominal}]}
                        ],
                    }
                ],
            },
        }

    objects = [
        {"kind": "ResourceFlavor", "metadata": {"name": "default"}},
        cq("a", 4, preemption),
        cq("b", 4, {}),
        *({"kind": "LocalQueue", "metadata": {"name": n}, "spec": {"clusterQueue": n}} for n in "ab"),
    ]
    m = AdmissionManager(queue_config_from_objects(objects), preemption=ClassicPreemption())
    m.reserve(
        Workload("a-low", "default", "a", 0, 0, (PodSetRequest("main", 1, {GPU: 4}),)),
        "a",
        {"main": {GPU: "default"}},
        0,
    )
    m.reserve(
        Workload("b-1", "default", "b", 0, 0, (PodSetRequest("main", 1, {GPU: 2}),)),
        "b",
        {"main": {GPU: "default"}},
        0,
    )
    return m


@pytest.mark.parametrize(
    ("preemption", "mode", "victims"),
    [
        # withinClusterQueue alone: 6 GPUs > nominal 4 and the flat cohort has no smaller subtree, so
        # fitsResourceQuota never asks for preemption: NoFit (a-low keeps running).
        ({"withinClusterQueue": "LowerPriority"}, AssignmentMode.NO_FIT, ()),
        # borrowWithinCohort makes canPreemptWhileBorrowing true: a-low is preempted and a borrows 2.
        (
            {
                "withinClusterQueue": "LowerPriority",
                "reclaimWithinCohort": "LowerPriority",
                "borrowWithinCohort": {"policy": "LowerPriority"},
            },
            AssignmentMode.PREEMPT,
            ("a-low",),
        ),
    ],
)
def test_preempting_while_borrowing_needs_borrow_within_cohort(
    preemption: dict[str, Any], mode: AssignmentMode, victims: tuple[str, ...]
) -> None:
    """a (nominal 4, running a-low with 4) wants 6 at priority 1; b (nominal 4) uses 2, so 2 are lendable.
    Upstream ``canPreemptWhileBorrowing`` is ``borrowWithinCohort != Never`` (or fair sharing + reclaim)."""
    m = _cohort(preemption)
    m.submit(Workload("big", "default", "a", 1, 5, (PodSetRequest("main", 1, {GPU: 6}),)))
    assert m.cycle(10) == []
    requests = m.take_preemptions()
    assert tuple(v for r in requests for v in r.victims) == victims
    hook = ClassicPreemption()
    wl = Workload("big2", "default", "a", 1, 5, (PodSetRequest("main", 1, {GPU: 6}),))
    assignment = assign_flavors(
        m.tree, m.rules["a"], wl.podsets, lambda cq, amounts: hook.can_preempt(m, wl, cq, amounts)
    )
    assert assignment.mode == mode


# ---- fair sharing: exact DRS -------------------------------------------------------------------------------


def test_drs_compares_exact_shares_not_rounded_ones() -> None:
    """fair_sharing.go ``CompareDRS`` compares ``PreciseWeightedShare``: borrowing 1 vs 2 GPUs of 3000
    lendable gives ratios 1000/3000 = 0.333… and 2000/3000 = 0.666…, both 0 in the old integer form."""

    def cq(name: str, nominal: int) -> dict[str, Any]:
        return {
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "cohortName": "c",
                "resourceGroups": [
                    {
                        "coveredResources": [GPU],
                        "flavors": [
                            {"name": "default", "resources": [{"name": GPU, "nominalQuota": nominal}]}
                        ],
                    }
                ],
            },
        }

    config = queue_config_from_objects(
        [
            {"kind": "ResourceFlavor", "metadata": {"name": "default"}},
            cq("a", 0),
            cq("b", 0),
            cq("pool", 3000),
        ]
    )
    m = AdmissionManager(config)
    fr = FlavorResource("default", GPU)
    one = dominant_resource_share(m.tree, m.tree.cluster_queue("a"), {}, {fr: 1})
    two = dominant_resource_share(m.tree, m.tree.cluster_queue("b"), {}, {fr: 2})
    assert (one.value, two.value) == (0, 0)  # the integer form ties them
    assert one.sort_key() < two.sort_key()  # the exact share does not
    assert str(one.exact_share) == "1/3" and str(two.exact_share) == "2/3"


# ---- end to end: the simulator hands Kueue the job's tolerations ------------------------------------------


def test_simulated_job_without_toleration_is_admitted_to_the_untainted_flavor() -> None:
    """Two pools, each behind a ResourceFlavor; "spot" carries nodeTaints (and the pool the taint). A job
    without the toleration is admitted to "on-demand" and runs on that pool; one with it takes "spot"."""
    from builders import job, pool, scenario
    from fleetlab.experiment.run import run_one
    from fleetlab.metrics.tables import job_columns

    taint = {"key": "spot", "value": "true", "effect": "NoSchedule"}
    flavors = [
        {
            "kind": "ResourceFlavor",
            "metadata": {"name": "spot"},
            "spec": {"nodeLabels": {"fleetlab.io/pool": "spot"}, "nodeTaints": [taint]},
        },
        {
            "kind": "ResourceFlavor",
            "metadata": {"name": "on-demand"},
            "spec": {"nodeLabels": {"fleetlab.io/pool": "od"}},
        },
    ]
    quotas = [
        {"name": "cpu", "nominalQuota": "64"},
        {"name": "memory", "nominalQuota": "512Gi"},
        {"name": GPU, "nominalQuota": 8},
    ]
    cq_obj = {
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", GPU],
                    "flavors": [
                        {"name": "spot", "resources": quotas},
                        {"name": "on-demand", "resources": quotas},
                    ],
                }
            ]
        },
    }
    lq = {"kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {"clusterQueue": "q"}}
    tolerate = [{"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    jobs = [
        job("plain", gpus=8, runtime=100, queue="q"),
        job("tolerant", gpus=8, runtime=100, queue="q", tolerations=tolerate),
    ]
    pools = [pool("spot", count=1, taints=[taint]), pool("od", count=1)]
    result = run_one(scenario(pools, jobs, kueue=[*flavors, cq_obj, lq]), "default").result
    cols = job_columns(result)
    finished = {j: cols["completion_s"][i] for i, j in enumerate(cols["job_id"])}
    # Both run at once: "plain" cannot take spot's quota, so it gets on-demand's; "tolerant" takes spot.
    assert finished == {"plain": pytest.approx(100), "tolerant": pytest.approx(100)}
