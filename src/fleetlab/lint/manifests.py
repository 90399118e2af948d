"""Read Kubernetes manifests (YAML, multi-document, or JSON) into objects that remember their lines.

``kubectl apply -f`` accepts one file with many ``---`` documents, a JSON object, or a ``kind: List`` with
``items``; lint reads the same shapes. Each object keeps its YAML node tree so a finding at
``spec.template.spec.containers[0].resources`` can name the line it is on. A file that cannot be read or
parsed is a :class:`ManifestError` naming the file and line, which the CLI turns into exit code 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fleetlab.spec.bounded import BoundedLoader, load_json, read_text_file, yaml_documents
from fleetlab.spec.errors import SpecError
from fleetlab.spec.kube_objects import describe_text

PathPart = str | int
FieldPath = tuple[PathPart, ...]


class ManifestError(SpecError):
    """A manifest file that cannot be read or parsed (file, line, what was wrong)."""


def value_at(data: Any, path: FieldPath) -> Any:
    """The value at a field path (list indices included), or None where a level is missing."""
    for part in path:
        if isinstance(part, int):
            data = data[part] if isinstance(data, list) and 0 <= part < len(data) else None
        else:
            data = data.get(part) if isinstance(data, Mapping) else None
    return data


def render_path(path: FieldPath) -> str:
    """A field path the way the API server writes it: ``spec.containers[0].resources.limits[nvidia.com/gpu]``.

    Keys that are not plain identifiers (resource names, label keys) are written in brackets, as
    ``field.Path.Key`` does."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("_", "a").isalnum() and part[:1].isalpha():
            out += ("." if out else "") + part
        else:
            out += f"[{part}]"
    return out or "<document>"


@dataclass(frozen=True)
class Manifest:
    """One Kubernetes object from a file: its data, where it starts, and its YAML nodes for line lookup."""

    file: str
    document: int
    data: Mapping[str, Any]
    root: FieldPath = ()
    node: yaml.Node | None = field(default=None, compare=False, repr=False)

    @property
    def kind(self) -> str:
        """``kind``, or ``""`` when absent."""
        value = self.data.get("kind")
        return value if isinstance(value, str) else ""

    @property
    def name(self) -> str:
        """``metadata.name`` (or ``generateName``), for messages."""
        meta = self.data.get("metadata")
        if isinstance(meta, Mapping):
            for key in ("name", "generateName"):
                if isinstance(meta.get(key), str):
                    return str(meta[key])
        return "<unnamed>"

    def inner(self, path: FieldPath) -> Manifest | None:
        """The object embedded at ``path`` (an AppWrapper component's template) as a manifest of its own,
        or None when no object is there."""
        data = value_at(self.data, path)
        if not isinstance(data, Mapping):
            return None
        node = self.node
        for part in path:
            node = _child(node, part) if node is not None else None
        return Manifest(self.file, self.document, data, (*self.root, *path), node)

    def line(self, path: FieldPath) -> int | None:
        """1-based line of the deepest node of ``path`` that exists, or None without YAML nodes."""
        node = self.node
        if node is None:
            return None
        line = node.start_mark.line + 1
        for part in path:
            child = _child(node, part)
            if child is None:
                break
            node, line = child, child.start_mark.line + 1
        return line


def _child(node: yaml.Node, part: PathPart) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode) and isinstance(part, str):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == part:
                found: yaml.Node = value
                return found
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        child: yaml.Node = node.value[part]
        return child
    return None


def _documents(label: str, text: str, is_json: bool) -> list[tuple[Any, yaml.Node | None]]:
    try:
        if is_json:
            data = load_json(label, text)
            try:
                node: yaml.Node | None = BoundedLoader(text).get_single_node()
            except yaml.YAMLError:
                node = None  # valid JSON that YAML cannot compose: findings simply carry no line
            return [(data, node)]
        return list(yaml_documents(label, text))
    except SpecError as exc:
        raise ManifestError(exc.source, exc.problems) from None


def _flatten(
    label: str, document: int, data: Any, node: yaml.Node | None, root: FieldPath, out: list[Manifest]
) -> None:
    if data is None:
        return  # an empty document (a stray ``---``) is allowed by kubectl
    if not isinstance(data, Mapping):
        line = f"line {node.start_mark.line + 1}: " if node is not None else ""
        raise ManifestError(
            label,
            [
                f"{line}document {document + 1} is a {type(data).__name__}, not a Kubernetes object "
                "(a mapping with apiVersion, kind, metadata and spec)"
            ],
        )
    kind = data.get("kind")
    items = data.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        items_node = _child(node, "items") if node is not None else None
        for i, item in enumerate(items):
            item_node = _child(items_node, i) if items_node is not None else None
            _flatten(label, document, item, item_node, (*root, "items", i), out)
        return
    out.append(Manifest(file=label, document=document, data=data, root=root, node=node))


def read_manifests(path: Path) -> list[Manifest]:
    """Every object in one manifest file, in order; a ManifestError when it cannot be read or parsed."""
    label = str(path)
    text = read_text_file(path, "file not found (give a Kubernetes manifest: YAML or JSON)")
    if describe_text(text):
        raise ManifestError(
            label,
            [
                "this looks like `kubectl describe` output, which is not a manifest; lint the manifest file "
                "itself, or save `kubectl get KIND NAME -o yaml`"
            ],
        )
    is_json = path.suffix.lower() == ".json" or text.lstrip().startswith("{")
    out: list[Manifest] = []
    for index, (data, node) in enumerate(_documents(label, text, is_json)):
        _flatten(label, index, data, node, (), out)
    return out
