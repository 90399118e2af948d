"""Kueue's DRA quota in the run (``resources.deviceClassMappings``, Kueue v0.15+): the devices a job's
ResourceClaimTemplates ask for per pod are added to its PodSet's requests as the quota resource their
DeviceClass maps to, so a ClusterQueue's quota for that resource admits or holds the workload like any other
resource. A workload Kueue cannot charge (a claim named directly, ``All``, an unmapped class, alternatives
that disagree, CEL selectors too few devices in the cluster match) is inadmissible with the reason
(:func:`fleetlab.admission.dra_quota.pod_dra_charge`).

Asked by the Kueue bridge once per job template (claims are template fields); subscribes to nothing.
May change: nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from fleetlab.admission.dra_quota import DraChargeError, pod_dra_charge
from fleetlab.model.dra import DraObjects, ResourceClaimTemplate
from fleetlab.model.job import Job
from fleetlab.placement.dra.quota_check import selector_check
from fleetlab.sim.specs import claims_shape


class DraQuota:
    """Per job template, the quota its pods' claims are charged (or why Kueue cannot charge them)."""

    def __init__(self, objects: DraObjects, resource_of: Mapping[str, str]) -> None:
        self.resource_of = dict(resource_of)
        self.templates: dict[str, dict[str, ResourceClaimTemplate]] = {}
        for template in objects.templates:
            namespace = template.metadata.namespace or "default"
            self.templates.setdefault(namespace, {})[template.metadata.name] = template
        self.check = selector_check(objects)
        self._charges: dict[int, dict[str, int] | str] = {}

    def per_pod(self, template_index: int, job: Job) -> dict[str, int] | str:
        """The per-pod charge of a job template's claims ({} without claims), or Kueue's refusal."""
        found = self._charges.get(template_index)
        if found is None:
            shape = claims_shape(job)
            if shape is None:
                found = {}
            else:
                try:
                    charge = pod_dra_charge(
                        shape.refs, self.templates.get(job.namespace, {}), self.resource_of, self.check
                    )
                    found = dict(charge.per_pod)
                except DraChargeError as exc:
                    found = str(exc)
            self._charges[template_index] = found
        return found
