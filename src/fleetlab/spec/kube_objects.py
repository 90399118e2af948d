"""Reading kubectl output: JSON or YAML files holding one object, a ``v1 List`` or several documents.

Only plain dicts come out of here; nothing of the file's content is echoed in errors beyond kinds and
names, so a Secret dumped by mistake never leaks its data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fleetlab.spec.bounded import load_json, load_yaml_all, read_text_file
from fleetlab.spec.errors import SpecError

KubeObject = dict[str, Any]

#: Kinds whose content must never appear in any output (values may be credentials).
SECRET_KINDS = frozenset({"Secret", "SecretList"})


#: ``kubectl describe`` prints ``Name:`` first, then some of these fields, aligned in columns.
_DESCRIBE_FIELDS = re.compile(
    r"^(Namespace|Labels|Annotations|Roles|CreationTimestamp|Priority|Status):", re.M
)


def describe_text(text: str) -> bool:
    """Whether the text is ``kubectl describe`` output (human-readable, not an object)."""
    head = text.lstrip()[:4000]
    return head.startswith("Name:") and len(set(_DESCRIBE_FIELDS.findall(head))) >= 2


DESCRIBE_HINT = (
    "this looks like `kubectl describe` output, which fleetlab cannot read; save `kubectl get nodes -o json` "
    "and `kubectl get pods -A -o json` (or `kubectl get pod NAME -n NS -o json`) instead"
)


def _documents(path: Path) -> list[Any]:
    text = read_text_file(path, "file not found; save it with `kubectl get nodes -o json > FILE`")
    if not text.strip():
        raise SpecError(str(path), ["the file is empty; expected `kubectl get ... -o json` output"])
    if describe_text(text):
        raise SpecError(str(path), [DESCRIBE_HINT])
    if text.lstrip().startswith(("{", "[")):
        try:
            return [load_json(str(path), text)]
        except SpecError as exc:
            hint = "(is the file truncated? re-run `kubectl get ... -o json > FILE`)"
            raise SpecError(exc.source, [f"{p} {hint}" for p in exc.problems]) from None
    return load_yaml_all(str(path), text)


def _flatten(doc: Any, source: str, where: str) -> Iterable[KubeObject]:
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _flatten(item, source, f"{where}[{i}]")
        return
    if not isinstance(doc, dict):
        raise SpecError(
            source, [f"{where}: expected a Kubernetes object (a mapping), got {type(doc).__name__}"]
        )
    kind = doc.get("kind")
    if kind is not None and not isinstance(kind, str):
        got = type(kind).__name__
        raise SpecError(source, [f"{_at(where)}`kind` is a {got}; it must be a string such as Pod or Node"])
    if kind in SECRET_KINDS or (isinstance(kind, str) and kind.endswith("List") and _has_secret(doc)):
        raise SpecError(
            source,
            [
                f"{where}: this is a Secret dump ({kind}); fleetlab needs `kubectl get nodes -o json` and "
                "`kubectl get pods -A -o json`. Nothing of its content was read or printed"
            ],
        )
    items = doc.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        for i, item in enumerate(items):
            yield from _flatten(item, source, f"{where}items[{i}]")
        return
    if not isinstance(kind, str):
        raise SpecError(source, [f"{where}: object has no `kind`; expected kubectl JSON output"])
    check_envelope(doc, source, where, kind)
    yield doc


def _at(where: str) -> str:
    return f"{where.rstrip(': ')}: " if where else ""


def check_envelope(doc: KubeObject, source: str, where: str, kind: str) -> None:
    """metadata, spec and status are mappings in every Kubernetes object; metadata's maps are string maps."""
    for field in ("metadata", "spec", "status"):
        value = doc.get(field)
        if value is not None and not isinstance(value, dict):
            got = type(value).__name__
            raise SpecError(source, [f"{_at(where)}{kind} `{field}` is a {got}; it must be a mapping"])
    meta = doc.get("metadata") or {}
    if "name" in meta and not isinstance(meta["name"], str):
        raise SpecError(source, [f"{_at(where)}{kind} `metadata.name` must be a string"])
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is not None and not (
            isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        ):
            name = object_name(doc)
            problem = f"{kind} {name}: `metadata.{field}` must map strings to strings"
            raise SpecError(source, [f"{_at(where)}{problem}"])


class ShapeError(ValueError):
    """A field of a Kubernetes object with the wrong type; the message names the field, never its value."""


def mapping_list(obj: KubeObject, path: str, value: Any, most: int | None = None) -> list[KubeObject]:
    """``value`` as a list of mappings (None is an empty list), else a ShapeError naming ``path``."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ShapeError(f"{obj.get('kind')} {object_name(obj)}: `{path}` must be a list of mappings")
    if most is not None and len(value) > most:
        raise ShapeError(
            f"{obj.get('kind')} {object_name(obj)}: `{path}` has {len(value)} items; at most {most}"
        )
    return value


def _has_secret(doc: KubeObject) -> bool:
    items = doc.get("items")
    return isinstance(items, list) and any(isinstance(i, dict) and i.get("kind") == "Secret" for i in items)


def read_objects(path: Path) -> list[KubeObject]:
    """Every object in the file, Lists expanded, in file order."""
    out: list[KubeObject] = []
    for d, doc in enumerate(_documents(path)):
        out.extend(_flatten(doc, str(path), f"document {d + 1}: " if d else ""))
    return out


def dig(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...``, or None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def object_name(obj: KubeObject) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", "<unnamed>"))
    ns = meta.get("namespace")
    return f"{ns}/{name}" if ns else name


def field_map(value: Any, what: str) -> dict[str, Any]:
    """A field that must be a mapping (None reads as empty), else a ShapeError naming it, never its value."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ShapeError(f"`{what}` is a {type(value).__name__}; it must be a mapping")
    return value


def field_list(value: Any, what: str) -> list[Any]:
    """A field that must be a list (None reads as empty), else a ShapeError naming it, never its value."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ShapeError(f"`{what}` is a {type(value).__name__}; it must be a list")
    return value


def check_container_lists(spec: Mapping[str, Any], where: str, source: str) -> None:
    """Refuse ``containers`` / ``initContainers`` that are not lists of mappings (a mapping would be
    iterated by key, a number would fail deep inside the requests arithmetic)."""
    for key in ("containers", "initContainers"):
        containers = spec.get(key) or []
        if not isinstance(containers, list):
            raise SpecError(source, [f"{where}.{key}: expected a list of containers"])
        for i, container in enumerate(containers):
            if not isinstance(container, Mapping):
                raise SpecError(source, [f"{where}.{key}[{i}]: expected a container (a mapping)"])


def namespace_labels(obj: Mapping[str, Any], source: str) -> tuple[str, dict[str, str]]:
    """(name, labels) of a Namespace object."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    labels = meta.get("labels") or {}
    if not isinstance(name, str) or not name or not isinstance(labels, dict):
        raise SpecError(source, [f"Namespace {name!r}: metadata.name must be a string and labels a mapping"])
    return name, {str(k): str(v) for k, v in labels.items()}


def global_default(classes: list[KubeObject]) -> KubeObject | None:
    """The cluster-default PriorityClass. A live cluster can hold several marked globalDefault (the check
    that refuses a second one races); then the one with the smallest value applies, as the API documents
    (k8s.io/api scheduling/v1 PriorityClass.globalDefault) and the Priority admission plugin does."""
    defaults = [c for c in classes if c.get("globalDefault") is True]
    valued = [c for c in defaults if isinstance(c.get("value"), int) and not isinstance(c.get("value"), bool)]
    if valued:
        return min(valued, key=lambda c: (c["value"], object_name(c)))
    return defaults[0] if defaults else None
