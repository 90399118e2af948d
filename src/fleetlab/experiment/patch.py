"""Dotted-path patches on scenario data (plain YAML mappings), e.g. ``cluster.pools[h100].count: 8``.

A path step is a mapping key, a list index (``[0]`` or ``.0``), or ``[name]`` to pick the list entry whose
``name`` (or, for Kubernetes objects such as the ``kueue`` list, ``metadata.name``) is that value;
``[Kind/name]`` picks among objects of several kinds that share a name. A path may start at ``pools``
for ``cluster.pools``. Patching happens before validation, so the patched scenario is checked in full.
"""

from __future__ import annotations

import copy
import re
from typing import Any

_STEP = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


class PatchError(ValueError):
    """A path that does not lead anywhere in the base scenario."""


def split_path(path: str) -> list[str]:
    """``a.b[0].c`` -> ``['a', 'b', '[0]', 'c']`` (bracketed steps keep their brackets)."""
    steps: list[str] = []
    pos = 0
    for match in _STEP.finditer(path):
        between = path[pos : match.start()]
        if between not in ("", "."):
            raise PatchError(f"malformed path {path!r}")
        steps.append(f"[{match.group(1)}]" if match.group(1) is not None else match.group(2))
        pos = match.end()
    if not steps or path[pos:] or path.startswith(".") or path.endswith("."):
        raise PatchError(f"malformed path {path!r} (write e.g. cluster.pools[h100].count)")
    return steps


#: Path starts that stand for a longer path.
ALIASES = {"pools": ["cluster", "pools"]}


def _entry_name(item: Any) -> tuple[str | None, str | None]:
    """(kind, name) of a list entry: ``name``, or a Kubernetes object's ``kind`` and ``metadata.name``."""
    if not isinstance(item, dict):
        return None, None
    if "name" in item:
        return None, str(item["name"])
    meta = item.get("metadata")
    if isinstance(meta, dict) and "name" in meta:
        return str(item.get("kind", "")), str(meta["name"])
    return None, None


def _list_index(items: list[Any], step: str, where: str) -> int:
    key = step[1:-1] if step.startswith("[") else step
    if re.fullmatch(r"-?\d+", key):
        index = int(key)
        if not -len(items) <= index < len(items):
            raise PatchError(f"{where}: index {index} is out of range (the list has {len(items)} entries)")
        return index
    entries = [_entry_name(item) for item in items]
    name, hits = key, [i for i, (_, n) in enumerate(entries) if n == key]  # nvidia.com/gpu is a name
    if not hits and "/" in key:
        kind, _, name = key.rpartition("/")
        hits = [i for i, (k, n) in enumerate(entries) if n == name and k == kind]
    if not hits:
        shown = ", ".join(f"{k}/{n}" if k else n for k, n in entries if n is not None) or "none"
        raise PatchError(f"{where}: no entry named {key!r} (names: {shown})")
    if len(hits) > 1:
        kinds = ", ".join(f"[{entries[i][0]}/{name}]" for i in hits)
        raise PatchError(f"{where}: {len(hits)} entries are named {name!r}; pick one with {kinds}")
    return hits[0]


def apply_patch(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``value`` set at ``path``; the parent must exist, the last key may be new."""
    out = copy.deepcopy(data)
    steps = split_path(path)
    steps = [*ALIASES.get(steps[0], [steps[0]]), *steps[1:]]
    node: Any = out
    where = ""
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        where = f"{where}.{step}" if where and not step.startswith("[") else f"{where}{step}"
        if isinstance(node, list):
            index = _list_index(node, step, where)
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict):
            key = step[1:-1] if step.startswith("[") else step
            if last:
                node[key] = value
            elif key not in node or node[key] is None:
                if key in node or not steps[i + 1].startswith("["):
                    node[key] = {}
                    node = node[key]
                else:
                    raise PatchError(f"{where}: not present in the base scenario")
            else:
                node = node[key]
        else:
            raise PatchError(f"{where}: cannot descend into a {type(node).__name__} value")
    return out
