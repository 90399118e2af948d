"""fleetlab's own objects as TAS inputs: a Kueue ResourceFlavor with ``topologyName`` as a TAS flavor, a
gang job's ``topology_required`` / ``topology_preferred`` as its PodSet's topology request.

A fleetlab gang with ``topology_required: <level>`` is exactly a Kueue PodSet annotated
``kueue.x-k8s.io/podset-required-topology: <level>`` (``topology_preferred`` likewise with
``podset-preferred-topology``); a gang without either, admitted through a TAS flavor, is Kueue's implied
request (unconstrained at the lowest level).
"""

from __future__ import annotations

from collections.abc import Sequence

from fleetlab.model.job import Job
from fleetlab.model.queues import ResourceFlavor
from fleetlab.model.tas_request import TopologyRequest, topology_request
from fleetlab.placement.tas.assign import TasPodSet
from fleetlab.placement.tas.snapshot import TasFlavor

__all__ = ["job_podset", "job_topology", "tas_flavor"]


def tas_flavor(flavor: ResourceFlavor, levels: Sequence[str]) -> TasFlavor:
    """The TAS view of a flavor whose ``topologyName`` names a Topology with ``levels`` (widest first)."""
    if flavor.spec.topology_name is None:
        raise ValueError(f'ResourceFlavor "{flavor.name}" has no topologyName: it is not a TAS flavor')
    return TasFlavor(
        flavor.spec.topology_name, tuple(levels), dict(flavor.spec.node_labels), flavor.spec.tolerations
    )


def job_topology(job: Job) -> TopologyRequest | None:
    """The topology request of a job: its ``kueue.x-k8s.io/podset-*`` annotations, else its gang fields
    (None: implied, when admitted through TAS)."""
    annotated = topology_request(job.annotations, job.pods)
    if annotated is not None:
        return annotated
    if job.topology_required is not None:
        return TopologyRequest(required=job.topology_required)
    if job.topology_preferred is not None:
        return TopologyRequest(preferred=job.topology_preferred)
    return None


def job_podset(job: Job) -> TasPodSet:
    """A job as Kueue's single PodSet ``main``: its pods, per-pod requests, tolerations and selector."""
    return TasPodSet(
        "main", job.pods, dict(job.requests), job_topology(job), job.tolerations, dict(job.node_selector)
    )
