"""Where a pending pod's volumes allow it to run: kube-scheduler's VolumeBinding and VolumeZone filters,
read from PersistentVolumes, PersistentVolumeClaims, StorageClasses and the FailedScheduling event.

* A claim bound to a PV with ``spec.nodeAffinity`` (a zonal disk) restricts the pod to the nodes that
  affinity selects; elsewhere kube-scheduler says ``node(s) had volume node affinity conflict``.
* An unbound claim whose StorageClass binds ``Immediate`` blocks the pod outright (``pod has unbound
  immediate PersistentVolumeClaims``); one that waits for the first consumer (``WaitForFirstConsumer``)
  is provisioned where the pod lands, restricted by the class's ``allowedTopologies``.
* A missing claim blocks the pod (``persistentvolumeclaim "x" not found``).

The verdict is ``storage`` only when the volumes are what keeps the pod out: the pod would fit on some
node now if its volumes allowed it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import ValidationError

from fleetlab.kube.cluster import LiveCluster, pod_spec
from fleetlab.model.kube import Affinity, NodeAffinity, NodeSelector
from fleetlab.placement.framework import PodSpec
from fleetlab.placement.state import BoolArray
from fleetlab.spec.kube_objects import KubeObject, dig
from fleetlab.spec.kube_snapshot import KubePod

#: FailedScheduling text of the volume filters (kube-scheduler v1.35 volumebinding / volumezone).
EVENT_CAUSES = (
    "volume node affinity conflict",
    "unbound immediate PersistentVolumeClaims",
    "didn't find available persistent volumes to bind",
    "node(s) had no available volume zone",
    "not found",  # persistentvolumeclaim "x" not found
)


class StorageView:
    """PVCs by ``namespace/name``, PVs and StorageClasses by name."""

    def __init__(self, objects: list[KubeObject]) -> None:
        self.claims: dict[str, KubeObject] = {}
        self.volumes: dict[str, KubeObject] = {}
        self.classes: dict[str, KubeObject] = {}
        for obj in objects:
            meta = obj.get("metadata") or {}
            name = str(meta.get("name", ""))
            if obj.get("kind") == "PersistentVolumeClaim":
                self.claims[f"{meta.get('namespace') or 'default'}/{name}"] = obj
            elif obj.get("kind") == "PersistentVolume":
                self.volumes[name] = obj
            else:
                self.classes[name] = obj

    def __bool__(self) -> bool:
        return bool(self.claims or self.volumes or self.classes)


def _selector(raw: Any) -> NodeSelector | None:
    try:
        return NodeSelector.model_validate(raw) if raw else None
    except ValidationError:
        return None


def _class_topology(sc: KubeObject | None) -> NodeSelector | None:
    """A StorageClass's ``allowedTopologies`` as a node selector (each term's values are ``In``)."""
    terms = []
    for term in (sc or {}).get("allowedTopologies") or []:
        exprs = [
            {"key": e.get("key"), "operator": "In", "values": list(e.get("values") or [])}
            for e in dig(term, "matchLabelExpressions") or []
            if isinstance(e, Mapping)
        ]
        if exprs:
            terms.append({"matchExpressions": exprs})
    return _selector({"nodeSelectorTerms": terms}) if terms else None


def _matching(live: LiveCluster, selector: NodeSelector) -> BoolArray:
    """Nodes the selector matches, by the simulator's own NodeAffinity filter."""
    affinity = Affinity(node_affinity=NodeAffinity(required=selector))
    compiled = live.scheduler.compile(PodSpec(requests=(), affinity=affinity))
    plugin = next(p for p in live.scheduler.filters if p.name == "NodeAffinity")
    return np.asarray(plugin.passes(live.state, compiled), dtype=bool)


def _describe(selector: NodeSelector) -> str:
    terms = [
        " and ".join(f"{r.key} {r.operator} [{', '.join(r.values)}]" for r in term.match_expressions)
        for term in selector.node_selector_terms
    ]
    return " or ".join(t for t in terms if t) or "no node"


def _claim_limits(
    live: LiveCluster, pod: KubePod, view: StorageView
) -> tuple[str | None, list[tuple[str, BoolArray]]]:
    """A claim that blocks the pod outright (text), else each claim's node restriction (text, mask)."""
    limits: list[tuple[str, BoolArray]] = []
    for name in pod.claims:
        key = f"{pod.namespace}/{name}"
        pvc = view.claims.get(key)
        if pvc is None:
            return f"PersistentVolumeClaim {key} not found: the pod cannot start until it exists", limits
        volume = dig(pvc, "spec", "volumeName")
        phase = dig(pvc, "status", "phase") or ("Bound" if volume else "Pending")
        sc_name = dig(pvc, "spec", "storageClassName")
        sc = view.classes.get(str(sc_name)) if sc_name else None
        if phase == "Bound" and volume:
            pv = view.volumes.get(str(volume))
            pinned = _selector(dig(pv, "spec", "nodeAffinity", "required"))
            if pinned is not None:
                limits.append(
                    (
                        f"PVC {key} is bound to PV {volume}, usable only on nodes with {_describe(pinned)}",
                        _matching(live, pinned),
                    )
                )
            continue
        mode = str((sc or {}).get("volumeBindingMode") or "Immediate")
        if phase == "Lost":
            return f"PVC {key} is Lost (its PV {volume} is gone): the pod cannot start", limits
        if mode != "WaitForFirstConsumer":
            where = f"StorageClass {sc_name}" if sc_name else "no StorageClass"
            return (
                f"PVC {key} is unbound and its {where} binds Immediate: kube-scheduler reports 'pod has "
                "unbound immediate PersistentVolumeClaims' until a volume is provisioned or bound",
                limits,
            )
        allowed = _class_topology(sc)
        if allowed is not None:
            limits.append(
                (
                    f"PVC {key} waits for its first consumer; StorageClass {sc_name} provisions only "
                    f"on nodes with {_describe(allowed)}",
                    _matching(live, allowed),
                )
            )
    return None, limits


def storage_block(
    live: LiveCluster, pod: KubePod, view: StorageView, scheduling_event: str
) -> tuple[str, str] | None:
    """("storage", why) when the pod's volumes keep it off every node it would otherwise fit on now."""
    if view and pod.claims:
        blocked, limits = _claim_limits(live, pod, view)
        if blocked is not None:
            return "storage", blocked
        if limits:
            fits = np.asarray(live.scheduler.fits_now(live.scheduler.compile(pod_spec(pod))), dtype=bool)
            allowed = fits.copy()
            for _, mask in limits:
                allowed &= mask
            if fits.any() and not allowed.any():
                names = [live.state.node_names[i] for i in np.flatnonzero(fits)[:3].tolist()]
                why = "; ".join(text for text, _ in limits)
                return "storage", (
                    f"volume node affinity conflict: {why}; the {int(fits.sum())} node(s) with room for the "
                    f"pod ({', '.join(names)}{'...' if fits.sum() > 3 else ''}) are not among them"
                )
        return None
    if pod.claims and any(cause in scheduling_event for cause in EVENT_CAUSES[:4]):
        return "storage", f"the cluster reported a volume problem: {scheduling_event}"
    return None
