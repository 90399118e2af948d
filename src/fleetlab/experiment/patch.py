"""Dotted-path patches on scenario data (plain YAML mappings), e.g. ``cluster.pools[h100].count: 8``.

A path step is a mapping key, a list index (``[0]`` or ``.0``), or ``[name]`` to pick the list entry whose
``name`` is that value. Patching happens before validation, so the patched scenario is checked in full.
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


def _list_index(items: list[Any], step: str, where: str) -> int:
    key = step[1:-1] if step.startswith("[") else step
    if re.fullmatch(r"-?\d+", key):
        index = int(key)
        if not -len(items) <= index < len(items):
            raise PatchError(f"{where}: index {index} is out of range (the list has {len(items)} entries)")
        return index
    names = [item.get("name") for item in items if isinstance(item, dict)]
    if key not in names:
        shown = ", ".join(str(n) for n in names if n is not None) or "none"
        raise PatchError(f"{where}: no entry named {key!r} (names: {shown})")
    return names.index(key)


def apply_patch(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``data`` with ``value`` set at ``path``; the parent must exist, the last key may be new."""
    out = copy.deepcopy(data)
    steps = split_path(path)
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
