"""The Alibaba GPU cluster trace 2023 ("openb", Weng et al., USENIX ATC 2023) as fleetlab jobs and nodes.

Pod lists (``openb_pod_list_*.csv``) have the columns ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,
gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time``; each pod becomes a one-pod job:

* id = ``name``; submit time = ``creation_time``; runtime = ``deletion_time`` minus ``scheduled_time``
  (``creation_time`` where the pod was never scheduled), at least 1 s;
* requests: ``cpu_milli`` milli-cores, ``memory_mib`` MiB, ``num_gpu`` whole ``nvidia.com/gpu``. A pod that
  shares a GPU (``num_gpu`` 1 and ``gpu_milli`` below 1000) becomes a GPU share ``gpu_milli`` of one GPU
  (fleetlab.model.gpu_share), as the FGD simulator's ``alibabacloud.com/gpu-milli``; with ``round_up``
  (trace option ``round_up_gpu_shares``) it is rounded up to one whole GPU instead, with a warning;
* ``gpu_spec`` (``A|B``, empty = any model) becomes the required node affinity
  ``fleetlab.io/gpu-model In [A, B]``;
* ``qos``: LS -> inference, BE -> batch, Burstable/Guaranteed -> experiment; the qos is also the team.

Node lists (``openb_node_list_*.csv``: ``sn,cpu_milli,memory_mib,gpu,model``) become one node pool per
distinct node shape, GPU pools labelled ``fleetlab.io/gpu-model=<model>``. The trace has no prices.

The trace's terms allow study and research use only: nothing from its rows is shipped with fleetlab.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fleetlab.model.cluster import Cluster, NodePool
from fleetlab.model.gpus import GPU_MODELS, known_gpu_models
from fleetlab.model.job import Job, JobClass
from fleetlab.model.kube import Affinity
from fleetlab.model.resources import CPU, GPU, MEMORY
from fleetlab.spec.errors import SpecError, problems_from_validation
from fleetlab.spec.table_cells import (
    CellProblems,
    parse_cells,
    parse_int,
    read_string_columns,
    require_columns,
)

__all__ = ["GPU_MODEL_LABEL", "load_openb_nodes", "load_openb_pods"]

#: Node label holding the GPU model; openb ``gpu_spec`` constraints select on it.
GPU_MODEL_LABEL = "fleetlab.io/gpu-model"

POD_COLUMNS: tuple[str, ...] = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
POD_REQUIRED: tuple[str, ...] = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
NODE_COLUMNS: tuple[str, ...] = ("sn", "cpu_milli", "memory_mib", "gpu", "model")

QOS_CLASS: dict[str, JobClass] = {
    "LS": JobClass.INFERENCE,
    "BE": JobClass.BATCH,
    "Burstable": JobClass.EXPERIMENT,
    "Guaranteed": JobClass.EXPERIMENT,
}
POD_PHASES = ("Running", "Failed", "Pending", "Succeeded")

_MIB = 1024**2
_MAX_GPU_MILLI = 1000


def _whole(text: str) -> int:
    try:
        value = parse_int(text)
    except ValueError:
        raise ValueError("must be a whole number >= 0") from None
    if value < 0:
        raise ValueError("must be a whole number >= 0")
    return value


def _gpu_milli(text: str) -> int:
    value = _whole(text)
    if value > _MAX_GPU_MILLI:
        raise ValueError("must be 0..1000 (thousandths of each requested GPU; 1000 = a whole GPU)")
    return value


def _time(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("must be seconds from the trace start, a number >= 0") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError("must be seconds from the trace start, a number >= 0")
    return value


def _qos(text: str) -> str:
    if text not in QOS_CLASS:
        raise ValueError(f"must be one of {', '.join(QOS_CLASS)} (or empty)")
    return text


def _phase(text: str) -> str:
    if text not in POD_PHASES:
        raise ValueError(f"must be one of {', '.join(POD_PHASES)} (or empty)")
    return text


def _gpu_spec(text: str) -> Affinity | None:
    models = list(dict.fromkeys(m.strip() for m in text.split("|") if m.strip()))
    if not models:
        return None
    unknown = [m for m in models if m not in GPU_MODELS]
    if unknown:
        raise ValueError(
            f"unknown GPU model {', '.join(map(repr, unknown))}; use models joined by '|' from "
            + ", ".join(known_gpu_models())
        )
    expression = {"key": GPU_MODEL_LABEL, "operator": "In", "values": models}
    return Affinity.model_validate(
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expression]}]
                }
            }
        }
    )


@dataclass
class PodCells:
    """The openb pod columns every reader needs, parsed; bad cells are in ``problems`` (not raised yet)."""

    problems: CellProblems
    order: dict[str, int]
    ids: list[str | None]
    cpu: list[Any]
    memory: list[Any]
    num_gpu: list[Any]
    gpu_milli: list[Any]
    qos: list[Any]
    phase: list[Any]
    created: list[Any]
    deleted: list[Any]
    scheduled: list[Any]

    def require_filled(self, columns: tuple[str, ...]) -> None:
        """Record every empty cell of these columns as a problem."""
        values = {
            "cpu_milli": self.cpu,
            "memory_mib": self.memory,
            "num_gpu": self.num_gpu,
            "gpu_milli": self.gpu_milli,
            "pod_phase": self.phase,
            "creation_time": self.created,
            "deletion_time": self.deleted,
        }
        for name in columns:
            for row, value in enumerate(values[name]):
                if value is None:
                    self.problems.add(row, self.order[name], name, "", "required: the cell is empty")


def parse_pod_cells(names: list[str], cells: dict[str, list[str | None]], source: str) -> PodCells:
    """Parse the shared pod columns (names, requests, qos, phase, times) cell by cell."""
    problems = CellProblems(source)
    order = {n: i for i, n in enumerate(names)}
    column = column_parser(cells, order, problems)
    return PodCells(
        problems=problems,
        order=order,
        ids=pod_names(cells["name"], order["name"], problems),
        cpu=column("cpu_milli", _whole),
        memory=column("memory_mib", _whole),
        num_gpu=column("num_gpu", _whole),
        gpu_milli=column("gpu_milli", _gpu_milli),
        qos=column("qos", _qos),
        phase=column("pod_phase", _phase),
        created=column("creation_time", _time, cache=False),
        deleted=column("deletion_time", _time, cache=False),
        scheduled=column("scheduled_time", _time, cache=False),
    )


def column_parser(
    cells: dict[str, list[str | None]], order: dict[str, int], problems: CellProblems
) -> Callable[..., list[Any]]:
    """``column(name, parse, cache=True)``: one column's parsed cells (all None when it is absent)."""
    rows = len(next(iter(cells.values()))) if cells else 0

    def column(name: str, parse: Callable[[str], Any], cache: bool = True) -> list[Any]:
        if name not in cells:
            return [None] * rows
        return parse_cells(cells[name], parse, name, order[name], problems, cache)

    return column


def pod_names(names: list[str | None], order: int, problems: CellProblems) -> list[str | None]:
    """Stripped pod names; an empty or repeated name is recorded as a problem."""
    ids: list[str | None] = [None if c is None or not c.strip() else c.strip() for c in names]
    first_row: dict[str, int] = {}
    for row, name in enumerate(ids):
        if name is None:
            problems.add(row, order, "name", "", "every pod needs a name")
        elif name in first_row:
            problems.add(row, order, "name", name, f"name already used on row {first_row[name] + 1}")
        else:
            first_row[name] = row
    return ids


def _no_times_error(source: str, names: list[str]) -> SpecError:
    return SpecError(
        source,
        [
            f"this pod list has only the columns {','.join(names)} and no creation_time/deletion_time "
            "(the multigpu* variants of the openb trace are like that); fleetlab replays each pod's submit "
            "time and runtime from those times, so use a variant that has them (default, cpu*, gpushare*, "
            "gpuspec*)"
        ],
    )


def load_openb_pods(
    path: Path, limit: int | None = None, time_scale: float = 1.0, round_up: bool = False
) -> tuple[list[Job], list[str]]:
    """One job per openb pod (first ``limit`` rows, times multiplied by ``time_scale``), plus warnings.

    Bad cells raise SpecError naming row, column and value; see the module docstring for the mapping."""
    source = str(path)
    names, cells = read_string_columns(path, limit, source)
    require_columns(source, cells, POD_REQUIRED, f"an openb pod list has the columns {','.join(POD_COLUMNS)}")
    if "creation_time" not in cells or "deletion_time" not in cells:
        raise _no_times_error(source, names)
    warnings = [
        f"{source}: unknown column {n!r} ignored (openb pod lists have {','.join(POD_COLUMNS)})"
        for n in names
        if n not in POD_COLUMNS
    ]
    rows = len(cells["name"])
    if rows == 0:
        return [], [*warnings, f"{source}: the pod list has no rows"]

    pods = parse_pod_cells(names, cells, source)
    problems, order, ids = pods.problems, pods.order, pods.ids
    cpu, memory, num_gpu, gpu_milli = pods.cpu, pods.memory, pods.num_gpu, pods.gpu_milli
    qos, created, deleted, scheduled = pods.qos, pods.created, pods.deleted, pods.scheduled
    spec = column_parser(cells, order, problems)("gpu_spec", _gpu_spec)
    pods.require_filled(("cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "deletion_time"))
    problems.raise_if_any(ids)

    rounded = 0
    rounded_gpus = 0.0
    shared = 0
    short = 0
    never_started = 0
    scale = float(time_scale)
    jobs: list[Job] = []
    for row in range(rows):
        gpus, milli = num_gpu[row], gpu_milli[row]
        if gpus == 0 and milli > 0:
            problems.add(
                row,
                order["gpu_milli"],
                "gpu_milli",
                cells["gpu_milli"][row] or "",
                "a GPU share needs num_gpu >= 1 (CPU-only pods have gpu_milli 0)",
            )
            continue
        if gpus > 0 and milli == 0:
            problems.add(
                row,
                order["gpu_milli"],
                "gpu_milli",
                cells["gpu_milli"][row] or "",
                f"num_gpu {gpus} needs gpu_milli 1..1000 (1000 = whole GPUs)",
            )
            continue
        if gpus > 1 and milli < _MAX_GPU_MILLI:
            problems.add(
                row,
                order["gpu_milli"],
                "gpu_milli",
                cells["gpu_milli"][row] or "",
                f"a GPU share below 1000 is only defined for num_gpu 1 (this pod has num_gpu {gpus})",
            )
            continue
        share = gpus == 1 and milli < _MAX_GPU_MILLI
        shared += share
        if share and round_up:
            rounded += 1
            rounded_gpus += 1 - milli / _MAX_GPU_MILLI
        start = scheduled[row]
        if start is None:
            never_started += 1
            start = created[row]
        lifetime = deleted[row] - start
        if lifetime < 0:
            where = "scheduled_time" if scheduled[row] is not None else "creation_time"
            problems.add(
                row,
                order["deletion_time"],
                "deletion_time",
                cells["deletion_time"][row] or "",
                f"is earlier than {where} {start:g}",
            )
            continue
        if lifetime < 1:
            short += 1
            lifetime = 1.0
        milli_cpu = cpu[row]
        requests: dict[str, int | str] = {
            CPU: milli_cpu // 1000 if milli_cpu % 1000 == 0 else f"{milli_cpu}m",
            MEMORY: memory[row] * _MIB,
        }
        if gpus and not (share and not round_up):
            requests[GPU] = gpus
        data: dict[str, Any] = {
            "id": ids[row],
            "submit_s": created[row] * scale,
            "team": qos[row] or "default",
            "requests": requests,
            "runtime": lifetime * scale,
        }
        if share and not round_up:
            data["gpu_milli"] = milli
        if qos[row] is not None:
            data["class"] = QOS_CLASS[qos[row]]
        if spec[row] is not None:
            data["affinity"] = spec[row]
        try:
            jobs.append(Job.model_validate(data))
        except ValidationError as exc:
            for message in problems_from_validation(exc):
                problems.add_row(row, message)
        if problems.total >= problems.limit:
            break
    problems.raise_if_any(ids)

    if rounded:
        warnings.append(
            f"{source}: {rounded} of {len(jobs)} pods share a GPU (num_gpu 1 with gpu_milli below 1000); "
            f"round_up_gpu_shares is set, so each was rounded up to 1 whole GPU "
            f"({rounded_gpus:.1f} GPUs more than the trace requests)"
        )
    if shared and not round_up:
        warnings.append(
            f"{source}: {shared} of {len(jobs)} pods share a GPU (num_gpu 1 with gpu_milli below 1000); "
            "each takes its gpu_milli of one GPU (trace option round_up_gpu_shares: true rounds them up)"
        )
    if short:
        warnings.append(
            f"{source}: {short} pod(s) ran for under 1 s in the trace and were given a 1 s runtime"
        )
    if never_started:
        warnings.append(
            f"{source}: {never_started} pod(s) were never scheduled in the trace (no scheduled_time); "
            "their runtime is their lifetime from creation_time to deletion_time"
        )
    return jobs, warnings


def _cpu_name(milli: int) -> str:
    return f"{milli // 1000}cpu" if milli % 1000 == 0 else f"{milli}mcpu"


def _memory_name(mib: int) -> str:
    return f"{mib // 1024}gi" if mib % 1024 == 0 else f"{mib}mi"


def _slug(text: str) -> str:
    out = "".join(c if c.isascii() and (c.isalnum() or c in "-.") else "-" for c in text.lower())
    return out.strip("-.") or "gpu"


def load_openb_nodes(path: Path) -> Cluster:
    """An openb node list as a cluster: one pool per distinct (model, gpu, cpu_milli, memory_mib).

    Pools come in order of first appearance, named ``openb-<model>-<n>gpu-<cpu>cpu`` (``openb-cpu-<cpu>cpu``
    for CPU-only nodes), with the memory appended where two shapes would otherwise share a name."""
    source = str(path)
    names, cells = read_string_columns(path, None, source)
    require_columns(
        source, cells, NODE_COLUMNS[1:], f"an openb node list has the columns {','.join(NODE_COLUMNS)}"
    )
    rows = len(cells["cpu_milli"])
    if rows == 0:
        raise SpecError(source, ["the node list has no rows; a cluster needs at least one node"])
    problems = CellProblems(source)
    order = {n: i for i, n in enumerate(names)}
    sns: list[str | None] = cells.get("sn", [None] * rows)

    def model_cell(text: str) -> str:
        if text not in GPU_MODELS:
            raise ValueError(
                f"unknown GPU model; known models: {', '.join(known_gpu_models())} (empty = CPU-only)"
            )
        return text

    values = {
        n: parse_cells(cells[n], parse, n, order[n], problems)
        for n, parse in (
            ("cpu_milli", _whole),
            ("memory_mib", _whole),
            ("gpu", _whole),
            ("model", model_cell),
        )
    }
    for name in ("cpu_milli", "memory_mib", "gpu"):
        for row, value in enumerate(values[name]):
            if value is None:
                problems.add(row, order[name], name, "", "required: the cell is empty")
    counts: dict[tuple[str | None, int, int, int], int] = {}
    for row in range(rows):
        model, gpus = values["model"][row], values["gpu"][row]
        if gpus and model is None:
            problems.add(row, order["model"], "model", "", f"a node with {gpus} GPUs needs a GPU model")
        elif model is not None and gpus == 0:
            problems.add(
                row, order["gpu"], "gpu", cells["gpu"][row] or "", f"GPU model {model} needs gpu >= 1"
            )
        key = (model, gpus or 0, values["cpu_milli"][row] or 0, values["memory_mib"][row] or 0)
        counts[key] = counts.get(key, 0) + 1
    problems.raise_if_any(sns)

    def base(key: tuple[str | None, int, int, int]) -> str:
        model, gpus, milli, _ = key
        if model is None:
            return f"openb-cpu-{_cpu_name(milli)}"
        return f"openb-{_slug(model)}-{gpus}gpu-{_cpu_name(milli)}"

    bases: dict[str, int] = {}
    for key in counts:
        bases[base(key)] = bases.get(base(key), 0) + 1
    pools: list[NodePool] = []
    for key, count in counts.items():
        model, gpus, milli, mib = key
        name = base(key) if bases[base(key)] == 1 else f"{base(key)}-{_memory_name(mib)}"
        try:
            pools.append(
                NodePool(
                    name=name,
                    count=count,
                    gpu_model=model,
                    gpus_per_node=gpus,
                    cpu=f"{milli}m",
                    memory=mib * _MIB,
                    labels={GPU_MODEL_LABEL: model} if model is not None else {},
                )
            )
        except ValidationError as exc:
            raise SpecError(source, problems_from_validation(exc, f"pool {name}")) from None
    return Cluster(pools=tuple(pools))
