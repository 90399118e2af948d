"""A scenario's gang jobs as Kubernetes v1.36 Workload API objects (``workload-api.yaml``).

Each gang job becomes a Workload with one PodGroupTemplate ``main`` (gang policy, ``minCount`` = the
job's pods, and the job's ``topology_required`` / ``topology_preferred`` label as the topology
constraint — the API has no "preferred", so a preferred level is written as the constraint and noted)
and the PodGroup its controller would make; the job's pods join it with
``spec.schedulingGroup.podGroupName``. The cluster needs the GenericWorkload and
TopologyAwareWorkloadScheduling feature gates (alpha, off by default). The scenario's own ``workload_api``
objects are written as given, and a job that joins one of its PodGroups gets no generated pair.
"""

from __future__ import annotations

import re
from typing import Any

from fleetlab.model.job import Job
from fleetlab.model.scenario import Scenario
from fleetlab.model.workload_api import API_VERSION

__all__ = ["WORKLOAD_API_FILE", "workload_api_documents", "workload_api_notes"]

WORKLOAD_API_FILE = "workload-api.yaml"


def _name(job_id: str) -> str:
    """A DNS subdomain from a job id (``team/job 1`` → ``team-job-1``)."""
    text = re.sub(r"[^a-z0-9.-]+", "-", job_id.lower()).strip("-.")
    return (text or "job")[:253].rstrip("-.")


def _gangs(scenario: Scenario) -> list[Job]:
    """Gang jobs that need a generated Workload and PodGroup (not those joining the scenario's own)."""
    jobs = scenario.workload.jobs or ()
    return [j for j in jobs if j.gang and j.pods > 1 and j.scheduling_group is None]


def _template(job: Job) -> dict[str, Any]:
    template: dict[str, Any] = {"name": "main", "schedulingPolicy": {"gang": {"minCount": job.pods}}}
    key = job.topology_required or job.topology_preferred
    if key is not None:
        template["schedulingConstraints"] = {"topology": [{"key": key}]}
    return template


def workload_api_documents(scenario: Scenario) -> list[dict[str, Any]]:
    """The scenario's own Workload API objects, then a Workload and its PodGroup per other gang job."""
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": API_VERSION,
            "kind": o.kind,
            **o.model_dump(mode="json", by_alias=True, exclude_unset=True),
        }
        for o in scenario.workload_api
    ]
    for job in _gangs(scenario):
        name, namespace = _name(job.id), job.namespace or "default"
        template = _template(job)
        docs.append(
            {
                "apiVersion": API_VERSION,
                "kind": "Workload",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"podGroupTemplates": [template]},
            }
        )
        spec: dict[str, Any] = {
            "podGroupTemplateRef": {"workload": {"workloadName": name, "podGroupTemplateName": "main"}},
            "schedulingPolicy": template["schedulingPolicy"],
        }
        if "schedulingConstraints" in template:
            spec["schedulingConstraints"] = template["schedulingConstraints"]
        docs.append(
            {
                "apiVersion": API_VERSION,
                "kind": "PodGroup",
                "metadata": {"name": f"{name}-main", "namespace": namespace},
                "spec": spec,
            }
        )
    return docs


def workload_api_notes(scenario: Scenario) -> list[str]:
    """What a reader must know to use ``workload-api.yaml``."""
    gangs = _gangs(scenario)
    joined = [j for j in scenario.workload.jobs or () if j.scheduling_group is not None and j.gang]
    if not gangs and not scenario.workload_api:
        return []
    notes = [
        f"{WORKLOAD_API_FILE} describes the {len(gangs) + len(joined)} gang job(s) as Kubernetes v1.36 "
        "Workload API objects (alpha: enable the GenericWorkload and TopologyAwareWorkloadScheduling "
        "feature gates); each job's pods must set spec.schedulingGroup.podGroupName to its PodGroup "
        "(<workload>-main)."
    ]
    if joined:
        notes.append(
            f"{', '.join(j.id for j in joined)} join the scenario's own PodGroups, written as given: their "
            "pods set spec.schedulingGroup.podGroupName to the group the job names."
        )
    preferred = [j.id for j in gangs if j.topology_required is None and j.topology_preferred is not None]
    if preferred:
        notes.append(
            "The Workload API has no preferred topology: the topology_preferred level of "
            f"{', '.join(preferred)} is written as a required constraint (Kueue's "
            "kueue.x-k8s.io/podset-preferred-topology keeps it preferred)."
        )
    return notes
