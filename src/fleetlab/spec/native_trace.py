"""fleetlab's native job table: one row per job, as CSV or Parquet (chosen by the file suffix).

``.csv`` files are read with every column as text; ``.parquet``/``.pq`` files may use text or typed
columns (integers, floats, booleans). An empty cell always means "the default". Rows are numbered from 1,
the header not counted. Columns (see also ``docs/trace-format.md``):

=====================  ========  =====================================================================
column                 default   meaning
=====================  ========  =====================================================================
``id``                 required  job id, unique in the file
``submit_s``           required  submit time in seconds, a number >= 0
``class``              batch     ``training``, ``inference``, ``batch`` or ``experiment``
``priority``           0         integer
``team``               default   team name
``pods``               1         identical pods in the job, integer >= 1
``cpu``                unset     CPU request per pod, a Kubernetes quantity (``8``, ``500m``)
``memory``             unset     memory request per pod, a quantity (``64Gi``, ``1.5G``)
``gpus``               0         whole ``nvidia.com/gpu`` per pod, integer >= 0 (0 = no GPU request)
``runtime_s``          required  compute time once running, seconds > 0
``runtime_s[MODEL]``   none      runtime on nodes with GPU model ``MODEL`` (e.g. ``runtime_s[H100]``)
``image``              none      container image name
``image_size``         0         image size, a quantity (needs ``image``)
``data_size``          0         data the job reads before starting, a quantity
``preemptible``        false     ``true``/``false``/``1``/``0``/``yes``/``no``
``node_selector``      none      ``key=value;key2=value2``
``tolerations``        none      ``key=value:Effect;key:Effect;key=value``; Exists without a value,
                                 Equal with one, effect optional; ``*`` tolerates every taint
``affinity``           none      a core/v1 Affinity as JSON (``{"nodeAffinity": {...}}``)
=====================  ========  =====================================================================

An unset ``cpu``/``memory`` leaves the request out (kube-scheduler then scores with its non-zero
defaults), while ``0`` is an explicit zero request. Unknown columns are reported as warnings.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fleetlab.model.gpus import GPU_MODELS, known_gpu_models
from fleetlab.model.job import Image, Job, JobClass, Runtime
from fleetlab.model.kube import Affinity, Toleration
from fleetlab.model.quantity import to_int, to_milli
from fleetlab.model.resources import CPU, GPU, MEMORY
from fleetlab.spec.bounded import json_cell
from fleetlab.spec.errors import SpecError, problems_from_validation
from fleetlab.spec.table_cells import (
    MAX_PROBLEMS,
    CellProblems,
    any_int,
    int_at_least,
    parse_cells,
    parse_int,
    read_string_columns,
    seconds_cells,
    seconds_gt0,
)

__all__ = [
    "COLUMNS",
    "MAX_PROBLEMS",
    "CellProblems",
    "load_native_trace",
    "parse_cells",
    "parse_int",
    "read_string_columns",
    "write_native_trace",
]

#: Known columns in the order the writer emits them (per-GPU runtimes follow ``runtime_s``).
COLUMNS: tuple[str, ...] = (
    "id",
    "submit_s",
    "class",
    "priority",
    "team",
    "pods",
    "cpu",
    "memory",
    "gpus",
    "runtime_s",
    "image",
    "image_size",
    "data_size",
    "preemptible",
    "node_selector",
    "tolerations",
    "affinity",
)
REQUIRED: tuple[str, ...] = ("id", "submit_s", "runtime_s")
RUNTIME_PREFIX = "runtime_s["

_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_BOOLS = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}
_CLASSES = {c.value: c.value for c in JobClass}

_SELECTOR_SYNTAX = 'use "key=value;key2=value2"'
_TOLERATION_SYNTAX = (
    'use "key=value:Effect;key:Effect;key=value" (Exists when no value is given, Equal otherwise; '
    'the effect is optional; "*" tolerates every taint)'
)


def _job_class(text: str) -> str:
    value = _CLASSES.get(text.lower())
    if value is None:
        raise ValueError(f"must be one of {', '.join(_CLASSES)}")
    return value


def _cpu(text: str) -> int:
    milli = to_milli(text)
    if milli < 0:
        raise ValueError("must be a CPU quantity >= 0 such as 8 or 500m")
    return milli


def _bytes(text: str) -> int:
    amount = to_int(text)
    if amount < 0:
        raise ValueError("must be a byte quantity >= 0 such as 64Gi or 1.5G")
    return amount


def _bool(text: str) -> bool:
    value = _BOOLS.get(text.lower())
    if value is None:
        raise ValueError("must be true, false, 1, 0, yes or no")
    return value


def _node_selector(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"entry {part!r} has no '='; {_SELECTOR_SYNTAX}")
        key, value = (s.strip() for s in part.split("=", 1))
        if not key:
            raise ValueError(f"entry {part!r} has an empty key; {_SELECTOR_SYNTAX}")
        if key in out:
            raise ValueError(f"key {key!r} is given twice; {_SELECTOR_SYNTAX}")
        out[key] = value
    return out


def _tolerations(text: str) -> tuple[Toleration, ...]:
    out: list[Toleration] = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        body, effect = part, ""
        if ":" in part:
            body, effect = (s.strip() for s in part.rsplit(":", 1))
            if effect not in _EFFECTS:
                raise ValueError(
                    f"effect {effect!r} in {part!r} is not one of {', '.join(_EFFECTS)}; {_TOLERATION_SYNTAX}"
                )
        if body == "*":
            spec = {"key": "", "operator": "Exists", "effect": effect}
        elif "=" in body:
            key, value = (s.strip() for s in body.split("=", 1))
            spec = {"key": key, "operator": "Equal", "value": value, "effect": effect}
        else:
            spec = {"key": body, "operator": "Exists", "effect": effect}
        if not spec["key"] and body != "*":
            raise ValueError(f"entry {part!r} has an empty key; {_TOLERATION_SYNTAX}")
        try:
            out.append(Toleration.model_validate(spec))
        except ValidationError as exc:
            raise ValueError(f"entry {part!r}: " + "; ".join(problems_from_validation(exc))) from None
    return tuple(out)


def _affinity(text: str) -> Affinity:
    try:
        data = json_cell(text)
    except ValueError as exc:
        raise ValueError(
            f'is not JSON ({exc}); give a core/v1 Affinity such as {{"nodeAffinity": ...}}'
        ) from None
    try:
        return Affinity.model_validate(data)
    except ValidationError as exc:
        raise ValueError(
            "is not a core/v1 Affinity: " + "; ".join(problems_from_validation(exc, "affinity"))
        ) from None


# --- reading ---------------------------------------------------------------------------------------------

#: Job field (first element of a pydantic error location) -> column, to place model errors.
_FIELD_COLUMN = {
    "id": "id",
    "submit_s": "submit_s",
    "class": "class",
    "job_class": "class",
    "priority": "priority",
    "team": "team",
    "pods": "pods",
    "requests": "cpu/memory/gpus",
    "runtime": "runtime_s",
    "image": "image",
    "data_size": "data_size",
    "preemptible": "preemptible",
    "nodeSelector": "node_selector",
    "node_selector": "node_selector",
    "tolerations": "tolerations",
    "affinity": "affinity",
}


def _runtime_columns(names: Sequence[str], source: str) -> dict[str, str]:
    """``runtime_s[MODEL]`` columns -> model, refusing unknown models."""
    out: dict[str, str] = {}
    bad: list[str] = []
    for name in names:
        if name.startswith(RUNTIME_PREFIX):
            model = name[len(RUNTIME_PREFIX) : -1] if name.endswith("]") else ""
            if model not in GPU_MODELS:
                bad.append(
                    f"column {name!r}: per-GPU runtime columns are runtime_s[MODEL] with MODEL one of "
                    + ", ".join(known_gpu_models())
                )
            else:
                out[name] = model
    if bad:
        raise SpecError(source, bad)
    return out


def _job_spec(
    row: int,
    shape: tuple[Any, ...],
    selector: list[Any] | None,
    tolerations: list[Any] | None,
    affinity: list[Any] | None,
    images: dict[tuple[str, int], Image],
) -> dict[str, Any]:
    """The Job fields of one row other than id, submit time and runtime, as Job.model_validate input."""
    job_class, priority, team, pods, cpu, memory, gpus, image, image_size, data_size, preemptible = shape[:11]
    requests: dict[str, int | str] = {}
    if cpu is not None:
        requests[CPU] = cpu // 1000 if cpu % 1000 == 0 else f"{cpu}m"
    if memory is not None:
        requests[MEMORY] = memory
    if gpus:
        requests[GPU] = gpus
    spec: dict[str, Any] = {"requests": requests}
    if job_class is not None:
        spec["class"] = job_class
    if priority is not None:
        spec["priority"] = priority
    if team is not None:
        spec["team"] = team
    if pods is not None:
        spec["pods"] = pods
    if image is not None:
        key = (image, image_size or 0)
        if key not in images:
            images[key] = Image(name=image, size=image_size or 0)
        spec["image"] = images[key]
    if data_size is not None:
        spec["data_size"] = data_size
    if preemptible is not None:
        spec["preemptible"] = preemptible
    if selector is not None and selector[row]:
        spec["nodeSelector"] = selector[row]
    if tolerations is not None and tolerations[row]:
        spec["tolerations"] = tolerations[row]
    if affinity is not None and affinity[row] is not None:
        spec["affinity"] = affinity[row]
    return spec


def load_native_trace(
    path: Path, limit: int | None = None, time_scale: float = 1.0
) -> tuple[list[Job], list[str]]:
    """Jobs of a native CSV/Parquet table in file order, plus warnings; bad cells raise SpecError.

    ``limit`` keeps the first rows; ``time_scale`` multiplies submit times and runtimes."""
    # Building 200k jobs allocates millions of containers and none of them form cycles; the cyclic
    # collector would rescan the growing heap again and again (about half the load time), so pause it.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _load(path, limit, time_scale)
    finally:
        if paused:
            gc.enable()


def _load(path: Path, limit: int | None, time_scale: float) -> tuple[list[Job], list[str]]:
    source = str(path)
    names, cells = read_string_columns(path, limit, source)
    missing = [c for c in REQUIRED if c not in cells]
    if missing:
        raise SpecError(
            source,
            [
                f"required column {c!r} is missing (columns found: {', '.join(names) or 'none'})"
                for c in missing
            ],
        )
    by_gpu_cols = _runtime_columns(names, source)
    warnings = [
        f"{source}: unknown column {n!r} ignored (known: {', '.join(COLUMNS)}, runtime_s[MODEL])"
        for n in names
        if n not in COLUMNS and n not in by_gpu_cols
    ]
    rows = len(cells["id"])
    if rows == 0:
        warnings.append(f"{source}: the table has no rows")
        return [], warnings

    problems = CellProblems(source)
    order = {n: i for i, n in enumerate(names)}

    def column(name: str, parse: Callable[[str], Any], cache: bool = True) -> list[Any] | None:
        if name not in cells:
            return None
        return parse_cells(cells[name], parse, name, order[name], problems, cache)

    ids: list[str | None] = [None if c is None or not c.strip() else c.strip() for c in cells["id"]]
    first_row: dict[str, int] = {}
    for row, job_id in enumerate(ids):
        if job_id is None:
            problems.add(row, order["id"], "id", cells["id"][row] or "", "every job needs an id")
        elif job_id in first_row:
            problems.add(
                row,
                order["id"],
                "id",
                job_id,
                f"id already used on row {first_row[job_id] + 1}; ids must be unique",
            )
        else:
            first_row[job_id] = row

    submit = seconds_cells(cells["submit_s"], False, "submit_s", order["submit_s"], problems)
    runtime = seconds_cells(cells["runtime_s"], True, "runtime_s", order["runtime_s"], problems)
    for name, values in (("submit_s", submit), ("runtime_s", runtime)):
        for row, value in enumerate(values):
            if value is None:
                problems.add(row, order[name], name, "", "required: give a number of seconds")
    by_gpu = {model: column(name, seconds_gt0, cache=False) for name, model in by_gpu_cols.items()}
    job_class = column("class", _job_class)
    priority = column("priority", any_int)
    team = column("team", str)
    pods = column("pods", int_at_least(1))
    cpu = column("cpu", _cpu)
    memory = column("memory", _bytes)
    gpus = column("gpus", int_at_least(0))
    image = column("image", str)
    image_size = column("image_size", _bytes)
    data_size = column("data_size", _bytes)
    preemptible = column("preemptible", _bool)
    selector = column("node_selector", _node_selector)
    tolerations = column("tolerations", _tolerations)
    affinity = column("affinity", _affinity)
    if image_size is not None:
        for row, size in enumerate(image_size):
            if size is not None and (image is None or image[row] is None):
                problems.add(
                    row,
                    order["image_size"],
                    "image_size",
                    cells["image_size"][row] or "",
                    "an image size needs an image name in column 'image'",
                )
    problems.raise_if_any(ids)

    # Jobs that differ only in id, submit time and runtime share a "shape". The first job of each shape
    # is built by Job.model_validate from the whole row; the others copy it with their own id, submit
    # time and a Runtime.model_validate'd runtime (ids and submit times were checked above), which
    # makes 200k rows several times faster than validating every requests list afresh.
    none: list[Any] = [None] * rows
    shape_columns = [
        job_class or none,
        priority or none,
        team or none,
        pods or none,
        cpu or none,
        memory or none,
        gpus or none,
        image or none,
        image_size or none,
        data_size or none,
        preemptible or none,
        cells["node_selector"] if selector is not None else none,
        cells["tolerations"] if tolerations is not None else none,
        cells["affinity"] if affinity is not None else none,
    ]
    templates: dict[tuple[Any, ...], Job] = {}
    images: dict[tuple[str, int], Image] = {}
    jobs: list[Job] = []
    append = jobs.append
    validate = Job.model_validate
    validate_runtime = Runtime.model_validate
    scale = float(time_scale)
    overrides_by_model = [(m, v) for m, v in by_gpu.items() if v is not None]
    for row, shape in enumerate(zip(*shape_columns, strict=True)):
        submit_s = submit[row] * scale
        run: dict[str, Any] = {"default": runtime[row] * scale}
        if overrides_by_model:
            overrides = {m: v[row] * scale for m, v in overrides_by_model if v[row] is not None}
            if overrides:
                run["by_gpu"] = overrides
        if not math.isfinite(submit_s):
            problems.add(
                row,
                order["submit_s"],
                "submit_s",
                cells["submit_s"][row] or "",
                f"is out of range once multiplied by time_scale {time_scale}",
            )
            continue
        template = templates.get(shape)
        try:
            if template is not None:
                append(
                    template.model_copy(
                        update={
                            "id": ids[row],
                            "submit_s": submit_s,
                            "runtime": validate_runtime(run),
                            "requests": dict(template.requests),
                            "node_selector": dict(template.node_selector),
                        }
                    )
                )
                continue
            spec = _job_spec(row, shape, selector, tolerations, affinity, images)
            spec["id"] = ids[row]
            spec["submit_s"] = submit_s
            spec["runtime"] = run
            job = validate(spec)
        except ValidationError as exc:
            for item in exc.errors(include_url=False):
                loc = item.get("loc", ())
                field = str(loc[0]) if loc else ""
                where = "runtime_s" if template is not None else _FIELD_COLUMN.get(field, field or "<row>")
                msg = str(item.get("msg", "invalid")).removeprefix("Value error, ")
                problems.add(row, order.get(where, len(order)), where, repr(item.get("input"))[:60], msg)
            if problems.total >= problems.limit:
                break
            continue
        templates[shape] = job
        append(job)
    problems.raise_if_any(ids)
    return jobs, warnings


from fleetlab.spec.native_trace_writer import write_native_trace  # noqa: E402  (re-export)
