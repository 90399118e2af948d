"""The scenario field reference (docs/scenario-fields.md), generated from the pydantic models so it cannot
drift, and the page anchor an unknown-field error points at.

Run ``python -m fleetlab.spec.field_reference > docs/scenario-fields.md`` after changing a model; a test
fails while the committed page differs. Field notes are the models' ``#:`` comments.
"""

from __future__ import annotations

import enum
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from fleetlab.model.queues import QueueConfig
from fleetlab.model.scenario import Scenario

PAGE = "docs/scenario-fields.md"
#: Types documented elsewhere (their YAML is an upstream object list, not fleetlab fields).
ELSEWHERE = {
    QueueConfig: "Kueue objects as applied (ResourceFlavor, ClusterQueue, Cohort, LocalQueue); "
    "see [scenario.md](scenario.md#queues-and-quotas-kueue)",
}
_FIELD_LINE = re.compile(r"^    (\w+)\s*:")


@dataclass(frozen=True)
class Section:
    """The fields of one model at one path of the scenario file."""

    path: str
    model: type[BaseModel]
    rows: tuple[tuple[str, str, str, str], ...]  # key, type, default, note
    same_as: str | None = None


def anchor(path: str) -> str:
    """The HTML id of a path's section: ``cluster.pools[]`` -> ``cluster-pools``."""
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "scenario"


def _notes(model: type[BaseModel]) -> dict[str, str]:
    """Each field's ``#:`` comment lines, joined."""
    out: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, BaseModel)) or klass is BaseModel:
            continue
        try:
            lines = inspect.getsource(klass).splitlines()
        except (OSError, TypeError):
            continue
        pending: list[str] = []
        for line in lines[1:]:
            stripped = line.strip()
            if stripped.startswith("#:"):
                pending.append(stripped[2:].strip())
                continue
            match = _FIELD_LINE.match(line)
            if match and pending:
                out[match.group(1)] = " ".join(pending)
            pending = [] if not line.startswith("        ") else pending
    return out


def _models_in(annotation: Any) -> list[tuple[str, type[BaseModel]]]:
    """(path suffix, model) for every model an annotation holds: ``[]`` inside lists, ``.*`` in dicts."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [("", annotation)]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple, set, frozenset) or origin is Sequence:
        return [("[]" + s, m) for a in args if a is not Ellipsis for s, m in _models_in(a)]
    if origin is dict:
        return [(".*" + s, m) for s, m in _models_in(args[1])] if len(args) == 2 else []
    return [x for a in args for x in _models_in(a)]


def _type_text(annotation: Any, metadata: Sequence[Any] = ()) -> str:
    for item in metadata:
        func = getattr(getattr(item, "func", None), "__name__", "")
        if func == "parse_duration":
            return "duration (seconds or e.g. 1h30m)"
        if "bytes" in func or "quantity" in func:
            return "quantity (e.g. 16Gi)"
    if annotation in ELSEWHERE:
        return "list of Kueue objects"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return f"{annotation.__name__} (below)"
        if issubclass(annotation, enum.Enum):
            return " | ".join(str(m.value) for m in annotation)
        return annotation.__name__
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_text(a) for a in args if a is not type(None)) + (
            " or null" if type(None) in args else ""
        )
    if origin in (list, tuple, set, frozenset) or origin is Sequence:
        inner = [a for a in args if a is not Ellipsis]
        return f"list of {_type_text(inner[0])}" if inner else "list"
    if origin is dict and len(args) == 2:
        return f"map of {_type_text(args[0])} to {_type_text(args[1])}"
    if origin is typing.Annotated:
        return _type_text(args[0], getattr(annotation, "__metadata__", ()))
    return str(annotation).replace("typing.", "")


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    if value is PydanticUndefined:
        return ""
    if isinstance(value, BaseModel):
        return "(defaults below)"
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return json.dumps(list(value) if isinstance(value, (tuple, frozenset)) else value, sort_keys=True)
    except TypeError:
        return str(value)


@cache
def sections() -> tuple[Section, ...]:
    """Every model reachable from Scenario, by path, first occurrence in full."""
    out: list[Section] = []
    seen: dict[type[BaseModel], str] = {}
    queue: list[tuple[str, type[BaseModel]]] = [("", Scenario)]
    while queue:
        path, model = queue.pop(0)
        if model in seen:
            out.append(Section(path, model, (), seen[model]))
            continue
        seen[model] = path
        notes = _notes(model)
        rows = []
        for name, field in model.model_fields.items():
            key = field.alias or name
            annotation = field.annotation
            note = notes.get(name, "")
            if annotation in ELSEWHERE or any(a in ELSEWHERE for a in typing.get_args(annotation)):
                note = ELSEWHERE[QueueConfig]
            else:
                for suffix, inner in _models_in(annotation):
                    queue.append((f"{path}.{key}{suffix}".lstrip("."), inner))
            rows.append((key, _type_text(annotation, field.metadata), _default(field), note))
        out.append(Section(path, model, tuple(rows)))
    return tuple(out)


def _doc(model: type[BaseModel]) -> str:
    return " ".join((inspect.getdoc(model) or "").split())


def render() -> str:
    """The whole page, as committed in docs/scenario-fields.md."""
    lines = [
        "# Scenario file: every field",
        "",
        "Generated from fleetlab's models by `python -m fleetlab.spec.field_reference > "
        "docs/scenario-fields.md`; do not edit by hand (a test fails when this page and the models differ).",
        "A path like `cluster.pools[]` means each entry of the list `cluster.pools`; `.*` means each value "
        "of a map. Unknown fields are refused with a pointer to the section of the object they were in.",
        "Worked examples: [scenario.md](scenario.md).",
        "",
    ]
    for section in sections():
        title = section.path or "top level"
        lines += [f'<a id="{anchor(section.path)}"></a>', "", f"## `{title}`", ""]
        if section.same_as is not None:
            target = section.same_as or "top level"
            lines += [f"Same fields as [`{target}`](#{anchor(section.same_as)}).", ""]
            continue
        lines += [f"{section.model.__name__}: {_doc(section.model)}", ""]
        lines += ["| field | type | default | notes |", "|---|---|---|---|"]
        for key, kind, default, note in section.rows:
            cells = (f"`{key}`", kind, f"`{default}`" if default else "", note)
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def docs_pointer(loc: Sequence[int | str]) -> str:
    """Where the allowed fields at an error location are listed: the page and the closest section."""
    known = {s.path for s in sections()}
    steps = [("[]" if isinstance(p, int) else f".{p}") for p in loc[:-1]]
    while steps:
        path = "".join(steps).lstrip(".")
        if path in known:
            return f"{PAGE}#{anchor(path)}"
        steps.pop()
    return f"{PAGE}#{anchor('')}"


def main() -> None:
    """Print the page."""
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
