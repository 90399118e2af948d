"""Pod templates of batch and serving CRDs that do not follow the core shapes, and the warning for kinds
lint cannot read.

* Volcano ``Job`` (``batch.volcano.sh``): ``spec.tasks[].template``, ``replicas`` pods each.
* Kueue ``AppWrapper`` (``workload.codeflare.dev``): each ``spec.components[].template`` is a whole
  object (a PyTorchJob, a JobSet...) whose templates are read as that kind's, at their path inside the
  AppWrapper.
* Kubeflow Trainer v2 ``TrainJob`` (``trainer.kubeflow.org``): ``spec.trainer.resourcesPerNode`` is the
  trainer container's ResourceRequirements, ``numNodes`` pods. The pod template, with its tolerations
  and node selection, lives in the referenced runtime: the quantity rules run, the placement rules
  (``--scenario``) do not.
* KServe ``InferenceService``: ``predictor`` / ``transformer`` / ``explainer`` are inline pod specs whose
  model container is a key (``model``, ``pytorch``, ``triton``...) besides ``containers``; ``minReplicas``
  pods (default 1).

KubeRay, LeaderWorkerSet, JobSet and the Kubeflow training operator kinds are in ``workloads``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from fleetlab.lint.findings import Finding, finding
from fleetlab.lint.manifests import FieldPath, Manifest, render_path
from fleetlab.lint.workloads import PodTemplate, pod_templates, template_at
from fleetlab.model.resources import is_extended
from fleetlab.spec.kube_objects import dig

#: KServe component keys that hold the model container (v1beta1 PredictorSpec / ExplainerSpec).
KSERVE_MODEL_KEYS = (
    "model",
    "sklearn",
    "xgboost",
    "tensorflow",
    "pytorch",
    "triton",
    "onnx",
    "huggingface",
    "lightgbm",
    "paddle",
    "pmml",
    "art",
)
KSERVE_COMPONENTS = ("predictor", "transformer", "explainer")
#: Kinds that never run pods (some name GPU amounts as quotas): nothing to check, nothing to warn about.
NO_PODS = frozenset(
    {
        "ConfigMap",
        "Secret",
        "Service",
        "Namespace",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "StorageClass",
        "Ingress",
        "NetworkPolicy",
        "PriorityClass",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "Cohort",
        "Topology",
        "LimitRange",
        "ResourceQuota",
        # DRA objects: checked by lint/dra_rules.py
        "DeviceClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
        # quota and gang objects that name GPU amounts without running pods (Volcano Queue and
        # PodGroup, scheduler-plugins PodGroup / ElasticQuota, Kueue's own Workload and friends)
        "Queue",
        "PodGroup",
        "ElasticQuota",
        "CompositeElasticQuota",
        "Workload",
        "WorkloadPriorityClass",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
    }
)
MAX_DEPTH = 3  # AppWrappers inside AppWrappers: deeper nesting is not followed


def _count(value: Any, default: int = 1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _volcano(manifest: Manifest) -> list[PodTemplate]:
    tasks = dig(manifest.data, "spec", "tasks")
    out: list[PodTemplate] = []
    for i, task in enumerate(tasks if isinstance(tasks, list) else []):
        name = str(dig(task, "name") or i)
        found = template_at(
            manifest,
            dig(task, "template"),
            ("spec", "tasks", i, "template"),
            _count(dig(task, "replicas")),
            name,
        )
        if found is not None:
            out.append(found)
    return out


def _nested(template: PodTemplate, outer: Manifest, prefix: FieldPath) -> PodTemplate:
    """A template found inside an embedded object, re-anchored at its path in the outer manifest."""
    at = template.resources_at
    return replace(
        template,
        manifest=outer,
        spec_path=(*prefix, *template.spec_path),
        gang_path=(*prefix, *template.gang_path) if template.gang_path else (),
        resources_at=((*prefix, *at[0]), at[1]) if at is not None else None,
    )


def _app_wrapper(manifest: Manifest, depth: int) -> list[PodTemplate]:
    components = dig(manifest.data, "spec", "components")
    out: list[PodTemplate] = []
    for i, _ in enumerate(components if isinstance(components, list) else []):
        prefix: FieldPath = ("spec", "components", i, "template")
        inner = manifest.inner(prefix)
        if inner is None or depth >= MAX_DEPTH:
            continue
        out += [_nested(t, manifest, prefix) for t in workload_templates(inner, depth + 1)]
    return out


def _train_job(manifest: Manifest) -> list[PodTemplate]:
    trainer = dig(manifest.data, "spec", "trainer")
    if not isinstance(trainer, Mapping) or not isinstance(trainer.get("resourcesPerNode"), Mapping):
        return []
    path: FieldPath = ("spec", "trainer")
    return [
        PodTemplate(
            manifest,
            path,
            {},
            _count(trainer.get("numNodes")),
            resources_at=(path, "resourcesPerNode"),
            placement_known=False,
        )
    ]


def _inference_service(manifest: Manifest) -> list[PodTemplate]:
    out: list[PodTemplate] = []
    for component in KSERVE_COMPONENTS:
        spec = dig(manifest.data, "spec", component)
        if not isinstance(spec, Mapping):
            continue
        path: FieldPath = ("spec", component)
        model = next((k for k in KSERVE_MODEL_KEYS if isinstance(spec.get(k), Mapping)), None)
        at = ((*path, model), "resources") if model is not None else None
        out.append(PodTemplate(manifest, path, spec, _count(spec.get("minReplicas")), resources_at=at))
    return out


def workload_templates(manifest: Manifest, depth: int = 0) -> list[PodTemplate]:
    """Every pod template of an object, CRD kinds included; [] for kinds that run no pods."""
    kind = manifest.kind
    api = str(manifest.data.get("apiVersion") or "")
    if kind == "Job" and api.startswith("batch.volcano.sh/"):
        return _volcano(manifest)
    if kind == "AppWrapper":
        return _app_wrapper(manifest, depth)
    if kind == "TrainJob":
        return _train_job(manifest)
    if kind == "InferenceService":
        return _inference_service(manifest)
    return pod_templates(manifest)


def _gpu_paths(data: Any, path: FieldPath, depth: int = 0) -> Iterator[FieldPath]:
    """Paths of extended-resource keys (``nvidia.com/gpu``...) anywhere under ``resources``-like maps."""
    if depth > 40:
        return
    if isinstance(data, Mapping):
        for key, value in data.items():
            here = (*path, str(key))
            if is_extended(str(key)) and str(key).split("/", 1)[0].endswith(("nvidia.com", "amd.com")):
                yield here
            else:
                yield from _gpu_paths(value, here, depth + 1)
    elif isinstance(data, list):
        for i, item in enumerate(data):
            yield from _gpu_paths(item, (*path, i), depth + 1)


def unread_kind_findings(manifest: Manifest, templates: list[PodTemplate]) -> list[Finding]:
    """GPU013 for an object lint found no pod template in although it asks for GPUs somewhere."""
    if templates or manifest.kind in NO_PODS:
        return []
    first = next(_gpu_paths(manifest.data, ()), None)
    if first is None:
        return []
    api = manifest.data.get("apiVersion") or "?"
    return [
        finding(
            "GPU013",
            manifest,
            first,
            f"{manifest.kind or '<no kind>'} ({api}) is not a workload kind fleetlab reads: its GPU requests "
            f"(first at {render_path(first)}) were not checked",
            "lint the pod template it creates (e.g. the Job or Pod it renders), or check it by hand",
        )
    ]
