"""GPU012: KAI scheduler's GPU-sharing pod annotations with values KAI refuses.

``gpu-fraction`` is a fraction of one GPU, 0 < f <= 1 (``"0.5"``); ``gpu-memory`` a whole number of MiB
(``"2000"``); a pod gives one of them, not both, and a pod sharing a GPU this way does not also request
``nvidia.com/gpu`` (the fraction stands in for the device request). The values are checked by the same
parser that reads them into a scenario (``fleetlab.model.gpu_share.kai_share``).
"""

from __future__ import annotations

from collections.abc import Mapping

from fleetlab.lint.findings import Finding, finding
from fleetlab.lint.manifests import FieldPath, value_at
from fleetlab.lint.resources import containers
from fleetlab.lint.workloads import PodTemplate
from fleetlab.model.gpu_share import KAI_FRACTION, KAI_MEMORY, kai_share
from fleetlab.model.resources import GPU


def _requests_gpu(template: PodTemplate) -> bool:
    for container in containers(template):
        resources = container.data.get("resources")
        if not isinstance(resources, Mapping):
            continue
        for key in ("limits", "requests"):
            values = resources.get(key)
            if isinstance(values, Mapping) and str(values.get(GPU, "0")).strip() not in ("0", ""):
                return True
    return False


def kai_findings(template: PodTemplate) -> list[Finding]:
    """GPU012 for one pod template's KAI sharing annotations."""
    meta_path: FieldPath = (*template.spec_path[:-1], "metadata", "annotations")
    annotations = value_at(template.manifest.data, meta_path)
    if not isinstance(annotations, Mapping):
        return []
    given = [key for key in (KAI_FRACTION, KAI_MEMORY) if key in annotations]
    if not given:
        return []
    path: FieldPath = (*meta_path, given[-1])
    try:
        kai_share(annotations)
    except ValueError as error:
        return [
            finding(
                "GPU012",
                template.manifest,
                path,
                str(error),
                f'write {KAI_FRACTION} as a fraction of one GPU in (0, 1], e.g. "0.5", or {KAI_MEMORY} as '
                'whole MiB, e.g. "20000" (one of them)',
            )
        ]
    if _requests_gpu(template):
        return [
            finding(
                "GPU012",
                template.manifest,
                path,
                f"annotations.{given[0]} shares one GPU, but a container also requests {GPU}: the pod would "
                "hold whole GPUs as well as the share",
                f"drop the {GPU} requests and limits, or drop the annotation to use whole GPUs",
            )
        ]
    return []
