"""What a batch scheduler adds to kube-scheduler's queue when a replay needs it: job-count limits and
fair-share priority (docs/scenario.md, "Batch scheduler policy").

* ``job_limits`` (a scenario section): caps on how many jobs of one user, team, queue or the whole cluster
  run at once and how many may be submitted — Slurm's association ``MaxJobs`` / ``MaxSubmit``, QOS
  ``MaxJobsPU`` / ``MaxSubmitPU``, ``GrpJobs`` / ``GrpSubmit`` and Maui's ``MAXJOB``. The simulator's side
  is sim/job_limits.py.
* ``scheduler.fair_share``: Slurm's multifactor priority with a fair-share factor that decays with a
  half-life and an age factor; it orders the scheduling queue (sim/queue_discipline.py, sim/fair_share.py).
* ``batch_preemption`` (a scenario section): Slurm's preemption by QOS (``PreemptType=preempt/qos``) or by
  partition tier (``preempt/partition_prio``): which class's running jobs a job of another class may stop,
  and what becomes of them (sim/batch_preemption.py).
* ``time_limits`` (a scenario section): Slurm's partition ``MaxTime`` / ``DefaultTime``: a job asking for
  more than its partition allows waits or is refused, a job asking nothing gets the default, and a running
  job is ended at its limit (sim/time_limits.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import Field, model_validator

from fleetlab.model.cluster import SpecModel
from fleetlab.model.limits import Float, Int
from fleetlab.model.units import PositiveSeconds, Seconds

__all__ = [
    "JOB_LIMIT_SCOPES",
    "PARTITION_KEY_PREFIX",
    "PARTITION_LABEL",
    "QOS_LABEL",
    "TRES_NAMES",
    "BatchPreemption",
    "FairShare",
    "JobLimit",
    "LimitScope",
    "PartitionTime",
    "PreemptionClass",
    "TimeLimits",
    "check_job_limits",
    "partition_key",
]

#: Whose jobs a limit counts: the job's ``user``, ``team`` (a Slurm account), Kueue LocalQueue
#: (``namespace/queue``), ``namespace``, or every job of the ``cluster``.
LimitScope = Literal["user", "team", "queue", "namespace", "cluster"]
JOB_LIMIT_SCOPES: tuple[str, ...] = ("user", "team", "queue", "namespace", "cluster")
WEEK_S = 7 * 86400.0
#: The job label naming a job's Slurm QOS (and, for partition tiers, ``PARTITION_LABEL`` its partition).
QOS_LABEL = "fleetlab.io/qos"
PARTITION_LABEL = "fleetlab.io/partition"
#: The node label key prefix marking a Slurm partition's nodes (``partition.slurm.fleetlab.io/NAME: "true"``).
PARTITION_KEY_PREFIX = "partition.slurm.fleetlab.io/"
#: The TRES whose ``PriorityWeightTRES`` the replay computes (Slurm's names, lower case).
TRES_NAMES: tuple[str, ...] = ("cpu", "mem", "node", "gres/gpu")


def partition_key(name: str) -> str:
    """The node label key of a partition (its name cut to a label name's 63 characters, other characters
    as ``-``)."""
    clean = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-_.")[:63].rstrip("-_.")
    return PARTITION_KEY_PREFIX + (clean or "partition")


class JobLimit(SpecModel):
    """A cap on the jobs of each user (team, queue, namespace) or of one named one.

    ``max_running``: jobs admitted and not yet finished (Slurm ``MaxJobs``, ``MaxJobsPU``, ``GrpJobs``; Maui
    ``MAXJOB``); a job over it waits at submit until one of its scope's jobs ends. ``max_submitted``: jobs
    admitted or waiting (Slurm ``MaxSubmit``, ``MaxSubmitPU``, ``GrpSubmit``); a job over it is refused at
    submit and counts as cancelled, never started."""

    per: LimitScope
    #: Only this user (team, ...); None: each one separately (``cluster`` has one).
    name: str | None = Field(default=None, min_length=1)
    max_running: Int | None = Field(default=None, ge=1, le=10_000_000)
    max_submitted: Int | None = Field(default=None, ge=1, le=10_000_000)

    @model_validator(mode="after")
    def _some_limit(self) -> JobLimit:
        if self.max_running is None and self.max_submitted is None:
            raise ValueError("a job limit needs max_running, max_submitted or both")
        running, submitted = self.max_running, self.max_submitted
        if running is not None and submitted is not None and submitted < running:
            raise ValueError(
                f"max_submitted ({submitted}) must be at least max_running ({running}):"
                " submitted jobs include the running ones"
            )
        if self.per == "cluster" and self.name is not None:
            raise ValueError("a cluster-wide limit names no one (drop name)")
        return self


def check_job_limits(limits: Sequence[JobLimit]) -> None:
    """No two limits of the same scope and name (the second would silently win)."""
    seen: set[tuple[str, str | None]] = set()
    for k, limit in enumerate(limits):
        key = (limit.per, limit.name)
        if key in seen:
            who = f" {limit.name!r}" if limit.name is not None else ""
            raise ValueError(f"job_limits[{k}]: a second limit per {limit.per}{who}; merge the two")
        seen.add(key)


class FairShare(SpecModel):
    """Slurm's ``priority/multifactor`` with the classic fair-share factor, ordering the scheduling queue.

    Each ``by`` (user or team) accrues usage while its pods run — ``cpu_weight`` per CPU core and
    ``gpu_weight`` per GPU, per second (Slurm's TRES billing weights) — decayed with ``half_life_s``
    (``PriorityDecayHalfLife``; 0: never decayed). Its fair-share factor is ``2^(-U/S)``: U its share of
    all decayed usage, S its share of the ``shares`` (``sshare`` RawShares or NormShares; 1 each where not
    given). A pending job's multifactor priority is ``weight_fairshare × factor + weight_age ×
    min(age / max_age_s, 1)``; the queue orders by the pod priority (PriorityClass) first, then by it.

    The other multifactor terms (all 0 by default; sim/job_priority.py): ``weight_job_size`` × the job-size
    factor (``favor_small``: PriorityFavorSmall; ``small_relative_to_time``: PriorityFlags
    SMALL_RELATIVE_TO_TIME), ``weight_partition`` × the job's partition's ``PriorityJobFactor`` over the
    largest (``partition_job_factors``, partition from the job's ``fleetlab.io/partition`` label),
    ``weight_qos`` × its QOS ``Priority`` over the largest (``qos_priorities``, QOS from the job's
    ``fleetlab.io/qos`` label), and per TRES its ``tres_weights`` × the job's amount over its partition's
    (PriorityWeightTRES). With ``calc_period_s`` (PriorityCalcPeriod) a job's priority is a whole
    number (Slurm's uint32, at least 1) set when it is queued and recomputed only every period since the
    run began, so the queue order changes only then; None: recomputed at every scheduling cycle."""

    by: Literal["user", "team"] = "user"
    half_life_s: Seconds = Field(default=WEEK_S, ge=0)
    weight_fairshare: Int = Field(default=10_000, ge=0, le=1_000_000_000)
    weight_age: Int = Field(default=0, ge=0, le=1_000_000_000)
    max_age_s: Seconds = Field(default=WEEK_S, gt=0)
    cpu_weight: Float = Field(default=1.0, ge=0, le=1e6)
    gpu_weight: Float = Field(default=0.0, ge=0, le=1e6)
    shares: dict[str, Float] = Field(default_factory=dict)
    #: ``PriorityWeightJobSize``: times the job-size factor (nodes and cores over the cluster's).
    weight_job_size: Int = Field(default=0, ge=0, le=1_000_000_000)
    #: ``PriorityWeightPartition``: times the job's partition's ``PriorityJobFactor`` over the largest.
    weight_partition: Int = Field(default=0, ge=0, le=1_000_000_000)
    #: ``PriorityWeightQOS``: times the job's QOS ``Priority`` over the largest.
    weight_qos: Int = Field(default=0, ge=0, le=1_000_000_000)
    #: ``PriorityFavorSmall=YES``: the job-size factor grows as the job shrinks.
    favor_small: bool = False
    #: ``PriorityFlags=SMALL_RELATIVE_TO_TIME``: job size over its time limit in minutes.
    small_relative_to_time: bool = False
    #: Per partition (the job's ``fleetlab.io/partition`` label) its ``PriorityJobFactor``.
    partition_job_factors: dict[str, Int] = Field(default_factory=dict)
    #: Per QOS (the job's ``fleetlab.io/qos`` label) its ``Priority``.
    qos_priorities: dict[str, Int] = Field(default_factory=dict)
    #: ``PriorityWeightTRES``: per TRES (``cpu``, ``mem``, ``node``, ``gres/gpu``) the weight of the job's
    #: amount of it over its partition's.
    tres_weights: dict[str, Float] = Field(default_factory=dict, max_length=len(TRES_NAMES))
    #: ``PriorityCalcPeriod``: whole-number priorities set at queueing and recomputed only every period
    #: (the queue order changes only then); None: recomputed at every scheduling cycle.
    calc_period_s: PositiveSeconds | None = None

    @model_validator(mode="after")
    def _positive_shares(self) -> FairShare:
        bad = sorted(name for name, share in self.shares.items() if not share > 0)
        if bad:
            raise ValueError(f"fair_share.shares must be > 0; not so for {', '.join(bad[:5])}")
        for name, table in (("partition_job_factors", self.partition_job_factors),
                            ("qos_priorities", self.qos_priorities)):  # fmt: skip
            bad = sorted(k for k, v in table.items() if not 0 <= v <= 2**32)
            if bad:
                raise ValueError(f"fair_share.{name} must be in 0..2^32; not so for {', '.join(bad[:5])}")
        bad = sorted(k for k, v in self.tres_weights.items() if k not in TRES_NAMES or not 0 <= v <= 1e9)
        if bad:
            raise ValueError(
                f"fair_share.tres_weights takes {', '.join(TRES_NAMES)} with weights in 0..1e9; not so for "
                f"{', '.join(bad[:5])}"
            )
        return self


class PreemptionClass(SpecModel):
    """A Slurm QOS (or partition) as preemption sees it: ``preempts`` names the classes whose running jobs
    a job of this class may stop to start (QOS ``Preempt``; for partitions, those of a lower
    ``PriorityTier``), ``mode`` what becomes of this class's own jobs when they are preempted (QOS or
    partition ``PreemptMode``, else the cluster's): ``requeue`` (off their nodes, back in the queue, their
    work since the start lost), ``cancel`` (ended, never finished), ``suspend`` (replayed as ``requeue``,
    see docs/scenario.md), ``off`` (never preempted). ``priority`` orders victims: lower first."""

    name: str = Field(min_length=1, max_length=253)
    priority: Int = Field(default=0, ge=0, le=2**32)
    preempts: tuple[str, ...] = Field(default=(), max_length=1_000)
    mode: Literal["off", "cancel", "requeue", "suspend"] = "requeue"
    #: QOS ``GraceTime``: a job of this class chosen as a victim gets SIGTERM and runs on this long before it
    #: is cancelled or requeued (0: at once).
    grace_time_s: Seconds = Field(default=0.0, ge=0)
    #: QOS ``PreemptExemptTime``: a job of this class is not a victim before it has run this long (None: the
    #: section's ``exempt_time_s``).
    exempt_time_s: Seconds | None = Field(default=None, ge=0)


class BatchPreemption(SpecModel):
    """Slurm's preemption: each job's class is the value of its label ``label`` (a job without it is in no
    class: it neither preempts nor is preempted)."""

    label: str = Field(default=QOS_LABEL, min_length=1, max_length=317)
    classes: tuple[PreemptionClass, ...] = Field(min_length=1, max_length=10_000)
    #: ``PreemptExemptTime`` (slurm.conf): no job is a victim before it has run this long.
    exempt_time_s: Seconds = Field(default=0.0, ge=0)

    @model_validator(mode="after")
    def _known(self) -> BatchPreemption:
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError("each preemption class name may appear once")
        for c in self.classes:
            unknown = sorted(set(c.preempts) - set(names))
            if unknown:
                raise ValueError(f"class {c.name!r} preempts {', '.join(unknown)}, which no class names")
        return self


class PartitionTime(SpecModel):
    """A partition's time limits (``scontrol show partition``): ``max_time_s`` (``MaxTime``; None:
    UNLIMITED) and ``default_time_s`` (``DefaultTime``, the limit of a job that asks for none; None: the
    ``MaxTime``)."""

    name: str = Field(min_length=1, max_length=253)
    #: ``MaxTime``: the longest limit a job of the partition may ask (None: UNLIMITED).
    max_time_s: PositiveSeconds | None = None
    #: ``DefaultTime``: the limit of a job that asks none (None: ``max_time_s``).
    default_time_s: PositiveSeconds | None = None


class TimeLimits(SpecModel):
    """Slurm's partition time limits. A job's partition is the value of its label ``label``; its time limit
    is the wall time it asked for (``recorded.walltime_s``), else its partition's ``default_time_s``, else
    its ``max_time_s``. A job asking for more than its partition's ``max_time_s`` is refused at submit
    (``enforce_at_submit``: ``EnforcePartLimits`` ALL/ANY/YES) or stays pending for good (``NO``, Slurm's
    default: reason ``PartitionTimeLimit``). With ``kill_at_limit`` a job still running when its limit has
    passed since it started is ended there, failed (``TIMEOUT``; ``OverTimeLimit`` 0)."""

    #: The job label naming the job's partition.
    label: str = Field(default=PARTITION_LABEL, min_length=1, max_length=317)
    partitions: tuple[PartitionTime, ...] = Field(min_length=1, max_length=10_000)
    #: ``EnforcePartLimits`` ALL/ANY/YES: a job over ``max_time_s`` is refused at submit; false (NO): it
    #: stays pending for good (``PartitionTimeLimit``).
    enforce_at_submit: bool = False
    #: A job still running when its limit has passed since it started is ended, failed (``TIMEOUT``).
    kill_at_limit: bool = True

    @model_validator(mode="after")
    def _unique(self) -> TimeLimits:
        names = [p.name for p in self.partitions]
        if len(set(names)) != len(names):
            raise ValueError("each time_limits partition name may appear once")
        return self
