"""The openb trace as the FGD experiment reads it: node shapes and pod requests with their GPU shares.

Unlike :mod:`fleetlab.spec.alibaba` (which turns pods into timed jobs and rounds GPU shares up), this keeps
``gpu_milli`` exactly, because the fragmentation experiment (Weng et al., USENIX ATC 2023) is about how
fractional pods strand GPU capacity; times are not read at all (the experiment replays arrivals only).
Bad cells raise SpecError naming row, column and value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from fleetlab.model.gpus import GPU_MODELS, known_gpu_models
from fleetlab.spec.alibaba import NODE_COLUMNS, POD_REQUIRED
from fleetlab.spec.errors import SpecError
from fleetlab.spec.table_cells import CellProblems, parse_cells, read_string_columns

IntArray = NDArray[np.int64]
MAX_GPUS_PER_NODE = 8


@dataclass(frozen=True)
class ShareNodes:
    """GPU nodes as arrays; ``model`` indexes ``models`` (-1 for CPU-only nodes)."""

    names: list[str]
    cpu_milli: IntArray
    memory_mib: IntArray
    gpus: IntArray
    model: IntArray
    models: list[str]


@dataclass(frozen=True)
class SharePods:
    """Pod requests as arrays: ``gpu_milli`` is per requested GPU; ``model_mask`` has bit i set when the
    pod may run on ``models[i]`` (0 = any model)."""

    names: list[str]
    cpu_milli: IntArray
    memory_mib: IntArray
    num_gpu: IntArray
    gpu_milli: IntArray
    model_mask: IntArray

    def __len__(self) -> int:
        return len(self.names)

    def take(self, index: IntArray) -> SharePods:
        """The pods at ``index``, in that order (clones keep their source name with a suffix)."""
        names = [self.names[int(i)] for i in index]
        return SharePods(
            names,
            self.cpu_milli[index],
            self.memory_mib[index],
            self.num_gpu[index],
            self.gpu_milli[index],
            self.model_mask[index],
        )


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError("must be a whole number >= 0") from None
    if value < 0:
        raise ValueError("must be a whole number >= 0")
    return value


def _model(text: str) -> str:
    if text not in GPU_MODELS:
        raise ValueError(
            f"unknown GPU model; known models: {', '.join(known_gpu_models())} (empty = CPU-only)"
        )
    return text


def load_share_nodes(path: Path) -> ShareNodes:
    """An openb node list (``sn,cpu_milli,memory_mib,gpu,model``), ordered by node name: the authors'
    scheduler breaks score ties by the smallest name, which is then the lowest index."""
    source = str(path)
    names, cells = read_string_columns(path, None, source)
    missing = [c for c in NODE_COLUMNS[1:] if c not in cells]
    if missing:
        raise SpecError(
            source, [f"required column {c!r} is missing ({','.join(NODE_COLUMNS)})" for c in missing]
        )
    rows = len(cells["cpu_milli"])
    if rows == 0:
        raise SpecError(source, ["the node list has no rows"])
    problems = CellProblems(source)
    order = {n: i for i, n in enumerate(names)}
    cpu = parse_cells(cells["cpu_milli"], _whole, "cpu_milli", order["cpu_milli"], problems)
    memory = parse_cells(cells["memory_mib"], _whole, "memory_mib", order["memory_mib"], problems)
    gpus = parse_cells(cells["gpu"], _whole, "gpu", order["gpu"], problems)
    model = parse_cells(cells["model"], _model, "model", order["model"], problems)
    for row in range(rows):
        if cpu[row] is None:
            problems.add(row, order["cpu_milli"], "cpu_milli", "", "required: the cell is empty")
        g = gpus[row] or 0
        if isinstance(g, int) and g > MAX_GPUS_PER_NODE:
            problems.add(row, order["gpu"], "gpu", str(g), f"at most {MAX_GPUS_PER_NODE} GPUs per node")
        if isinstance(g, int) and g > 0 and model[row] is None:
            problems.add(row, order["model"], "model", "", "a GPU node needs its GPU model")
    problems.raise_if_any()
    models = sorted({m for m in model if m})
    code = {m: i for i, m in enumerate(models)}
    sns = cells.get("sn") or [None] * rows
    node_names = [s or f"node-{i:05d}" for i, s in enumerate(sns)]
    by_name = np.asarray(sorted(range(rows), key=lambda i: node_names[i]), dtype=np.int64)
    return ShareNodes(
        names=[node_names[i] for i in by_name],
        cpu_milli=np.asarray(cpu, dtype=np.int64)[by_name],
        memory_mib=np.asarray([m or 0 for m in memory], dtype=np.int64)[by_name],
        gpus=np.asarray([g or 0 for g in gpus], dtype=np.int64)[by_name],
        model=np.asarray([code[m] if m else -1 for m in model], dtype=np.int64)[by_name],
        models=models,
    )


def load_share_pods(path: Path, models: list[str]) -> SharePods:
    """An openb pod list (``name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]``); ``gpu_spec``
    models must be among the node list's ``models`` (a pod asking only for absent models never fits)."""
    source = str(path)
    names, cells = read_string_columns(path, None, source)
    missing = [c for c in POD_REQUIRED if c not in cells]
    if missing:
        raise SpecError(source, [f"required column {c!r} is missing" for c in missing])
    rows = len(cells["name"])
    problems = CellProblems(source)
    order = {n: i for i, n in enumerate(names)}
    values = {
        n: parse_cells(cells[n], _whole, n, order[n], problems)
        for n in ("cpu_milli", "memory_mib", "num_gpu")
    }
    milli = parse_cells(cells["gpu_milli"], _whole, "gpu_milli", order["gpu_milli"], problems)
    code = {m: i for i, m in enumerate(models)}
    masks = np.zeros(rows, dtype=np.int64)
    spec_cells = cells.get("gpu_spec") or [None] * rows
    for row in range(rows):
        for n in ("cpu_milli", "memory_mib", "num_gpu"):
            if values[n][row] is None:
                problems.add(row, order[n], n, "", "required: the cell is empty")
        gpus, share = values["num_gpu"][row], milli[row]
        if not isinstance(gpus, int) or not isinstance(share, int):
            continue
        if share > 1000 or (gpus == 0 and share > 0) or (gpus > 0 and share == 0):
            problems.add(
                row, order["gpu_milli"], "gpu_milli", str(share), "must be 1..1000 with num_gpu >= 1, else 0"
            )
        elif gpus > 1 and share < 1000:
            problems.add(
                row, order["gpu_milli"], "gpu_milli", str(share), "a share below 1000 needs num_gpu 1"
            )
        elif gpus > MAX_GPUS_PER_NODE:
            problems.add(row, order["num_gpu"], "num_gpu", str(gpus), f"at most {MAX_GPUS_PER_NODE}")
        text = spec_cells[row]
        if text:
            wanted = {m.strip() for m in text.split("|") if m.strip()}
            unknown = sorted(m for m in wanted if m not in GPU_MODELS)
            if unknown:
                problems.add(
                    row, order["gpu_spec"], "gpu_spec", text, f"unknown GPU model {', '.join(unknown)}"
                )
            for m in wanted:
                masks[row] |= 1 << code[m] if m in code else 0
            if not masks[row]:
                masks[row] = 1 << 62  # only models the cluster does not have: never fits
    problems.raise_if_any([c for c in cells["name"]])
    return SharePods(
        names=[c or f"pod-{i}" for i, c in enumerate(cells["name"])],
        cpu_milli=np.asarray(values["cpu_milli"], dtype=np.int64),
        memory_mib=np.asarray(values["memory_mib"], dtype=np.int64),
        num_gpu=np.asarray(values["num_gpu"], dtype=np.int64),
        gpu_milli=np.asarray(milli, dtype=np.int64),
        model_mask=masks,
    )
