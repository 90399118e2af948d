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
  ``PreemptMode``, else the cluster's, ``GraceTime`` and ``PreemptExemptTime``) and each job
  labelled ``fleetlab.io/qos`` with its QOS; the cluster's ``PreemptExemptTime`` is the section's;
  ``preempt/partition_prio`` a class per partition that preempts the partitions of lower tiers (their
  ``PreemptMode``, else the cluster's; ``GraceTime``), jobs labelled ``fleetlab.io/partition``. With
  either, the replay's kube-scheduler priority preemption is off (Slurm preempts by these rules only).
* **Time limits** (``MaxTime``, ``DefaultTime``, ``EnforcePartLimits``): a ``time_limits`` section with
  each partition that limits time, jobs labelled ``fleetlab.io/partition`` (their first partition); a
  job asking more than its partition's ``MaxTime`` waits for good (``NO``) or is refused
  (``ALL``/``ANY``/``YES``), and running jobs end at their limit (sim/time_limits.py).
* **Backfill** (``SchedulerType=sched/backfill``): the scenario's ``backfill_interval_s``,
  ``backfill_window_s`` and ``backfill_depth`` from ``bf_interval``, ``bf_window``, ``bf_max_job_test``,
  Slurm's defaults (30 s, 1440 min, 500; slurm.conf(5)) where the record gives none. They apply when the
  replay's queueing is ``easy-backfill``.
"""

from __future__ import annotations

import json
from typing import Any

from fleetlab.experiment.history_batch import replayed_tres, unreplayed_tres
from fleetlab.model.batch_policy import (
    PARTITION_LABEL,
    QOS_LABEL,
    BatchPreemption,
    TimeLimits,
    partition_key,
)
from fleetlab.model.history import History
from fleetlab.model.history_policy import SlurmPartition

TIER_CLASS_PREFIX = "slurm-tier-"
#: Slurm's defaults for the backfill parameters (slurm.conf(5), SchedulerParameters).
BF_INTERVAL_S = 30.0
BF_WINDOW_S = 1440 * 60.0
BF_MAX_JOB_TEST = 500
_MODES = {"OFF": "off", "CANCEL": "cancel", "REQUEUE": "requeue", "SUSPEND": "suspend"}


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
        weights = policy.priority_weights
        #: Jobs carry their QOS / partition label where preemption, the multifactor priority (its partition
        #: and TRES factors) or the partition time limits read it.
        self.qos_label = self.by_qos or (weights.get("PriorityWeightQOS", 0) > 0 and bool(policy.slurm_qos))
        self.partition_label = (
            self.by_partition
            or (bool(self.partitions)
                and (weights.get("PriorityWeightPartition", 0) > 0 or bool(replayed_tres(history))))
            or any(p.max_time_s is not None or p.default_time_s is not None for p in policy.slurm_partitions)
        )  # fmt: skip
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
        if self.qos_label and qos:
            labels[QOS_LABEL] = qos
        if self.partition_label and names:
            labels[PARTITION_LABEL] = names[0]
        if labels:
            out["labels"] = labels
        return out


def partition_notes(history: History) -> list[str]:
    """Notes on recorded partition-side policy the replay cannot follow: jobs naming a partition the record
    does not have (they replay anywhere), ``PriorityWeightTRES`` weights of TRES it does not compute."""
    notes = []
    unweighed = unreplayed_tres(history)
    if unweighed:
        notes.append(
            f"PriorityWeightTRES weighs {', '.join(unweighed[:8])}, which the replay does not compute: their "
            "part of the job priority is left out (cpu, mem, node and gres/gpu are replayed)"
        )
    placement = SlurmPlacement(history)
    if not placement.partitions:
        return notes
    for queue in history.jobs.column("queue").to_pylist():
        placement.names(queue)
    if placement.unknown:
        notes.append(
            f"{placement.unknown} job(s) name a partition that `scontrol show partition` did not record: "
            "they replay on any node"
        )
    return notes


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


def _grace(grace_s: float | None, exempt_s: float | None) -> dict[str, float]:
    """A class's ``GraceTime`` and ``PreemptExemptTime`` fields, where the record sets them."""
    out = {"grace_time_s": grace_s} if grace_s else {}
    if exempt_s is not None:
        out["exempt_time_s"] = exempt_s
    return out


def batch_preemption(history: History) -> BatchPreemption | None:
    """The recorded preemption rules (module docstring), or None."""
    policy = history.policy
    placement = SlurmPlacement(history)
    cluster = policy.slurm_scheduler.preempt_mode
    exempt_s = policy.slurm_scheduler.preempt_exempt_time_s
    exempt = {"exempt_time_s": exempt_s} if exempt_s else {}
    if placement.by_qos:
        names = {q.name for q in policy.slurm_qos}
        classes = [
            {"name": q.name, "priority": q.priority or 0, "mode": _mode(q.preempt_mode, cluster),
             "preempts": sorted(set(q.preempt) & names), **_grace(q.grace_time_s, q.preempt_exempt_time_s)}
            for q in policy.slurm_qos
        ]  # fmt: skip
        return BatchPreemption.model_validate({"label": QOS_LABEL, "classes": classes, **exempt})
    if placement.by_partition:
        parts = policy.slurm_partitions
        classes = [
            {"name": p.name, "priority": p.priority_tier, "mode": _mode(p.preempt_mode, cluster),
             "preempts": sorted(o.name for o in parts if o.priority_tier < p.priority_tier),
             **_grace(p.grace_time_s, None)}
            for p in parts
        ]  # fmt: skip
        return BatchPreemption.model_validate({"label": PARTITION_LABEL, "classes": classes, **exempt})
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


def time_limits(history: History) -> TimeLimits | None:
    """The partitions' ``MaxTime`` / ``DefaultTime`` (those that set either) and ``EnforcePartLimits``
    (ALL, ANY, YES: refused at submit), or None when no partition limits time."""
    parts = [
        {"name": p.name, "max_time_s": p.max_time_s or None, "default_time_s": p.default_time_s or None}
        for p in history.policy.slurm_partitions
        if p.max_time_s or p.default_time_s
    ]
    if not parts:
        return None
    enforce = history.policy.slurm_scheduler.enforce_part_limits in ("ALL", "ANY", "YES")
    return TimeLimits.model_validate({"partitions": parts, "enforce_at_submit": enforce})
