"""The Alibaba GPU trace 2023 ("openb") pod and node lists as a measured :class:`History`.

Unlike ``fleetlab.spec.alibaba`` (which turns the pod list into jobs to *replay*), this reader keeps what
the trace *measured*: each pod's creation, scheduled and deletion time and its last phase. Mapping, one
pod = one job (``owner_kind`` Pod):

* ``submit_s`` = ``creation_time``; ``scheduled_s`` = ``running_s`` = ``scheduled_time`` (the trace has no
  container start, so preparation is not measured and reads as 0); ``end_s`` = ``deletion_time``;
* state from ``pod_phase`` and the deletion time: Succeeded -> completed, Failed -> failed; Running ->
  running when deleted at the trace's last instant (still running when the record ends, ``end_s`` null),
  else completed with end_reason ``Deleted``; Pending -> pending when deleted at the last instant, else
  cancelled with end_reason ``DeletedWhilePending`` (its wait is censored at the deletion);
* ``qos`` is the team and, through ``fleetlab.spec.alibaba.QOS_CLASS``, the job class; ``gpu_spec`` (models
  joined by ``|``) is kept in ``gpu_model``; a GPU share keeps ``gpu_milli`` and counts
  ``gpu_milli / 1000`` GPUs.

The history ends at the latest time in the pod list. The trace's terms allow research use only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from fleetlab.model.history import BILL_SCHEMA, JOB_SCHEMA, NODE_SCHEMA, History
from fleetlab.spec.alibaba import POD_COLUMNS, QOS_CLASS, load_openb_nodes, parse_pod_cells
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import JobRecord, NodeRecord, SourceData, head_bytes
from fleetlab.spec.table_cells import read_string_columns, require_columns

__all__ = ["EPOCH", "load_alibaba_history", "openb_node_table", "read_alibaba"]

#: The trace gives seconds from its own start; the calendar instant is not published.
EPOCH = "1970-01-01T00:00:00Z"

_HISTORY_REQUIRED = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
_MIB = 1024**2


def openb_node_table(path: Path) -> pa.Table:
    """The node list as NODE_SCHEMA rows (pool = the shape pool ``load_openb_nodes`` names)."""
    cluster = load_openb_nodes(path)  # validates every cell, or raises
    _, cells = read_string_columns(path, None, str(path))
    rows = len(cells["cpu_milli"])
    sns = cells.get("sn") or [None] * rows
    keys = [
        (
            cells["model"][r] or None,
            int(cells["gpu"][r] or 0),
            int(cells["cpu_milli"][r] or 0),
            int(cells["memory_mib"][r] or 0),
        )
        for r in range(rows)
    ]
    pool_of = dict(zip(dict.fromkeys(keys), (p.name for p in cluster.pools), strict=True))
    names = [sn.strip() if sn and sn.strip() else f"openb-node-row{r + 1}" for r, sn in enumerate(sns)]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise SpecError(str(path), [f"node name {name!r} appears more than once in column 'sn'"])
        seen.add(name)
    return pa.Table.from_pydict(
        {
            "node": names,
            "pool": [pool_of[k] for k in keys],
            "gpu_model": [k[0] for k in keys],
            "gpus": [k[1] for k in keys],
            "cpu": [k[2] / 1000.0 for k in keys],
            "memory": [k[3] * _MIB for k in keys],
            "instance_type": [None] * rows,
            "capacity_type": ["owned"] * rows,
            "zone": [None] * rows,
            "labels_json": ['{"fleetlab.io/gpu-model": "' + k[0] + '"}' if k[0] else "{}" for k in keys],
            "created_s": [None] * rows,
            "deleted_s": [None] * rows,
        },
        schema=NODE_SCHEMA,
    )


def load_alibaba_history(pod_csv: Path, node_csv: Path | None = None) -> History:
    """Read an openb pod list (and optionally its node list) into a History; bad cells raise SpecError."""
    source = str(pod_csv)
    names, cells = read_string_columns(pod_csv, None, source)
    require_columns(
        source,
        cells,
        _HISTORY_REQUIRED,
        f"a measured history needs the openb columns {','.join(POD_COLUMNS)} "
        "(the multigpu* variants have no times and cannot be baselined)",
    )
    rows = len(cells["name"])
    if rows == 0:
        raise SpecError(source, ["the pod list has no rows; a history needs at least one pod"])
    pods = parse_pod_cells(names, cells, source)
    problems, order, ids = pods.problems, pods.order, pods.ids
    cpu, memory, num_gpu, milli = pods.cpu, pods.memory, pods.num_gpu, pods.gpu_milli
    qos, phase, created, deleted, scheduled = pods.qos, pods.phase, pods.created, pods.deleted, pods.scheduled
    spec = cells.get("gpu_spec") or [None] * rows
    pods.require_filled(_HISTORY_REQUIRED[1:-1])
    problems.raise_if_any(ids)
    for row in range(rows):
        start = scheduled[row]
        if start is not None and start < created[row]:
            problems.add(
                row,
                order["scheduled_time"],
                "scheduled_time",
                cells["scheduled_time"][row] or "",
                f"is earlier than creation_time {created[row]:g} (the clock goes backwards)",
            )
        if deleted[row] < (start if start is not None else created[row]):
            problems.add(
                row,
                order["deletion_time"],
                "deletion_time",
                cells["deletion_time"][row] or "",
                "is earlier than the pod's scheduled/creation time (the clock goes backwards)",
            )
        if phase[row] != "Pending" and start is None:
            problems.add(
                row,
                order["scheduled_time"],
                "scheduled_time",
                "",
                f"a {phase[row]} pod must have been scheduled; only Pending pods may leave it empty",
            )
        if phase[row] == "Pending" and start is not None:
            problems.add(
                row,
                order["scheduled_time"],
                "scheduled_time",
                cells["scheduled_time"][row] or "",
                "a Pending pod was never scheduled; leave the cell empty",
            )
        g, m = num_gpu[row], milli[row]
        if (g == 0) != (m == 0) or (g > 1 and m < 1000):
            problems.add(
                row,
                order["gpu_milli"],
                "gpu_milli",
                cells["gpu_milli"][row] or "",
                "must be 0 for CPU-only pods, 1..999 only with num_gpu 1, else 1000",
            )
        if problems.total >= problems.limit:
            break
    problems.raise_if_any(ids)

    end = float(max(max(deleted), max(created)))
    submit = np.asarray(created, dtype=np.float64)
    sched = np.asarray([np.nan if s is None else s for s in scheduled], dtype=np.float64)
    gone = np.asarray(deleted, dtype=np.float64)
    phases = np.asarray(phase, dtype=object)
    at_end = gone >= end
    state = np.select(
        [
            phases == "Succeeded",
            phases == "Failed",
            (phases == "Running") & at_end,
            phases == "Running",
            (phases == "Pending") & at_end,
        ],
        ["completed", "failed", "running", "completed", "pending"],
        default="cancelled",
    )
    reason = np.select(
        [
            phases == "Succeeded",
            phases == "Failed",
            (phases == "Running") & ~at_end,
            (phases == "Pending") & ~at_end,
        ],
        ["Succeeded", "Failed", "Deleted", "DeletedWhilePending"],
        default="",
    )
    open_end = (state == "running") | (state == "pending")
    gpus = np.asarray(num_gpu, dtype=np.float64)
    share = np.asarray(milli, dtype=np.int64)
    is_share = (gpus == 1) & (share < 1000) & (share > 0)
    sched_list = [None if np.isnan(s) else float(s) for s in sched]
    jobs = pa.Table.from_pydict(
        {
            "job_id": ids,
            "source": ["alibaba"] * rows,
            "owner_kind": ["Pod"] * rows,
            "namespace": [None] * rows,
            "team": [q or "default" for q in qos],
            "queue": [None] * rows,
            "job_class": [QOS_CLASS[q].value if q else "batch" for q in qos],
            "priority": [None] * rows,
            "pods": [1] * rows,
            "gpus_per_pod": np.where(is_share, share / 1000.0, gpus),
            "gpu_milli_per_pod": [int(m) if s else None for m, s in zip(share, is_share, strict=True)],
            "cpu_per_pod": np.asarray(cpu, dtype=np.float64) / 1000.0,
            "memory_per_pod": np.asarray(memory, dtype=np.int64) * _MIB,
            "gpu_model": [s.strip() if s and s.strip() else None for s in spec],
            "submit_s": submit,
            "admitted_s": [None] * rows,
            "scheduled_s": sched_list,
            "running_s": sched_list,
            "end_s": [None if o else float(t) for o, t in zip(open_end, gone, strict=True)],
            "state": state.tolist(),
            "end_reason": [r or None for r in reason.tolist()],
            "restarts": [0] * rows,
            "evictions": [0] * rows,
            "nodes": [None] * rows,
            "gpu_util_mean": [None] * rows,
            "gpu_mem_used_max": [None] * rows,
            "image_pull_s": [None] * rows,
            "run_s": [
                None if o or s is None else max(float(t) - s, 0.0)
                for o, t, s in zip(open_end, gone, sched_list, strict=True)
            ],
            "user": [None] * rows,
            "walltime_s": [None] * rows,
            "qos": [None] * rows,
        },
        schema=JOB_SCHEMA,
    )
    nodes = openb_node_table(node_csv) if node_csv is not None else NODE_SCHEMA.empty_table()
    return History(
        jobs=jobs,
        nodes=nodes,
        bill=BILL_SCHEMA.empty_table(),
        epoch=EPOCH,
        end_s=end,
        sources=("alibaba",),
    )


#: JOB_SCHEMA / NODE_SCHEMA time columns and the record attributes they come from.
_JOB_TIMES = {"submit_s": "submit", "admitted_s": "admitted", "scheduled_s": "scheduled",
              "running_s": "running", "end_s": "end"}  # fmt: skip
_NODE_TIMES = {"created_s": "created", "deleted_s": "deleted"}


def read_alibaba(path: Path) -> SourceData:
    """An openb pod list or node list (told apart by the header: ``sn,...`` is a node list) as one source
    of ``fleetlab import``; times stay seconds from the trace's start, so the history's epoch is 1970."""
    data = SourceData(label=str(path), kind="alibaba")
    header = head_bytes(path, 4096).decode("utf-8", errors="replace").lstrip("\ufeff").split("\n", 1)[0]
    if header.split(",", 1)[0].strip() == "sn":
        for row in openb_node_table(path).to_pylist():
            data.nodes.append(NodeRecord(**{_NODE_TIMES.get(k, k): v for k, v in row.items()}))
        return data
    history = load_alibaba_history(path)
    for row in history.jobs.to_pylist():
        data.jobs.append(JobRecord(**{_JOB_TIMES.get(k, k): v for k, v in row.items()}))
    data.end = history.end_s  # the trace's last instant: pods still there then are running or pending
    return data
