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

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
from pydantic import ValidationError

from fleetlab.model.gpus import GPU_MODELS, known_gpu_models
from fleetlab.model.job import Image, Job, JobClass
from fleetlab.model.job_table import JobTable
from fleetlab.model.kube import Affinity, Toleration
from fleetlab.model.limits import MAX_SECONDS
from fleetlab.model.quantity import to_int, to_milli
from fleetlab.model.resources import CPU, GPU, MEMORY
from fleetlab.model.units import parse_duration
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
    read_table,
)
from fleetlab.spec.table_columns import (
    CodedColumn,
    coded_column,
    report_rows,
    require,
    seconds_column,
    shape_codes,
    text_array,
    unique_ids,
)

__all__ = [
    "COLUMNS",
    "MAX_PROBLEMS",
    "CellProblems",
    "load_native_trace",
    "parse_cells",
    "parse_int",
    "read_string_columns",
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


#: Columns every job of one template shares, in the order a row's shape is keyed.
SHAPE_COLUMNS: tuple[tuple[str, Callable[[str], Any]], ...] = (
    ("class", _job_class),
    ("priority", any_int),
    ("team", str),
    ("pods", int_at_least(1)),
    ("cpu", _cpu),
    ("memory", _bytes),
    ("gpus", int_at_least(0)),
    ("image", str),
    ("image_size", _bytes),
    ("data_size", _bytes),
    ("preemptible", _bool),
    ("node_selector", _node_selector),
    ("tolerations", _tolerations),
    ("affinity", _affinity),
)
_SPEC_FIELDS = {
    "class": "class",
    "priority": "priority",
    "team": "team",
    "pods": "pods",
    "data_size": "data_size",
    "preemptible": "preemptible",
    "node_selector": "nodeSelector",
    "tolerations": "tolerations",
    "affinity": "affinity",
}


def _job_spec(
    row: int, shape: dict[str, CodedColumn], images: dict[tuple[str, int], Image]
) -> dict[str, Any]:
    """The Job fields of one row other than id, submit time and runtime, as Job.model_validate input
    (an empty cell leaves its field unset, so the Job default applies)."""
    value = {name: col.at(row) for name, col in shape.items()}
    requests: dict[str, int | str] = {}
    cpu, memory, gpus = value.get("cpu"), value.get("memory"), value.get("gpus")
    if cpu is not None:
        requests[CPU] = cpu // 1000 if cpu % 1000 == 0 else f"{cpu}m"
    if memory is not None:
        requests[MEMORY] = memory
    if gpus:
        requests[GPU] = gpus
    spec: dict[str, Any] = {"requests": requests}
    for column, field in _SPEC_FIELDS.items():
        if value.get(column) not in (None, {}, ()):
            spec[field] = value[column]
    image = value.get("image")
    if image is not None:
        key = (image, value.get("image_size") or 0)
        if key not in images:
            images[key] = Image(name=image, size=key[1])
        spec["image"] = images[key]
    return spec


def load_native_trace(
    path: Path, limit: int | None = None, time_scale: float = 1.0
) -> tuple[JobTable, list[str]]:
    """Jobs of a native CSV/Parquet table in file order, plus warnings; bad cells raise SpecError.

    ``limit`` keeps the first rows; ``time_scale`` multiplies submit times and runtimes. Columns are read
    and checked whole; each distinct shape (every column but id, submit time and runtimes) is validated
    once as a Job and becomes the template of its rows."""
    source = str(path)
    names, table = read_table(path, limit, source)
    cells = {n: table.column(i).combine_chunks() for i, n in enumerate(names)}
    require(source, cells, REQUIRED, names)
    by_gpu_cols = _runtime_columns(names, source)
    warnings = [
        f"{source}: unknown column {n!r} ignored (known: {', '.join(COLUMNS)}, runtime_s[MODEL])"
        for n in names
        if n not in COLUMNS and n not in by_gpu_cols
    ]
    rows = table.num_rows
    if rows == 0:
        warnings.append(f"{source}: the table has no rows")
        return JobTable.empty(), warnings

    problems = CellProblems(source)
    order = {n: i for i, n in enumerate(names)}
    ids, _ = unique_ids(text_array(cells["id"], "id", source), order["id"], problems, cells["id"])
    times: dict[str, npt.NDArray[np.float64]] = {}
    for name, positive in (("submit_s", False), ("runtime_s", True)):
        values, empty = seconds_column(cells[name], positive, name, order[name], problems, source)
        report_rows(problems, np.flatnonzero(empty), order[name], name, _blank, _required_seconds)
        times[name] = values
    by_gpu = {
        model: seconds_column(cells[name], True, name, order[name], problems, source)[0]
        for name, model in by_gpu_cols.items()
    }
    shape = {
        name: coded_column(text_array(cells[name], name, source), parse, name, order[name], problems)
        for name, parse in SHAPE_COLUMNS
        if name in cells
    }
    if "image_size" in shape:
        sized = shape["image_size"].present()
        if "image" in shape:
            sized &= ~shape["image"].present()
        texts = text_array(cells["image_size"], "image_size", source)
        report_rows(
            problems,
            np.flatnonzero(sized),
            order["image_size"],
            "image_size",
            lambda row: texts[row].as_py() or "",
            lambda _: "an image size needs an image name in column 'image'",
        )
    scale = float(time_scale)
    with np.errstate(over="ignore", invalid="ignore"):  # out-of-range products are reported below
        submit = times["submit_s"] * scale
        runtime = times["runtime_s"] * scale
        by_gpu = {model: values * scale for model, values in by_gpu.items()}
    if not problems:
        _check_scaled(problems, order, cells, time_scale, submit, runtime, by_gpu, by_gpu_cols)
    _raise(problems, ids)

    models = list(by_gpu)
    present = [~np.isnan(by_gpu[m]) for m in models]
    override_bits = np.zeros(rows, dtype=np.int64)
    for bit, mask in enumerate(present):
        override_bits |= mask.astype(np.int64) << bit
    key_columns = [col.codes.astype(np.int64) for col in shape.values()]
    key_columns.append(override_bits - 1)
    key = shape_codes(key_columns, rows)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")  # templates numbered in order of their first row
    renumber = np.empty(len(first), dtype=np.int32)
    renumber[by_first] = np.arange(len(first), dtype=np.int32)
    template = renumber[inverse.reshape(-1)]
    templates: list[Job] = []
    template_models: list[tuple[str, ...]] = []
    images: dict[tuple[str, int], Image] = {}
    for t in by_first.tolist():
        row = int(first[t])
        spec = _job_spec(row, shape, images)
        row_models = tuple(m for m, mask in zip(models, present, strict=True) if mask[row])
        run: dict[str, Any] = {"default": float(runtime[row])}
        if row_models:
            run["by_gpu"] = {m: float(by_gpu[m][row]) for m in row_models}
        spec.update(id=ids[row].as_py(), submit_s=float(submit[row]), runtime=run)
        try:
            templates.append(Job.model_validate(spec))
        except ValidationError as exc:
            _shape_problems(problems, order, exc, np.flatnonzero(template == renumber[t]))
            if problems.total >= problems.limit:
                break
        template_models.append(row_models)
    _raise(problems, ids)  # templates now hold one Job per shape
    pods = np.asarray([t.pods for t in templates], dtype=np.int32)[template]
    return JobTable(ids, submit, runtime, pods, template, templates, template_models, by_gpu), warnings


def _blank(_: int) -> str:
    return ""


def _required_seconds(_: int) -> str:
    return "required: give a number of seconds"


def _check_scaled(
    problems: CellProblems,
    order: dict[str, int],
    cells: dict[str, pa.Array],
    time_scale: float,
    submit: npt.NDArray[np.float64],
    runtime: npt.NDArray[np.float64],
    by_gpu: dict[str, npt.NDArray[np.float64]],
    by_gpu_cols: dict[str, str],
) -> None:
    """Submit times and runtimes once multiplied by ``time_scale`` must still be durations fleetlab models."""
    columns = {"submit_s": submit, "runtime_s": runtime}
    columns.update({name: by_gpu[model] for name, model in by_gpu_cols.items()})
    for name, values in columns.items():
        given = ~np.isnan(values) if name.startswith(RUNTIME_PREFIX) else np.ones(len(values), dtype=bool)
        bad = np.flatnonzero(given & ~(np.isfinite(values) & (values <= MAX_SECONDS)))
        if not len(bad):
            continue
        raw = cells[name]

        def reason(row: int, values: npt.NDArray[np.float64] = values) -> str:
            value = float(values[row])
            if not math.isfinite(value):
                return f"is out of range once multiplied by time_scale {time_scale}"
            try:
                parse_duration(value)
            except ValueError as exc:
                return str(exc)
            return "is out of range"  # pragma: no cover - parse_duration refuses what the mask refuses

        report_rows(problems, bad, order[name], name, lambda row, raw=raw: str(raw[row].as_py()), reason)


def _shape_problems(
    problems: CellProblems, order: dict[str, int], exc: ValidationError, rows: npt.NDArray[np.int64]
) -> None:
    """A template's validation errors, reported on every row of its shape."""
    for item in exc.errors(include_url=False):
        loc = item.get("loc", ())
        field = str(loc[0]) if loc else ""
        where = _FIELD_COLUMN.get(field, field or "<row>")
        msg = str(item.get("msg", "invalid")).removeprefix("Value error, ")
        value = repr(item.get("input"))[:60]
        report_rows(problems, rows, order.get(where, len(order)), where, _const(value), _const(msg))


def _const(text: str) -> Callable[[int], str]:
    """The same text for every row."""
    return lambda _: text


def _raise(problems: CellProblems, ids: pa.Array) -> None:
    """Raise the problems so far, naming each row's id."""
    if problems:
        problems.raise_if_any([v or None for v in ids.to_pylist()])
