"""The queueing policy a calibrated scenario replays, as Kueue objects (docs/calibration.md, "Policy").

In order of preference:

1. **Recorded Kueue objects** (ClusterQueue, LocalQueue, Cohort, ResourceFlavor, WorkloadPriorityClass
   from a kubectl dump): the scenario's ``kueue`` section as they were; a job joins the LocalQueue its
   Workload named (``namespace``/``queue``).
2. **Recorded limits**: namespace ResourceQuotas (a ClusterQueue per namespace with the hard requests as
   nominal quota: pods are queued where the API server would have refused them), Slurm accounts'
   ``GrpTRES`` (a ClusterQueue per account, weighted by its ``sshare`` shares when fair share is on) or
   QOS ``MaxTRESPU`` (a ClusterQueue per user).
3. **Inferred limits** (``limit_quantile``, fitted): a ClusterQueue per user, team or queue (the grouping
   during whose waits the same group most often had work running) whose CPU and GPU quota is the
   ``limit_quantile`` level of what the group held while it had work waiting (1: the most it ever held;
   where the level is 0, the most it held while waiting), never below its largest job (a job that ran
   proves the limit was at least its size), and none for a group that held nothing while it had work
   waiting (its waits show no limit of its own); queueing
   ``StrictFIFO`` where the group's jobs (almost) never overtook each other.

Every ClusterQueue is in cohort ``history`` and lends nothing it limits (``borrowingLimit: 0``); resources
it does not limit get the whole cluster as quota, so only the limit holds jobs back.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fleetlab.experiment.history_batch import inferred_job_limits, recorded_fair_share, recorded_job_limits
from fleetlab.metrics.baseline import UNSET, job_columns
from fleetlab.metrics.policy_evidence import (
    CEILING_RESOURCES,
    Ceiling,
    JobSpans,
    ceilings_at,
    group_labels,
    limit_level,
    order_between,
    overtakes,
)
from fleetlab.metrics.wait_causes import time_while_running
from fleetlab.model.batch_policy import FairShare, JobLimit
from fleetlab.model.history import History
from fleetlab.model.queues import QueueConfigError, queue_config_from_objects
from fleetlab.model.resources import CPU, GPU, MEMORY, parse_amount

API = "kueue.x-k8s.io/v1beta2"
FLAVOR = "history"
COHORT = "history"
LOCAL_QUEUE = "history"
#: A group whose jobs overtook each other in at most this share of chances (and had 20 chances) queues
#: StrictFIFO.
STRICT_FIFO_MAX_RATE = 0.05
STRICT_FIFO_MIN_PAIRS = 20
#: Groupings tried for inferred limits, in order of preference on ties.
GROUPINGS = ("user", "team", "queue")


@dataclass
class ReplayPolicy:
    """Kueue objects for the scenario and the LocalQueue each job joins."""

    source: str  # none | kueue | resource-quota | slurm | inferred
    objects: list[dict[str, Any]] = field(default_factory=list)
    #: job id -> (namespace, LocalQueue name)
    assignment: dict[str, tuple[str, str]] = field(default_factory=dict)
    fair_sharing: bool = False
    grouping: str | None = None
    evidence: list[Ceiling] = field(default_factory=list)
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Between groups: how often a job of one started before an earlier waiting job of another.
    order: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Job-count limits (recorded Slurm limits, or inferred ceilings) and fair-share ordering
    #: (``history_batch``): the scenario's ``job_limits`` and ``scheduler.fair_share``.
    job_limits: list[JobLimit] = field(default_factory=list)
    fair_share: FairShare | None = None
    #: Inferred job-count ceilings: group -> the most jobs it may run at once.
    job_ceilings: dict[str, float] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """What calibration.json shows under ``policy``."""
        return {
            "source": self.source,
            "grouping": self.grouping,
            "cluster_queues": sum(1 for o in self.objects if o.get("kind") == "ClusterQueue"),
            "jobs_queued": len(self.assignment),
            "fair_sharing": self.fair_sharing,
            "limits": [c.as_dict() for c in self.evidence],
            "queueing": self.strategies,
            "order": self.order,
            "job_limits": [limit.model_dump(exclude_none=True) for limit in self.job_limits],
            "job_ceilings": dict(self.job_ceilings),
            "fair_share": None if self.fair_share is None else self.fair_share.model_dump(),
            "notes": list(self.notes),
        }


def _name(prefix: str, text: str) -> str:
    """A DNS-1123 label from ``text`` (lower case, ``-`` for anything else, a hash when cut or changed)."""
    clean = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    candidate = f"{prefix}-{clean}" if clean else prefix
    if len(candidate) > 52 or clean != text:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        candidate = f"{candidate[:52].rstrip('-')}-{digest}"
    return candidate


def cluster_totals(history: History) -> dict[str, int]:
    """The cluster's CPU (milli-cores), memory (bytes) and GPUs over the nodes present at any time."""
    nodes = history.nodes
    cpu = np.asarray(nodes.column("cpu").to_numpy(zero_copy_only=False), dtype=np.float64)
    memory = np.asarray(nodes.column("memory").to_numpy(zero_copy_only=False), dtype=np.float64)
    gpus = np.asarray(nodes.column("gpus").to_numpy(zero_copy_only=False), dtype=np.float64)
    return {CPU: round(float(cpu.sum()) * 1000), MEMORY: int(memory.sum()), GPU: int(gpus.sum())}


def _quantity(resource: str, amount: float) -> str:
    if resource == CPU:
        return f"{math.ceil(amount)}m"
    return str(math.ceil(amount))


def _cluster_queue(name: str, quotas: dict[str, float], limited: set[str], strategy: str,
                   weight: float | None = None) -> dict[str, Any]:  # fmt: skip
    resources = []
    for resource, amount in quotas.items():
        entry: dict[str, Any] = {"name": resource, "nominalQuota": _quantity(resource, amount)}
        if resource in limited:
            entry["borrowingLimit"] = "0"
        resources.append(entry)
    spec: dict[str, Any] = {
        "namespaceSelector": {},  # every namespace (Kueue admits none from a queue without a selector)
        "cohortName": COHORT,
        "queueingStrategy": strategy,
        "resourceGroups": [
            {"coveredResources": list(quotas), "flavors": [{"name": FLAVOR, "resources": resources}]}
        ],
    }
    if weight is not None:
        spec["fairSharing"] = {"weight": f"{round(weight * 1000)}m"}
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def _grouped(
    history: History,
    labels: np.ndarray,
    limits: dict[str, dict[str, float]],
    strategies: dict[str, str],
    prefix: str,
    weights: dict[str, float] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]]]:
    """A ClusterQueue and LocalQueue per group (limits: group -> resource -> fleetlab units), every job of
    a group in its LocalQueue; jobs of no group share one unlimited ClusterQueue."""
    totals = cluster_totals(history)
    covered = [CPU, MEMORY] + ([GPU] if totals[GPU] > 0 else [])
    objects: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}
    ]
    assignment: dict[str, tuple[str, str]] = {}
    ids = history.jobs.column("job_id").to_pylist()
    for group in sorted(set(labels.tolist())):
        name = _name(prefix, str(group)) if group != UNSET else f"{prefix}-unassigned"
        wanted = limits.get(str(group), {}) if group != UNSET else {}
        quotas = {r: float(wanted.get(r, totals[r])) for r in covered}
        weight = (weights or {}).get(str(group))
        objects.append(
            _cluster_queue(name, quotas, set(wanted), strategies.get(str(group), "BestEffortFIFO"), weight)
        )
        meta = {"name": LOCAL_QUEUE, "namespace": name}
        objects.append(
            {"apiVersion": API, "kind": "LocalQueue", "metadata": meta, "spec": {"clusterQueue": name}}
        )
        for i in np.nonzero(labels == group)[0]:
            assignment[str(ids[i])] = (name, LOCAL_QUEUE)
    return objects, assignment


def recorded_policy(history: History) -> ReplayPolicy | None:
    """The policy the history recorded, as Kueue objects; None when it recorded none that a replay uses."""
    policy = history.policy
    if policy.kueue:
        return _recorded_kueue(history)
    if policy.resource_quotas:
        return _resource_quotas(history)
    if policy.slurm_associations or policy.slurm_qos:
        return _slurm(history)
    return None


def _recorded_kueue(history: History) -> ReplayPolicy:
    objects = [dict(o) for o in history.policy.kueue]
    try:
        config = queue_config_from_objects(objects)
    except QueueConfigError as exc:
        return ReplayPolicy("none", notes=[f"the recorded Kueue objects cannot be replayed: {exc}"])
    local = {q.key for q in config.local_queues}
    namespaces = history.jobs.column("namespace").to_pylist()
    queues = history.jobs.column("queue").to_pylist()
    ids = history.jobs.column("job_id").to_pylist()
    assignment = {
        str(i): (str(ns or "default"), str(q))
        for i, ns, q in zip(ids, namespaces, queues, strict=True)
        if q is not None and (str(ns or "default"), str(q)) in local
    }
    notes = []
    outside = sum(1 for q in queues if q is not None) - len(assignment)
    if outside:
        notes.append(
            f"{outside} job(s) name a queue that is not a recorded LocalQueue: replayed without Kueue"
        )
    return ReplayPolicy("kueue", objects, assignment, notes=notes)


def _resource_quotas(history: History) -> ReplayPolicy:
    limits: dict[str, dict[str, float]] = {}
    for quota in history.policy.resource_quotas:
        wanted = limits.setdefault(quota.namespace, {})
        for key, text in quota.hard.items():
            resource = {"requests.cpu": CPU, "cpu": CPU, "requests.memory": MEMORY, "memory": MEMORY,
                        "requests.nvidia.com/gpu": GPU}.get(key)  # fmt: skip
            if resource is None:
                continue
            amount = float(parse_amount(resource, text))
            wanted[resource] = min(wanted.get(resource, amount), amount)
    labels = np.asarray(
        [str(n or "default") for n in history.jobs.column("namespace").to_pylist()], dtype=object
    )
    objects, assignment = _grouped(history, labels, limits, {}, "ns")
    return ReplayPolicy(
        "resource-quota", objects, assignment, grouping="namespace",
        notes=["namespace ResourceQuotas replayed as a ClusterQueue per namespace: pods wait for quota "
               "where the API server would have refused to create them (their controllers retry)"],
    )  # fmt: skip


_TRES = {"cpu": (CPU, 1000.0), "gres/gpu": (GPU, 1.0), "mem": (MEMORY, 1.0)}


def _tres_limits(tres: dict[str, int]) -> dict[str, float]:
    return {_TRES[k][0]: v * _TRES[k][1] for k, v in tres.items() if k in _TRES}


def _slurm(history: History) -> ReplayPolicy:
    policy = history.policy
    notes: list[str] = []
    accounts = {a.account: _tres_limits(a.limits.grp_tres) for a in policy.slurm_associations
                if a.user is None and a.limits.grp_tres}  # fmt: skip
    shares = {r.account: r.norm_shares for r in policy.fair_share if r.user is None and r.norm_shares}
    fair = policy.priority_weights.get("PriorityWeightFairshare", 0) > 0 or bool(shares)
    per_user = {
        q.name: _tres_limits(q.limits.max_tres_per_user)
        for q in policy.slurm_qos
        if q.limits.max_tres_per_user
    }
    job_limits, limit_notes = recorded_job_limits(history)
    notes += limit_notes
    if job_limits:
        notes.append(f"{len(job_limits)} recorded Slurm job-count limit(s) replayed as job_limits")
    ordering = recorded_fair_share(history)
    if accounts:
        labels = group_labels(history, "team")
        objects, assignment = _grouped(history, labels, accounts, {}, "account", shares if fair else None)
        if per_user:
            notes.append(
                "QOS per-user limits (MaxTRESPU) are recorded but not replayed next to account limits"
            )
        return ReplayPolicy(
            "slurm",
            objects,
            assignment,
            fair_sharing=fair,
            grouping="team",
            notes=notes,
            job_limits=job_limits,
            fair_share=ordering,
        )
    if per_user:
        qos_of = {(a.account, a.user): a.qos for a in policy.slurm_associations if a.user}
        users = group_labels(history, "user")
        teams = group_labels(history, "team")
        limits: dict[str, dict[str, float]] = {}
        for user, team in zip(users.tolist(), teams.tolist(), strict=True):
            names = qos_of.get((team, user)) or tuple(per_user)
            chosen = [per_user[n] for n in names if n in per_user]
            if chosen and user != UNSET:
                merged = {r: min(c[r] for c in chosen if r in c) for r in {k for c in chosen for k in c}}
                limits[user] = merged
        objects, assignment = _grouped(history, users, limits, {}, "user")
        return ReplayPolicy(
            "slurm",
            objects,
            assignment,
            grouping="user",
            notes=notes,
            job_limits=job_limits,
            fair_share=ordering,
        )
    if job_limits or ordering is not None:
        return ReplayPolicy("slurm", notes=notes, job_limits=job_limits, fair_share=ordering)
    return ReplayPolicy(
        "none", notes=[*notes, "the recorded Slurm limits set no resource limit a replay uses"]
    )


def choose_grouping(history: History, spans: JobSpans) -> str | None:
    """The grouping (user, team or queue, with at least two groups) during whose waits another job of the
    same group was running the largest share of the time; None when none has two groups."""
    best: tuple[float, str] | None = None
    waited = np.maximum(spans.start - spans.submit, 0.0)
    total = float(waited.sum())
    if total <= 0:
        return None
    for grouping in GROUPINGS:
        labels = group_labels(history, grouping)
        if len(set(labels.tolist()) - {UNSET}) < 2:
            continue
        running, _ = time_while_running(labels, (spans.held_from, spans.held_to), spans.submit, spans.start)
        share = float(running.sum()) / total
        if best is None or share > best[0] + 1e-12:
            best = (share, grouping)
    return None if best is None else best[1]


def inferred_policy(
    history: History,
    grouping: str,
    quantile: float | None,
    source: History | None = None,
    job_quantile: float | None = None,
) -> ReplayPolicy:
    """Per-group CPU and GPU limits at ``quantile`` (None: none; see the module docstring) and running-job
    ceilings at ``job_quantile`` (None: none; ``history_batch``), read from ``source`` (the fit part; the
    history itself by default) and applied to ``history``'s jobs, with their evidence."""
    source = source or history
    spans = JobSpans.of(source)
    labels = group_labels(source, grouping)
    cols = job_columns(source)
    totals = {"cpu": np.nan_to_num(cols.cpus), "gpu": np.nan_to_num(cols.gpus)}
    units = {"cpu": (CPU, 1000.0), "gpu": (GPU, 1.0)}
    levels: dict[str, dict[str, float]] = {}
    limits: dict[str, dict[str, float]] = {}
    for group in sorted(set(labels.tolist()) - {UNSET}):
        if quantile is None:
            break
        mine = labels == group
        for resource in ("cpu", "gpu"):
            if not np.any(totals[resource][mine] > 0):
                continue
            found = limit_level(spans, mine, CEILING_RESOURCES.index(resource), quantile)
            if found is None:  # it held none while it had work waiting: its waits show no quota of its own
                continue
            level = max(found, float(totals[resource][mine].max()))
            levels.setdefault(str(group), {})[resource] = level
            name, scale = units[resource]
            limits.setdefault(str(group), {})[name] = level * scale
    rates = overtakes(labels, spans)
    strategies = {
        g: "StrictFIFO" if o.pairs >= STRICT_FIFO_MIN_PAIRS and (o.rate or 0.0) <= STRICT_FIFO_MAX_RATE
        else "BestEffortFIFO"
        for g, o in rates.items()
    }  # fmt: skip
    # A job that ran proves its group's limit was at least its size: no quota below the largest job of the
    # group in the replayed history (else that job could never be admitted).
    target = group_labels(history, grouping)
    whole = job_columns(history)
    for group, wanted in limits.items():
        mine = target == group
        if np.any(mine):
            for name, column, scale in ((CPU, whole.cpus, 1000.0), (GPU, whole.gpus, 1.0)):
                if name in wanted:
                    wanted[name] = max(wanted[name], float(np.nan_to_num(column[mine]).max()) * scale)
    objects, assignment = _grouped(history, target, limits, strategies, grouping)
    job_limits: list[JobLimit] = []
    job_ceilings: dict[str, float] = {}
    if job_quantile is not None:
        namespaces = {str(g): _name(grouping, str(g)) for g in set(labels.tolist()) - {UNSET}}
        job_limits, job_ceilings = inferred_job_limits(source, grouping, job_quantile, namespaces, spans)
        for group, cap in job_ceilings.items():
            levels.setdefault(group, {})["jobs"] = cap
    return ReplayPolicy(
        "inferred", objects, assignment, grouping=grouping,
        evidence=ceilings_at(source, grouping, levels, spans),
        strategies={g: {"strategy": strategies[g], **o.as_dict()} for g, o in rates.items()},
        order=order_between(labels, spans), job_limits=job_limits, job_ceilings=job_ceilings,
    )  # fmt: skip
