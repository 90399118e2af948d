"""Redaction of everything in a captured object that may hold a credential, wherever it appears.

A snapshot is meant to be shared with whoever helps debug, so before anything is written:

* every ``env[].value`` (Pods, Workload pod templates, Jobs, any nested template) is replaced;
* Secret references keep their shape but lose their targets: ``secretKeyRef`` / ``secretRef`` /
  ``*SecretRef`` name and key, ``secret.secretName`` volumes, ``imagePullSecrets`` names;
* container ``args`` are replaced element by element and ``command`` after its first element (the program):
  a token can hide in ``--token=…``, ``-p …`` or a bare positional, so no pattern can tell which are safe,
  and fleetlab reads neither;
* annotations whose value embeds a manifest or other structured data (``kubectl.kubernetes.io/last-applied-
  configuration`` and the like: a value that starts with ``{`` or ``[`` or holds ``apiVersion``) are replaced;
* StorageClass ``parameters`` naming a secret (``csi.storage.k8s.io/*-secret-name``) are replaced;
* ``metadata.managedFields`` is dropped.

Names, labels, resources, scheduling fields and status are kept: they are what diagnosis needs.
"""

from __future__ import annotations

from typing import Any

REDACTED = "<redacted by fleetlab>"

#: Annotations always redacted (they copy whole manifests, env included).
MANIFEST_ANNOTATIONS = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        "deployment.kubernetes.io/desired-replicas-config",
        "meta.helm.sh/release-manifest",
    }
)
_REF_FIELDS = ("name", "key", "secretName")


def _is_secret_ref(key: str) -> bool:
    return key in ("secretKeyRef", "secretRef", "secret") or key.endswith("SecretRef")


def _embeds_manifest(key: str, value: Any) -> bool:
    if key in MANIFEST_ANNOTATIONS:
        return True
    if not isinstance(value, str):
        return False
    text = value.lstrip()
    return text.startswith(("{", "[")) or "apiVersion" in text


def _redact_ref(ref: dict[str, Any]) -> None:
    for field in _REF_FIELDS:
        if field in ref:
            ref[field] = REDACTED
    for item in ref.get("items") or []:  # secret volume items: key -> path
        if isinstance(item, dict) and "key" in item:
            item["key"] = REDACTED


def _redact_container(container: dict[str, Any]) -> None:
    for env in container.get("env") or []:
        if isinstance(env, dict) and "value" in env:
            env["value"] = REDACTED
    args = container.get("args")
    if isinstance(args, list):
        container["args"] = [REDACTED for _ in args]
    command = container.get("command")
    if isinstance(command, list) and len(command) > 1:
        container["command"] = [command[0], *(REDACTED for _ in command[1:])]


def redact(obj: Any) -> Any:
    """Redact ``obj`` in place (and return it); iterative, so any depth is fine."""
    stack: list[Any] = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(x for x in item if isinstance(x, dict | list))
            continue
        if not isinstance(item, dict):
            continue
        metadata = item.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)
            annotations = metadata.get("annotations")
            if isinstance(annotations, dict):
                for key, value in annotations.items():
                    if _embeds_manifest(str(key), value):
                        annotations[key] = REDACTED
        if "env" in item or "args" in item or "command" in item:
            _redact_container(item)
        pulls = item.get("imagePullSecrets")
        if isinstance(pulls, list):
            for ref in pulls:
                if isinstance(ref, dict):
                    _redact_ref(ref)
        for key, value in item.items():
            if isinstance(value, dict) and _is_secret_ref(str(key)):
                _redact_ref(value)
            if key == "parameters" and isinstance(value, dict):  # StorageClass CSI secret names
                for name in value:
                    if "secret" in str(name).lower():
                        value[name] = REDACTED
            if isinstance(value, dict | list):
                stack.append(value)
    return obj
