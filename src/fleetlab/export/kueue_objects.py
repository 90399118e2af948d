"""A scenario's Kueue objects written back as ``kueue.x-k8s.io/v1beta2`` manifests.

v1beta2 is the version Kueue's CRDs recommend (v1beta1 is served but deprecated: "Use v1beta2 instead");
v1beta1 is written on request, for Kueue releases that serve only it (:func:`to_v1beta1`).
Quotas go out as quantity strings in the unit a person writes (``380``, ``500m``, ``3800Gi``), so reading
the file back with :func:`fleetlab.model.queues.queue_config_from_objects` gives the same integers.
A ClusterQueue without a ``namespaceSelector`` gets ``{}``: in Kueue a missing selector admits no
namespace, while fleetlab (which has no namespaces to select) lets every LocalQueue feed its queue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fleetlab.export.applied import as_applied
from fleetlab.model.cluster import Cluster
from fleetlab.model.kube import Taint, Toleration
from fleetlab.model.queues import (
    ClusterQueue,
    Cohort,
    FairSharing,
    LocalQueue,
    QueueConfig,
    ResourceFlavor,
    ResourceGroup,
)
from fleetlab.model.resources import format_amount

API_VERSION = "kueue.x-k8s.io/v1beta2"
API_VERSION_V1BETA1 = "kueue.x-k8s.io/v1beta1"


def _weight(fair: FairSharing) -> dict[str, str]:
    milli = fair.weight_milli
    return {"weight": str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"}


def _groups(groups: Sequence[ResourceGroup]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for group in groups:
        flavors: list[dict[str, Any]] = []
        for flavor in group.flavors:
            resources: list[dict[str, Any]] = []
            for quota in flavor.resources:
                item: dict[str, Any] = {
                    "name": quota.name,
                    "nominalQuota": format_amount(quota.name, quota.nominal_quota),
                }
                if quota.borrowing_limit is not None:
                    item["borrowingLimit"] = format_amount(quota.name, quota.borrowing_limit)
                if quota.lending_limit is not None:
                    item["lendingLimit"] = format_amount(quota.name, quota.lending_limit)
                resources.append(item)
            flavors.append({"name": flavor.name, "resources": resources})
        out.append({"coveredResources": list(group.covered_resources), "flavors": flavors})
    return out


def _taint(taint: Taint) -> dict[str, Any]:
    out: dict[str, Any] = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        out["value"] = taint.value
    return out


def _toleration(toleration: Toleration) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": toleration.operator}
    for field, value in (("key", toleration.key), ("value", toleration.value), ("effect", toleration.effect)):
        if value:
            out[field] = value
    if toleration.toleration_seconds is not None:
        out["tolerationSeconds"] = toleration.toleration_seconds
    return out


def _meta(name: str, namespace: str | None = None) -> dict[str, str]:
    return {"name": name} if namespace is None else {"name": name, "namespace": namespace}


def resource_flavor(flavor: ResourceFlavor, node_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ResourceFlavor manifest; ``node_labels`` replaces the scenario's selector (real cluster labels)."""
    spec: dict[str, Any] = {}
    labels = flavor.spec.node_labels if node_labels is None else node_labels
    if labels:
        spec["nodeLabels"] = dict(labels)
    if flavor.spec.node_taints:
        spec["nodeTaints"] = [_taint(t) for t in flavor.spec.node_taints]
    if flavor.spec.tolerations:
        spec["tolerations"] = [_toleration(t) for t in flavor.spec.tolerations]
    if flavor.spec.topology_name:
        spec["topologyName"] = flavor.spec.topology_name
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": _meta(flavor.name), "spec": spec}


def cluster_queue(cq: ClusterQueue) -> dict[str, Any]:
    """A ClusterQueue manifest with every policy field fleetlab simulates."""
    spec = cq.spec
    preemption: dict[str, Any] = {
        "withinClusterQueue": spec.preemption.within_cluster_queue,
        "reclaimWithinCohort": spec.preemption.reclaim_within_cohort,
    }
    bwc = spec.preemption.borrow_within_cohort
    if bwc is not None:
        preemption["borrowWithinCohort"] = {"policy": bwc.policy}
        if bwc.max_priority_threshold is not None:
            preemption["borrowWithinCohort"]["maxPriorityThreshold"] = bwc.max_priority_threshold
    fungibility: dict[str, Any] = {
        "whenCanBorrow": spec.flavor_fungibility.when_can_borrow,
        "whenCanPreempt": spec.flavor_fungibility.when_can_preempt,
    }
    if spec.flavor_fungibility.preference is not None:
        fungibility["preference"] = spec.flavor_fungibility.preference
    out: dict[str, Any] = {
        "namespaceSelector": dict(spec.namespace_selector or {}),
        "queueingStrategy": spec.queueing_strategy,
        "flavorFungibility": fungibility,
        "preemption": preemption,
        "resourceGroups": _groups(spec.resource_groups),
    }
    if spec.cohort_name is not None:
        out["cohortName"] = spec.cohort_name
    if spec.fair_sharing is not None:
        out["fairSharing"] = _weight(spec.fair_sharing)
    if spec.stop_policy is not None:
        out["stopPolicy"] = spec.stop_policy
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": _meta(cq.name), "spec": out}


def cohort(obj: Cohort) -> dict[str, Any]:
    """A Cohort manifest (parent, shared quota, fair-sharing weight)."""
    spec: dict[str, Any] = {}
    if obj.spec.parent_name is not None:
        spec["parentName"] = obj.spec.parent_name
    if obj.spec.resource_groups:
        spec["resourceGroups"] = _groups(obj.spec.resource_groups)
    if obj.spec.fair_sharing is not None:
        spec["fairSharing"] = _weight(obj.spec.fair_sharing)
    return {"apiVersion": API_VERSION, "kind": "Cohort", "metadata": _meta(obj.name), "spec": spec}


def local_queue(lq: LocalQueue) -> dict[str, Any]:
    """A LocalQueue manifest in its namespace."""
    spec: dict[str, Any] = {"clusterQueue": lq.spec.cluster_queue}
    if lq.spec.stop_policy is not None:
        spec["stopPolicy"] = lq.spec.stop_policy
    if lq.spec.fair_sharing is not None:
        spec["fairSharing"] = _weight(lq.spec.fair_sharing)
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": _meta(lq.name, lq.metadata.namespace),
        "spec": spec,
    }


def topologies(config: QueueConfig, cluster: Cluster) -> list[dict[str, Any]]:
    """A Topology per name the flavors reference: the scenario's own Topology with its levels (those the
    run used), else the cluster's levels (widest first)."""
    names = sorted({f.spec.topology_name for f in config.resource_flavors if f.spec.topology_name})
    given = {t.metadata.name: [level.node_label for level in t.spec.levels] for t in config.topologies}
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "Topology",
            "metadata": _meta(n),
            "spec": {"levels": [{"nodeLabel": level} for level in given.get(n, cluster.topology_levels)]},
        }
        for n in names
    ]


CHECK_KINDS = ("AdmissionCheck", "ProvisioningRequestConfig")


def _check_object(obj: Any) -> dict[str, Any]:
    """An AdmissionCheck or ProvisioningRequestConfig as applied (v1beta2, no status)."""
    body = as_applied(obj)
    body["apiVersion"] = API_VERSION
    body["spec"].pop("retryDelayMinutes", None)  # v1beta1 only (deprecated since Kueue v0.8)
    body["metadata"] = {"name": obj.name}
    return body


def kueue_objects(
    config: QueueConfig,
    cluster: Cluster,
    flavor_labels: Mapping[str, Mapping[str, str]] | None = None,
    api_version: str = API_VERSION,
) -> list[dict[str, Any]]:
    """Every object, in the order they can be applied: flavors and topologies, cohorts, queues;
    ``flavor_labels`` gives per flavor the nodeLabels to write, ``api_version`` v1beta2 or v1beta1."""
    labels = flavor_labels or {}
    objects = [
        *topologies(config, cluster),
        *(resource_flavor(f, labels.get(f.name)) for f in config.resource_flavors),
        *(cohort(c) for c in config.cohorts),
        *(cluster_queue(c) for c in config.cluster_queues),
        *(local_queue(q) for q in config.local_queues),
        *(_check_object(o) for o in config.ignored if o.kind in CHECK_KINDS),
    ]
    if api_version == API_VERSION:
        return objects
    if api_version != API_VERSION_V1BETA1:
        raise ValueError(
            f"Kueue API version {api_version!r}: expected {API_VERSION} or {API_VERSION_V1BETA1}"
        )
    return [to_v1beta1(o) for o in objects]


#: v1beta2 field name -> v1beta1 name, per kind (kueue.x-k8s.io CRDs, both versions served: ClusterQueue
#: ``spec.cohort``, Cohort ``spec.parent``).
V1BETA1_FIELDS = {"ClusterQueue": ("cohortName", "cohort"), "Cohort": ("parentName", "parent")}
#: v1beta2's ``MayStopSearch`` under its v1beta1 names (still accepted, deprecated, by newer v1beta1).
V1BETA1_FUNGIBILITY = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


def to_v1beta1(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A v1beta2 object as a ``kueue.x-k8s.io/v1beta1`` one, for Kueue releases before v1beta2."""
    out = {**obj, "apiVersion": API_VERSION_V1BETA1, "spec": dict(obj.get("spec") or {})}
    spec = out["spec"]
    renamed = V1BETA1_FIELDS.get(str(obj.get("kind")))
    if renamed is not None and renamed[0] in spec:
        spec[renamed[1]] = spec.pop(renamed[0])
    fungibility = spec.get("flavorFungibility")
    if isinstance(fungibility, Mapping):
        spec["flavorFungibility"] = {
            k: (V1BETA1_FUNGIBILITY.get(k, v) if v == "MayStopSearch" else v) for k, v in fungibility.items()
        }
    return out
