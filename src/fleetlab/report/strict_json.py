"""JSON for ``--json`` output that every strict parser accepts: non-finite numbers become null.

Python's ``json.dumps`` writes ``NaN`` and ``Infinity``, which are not JSON (RFC 8259) and break ``jq``,
JavaScript's ``JSON.parse`` and Go's decoder; a metric that has no value (no job finished, a rate over a
zero span) is ``null`` instead.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite_or_null(value: Any) -> Any:
    """``value`` with every NaN or infinite float (at any depth) replaced by None; tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite_or_null(item) for item in value]
    return value


def strict_dumps(value: Any, indent: int | None = None, sort_keys: bool = False) -> str:
    """``json.dumps`` of ``value`` with non-finite numbers as null; never emits NaN or Infinity."""
    return json.dumps(finite_or_null(value), indent=indent, sort_keys=sort_keys, allow_nan=False, default=str)
