"""What differs between two scenarios, counted as changes: the one-change rule made checkable.

Scenario data (plain YAML mappings) are compared leaf by leaf. Entries of a list of named mappings (pools,
Kueue objects, generator classes) are matched by name, so a reordering is no difference. The same edit
made to several entries of one list — ``cohortName: research`` removed from two ClusterQueues, ``gang``
turned off in three job classes — is one change applied to those entries; a section added or removed
whole is one change; any other difference is a change of its own. Name, description and seed are not
changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Top-level fields that label a scenario rather than change it.
IGNORED = frozenset({"name", "description", "seed"})
ABSENT = "(absent)"
MAX_SHOWN = 60


@dataclass(frozen=True)
class Difference:
    """One change: a path pattern (``[*]`` for the entries it applies to), the old and new values and the
    concrete paths it was made at."""

    pattern: str
    old: str
    new: str
    paths: tuple[str, ...]

    def text(self) -> str:
        """``kueue[*].spec.cohortName: research → (absent) (2 entries)``."""
        where = f" ({len(self.paths)} entries)" if len(self.paths) > 1 else ""
        shown = self.paths[0] if len(self.paths) == 1 else self.pattern
        return f"{shown}: {self.old} → {self.new}{where}"


def _value(x: Any) -> str:
    if x is _MISSING:
        return ABSENT
    text = x if isinstance(x, str) else json.dumps(x, sort_keys=True, separators=(",", ":"), default=str)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


class _Missing:
    pass


_MISSING = _Missing()


def _name(item: Any) -> str | None:
    if not isinstance(item, Mapping):
        return None
    if "name" in item:
        return str(item["name"])
    meta = item.get("metadata")
    if isinstance(meta, Mapping) and "name" in meta:
        kind = item.get("kind")
        return f"{kind}/{meta['name']}" if kind else str(meta["name"])
    return None


def _keyed(items: list[Any]) -> dict[str, Any] | None:
    names = [_name(x) for x in items]
    if not items or any(n is None for n in names) or len(set(names)) != len(names):
        return None
    return dict(zip(names, items, strict=True))  # type: ignore[arg-type]


def _walk(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            if not path and key in IGNORED:
                continue
            _walk(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}.{key}" if path else str(key), out)
        return
    if isinstance(a, list) and isinstance(b, list):
        ka, kb = _keyed(a), _keyed(b)
        if ka is not None and kb is not None:
            for key in [*ka, *(k for k in kb if k not in ka)]:
                _walk(ka.get(key, _MISSING), kb.get(key, _MISSING), f"{path}[{key}]", out)
            return
        if len(a) == len(b) and all(isinstance(x, Mapping) for x in (*a, *b)):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                _walk(x, y, f"{path}[{i}]", out)
            return
    if a != b:
        out.append((path, a, b))


_SELECTOR = re.compile(r"\[[^\]]*\]")


def differences(base: Mapping[str, Any], other: Mapping[str, Any]) -> list[Difference]:
    """The changes that turn ``base`` into ``other`` (see the module docstring), in path order."""
    leaves: list[tuple[str, Any, Any]] = []
    _walk(base, other, "", leaves)
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for path, old, new in leaves:
        grouped.setdefault((_SELECTOR.sub("[*]", path), _value(old), _value(new)), []).append(path)
    return [Difference(pattern, old, new, tuple(paths)) for (pattern, old, new), paths in grouped.items()]


def differences_text(found: list[Difference]) -> str:
    """``a: 1 → 2; b: x → (absent)``."""
    return "; ".join(d.text() for d in found) if found else "no difference"


def set_changes(paths: Mapping[str, Any]) -> int:
    """How many changes an experiment's ``set`` makes: its paths, the same value set at the same place in
    several entries of one list counting once (``kueue[a].spec.cohortName: null`` and ``kueue[b]...``)."""
    return len({(_SELECTOR.sub("[*]", path), _value(value)) for path, value in paths.items()})
