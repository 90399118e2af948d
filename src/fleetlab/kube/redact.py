"""Redaction of everything in a captured object that may hold a credential or free text, wherever it appears.

A snapshot is meant to be shared with whoever helps debug, so before anything is written the capture keeps
only what it knows to be safe (an allow-list), not what it knows to be dangerous:

* every ``env[].value`` (Pods, Workload pod templates, Jobs, any nested template) is replaced;
* Secret references keep their shape but lose their targets: ``secretKeyRef`` / ``secretRef`` /
  ``*SecretRef`` name and key, ``secret.secretName`` volumes, ``imagePullSecrets`` names;
* container ``args`` are replaced element by element and ``command`` after its first element (the program),
  exec probes and hooks alike: a token can hide in ``--token=…``, ``-p …`` or a bare positional;
* probe and lifecycle-hook ``httpHeaders`` values (an ``Authorization`` header) are replaced;
* annotation values are replaced unless the key is in ``KEPT_ANNOTATIONS`` (what fleetlab reads: gang
  names and sizes, KAI GPU sharing, Kueue and JobSet topology requests, the autoscaler's safe-to-evict);
* container termination messages (``state``/``lastState`` ``terminated.message``: whatever the program
  wrote to its termination log) are replaced;
* CSI ``volumeAttributes`` and FlexVolume ``options`` values, and ``mountOptions`` that carry a value
  (``password=…``), are replaced;
* StorageClass ``parameters`` values are replaced unless the key is in ``KEPT_STORAGE_PARAMETERS``;
* ``metadata.managedFields`` is dropped.

Names, labels, resources, scheduling fields and status (events and conditions included) are kept: they are
what diagnosis needs. docs/output-folders.md lists the same rules.
"""

from __future__ import annotations

from typing import Any

from fleetlab.model.gpu_share import KAI_FRACTION, KAI_MEMORY
from fleetlab.spec.kube_snapshot import GROUP_KEYS, GROUP_SIZE_KEY

REDACTED = "<redacted by fleetlab>"

#: Annotations whose values a snapshot keeps: the ones fleetlab reads (spec.kube_snapshot's gang keys,
#: model.gpu_share's KAI keys, lint.workloads' topology keys) and the cluster autoscaler's eviction switch.
#: Every other annotation value is replaced.
KEPT_ANNOTATIONS = frozenset(
    {
        *GROUP_KEYS,
        GROUP_SIZE_KEY,
        KAI_FRACTION,
        KAI_MEMORY,
        "kueue.x-k8s.io/podset-required-topology",
        "kueue.x-k8s.io/podset-preferred-topology",
        "alpha.jobset.sigs.k8s.io/exclusive-topology",
        "cluster-autoscaler.kubernetes.io/safe-to-evict",
    }
)
#: Longest value of a kept annotation: the kept keys hold names and numbers, never documents.
MAX_KEPT_VALUE = 253
#: StorageClass parameters a snapshot keeps (disk type and file system, no credential or key id).
KEPT_STORAGE_PARAMETERS = frozenset(
    {"type", "fsType", "csi.storage.k8s.io/fstype", "replication-type", "skuName", "iops", "throughput"}
)
_REF_FIELDS = ("name", "key", "secretName")


def _is_secret_ref(key: str) -> bool:
    return key in ("secretKeyRef", "secretRef", "secret") or key.endswith("SecretRef")


def _kept_annotation(key: str, value: Any) -> bool:
    return key in KEPT_ANNOTATIONS and isinstance(value, str) and len(value) <= MAX_KEPT_VALUE


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


def _redact_values(mapping: dict[str, Any], keep: frozenset[str] = frozenset()) -> None:
    for key in mapping:
        if key not in keep:
            mapping[key] = REDACTED


def _redact_fields(item: dict[str, Any]) -> None:
    """The free-text and credential-bearing fields of one mapping (not its children)."""
    metadata = item.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            for key, value in annotations.items():
                if not _kept_annotation(str(key), value):
                    annotations[key] = REDACTED
    if "env" in item or "args" in item or "command" in item:
        _redact_container(item)
    pulls = item.get("imagePullSecrets")
    for ref in pulls if isinstance(pulls, list) else []:
        if isinstance(ref, dict):
            _redact_ref(ref)
    headers = item.get("httpHeaders")  # probes and lifecycle hooks: an Authorization header
    for header in headers if isinstance(headers, list) else []:
        if isinstance(header, dict) and "value" in header:
            header["value"] = REDACTED
    terminated = item.get("terminated")
    if isinstance(terminated, dict) and "message" in terminated:
        terminated["message"] = REDACTED
    options = item.get("mountOptions")
    if isinstance(options, list):
        item["mountOptions"] = [REDACTED if "=" in str(o) else o for o in options]
    for key, value in item.items():
        if not isinstance(value, dict):
            continue
        if _is_secret_ref(str(key)):
            _redact_ref(value)
        elif key in ("volumeAttributes", "options"):  # CSI volume attributes, FlexVolume options
            _redact_values(value)
        elif key == "parameters":  # StorageClass parameters
            _redact_values(value, KEPT_STORAGE_PARAMETERS)


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
        _redact_fields(item)
        stack.extend(value for value in item.values() if isinstance(value, dict | list))
    return obj
