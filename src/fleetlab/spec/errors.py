"""Input errors that name the file, the place inside it, the bad value and what is allowed.

The CLI turns a SpecError into one paragraph on stderr and exit code 2; nothing else about bad input
ever reaches the user as a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

MAX_LISTED = 8


class SpecError(Exception):
    """A scenario, trace or catalog that cannot be used as given."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        """One paragraph: the file, then each problem (the first few, with a count of the rest)."""
        shown = self.problems[:MAX_LISTED]
        more = len(self.problems) - len(shown)
        text = f"{self.source}: " + "; ".join(shown)
        if more > 0:
            text += f"; and {more} more problem(s)"
        return " ".join(text.split()) if "\n" in text or "\r" in text else text


def read_text_file(path: Path, missing: str) -> str:
    """A UTF-8 input file's text, or a SpecError; kept here for callers, bounded in ``spec.bounded``."""
    from fleetlab.spec.bounded import read_text_file as bounded_read

    return bounded_read(path, missing)


def location(loc: Sequence[int | str], prefix: str = "") -> str:
    """A pydantic error location as a path, e.g. ``cluster.pools[1].gpu_model``."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith("function-"):
            continue
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
