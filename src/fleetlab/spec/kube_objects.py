"""Reading kubectl output: JSON or YAML files holding one object, a ``v1 List`` or several documents.

Only plain dicts come out of here; nothing of the file's content is echoed in errors beyond kinds and
names, so a Secret dumped by mistake never leaks its data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from fleetlab.spec.errors import SpecError, read_text_file

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
            return [json.loads(text)]
        except json.JSONDecodeError as exc:
            raise SpecError(
                str(path),
                [
                    f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg} "
                    "(is the file truncated? re-run `kubectl get ... -o json > FILE`)"
                ],
            ) from None
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: big kubectl dumps stay fast
        return [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid syntax"
        raise SpecError(str(path), [f"not valid YAML{where}: {problem}"]) from None


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
    yield doc


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
