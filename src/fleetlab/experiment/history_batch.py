"""What a batch scheduler's recorded policy adds to a replay beyond Kueue quotas (docs/calibration.md,
"Job-count limits and fair share").

* **Job-count limits** (the scenario's ``job_limits``, sim/job_limits.py). Slurm: an account
  association's ``GrpJobs`` / ``GrpSubmit`` cap the account's jobs (per team, named); a user association's
  ``MaxJobs`` / ``MaxSubmit`` cap that user's jobs, and an account association's ``MaxJobs`` /
  ``MaxSubmit`` — which Slurm's user associations inherit — cap each user of the account; QOS
  ``MaxJobsPU`` / ``MaxSubmitPU`` cap each user of the QOS (every user when no association names QOSes).
  Where a user falls under several, the smallest holds.
* **Fair share and the multifactor priority** (``scheduler.fair_share``, sim/fair_share.py,
  sim/job_priority.py) when Slurm ran ``priority/multifactor`` with a fair-share, age, job-size, partition,
  QOS or CPU/memory/node/GPU TRES weight > 0: per user when ``sshare`` recorded user rows, else per
  account, shares from ``sshare`` NormShares (RawShares when no NormShares), a user without a row of its
  own taking its account's (1 where nothing is known), the recorded weights, ``PriorityDecayHalfLife``,
  ``PriorityMaxAge``, ``PriorityCalcPeriod``, ``PriorityFavorSmall`` and
  ``PriorityFlags=SMALL_RELATIVE_TO_TIME``, the partitions' ``PriorityJobFactor``, the QOS ``Priority``
  values and the ``PriorityWeightTRES`` weights of CPUs, memory, nodes and GPUs (other TRES are named in a
  note); Slurm's defaults for what the record lacks (a 7-day half-life and max age), and the priority
  recomputed at every cycle when it records no ``PriorityCalcPeriod``.
* **Inferred job-count ceilings**: per group of an inferred policy, the ``quantile`` level of the jobs the
  group ran while it had work waiting (``history_policy``; where that is 0, the most it ran while waiting),
  and none for a group that never ran a job while another of its jobs waited.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from fleetlab.metrics.baseline import UNSET
from fleetlab.metrics.policy_evidence import CEILING_RESOURCES, JobSpans, group_labels, limit_level
from fleetlab.model.batch_policy import TRES_NAMES, FairShare, JobLimit
from fleetlab.model.history import History
from fleetlab.model.history_policy import SlurmLimits

__all__ = ["inferred_job_limits", "recorded_fair_share", "recorded_job_limits"]

_JOBS = CEILING_RESOURCES.index("jobs")
#: The ``PriorityWeight*`` lines whose factors the replay computes (sim/fair_share.py, sim/job_priority.py).
WEIGHTS = ("PriorityWeightFairshare", "PriorityWeightAge", "PriorityWeightJobSize", "PriorityWeightPartition",
           "PriorityWeightQOS")  # fmt: skip


def _merge(limits: dict[tuple[str, str | None], list[int | None]], per: str, name: str | None,
           running: int | None, submitted: int | None) -> None:  # fmt: skip
    """Add a cap; where one of the same scope and name is there, the smaller of each holds."""
    if running is None and submitted is None:
        return
    old = limits.setdefault((per, name), [None, None])
    for k, value in enumerate((running, submitted)):
        if value is not None:
            old[k] = value if old[k] is None else min(old[k], value)  # type: ignore[type-var]


def _job_limit(per: str, name: str | None, running: int | None, submitted: int | None) -> JobLimit:
    if running is not None and submitted is not None and submitted < running:
        submitted = running  # Slurm counts running jobs among the submitted ones
    return JobLimit.model_validate(
        {"per": per, "name": name, "max_running": running and max(running, 1),
         "max_submitted": submitted and max(submitted, 1)}
    )  # fmt: skip


def _users_of(history: History) -> dict[str, set[str]]:
    """Per account (team), the users the history's jobs name."""
    out: dict[str, set[str]] = {}
    users = history.jobs.column("user").to_pylist()
    teams = history.jobs.column("team").to_pylist()
    for user, team in zip(users, teams, strict=True):
        if user is not None:
            out.setdefault(str(team or "default"), set()).add(str(user))
    return out


def recorded_job_limits(history: History) -> tuple[list[JobLimit], list[str]]:
    """The recorded Slurm job-count limits (module docstring) and notes on what was left out."""
    policy = history.policy
    limits: dict[tuple[str, str | None], list[int | None]] = {}
    notes: list[str] = []
    users_of = _users_of(history)
    qos_limits = {q.name: q.limits for q in policy.slurm_qos}
    qos_of: dict[str, set[str]] = {}
    for a in policy.slurm_associations:
        lim = a.limits
        if a.user is None:
            _merge(limits, "team", a.account, lim.grp_jobs, lim.grp_submit)
            for user in sorted(users_of.get(a.account, ())):
                _merge(limits, "user", user, lim.max_jobs, lim.max_submit)
        else:
            _merge(limits, "user", a.user, lim.max_jobs, lim.max_submit)
            qos_of.setdefault(a.user, set()).update(a.qos)
        if lim.max_jobs is not None and a.user is None and not users_of.get(a.account):
            notes.append(f"account {a.account}: MaxJobs applies to its users, and no job names one")
    per_user = {n: q for n, q in qos_limits.items() if _counts(q)}
    if per_user:
        if qos_of:
            for user, names in sorted(qos_of.items()):
                for name in sorted(names & set(per_user)):
                    _merge(limits, "user", user, *_counts(per_user[name]))
        else:
            for q in per_user.values():
                _merge(limits, "user", None, *_counts(q))
    out = [_job_limit(per, name, *caps) for (per, name), caps in sorted(limits.items(), key=_order)]
    return out, notes


def _order(item: tuple[tuple[str, str | None], list[int | None]]) -> tuple[str, str]:
    (per, name), _ = item
    return per, name or ""


def _counts(limits: SlurmLimits) -> tuple[int | None, int | None]:
    return limits.max_jobs_per_user, limits.max_submit_per_user


def recorded_fair_share(history: History) -> FairShare | None:
    """Slurm's fair-share ordering as recorded (module docstring); None when fair share is not weighted."""
    policy = history.policy
    weights = policy.priority_weights
    multifactor = policy.priority_type in (None, "priority/multifactor")
    if not multifactor or not (any(weights.get(name, 0) > 0 for name in WEIGHTS) or replayed_tres(history)):
        return None
    rows = policy.fair_share
    by_user = any(r.user is not None for r in rows)
    users: dict[str, float] = {}
    accounts: dict[str, float] = {}
    for r in rows:
        share = r.norm_shares if r.norm_shares else (float(r.raw_shares) if r.raw_shares else None)
        if share is None or not (share > 0 and math.isfinite(share)):
            continue
        if r.user is None:
            accounts[r.account] = accounts.get(r.account, 0.0) + share
        else:
            users[r.user] = users.get(r.user, 0.0) + share
    shares = users if by_user else accounts
    if by_user:  # a user without a row of its own ("parent" shares) has its account's
        for account, members in _users_of(history).items():
            for user in members:
                if account in accounts and user not in shares:
                    shares[user] = accounts[account]
    return FairShare.model_validate(
        {
            "by": "user" if by_user else "team",
            "weight_fairshare": weights.get("PriorityWeightFairshare", 0),
            "weight_age": weights.get("PriorityWeightAge", 0),
            "shares": shares,
            **multifactor_settings(history),
        }
    )


def replayed_tres(history: History) -> dict[str, float]:
    """The recorded ``PriorityWeightTRES`` weights > 0 of the TRES the replay computes (``TRES_NAMES``)."""
    recorded = history.policy.slurm_scheduler.tres_weights or {}
    return {name: w for name, w in sorted(recorded.items()) if name in TRES_NAMES and w > 0}


def unreplayed_tres(history: History) -> list[str]:
    """The TRES ``PriorityWeightTRES`` weighs above 0 that the replay does not compute (billing, licenses,
    typed GPUs ...)."""
    recorded = history.policy.slurm_scheduler.tres_weights or {}
    return sorted(name for name, w in recorded.items() if name not in TRES_NAMES and w > 0)


def multifactor_settings(history: History) -> dict[str, object]:
    """The multifactor fields beyond fair share and age, only those the record sets (module docstring)."""
    policy = history.policy
    weights, recorded = policy.priority_weights, policy.slurm_scheduler
    out: dict[str, object] = {}
    for name, field in (("PriorityWeightJobSize", "weight_job_size"), ("PriorityWeightPartition",
                        "weight_partition"), ("PriorityWeightQOS", "weight_qos")):  # fmt: skip
        if weights.get(name, 0) > 0:
            out[field] = weights[name]
    if out.get("weight_job_size"):
        if recorded.favor_small:
            out["favor_small"] = True
        if "SMALL_RELATIVE_TO_TIME" in (recorded.priority_flags or ()):
            out["small_relative_to_time"] = True
    if out.get("weight_partition"):
        out["partition_job_factors"] = {p.name: p.priority_job_factor for p in policy.slurm_partitions}
    if out.get("weight_qos"):
        out["qos_priorities"] = {q.name: q.priority or 0 for q in policy.slurm_qos}
    tres = replayed_tres(history)
    if tres:
        out["tres_weights"] = tres
    for field, value in (("half_life_s", recorded.decay_half_life_s), ("max_age_s", recorded.max_age_s),
                         ("calc_period_s", recorded.calc_period_s)):  # fmt: skip
        if value is not None and (value > 0 or field == "half_life_s"):
            out[field] = value
    return out


def inferred_job_limits(
    source: History, grouping: str, quantile: float, namespaces: dict[str, str], spans: JobSpans | None = None
) -> tuple[list[JobLimit], dict[str, float]]:
    """Per group (``grouping`` of ``source``, the fit part) a cap on its running jobs at the ``quantile``
    level of what it ran while it had work waiting, as a limit on the namespace its jobs are replayed in
    (``namespaces``: group -> namespace), and the levels."""
    spans = spans or JobSpans.of(source)
    labels = group_labels(source, grouping)
    limits: list[JobLimit] = []
    levels: dict[str, float] = {}
    for group in _groups(labels.tolist()):
        if group not in namespaces:
            continue
        level = limit_level(spans, labels == group, _JOBS, quantile)
        if level is None:  # it never ran a job while another of its jobs waited: no evidence of a cap
            continue
        cap = max(math.floor(level + 1e-9), 1)
        levels[group] = float(cap)
        limits.append(JobLimit(per="namespace", name=namespaces[group], max_running=cap))
    return limits, levels


def _groups(labels: Iterable[object]) -> list[str]:
    return sorted({str(g) for g in labels} - {UNSET})
