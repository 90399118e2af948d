"""The scenario's scheduling profiles as a second kube-scheduler, for clusters whose default scheduler
cannot be reconfigured (GKE, EKS and AKS run it in the managed control plane).

The objects follow Kubernetes' "Configure Multiple Schedulers" task: a ServiceAccount in kube-system bound
to the ``system:kube-scheduler`` and ``system:volume-scheduler`` ClusterRoles and to the
``extension-apiserver-authentication-reader`` Role, a ConfigMap holding the KubeSchedulerConfiguration
and a Deployment running the upstream ``kube-scheduler`` image of the scenario's Kubernetes version with
``--config``. Leader election is off (one replica), so no lease permissions beyond the ClusterRole's are
needed. Pods opt in with ``spec.schedulerName``: ``fleetlab-scheduler`` for the scenario's default
profile, ``fleetlab-<class>`` for each class profile.
"""

from __future__ import annotations

from typing import Any

import yaml

from fleetlab.export.scheduler_config import DEFAULT_SCHEDULER, kube_scheduler_configuration
from fleetlab.model.scheduler import SchedulerConfig

SECOND_SCHEDULER = "fleetlab-scheduler"
NAMESPACE = "kube-system"
CONFIG_KEY = "scheduler-config.yaml"
CONFIG_DIR = "/etc/kubernetes/fleetlab-scheduler"
SECURE_PORT = 10259


def second_scheduler_configuration(config: SchedulerConfig) -> dict[str, Any]:
    """The KubeSchedulerConfiguration with the default profile renamed and leader election off."""
    out = kube_scheduler_configuration(config)
    for profile in out["profiles"]:
        if profile["schedulerName"] == DEFAULT_SCHEDULER:
            profile["schedulerName"] = SECOND_SCHEDULER
    return {**out, "leaderElection": {"leaderElect": False}}


def _meta(name: str, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/name": SECOND_SCHEDULER}}
    if namespaced:
        meta["namespace"] = NAMESPACE
    return meta


def _subject() -> list[dict[str, str]]:
    return [{"kind": "ServiceAccount", "name": SECOND_SCHEDULER, "namespace": NAMESPACE}]


def _cluster_binding(role: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(f"{SECOND_SCHEDULER}-as-{role.split(':', 1)[1]}", namespaced=False),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": _subject(),
    }


def _deployment(kubernetes_version: str) -> dict[str, Any]:
    probe = {
        "httpGet": {"path": "/healthz", "port": SECURE_PORT, "scheme": "HTTPS"},
        "initialDelaySeconds": 15,
    }
    container = {
        "name": "kube-scheduler",
        "image": f"registry.k8s.io/kube-scheduler:v{kubernetes_version}.0",
        "command": ["/usr/local/bin/kube-scheduler", f"--config={CONFIG_DIR}/{CONFIG_KEY}"],
        "livenessProbe": probe,
        "readinessProbe": {"httpGet": probe["httpGet"]},
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        "securityContext": {"privileged": False, "allowPrivilegeEscalation": False},
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
    }
    selector = {"app.kubernetes.io/name": SECOND_SCHEDULER}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(SECOND_SCHEDULER),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {
                    "serviceAccountName": SECOND_SCHEDULER,
                    "priorityClassName": "system-cluster-critical",
                    "containers": [container],
                    "volumes": [{"name": "config", "configMap": {"name": f"{SECOND_SCHEDULER}-config"}}],
                },
            },
        },
    }


def second_scheduler_objects(config: SchedulerConfig) -> list[dict[str, Any]]:
    """ServiceAccount, RBAC bindings, ConfigMap and Deployment, in the order they can be applied."""
    text = yaml.safe_dump(second_scheduler_configuration(config), sort_keys=False)
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(SECOND_SCHEDULER)},
        _cluster_binding("system:kube-scheduler"),
        _cluster_binding("system:volume-scheduler"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(f"{SECOND_SCHEDULER}-extension-apiserver-authentication-reader"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "extension-apiserver-authentication-reader",
            },
            "subjects": _subject(),
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(f"{SECOND_SCHEDULER}-config"),
            "data": {CONFIG_KEY: text},
        },
        _deployment(config.kubernetes_version),
    ]
