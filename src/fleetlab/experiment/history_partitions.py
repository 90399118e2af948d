"""Slurm's recorded partitions, preemption and backfill settings in the calibrated scenario
(docs/calibration.md, "Slurm partitions, preemption and backfill"), written as parts a user can read and
change: node labels and node selectors, PriorityClasses, a ``batch_preemption`` section and the
scheduler's backfill fields.

* **Partitions** (``scontrol show partition``): every node of a partition carries the label
  ``partition.slurm.fleetlab.io/NAME: "true"`` (a node in several partitions carries several, so
  overlapping partitions share it, and nodes with different partitions become different pools); a job
  replays only on its partition's nodes — ``nodeSelector`` for one partition, a required node affinity
  with one term per partition for a job that named several; a job naming none uses the ``Default=YES``
  partition. A job naming a partition that was not recorded keeps no constraint (a note says how many).
* **PriorityTier** orders the queue: when the jobs' partitions have more than one tier, each job gets the
  PriorityClass ``slurm-tier-N`` (value N, ``preemptionPolicy: Never``: ordering, not kube-scheduler
  preemption), so a higher tier's jobs are considered first; within a tier, the recorded order rules
  (fair share when recorded, then submit time).
* **Preemption** (``PreemptType`` of ``scontrol show config``): ``preempt/qos`` becomes
  ``batch_preemption`` with a class per recorded QOS (its ``Preempt`` list, ``Priority`` and
  ``PreemptMode``, else the cluster's) and each job labelled ``fleetlab.io/qos`` with its QOS;
  ``preempt/partition_prio`` a class per partition that preempts the partitions of lower tiers (their
  ``PreemptMode``, else the cluster's), jobs labelled ``fleetlab.io/partition``. With either, the
  replay's kube-scheduler priority preemption is off (Slurm preempts by these rules only).
* **Backfill** (``SchedulerType=sched/backfill``): the scenario's ``backfill_interval_s``,
  ``backfill_window_s`` and ``backfill_depth`` from ``bf_interval``, ``bf_window``, ``bf_max_job_test``,
  Slurm's defaults (30 s, 1440 min, 500; slurm.conf(5)) where the record gives none. They apply when the
  replay's queueing is ``easy-backfill``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fleetlab.model.batch_policy import PARTITION_LABEL, QOS_LABEL, BatchPreemption
from fleetlab.model.history import History
from fleetlab.model.history_policy import SlurmPartition

PARTITION_KEY_PREFIX = "partition.slurm.fleetlab.io/"
TIER_CLASS_PREFIX = "slurm-tier-"
#: Slurm's defaults for the backfill parameters (slurm.conf(5), SchedulerParameters).
BF_INTERVAL_S = 30.0
BF_WINDOW_S = 1440 * 60.0
BF_MAX_JOB_TEST = 500
_MODES = {"OFF": "off", "CANCEL": "cancel", "REQUEUE": "requeue", "SUSPEND": "suspend"}


def partition_key(name: str) -> str:
    """The node label key of a partition (its name cut to a label name's 63 characters, other characters
    as ``-``)."""
    clean = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-_.")[:63].rstrip("-_.")
    return PARTITION_KEY_PREFIX + (clean or "partition")


def label_partition_nodes(nodes: list[dict[str, Any]], partitions: tuple[SlurmPartition, ...]) -> None:
    """Add each partition's label to the node rows (``labels_json``) of its nodes."""
    if not partitions:
        return
    member: dict[str, list[str]] = {}
    for p in partitions:
        for node in p.nodes:
            member.setdefault(node, []).append(partition_key(p.name))
    for n in nodes:
        keys = member.get(str(n["node"]))
        if keys:
            labels = json.loads(n["labels_json"] or "{}")
            labels.update(dict.fromkeys(keys, "true"))
            n["labels_json"] = json.dumps(labels, sort_keys=True, separators=(",", ":"))


class SlurmPlacement:
    """Per job the partition constraint, PriorityClass and class label the recorded policy gives."""

    def __init__(self, history: History) -> None:
        policy = history.policy
        self.partitions = {p.name: p for p in policy.slurm_partitions}
        defaults = [p.name for p in policy.slurm_partitions if p.default]
        self.default = defaults[:1]
        tiers = {p.priority_tier for p in policy.slurm_partitions}
        self.tiered = len(tiers) > 1
        self.preempt_type = (policy.slurm_scheduler.preempt_type or "").lower()
        self.by_qos = self.preempt_type == "preempt/qos" and bool(policy.slurm_qos)
        self.by_partition = self.preempt_type == "preempt/partition_prio" and self.tiered
        self.unknown = 0

    def names(self, queue: str | None) -> list[str]:
        """The recorded partitions a job's ``queue`` names (comma-separated), else the default one."""
        named = [q.strip() for q in (queue or "").split(",") if q.strip()]
        if not named:
            return list(self.default)
        known = [q for q in named if q in self.partitions]
        if len(known) < len(named) and self.partitions:
            self.unknown += 1
        return known

    def fields(self, queue: str | None, qos: str | None, gpu_term: dict[str, Any] | None) -> dict[str, Any]:
        """The job fields: ``nodeSelector`` or ``affinity`` (``gpu_term``, the GPU model expression, joined
        to each partition term), ``priorityClassName`` and ``labels``."""
        names = self.names(queue) if self.partitions else []
        out: dict[str, Any] = {}
        if len(names) == 1:
            out["nodeSelector"] = {partition_key(names[0]): "true"}
        elif len(names) > 1:
            terms = [
                {"matchExpressions": [*([gpu_term] if gpu_term else []),
                                      {"key": partition_key(n), "operator": "In", "values": ["true"]}]}
                for n in names
            ]  # fmt: skip
            out["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            }
        if self.tiered and names:
            tier = max(self.partitions[n].priority_tier for n in names)
            out["priorityClassName"] = f"{TIER_CLASS_PREFIX}{tier}"
        labels = {}
        if self.by_qos and qos:
            labels[QOS_LABEL] = qos
        if self.by_partition and names:
            labels[PARTITION_LABEL] = names[0]
        if labels:
            out["labels"] = labels
        return out


def partition_notes(history: History) -> list[str]:
    """A note counting the jobs that name a partition the record does not have (they replay anywhere)."""
    placement = SlurmPlacement(history)
    if not placement.partitions:
        return []
    for queue in history.jobs.column("queue").to_pylist():
        placement.names(queue)
    if not placement.unknown:
        return []
    return [
        f"{placement.unknown} job(s) name a partition that `scontrol show partition` did not record: they "
        "replay on any node"
    ]


def tier_classes(history: History) -> list[dict[str, Any]]:
    """A PriorityClass per partition tier, when the partitions have more than one."""
    tiers = sorted({p.priority_tier for p in history.policy.slurm_partitions})
    if len(tiers) < 2:
        return []
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": f"{TIER_CLASS_PREFIX}{t}"}, "value": t, "preemptionPolicy": "Never",
         "description": f"Slurm partitions of PriorityTier {t}"}
        for t in tiers
    ]  # fmt: skip


def _mode(text: str | None, cluster: str | None) -> str:
    """A PreemptMode (``REQUEUE,GANG``, ``Cluster``) as a class mode; the cluster's where it says so."""
    word = (text or "").split(",")[0].strip().upper()
    if word in ("", "CLUSTER"):
        word = (cluster or "OFF").split(",")[0].strip().upper()
    return _MODES.get(word, "off")


def batch_preemption(history: History) -> BatchPreemption | None:
    """The recorded preemption rules (module docstring), or None."""
    policy = history.policy
    placement = SlurmPlacement(history)
    cluster = policy.slurm_scheduler.preempt_mode
    if placement.by_qos:
        names = {q.name for q in policy.slurm_qos}
        classes = [
            {"name": q.name, "priority": q.priority or 0, "mode": _mode(q.preempt_mode, cluster),
             "preempts": sorted(set(q.preempt) & names)}
            for q in policy.slurm_qos
        ]  # fmt: skip
        return BatchPreemption.model_validate({"label": QOS_LABEL, "classes": classes})
    if placement.by_partition:
        parts = policy.slurm_partitions
        classes = [
            {"name": p.name, "priority": p.priority_tier, "mode": _mode(p.preempt_mode, cluster),
             "preempts": sorted(o.name for o in parts if o.priority_tier < p.priority_tier)}
            for p in parts
        ]  # fmt: skip
        return BatchPreemption.model_validate({"label": PARTITION_LABEL, "classes": classes})
    return None


def backfill_settings(history: History) -> dict[str, Any]:
    """The scheduler's backfill fields for a history whose Slurm ran ``sched/backfill`` (else none)."""
    recorded = history.policy.slurm_scheduler
    if recorded.scheduler_type != "sched/backfill":
        return {}
    return {
        "backfill_interval_s": recorded.interval_s or BF_INTERVAL_S,
        "backfill_window_s": recorded.window_s or BF_WINDOW_S,
        "backfill_depth": recorded.max_job_test or BF_MAX_JOB_TEST,
    }


def slurm_preempts(history: History) -> bool:
    """Whether the record names Slurm's preemption type (then kube-scheduler's is not replayed)."""
    return history.policy.slurm_scheduler.preempt_type is not None
