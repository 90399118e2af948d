"""Pydantic validation errors as one line per problem: the path of the bad field, what is wrong, the value.

Lives in ``model`` because models validate whole configurations themselves (Kueue objects); ``spec.errors``
re-exports it for the readers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only a type here: the CLI's error paragraph must not cost pydantic's import
    from pydantic import ValidationError


def location(loc: Sequence[int | str], prefix: str = "") -> str:
    """A pydantic error location as a path, e.g. ``cluster.pools[1].gpu_model``."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith("function-"):
            continue
        elif "function-" in str(part) or "constrained-" in str(part):
            continue  # a union member of a constrained type (list[Seed] | SeedRange): pydantic's own label
        else:
            out += ("." if out else "") + str(part)
    return out or "<top level>"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


#: Where the allowed fields of an unknown-field error are listed, when the caller does not say.
DEFAULT_DOCS = "docs/scenario-fields.md"


def problems_from_validation(
    error: ValidationError, prefix: str = "", docs: Callable[[tuple[Any, ...]], str] | None = None
) -> list[str]:
    """Each pydantic error as ``path: message (got value)``; an unknown field names the docs page (and
    section, via ``docs(loc)``) that lists the allowed ones."""
    out: list[str] = []
    items = error.errors(include_url=False)
    locs = [tuple(item.get("loc", ())) for item in items]
    for item in items:
        loc = tuple(item.get("loc", ()))
        if item.get("type") == "too_short" and any(len(o) > len(loc) and o[: len(loc)] == loc for o in locs):
            continue  # a list left too short only because its own items failed: report the items only
        msg = str(item.get("msg", "invalid"))
        for lead in ("Value error, ", "Assertion failed, "):
            if msg.startswith(lead):
                msg = msg[len(lead) :]
        where = location(item.get("loc", ()), prefix)
        kind = item.get("type", "")
        if kind == "missing":
            out.append(f"{where}: required field is missing")
        elif kind == "extra_forbidden":
            page = docs(loc) if docs is not None else DEFAULT_DOCS
            out.append(f"{where}: unknown field (check the spelling; allowed fields: {page})")
        else:
            out.append(f"{where}: {msg} (got {_short(item.get('input'))})")
    return out
