"""The queueing policy a cluster recorded next to its jobs, as imported into a history (``policy.json``).

A history keeps what the cluster *said* its policy was, even where fleetlab's replay cannot use all of it
yet (docs/calibration.md, "Imported policy"):

* Kueue objects (ClusterQueue, LocalQueue, Cohort, ResourceFlavor, WorkloadPriorityClass) exactly as
  dumped, less ``status`` and ``managedFields``: the calibrated scenario's ``kueue`` section;
* Kubernetes namespace ``ResourceQuota`` hard limits and ``PriorityClass`` objects;
* Slurm association and QOS limits (``sacctmgr show assoc|qos --parsable2``), fair share (``sshare``), the
  multifactor priority weights, the scheduler, backfill and preemption settings (``scontrol show config``)
  and the partitions (``scontrol show partition --oneliner``).

Amounts are kept in the units fleetlab uses elsewhere: TRES ``cpu`` in cores, ``mem`` in bytes, GPUs and
nodes whole; a limit Slurm leaves unset is None (never 0, which would mean "nothing allowed").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FairShareRow",
    "HistoryPolicy",
    "NamespaceQuota",
    "PriorityClassRecord",
    "SlurmAssociation",
    "SlurmBackfill",
    "SlurmLimits",
    "SlurmPartition",
    "SlurmQos",
]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")


class SlurmLimits(_Record):
    """Limits of one association or QOS (``sacctmgr`` column names in the comments); None: not set."""

    grp_tres: dict[str, int] = Field(default_factory=dict)  # GrpTRES: everything under it at once
    grp_jobs: int | None = None  # GrpJobs: running jobs under it at once
    grp_submit: int | None = None  # GrpSubmit: running + pending jobs under it
    max_jobs: int | None = None  # MaxJobs (association): running jobs of this association
    max_submit: int | None = None  # MaxSubmit (association): running + pending jobs of it
    max_tres_per_job: dict[str, int] = Field(default_factory=dict)  # MaxTRES
    max_tres_per_user: dict[str, int] = Field(default_factory=dict)  # MaxTRESPU (QOS)
    max_jobs_per_user: int | None = None  # MaxJobsPU (QOS)
    max_submit_per_user: int | None = None  # MaxSubmitPU (QOS)
    max_wall_s: float | None = None  # MaxWall

    def is_empty(self) -> bool:
        """No limit is set."""
        return not any(v not in (None, {}) for v in self.model_dump().values())


class SlurmAssociation(_Record):
    """One row of ``sacctmgr show assoc``: an account (``user`` None) or a user within an account."""

    cluster: str | None = None
    account: str
    user: str | None = None
    partition: str | None = None
    share: int | None = None  # Share (fair-share shares; "parent" is None)
    priority: int | None = None
    qos: tuple[str, ...] = ()
    default_qos: str | None = None
    limits: SlurmLimits = Field(default_factory=SlurmLimits)


class SlurmQos(_Record):
    """One row of ``sacctmgr show qos``."""

    name: str
    priority: int | None = None
    preempt: tuple[str, ...] = ()
    preempt_mode: str | None = None
    usage_factor: float | None = None
    limits: SlurmLimits = Field(default_factory=SlurmLimits)
    grace_time_s: float | None = None  # GraceTime: a preempted job's SIGTERM-to-kill time
    preempt_exempt_time_s: float | None = None  # PreemptExemptTime: not preempted before it ran this long


class SlurmPartition(_Record):
    """One partition of ``scontrol show partition``: a named set of nodes (partitions may share nodes)."""

    name: str
    nodes: tuple[str, ...] = ()
    priority_tier: int = 1  # PriorityTier: a higher tier's jobs are considered first (and may preempt)
    preempt_mode: str | None = None  # PreemptMode (OFF, CANCEL, REQUEUE, SUSPEND[,GANG])
    max_time_s: float | None = None  # MaxTime (None: UNLIMITED)
    default: bool = False  # Default=YES: jobs that name no partition run here
    default_time_s: float | None = None  # DefaultTime: the limit of a job asking none (None: MaxTime)
    priority_job_factor: int = 1  # PriorityJobFactor: the multifactor partition factor's numerator
    grace_time_s: float | None = None  # GraceTime (seconds): preempted jobs' SIGTERM-to-kill time


class SlurmBackfill(_Record):
    """``SchedulerType``, the backfill ``SchedulerParameters``, the preemption, multifactor and partition
    limit settings of ``scontrol show config`` (None: not written there, Slurm's default applies)."""

    scheduler_type: str | None = None  # sched/backfill | sched/builtin
    interval_s: float | None = None  # bf_interval (s)
    window_s: float | None = None  # bf_window (written in minutes)
    max_job_test: int | None = None  # bf_max_job_test
    preempt_type: str | None = None  # PreemptType: preempt/none | preempt/qos | preempt/partition_prio
    preempt_mode: str | None = None  # PreemptMode (cluster-wide)
    preempt_exempt_time_s: float | None = None  # PreemptExemptTime
    calc_period_s: float | None = None  # PriorityCalcPeriod
    max_age_s: float | None = None  # PriorityMaxAge
    decay_half_life_s: float | None = None  # PriorityDecayHalfLife
    favor_small: bool | None = None  # PriorityFavorSmall (Yes/No)
    priority_flags: tuple[str, ...] | None = None  # PriorityFlags (SMALL_RELATIVE_TO_TIME, ...)
    enforce_part_limits: str | None = None  # EnforcePartLimits: NO | ALL | ANY | YES
    tres_weights: dict[str, float] | None = None  # PriorityWeightTRES: TRES name (lower case) -> weight


class FairShareRow(_Record):
    """One row of ``sshare``: an account (``user`` None) or a user's association."""

    account: str
    user: str | None = None
    raw_shares: int | None = None
    norm_shares: float | None = None
    raw_usage: float | None = None
    effective_usage: float | None = None
    fair_share: float | None = None


class NamespaceQuota(_Record):
    """A namespace ``ResourceQuota``'s ``spec.hard`` (quantities as written, e.g. ``requests.cpu: 64``)."""

    namespace: str
    name: str
    hard: dict[str, str] = Field(default_factory=dict)


class PriorityClassRecord(_Record):
    """A ``scheduling.k8s.io/v1`` PriorityClass."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


class HistoryPolicy(_Record):
    """Everything a history's sources recorded about queueing policy (empty when none did)."""

    kueue: tuple[dict[str, Any], ...] = ()
    resource_quotas: tuple[NamespaceQuota, ...] = ()
    priority_classes: tuple[PriorityClassRecord, ...] = ()
    slurm_associations: tuple[SlurmAssociation, ...] = ()
    slurm_qos: tuple[SlurmQos, ...] = ()
    fair_share: tuple[FairShareRow, ...] = ()
    #: ``PriorityWeightAge``, ``PriorityWeightFairshare``, ... from ``scontrol show config`` (name as there).
    priority_weights: dict[str, int] = Field(default_factory=dict)
    priority_type: str | None = None  # priority/multifactor, priority/basic
    slurm_partitions: tuple[SlurmPartition, ...] = ()
    slurm_scheduler: SlurmBackfill = Field(default_factory=SlurmBackfill)

    def is_empty(self) -> bool:
        """No source recorded any policy."""
        return self == HistoryPolicy()

    def counts(self) -> dict[str, int]:
        """How many objects of each kind were recorded (the import summary shows them)."""
        kinds: dict[str, int] = {}
        for obj in self.kueue:
            kind = str(obj.get("kind"))
            kinds[kind] = kinds.get(kind, 0) + 1
        kinds.update(
            {
                "ResourceQuota": len(self.resource_quotas),
                "PriorityClass": len(self.priority_classes),
                "slurm association": len(self.slurm_associations),
                "slurm qos": len(self.slurm_qos),
                "sshare row": len(self.fair_share),
                "priority weight": len(self.priority_weights),
                "slurm partition": len(self.slurm_partitions),
                "slurm scheduler setting": sum(
                    v is not None for v in self.slurm_scheduler.model_dump().values()
                ),
            }
        )
        return {k: v for k, v in sorted(kinds.items()) if v}

    def merged(self, other: HistoryPolicy) -> HistoryPolicy:
        """This policy with ``other``'s records added (weights: this one's win)."""
        return HistoryPolicy(
            kueue=self.kueue + other.kueue,
            resource_quotas=self.resource_quotas + other.resource_quotas,
            priority_classes=self.priority_classes + other.priority_classes,
            slurm_associations=self.slurm_associations + other.slurm_associations,
            slurm_qos=self.slurm_qos + other.slurm_qos,
            fair_share=self.fair_share + other.fair_share,
            priority_weights={**other.priority_weights, **self.priority_weights},
            priority_type=self.priority_type or other.priority_type,
            slurm_partitions=self.slurm_partitions + other.slurm_partitions,
            slurm_scheduler=SlurmBackfill.model_validate(
                {**other.slurm_scheduler.model_dump(exclude_none=True),
                 **self.slurm_scheduler.model_dump(exclude_none=True)}
            ),
        )  # fmt: skip
