"""A measured cluster history: what really happened, as imported from a cluster's records.

Every importer (kubectl JSON, Kueue Workloads, Prometheus, Slurm, public traces, bills) produces the same
three Arrow tables, so ``baseline`` and ``calibrate`` never know which source a row came from. Times are
seconds from the history's ``epoch`` (the earliest submit seen), as float64; a missing time is null, never
zero, so a job that never started is censored rather than counted as starting at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import pyarrow as pa

from fleetlab.model.history_policy import HistoryPolicy

__all__ = [
    "BILL_SCHEMA",
    "JOB_SCHEMA",
    "JOB_STATES",
    "NODE_DOWN_SCHEMA",
    "NODE_DOWN_STATES",
    "NODE_SCHEMA",
    "NODE_USAGE_SCHEMA",
    "History",
    "HistoryPolicy",
    "empty_history",
]

#: A job's final (or last seen) state. ``pending``/``running`` rows are censored: the record ended before
#: the job started/finished.
JOB_STATES: Final[tuple[str, ...]] = ("completed", "failed", "running", "pending", "cancelled")

#: One row per job (pods of one owner: Job, JobSet, PyTorchJob, LeaderWorkerSet, ReplicaSet, a Slurm job,
#: a trace row). Times in seconds from the epoch; durations in seconds.
JOB_SCHEMA: Final[pa.Schema] = pa.schema(
    [
        pa.field("job_id", pa.string(), nullable=False),  # namespace/owner-kind/name, Slurm JobID, trace id
        pa.field("source", pa.string(), nullable=False),  # kubectl, prometheus, slurm, alibaba, philly, swf
        pa.field("owner_kind", pa.string()),  # Job, JobSet, PyTorchJob, ..., Pod (no owner)
        pa.field("namespace", pa.string()),
        pa.field("team", pa.string()),  # label team / namespace / Slurm Account
        pa.field("queue", pa.string()),  # Kueue LocalQueue / ClusterQueue, Slurm Partition
        pa.field("job_class", pa.string(), nullable=False),  # training | inference | batch | experiment
        pa.field("priority", pa.int64()),
        pa.field("pods", pa.int32(), nullable=False),
        pa.field("gpus_per_pod", pa.float64(), nullable=False),  # whole GPUs; a share is gpu_milli / 1000
        pa.field("gpu_milli_per_pod", pa.int32()),  # 1..1000 for a share of one GPU, else null
        pa.field("cpu_per_pod", pa.float64(), nullable=False),  # cores
        pa.field("memory_per_pod", pa.int64(), nullable=False),  # bytes
        pa.field("gpu_model", pa.string()),  # fleetlab GPU model of the node it ran on (or required)
        pa.field("submit_s", pa.float64(), nullable=False),  # creation / Submit
        pa.field("admitted_s", pa.float64()),  # Kueue QuotaReserved (null without Kueue)
        pa.field("scheduled_s", pa.float64()),  # first PodScheduled=True / Slurm Start
        pa.field("running_s", pa.float64()),  # first container started (after image pull, data download)
        pa.field("end_s", pa.float64()),  # finished / deleted / Slurm End; null while running or pending
        pa.field("state", pa.string(), nullable=False),  # one of JOB_STATES
        pa.field("end_reason", pa.string()),  # Completed, OOMKilled, Error, PREEMPTED, NODE_FAIL, TIMEOUT...
        pa.field("restarts", pa.int32(), nullable=False),  # container restarts + requeues
        pa.field("evictions", pa.int32(), nullable=False),  # preemptions, Kueue evictions, node failures
        pa.field("nodes", pa.string()),  # comma-separated node names the job ran on
        pa.field("gpu_util_mean", pa.float64()),  # measured (DCGM), 0..1, null where not measured
        pa.field("gpu_mem_used_max", pa.float64()),  # measured framebuffer bytes, null where not measured
        pa.field("image_pull_s", pa.float64()),  # measured image pull time (Pulled events), max over pods
        pa.field("run_s", pa.float64()),  # measured run time: end_s - running_s
        pa.field("user", pa.string()),  # who submitted it: Slurm User, SWF user number, pod's user label
        pa.field("walltime_s", pa.float64()),  # requested wall time (SWF field 9, Slurm Timelimit)
        pa.field("qos", pa.string()),  # Slurm QOS the job ran under (null elsewhere)
    ]
)

#: One row per node seen in the history.
NODE_SCHEMA: Final[pa.Schema] = pa.schema(
    [
        pa.field("node", pa.string(), nullable=False),
        pa.field("pool", pa.string()),  # node pool / instance type / node shape
        pa.field("gpu_model", pa.string()),
        pa.field("gpus", pa.int32(), nullable=False),
        pa.field("cpu", pa.float64(), nullable=False),  # allocatable cores
        pa.field("memory", pa.int64(), nullable=False),  # allocatable bytes
        pa.field("instance_type", pa.string()),
        pa.field("capacity_type", pa.string()),  # on-demand | spot | reserved | owned
        pa.field("zone", pa.string()),
        pa.field("labels_json", pa.string()),  # the node's labels as a JSON object (sorted keys)
        pa.field("created_s", pa.float64()),  # null: present from before the history began
        pa.field("deleted_s", pa.float64()),  # null: still present when the history ended
    ]
)

#: One row per window during which a node (or, with a null ``node``, every node) took no new work:
#: ``down`` (failed, not ready: its pods were lost) or ``drain`` (cordoned: running pods went on). From
#: ``sacctmgr show event`` and Kubernetes node conditions and events. A null ``end_s``: still so at the end.
NODE_DOWN_SCHEMA: Final[pa.Schema] = pa.schema(
    [
        pa.field("node", pa.string()),
        pa.field("start_s", pa.float64(), nullable=False),
        pa.field("end_s", pa.float64()),
        pa.field("state", pa.string(), nullable=False),  # down | drain
        pa.field("reason", pa.string()),
        pa.field("source", pa.string(), nullable=False),
    ]
)
#: One row per node and instant a node-usage snapshot recorded what was allocated on the node (``scontrol
#: show node``: CPUAlloc, AllocTRES gres/gpu, AllocMem) — whoever held it, listed jobs or not.
NODE_USAGE_SCHEMA: Final[pa.Schema] = pa.schema(
    [
        pa.field("node", pa.string(), nullable=False),
        pa.field("time_s", pa.float64(), nullable=False),
        pa.field("cpu", pa.float64(), nullable=False),  # cores allocated
        pa.field("gpus", pa.int64(), nullable=False),
        pa.field("memory", pa.int64(), nullable=False),  # bytes
    ]
)
#: The states a node-down window may have.
NODE_DOWN_STATES: Final[tuple[str, ...]] = ("down", "drain")

#: One row per bill line (FOCUS or a cloud export), in the bill's own currency.
BILL_SCHEMA: Final[pa.Schema] = pa.schema(
    [
        pa.field("charge_start_s", pa.float64(), nullable=False),
        pa.field("charge_end_s", pa.float64(), nullable=False),
        pa.field("resource_id", pa.string()),
        pa.field("sku", pa.string()),
        pa.field("pricing_category", pa.string()),  # On-Demand | Commitment-Based | Dynamic (spot) | Other
        pa.field("region", pa.string()),
        pa.field("billed_cost", pa.float64(), nullable=False),
        pa.field("effective_cost", pa.float64(), nullable=False),
        pa.field("currency", pa.string(), nullable=False),
        pa.field("tags_json", pa.string()),
    ]
)


@dataclass(frozen=True)
class History:
    """Imported records: jobs, nodes and (optionally) bill lines, with the reasons rows were skipped.

    ``epoch`` is the ISO-8601 UTC instant time 0 stands for; ``end_s`` is when the record ends (the
    export / query time): jobs still pending or running then are censored at ``end_s``. ``node_down`` and
    ``policy`` hold what the cluster recorded of outages and of its queueing policy (quotas, limits,
    fair share), kept even where a replay cannot use them yet; ``notes`` are what importers assumed.
    """

    jobs: pa.Table
    nodes: pa.Table
    bill: pa.Table
    epoch: str
    end_s: float
    sources: tuple[str, ...] = ()
    skipped: dict[str, int] = field(default_factory=dict)
    node_down: pa.Table = field(default_factory=NODE_DOWN_SCHEMA.empty_table)
    policy: HistoryPolicy = field(default_factory=HistoryPolicy)
    notes: tuple[str, ...] = ()
    #: Recorded node allocation over time (NODE_USAGE_SCHEMA); empty when no source recorded it.
    node_usage: pa.Table = field(default_factory=NODE_USAGE_SCHEMA.empty_table)


def empty_history(epoch: str = "1970-01-01T00:00:00Z") -> History:
    """A history with no rows, for importers to start from and tests to compare against."""
    return History(
        jobs=JOB_SCHEMA.empty_table(),
        nodes=NODE_SCHEMA.empty_table(),
        bill=BILL_SCHEMA.empty_table(),
        epoch=epoch,
        end_s=0.0,
    )
