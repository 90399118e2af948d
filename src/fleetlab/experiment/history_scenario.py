"""Turn a measured history into a scenario fleetlab can replay: the real arrivals, requests and measured
run times on the imported nodes, under the default kube-scheduler profile (docs/baseline.md, "Calibrate").

* a job's runtime is its measured compute (the source's ``run_s``, else ``end − running``); a job still
  running when the record ends runs until then (``H − running``); a job that never started gets the
  median measured compute of its class (of all jobs when its class has none) — the replay decides whether
  it starts;
* measured preparation (``running − scheduled``) is replayed as a data download of ``prep × bandwidth``
  bytes at the pools' data bandwidth, so each job's preparation is its own;
* with a fitted ``image_pull_s`` (``Knobs``), a job whose pull the history measured (``image_pull_s``)
  pulls one shared image, ``image_pull_s`` long on a node that does not have it yet and cached after that,
  and its data download is its preparation less its measured pull (``with_image_pulls``);
* a measured GPU utilisation (DCGM) becomes the job's ``gpu_utilization``;
* nodes with the same pool and shape become one pool, priced as the baseline prices them (the shipped
  catalogs' hourly price of their instance type; unpriced nodes cost 0); pools that gained nodes during
  the history are autoscaled (``history_cluster``);
* a job's ``gpu_model`` (models joined by ``|``) becomes a required node affinity on
  ``fleetlab.io/gpu-model`` when the nodes carry that label;
* a job whose pod asks for more than any node offers becomes a gang of node-sized pods, and a batch
  scheduler's multi-node job a gang (``history_gangs``);
* Slurm's recorded partitions, tiers, preemption and backfill settings become node labels, node
  selectors, PriorityClasses, ``batch_preemption`` and the scheduler's backfill fields
  (``history_partitions``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from fleetlab.experiment.history_downtime import failure_events, recorded_behaviour
from fleetlab.experiment.history_gangs import Shape, node_sized
from fleetlab.experiment.history_partitions import (
    SlurmPlacement,
    backfill_settings,
    batch_preemption,
    label_partition_nodes,
    slurm_preempts,
    tier_classes,
    time_limits,
)
from fleetlab.export.kueue_objects import kueue_objects
from fleetlab.metrics.baseline import job_columns, job_times
from fleetlab.metrics.baseline_cost import catalog_price, offers_by_type
from fleetlab.model.batch_policy import FairShare, JobLimit
from fleetlab.model.cluster import Cluster, NodePool
from fleetlab.model.gpus import GPU_MODELS
from fleetlab.model.history import History
from fleetlab.model.job import Image, Job, Runtime
from fleetlab.model.lifecycle import FailureEvent
from fleetlab.model.limits import MAX_PODS_PER_JOB
from fleetlab.model.scenario import Scenario
from fleetlab.model.scheduler import SchedulerConfig
from fleetlab.model.scheduling_delay import SchedulingDelay
from fleetlab.model.workload import Workload
from fleetlab.spec.errors import SpecError, problems_from_validation
from fleetlab.spec.yaml_block import block_list, dump

#: Node label the openb importer sets and a job's ``gpu_model`` constraint selects on.
GPU_MODEL_LABEL = "fleetlab.io/gpu-model"
#: Bandwidth measured preparation is replayed at (bytes per second); any value gives the same times.
PREP_BANDWIDTH = 1 << 30
#: The one image every job with a measured pull is replayed with (histories name no images, no sizes).
HISTORY_IMAGE = "history-image"
#: A runtime below this is raised to it (the simulator's clock is in milliseconds).
MIN_RUNTIME_S = 1.0


@dataclass(frozen=True)
class Knobs:
    """What a real cluster hides and calibration may fit."""

    scheduling_latency_s: float = 0.0
    #: Request-to-ready time of nodes the replay's autoscaler adds (pools that gained nodes).
    node_boot_time_s: float = 300.0
    #: First pull of the history's image on a node (cached on that node afterwards); 0: pulls are not
    #: modelled and each job's measured preparation is replayed whole as its data download.
    image_pull_s: float = 0.0
    #: Level of inferred per-group limits (``history_policy``): the quantile of what each group held while
    #: it had work waiting (1: the most it ever held); None: no inferred limit.
    limit_quantile: float | None = None
    #: Level of inferred per-group running-job ceilings (``history_batch``); None: none.
    job_limit_quantile: float | None = None
    #: The scheduling queue's discipline (``scheduler.queueing``): best-effort-fifo, fifo, easy-backfill.
    queueing: str = "best-effort-fifo"
    #: Share of every fixed pool held by work the record does not list (the scenario's ``background``).
    background_share: float = 0.0
    #: A delay drawn per job instead of the constant latency (``delay_fit``): ``unexplained-waits`` draws
    #: it from the waits the record leaves unexplained; None: none.
    scheduling_delay: str | None = None


def _pool_name(raw: str | None, index: int) -> str:
    text = "".join(c if c.isascii() and (c.isalnum() or c in "-.") else "-" for c in (raw or "").lower())
    return text.strip("-.") or f"pool-{index}"


def _max_alive(spans: list[tuple[float, float]]) -> int:
    """The most nodes alive at once, from [created, deleted) spans."""
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda e: (e[0], e[1]))
    alive = peak = 0
    for _, step in events:
        alive += step
        peak = max(peak, alive)
    return peak


def pool_labels(labels_json: str | None) -> str:
    """A node's labels as sorted JSON, without the per-node ones (``kubernetes.io/hostname``, ``/arch``,
    ``/os``: the simulator sets its own), so that nodes of one shape share one pool."""
    try:
        parsed = json.loads(labels_json or "{}")
    except json.JSONDecodeError:
        parsed = {}
    if not isinstance(parsed, dict):
        parsed = {}
    kept = {str(k): str(v) for k, v in parsed.items() if not str(k).startswith("kubernetes.io/")}
    return json.dumps(kept, sort_keys=True)


def _node_pool(
    name: str,
    key: tuple[Any, ...],
    spans: list[tuple[float, float]],
    knobs: Knobs,
    failures: tuple[FailureEvent, ...] = (),
) -> NodePool:
    pool, model, gpus, cpu, memory, labels, capacity, price = key
    if gpus and model not in GPU_MODELS:
        raise SpecError(
            "<history nodes>",
            [f"pool {pool!r}: GPU model {model!r} is not one fleetlab knows; known: {', '.join(GPU_MODELS)}"],
        )
    initial = sum(1 for created, _ in spans if created <= 0)
    autoscaled = initial < len(spans)
    data: dict[str, Any] = {
        "name": name,
        "count": initial if autoscaled else len(spans),
        "gpu_model": model if gpus else None,
        "gpus_per_node": gpus,
        "cpu": f"{round(cpu * 1000)}m",
        "memory": memory,
        "labels": json.loads(labels),
        "capacity_type": "spot" if capacity == "spot" else "on-demand",
        "data_bandwidth": PREP_BANDWIDTH,
        "price_per_hour": price or 0.0,
    }
    if knobs.image_pull_s > 0:
        data["image_pull_bandwidth"] = PREP_BANDWIDTH
    if autoscaled:
        data["boot_time_s"] = knobs.node_boot_time_s
        data["autoscaling"] = {"min": initial, "max": max(_max_alive(spans), initial, 1)}
    elif failures:
        data["failures"] = {"trace": [f.model_dump() for f in failures]}
    try:
        return NodePool.model_validate(data)
    except ValidationError as exc:
        raise SpecError("<history nodes>", problems_from_validation(exc, f"pool {name}")) from None


def _most_common(values: list[Any]) -> Any:
    counts: dict[Any, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return max(counts, key=lambda v: counts[v]) if counts else None  # first of the most common, in order


def complete_nodes(history: History) -> tuple[list[dict[str, Any]], list[str]]:
    """The node rows with what the sources left unknown filled in, and a note saying what was filled.

    Some sources see a node without its shape (a Prometheus series for a node whose labels were not
    scraped: GPUs but no GPU model, no memory). Such a node is replayed with the history's most common
    known value of the missing field (GPU model among GPU nodes, CPU, memory) rather than dropped, since
    dropping it would shrink the cluster the jobs ran on."""
    nodes = [dict(n) for n in history.nodes.to_pylist()]
    if not nodes:
        raise SpecError("<history>", ["the history has no nodes; calibration replays on the imported nodes"])
    known_models = [n["gpu_model"] for n in nodes if n["gpus"] and n["gpu_model"] in GPU_MODELS]
    fills = {
        "gpu_model": _most_common(known_models),
        "cpu": _most_common([n["cpu"] for n in nodes if n["cpu"] > 0]),
        "memory": _most_common([n["memory"] for n in nodes if n["memory"] > 0]),
    }
    filled: list[str] = []
    for n in nodes:
        missing = [f for f in ("cpu", "memory") if n[f] <= 0]
        if n["gpus"] and n["gpu_model"] not in GPU_MODELS:
            missing.append("gpu_model")
        for f in missing:
            if fills[f] is None:
                raise SpecError(
                    "<history nodes>",
                    [f"node {n['node']!r} has no {f} and no other node has one to replay it with"],
                )
            n[f] = fills[f]
        if missing:
            filled.append(f"{n['node']} ({', '.join(missing)})")
    notes = []
    if filled:
        shown = ", ".join(filled[:3]) + (f" and {len(filled) - 3} more" if len(filled) > 3 else "")
        notes.append(
            f"{len(filled)} node(s) had no GPU model, CPU or memory in the history and are replayed with the "
            f"history's most common value: {shown}"
        )
    return nodes, notes


def history_cluster(history: History, knobs: Knobs | None = None) -> Cluster:
    """The imported nodes as pools (see :func:`cluster_and_downtime`)."""
    return cluster_and_downtime(history, knobs)[0]


def cluster_and_downtime(
    history: History, knobs: Knobs | None = None
) -> tuple[Cluster, set[int], dict[str, str], dict[str, str]]:
    """The imported nodes as pools, one per (pool, GPU model, GPUs, CPU, memory, labels, capacity type).

    A pool whose nodes all exist from the start is fixed. One that gained nodes during the history becomes
    a Cluster Autoscaler node group: it starts with the nodes present at time 0 (its minimum), may grow to
    the most nodes it ever had at once, and new nodes take ``knobs.node_boot_time_s`` to boot (a Node
    object is created when the machine registers, so histories do not show how long booting took).
    Recorded ``down`` windows of a fixed pool's nodes become its failure trace (``history_downtime``);
    the indexes of the windows so replayed come back with the cluster, the replay's name (``POOL-INDEX``)
    of every node of a fixed pool by its history name, and the pool of every autoscaled node."""
    nodes, _ = complete_nodes(history)
    label_partition_nodes(nodes, history.policy.slurm_partitions)
    end = float(history.end_s)
    offers = offers_by_type()
    groups: dict[tuple[Any, ...], list[tuple[float, float]]] = {}
    names: dict[tuple[Any, ...], list[str]] = {}
    for n in nodes:
        kind = n["instance_type"]
        price = catalog_price(offers.get(kind, []), n["zone"], n["capacity_type"]) if kind else None
        key = (n["pool"], n["gpu_model"], n["gpus"], n["cpu"], n["memory"], pool_labels(n["labels_json"]),
               n["capacity_type"], price)  # fmt: skip
        created = 0.0 if n["created_s"] is None else max(float(n["created_s"]), 0.0)
        deleted = end if n["deleted_s"] is None else float(n["deleted_s"])
        groups.setdefault(key, []).append((created, deleted))
        names.setdefault(key, []).append(str(n["node"]))
    pools: list[NodePool] = []
    used: set[str] = set()
    replayed: set[int] = set()
    replay_names: dict[str, str] = {}
    autoscaled: dict[str, str] = {}
    for index, (key, spans) in enumerate(groups.items()):
        name = _pool_name(key[0], index)
        if name in used:
            name = f"{name}-{index}"
        used.add(name)
        fixed = all(created <= 0 for created, _ in spans)
        failures, windows = failure_events(history, names[key], name) if fixed else ((), set())
        replayed |= windows
        if fixed:
            replay_names.update({node: f"{name}-{i}" for i, node in enumerate(names[key])})
        else:
            autoscaled.update({node: name for node in names[key]})
        pools.append(_node_pool(name, key, spans, knobs or Knobs(), failures))
    return Cluster(pools=tuple(pools)), replayed, replay_names, autoscaled


def removal_notes(history: History) -> list[str]:
    """A note naming the nodes deleted before the history's end, which the replay does not remove: the
    simulator's failure model always repairs a failed node, and it has no removal of a node at a given time
    other than its autoscaler's own scale-down. A fixed pool keeps such a node to the end; an autoscaled
    one uses the deletions only to bound its size."""
    end = float(history.end_s)
    gone = [
        str(name)
        for name, deleted in zip(
            history.nodes.column("node").to_pylist(),
            history.nodes.column("deleted_s").to_pylist(),
            strict=True,
        )
        if deleted is not None and deleted < end
    ]
    if not gone:
        return []
    shown = ", ".join(gone[:3]) + (f" and {len(gone) - 3} more" if len(gone) > 3 else "")
    return [
        f"{len(gone)} node(s) deleted during the history are not removed in the replay (a fixed pool keeps "
        f"them to the end, an autoscaled one scales down on its own): {shown}"
    ]


def has_node_arrivals(history: History) -> bool:
    """Whether any node joined after the history began (only then is a boot time worth fitting)."""
    created = history.nodes.column("created_s").to_pylist()
    return any(c is not None and c > 0 for c in created)


def _model_expression(models: str) -> dict[str, Any]:
    values = sorted({m.strip() for m in models.split("|") if m.strip()})
    return {"key": GPU_MODEL_LABEL, "operator": "In", "values": values}


def _affinity(models: str) -> dict[str, Any]:
    term = {"matchExpressions": [_model_expression(models)]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def history_jobs(history: History, queues: Mapping[str, tuple[str, str]] | None = None) -> list[Job]:
    """One replayable job per history job (see the module docstring for the runtime rules); ``queues``:
    job id -> (namespace, LocalQueue) for the jobs a replayed Kueue admits."""
    cols = job_columns(history)
    end_s = float(history.end_s)
    t = history.jobs
    compute = job_times(cols, end_s).compute
    ran = ~np.isnan(compute)
    classes = cols.job_class
    fallback = float(np.nanmedian(compute)) if np.any(ran) else 60.0
    medians = {
        c: float(np.nanmedian(compute[classes == c])) if np.any(ran & (classes == c)) else fallback
        for c in set(classes.tolist())
    }
    measured_prep = ~np.isnan(cols.running) & ~np.isnan(cols.scheduled)
    prep = np.where(measured_prep, np.maximum(cols.running - cols.scheduled, 0.0), 0.0)
    labelled = any(GPU_MODEL_LABEL in (n or "") for n in history.nodes.column("labels_json").to_pylist())
    shapes = node_shapes(history)
    wanted = ["job_id", "job_class", "team", "user", "priority", "pods", "gpus_per_pod", "gpu_milli_per_pod"]
    rows = t.select(
        [*wanted, "cpu_per_pod", "memory_per_pod", "gpu_model", "owner_kind", "queue", "qos"]
    ).to_pylist()
    slurm = SlurmPlacement(history)
    jobs: list[Job] = []
    templates: dict[str, Job] = {}
    runtimes: dict[float, Runtime] = {}
    # a row's fields but its id, submit time and runtime -> (its template's key, its replayed pod count,
    # its GPU model term): a long history repeats them, so most jobs are a template's copy at once
    seen: dict[tuple[Any, ...], tuple[str, int, dict[str, Any] | None]] = {}
    for i, row in enumerate(rows):
        runtime = max(float(compute[i] if ran[i] else medians[classes[i]]), MIN_RUNTIME_S)
        job_id = row["job_id"]
        queue = queues.get(job_id) if queues is not None else None
        utilization = None if np.isnan(cols.util[i]) else min(max(float(cols.util[i]), 0.0), 1.0)
        data_size = round(prep[i] * PREP_BANDWIDTH)
        same = (*(row[k] for k in _SHARED_COLUMNS), queue, repr(utilization), data_size)
        known = seen.get(same)
        if known is not None and _copyable(job_id, known[1]):
            template = templates[known[0]]
            slurm.fields(row["queue"], row["qos"], known[2])  # for its count of unknown partitions
            jobs.append(_copy(template, job_id, float(cols.submit[i]), runtime, known[1], runtimes))
            continue
        gpus = row["gpus_per_pod"] if row["gpu_milli_per_pod"] is None else 0.0
        if not math.isclose(gpus, round(gpus)):
            raise SpecError("<history jobs>", [f"job {job_id!r}: {gpus} GPUs per pod is not whole"])
        plan = node_sized(
            row["pods"], row["cpu_per_pod"], round(gpus), row["memory_per_pod"], shapes, row["owner_kind"]
        )
        requests: dict[str, Any] = {"cpu": f"{round(plan.cpu * 1000)}m", "memory": plan.memory}
        data: dict[str, Any] = {
            "id": job_id,
            "submit_s": float(cols.submit[i]),
            "class": row["job_class"],
            "team": row["team"] or "default",
            **({"user": str(row["user"])} if row["user"] else {}),
            "priority": row["priority"] or 0,
            "pods": plan.pods,
            "runtime": runtime,
            "data_size": data_size,
        }
        if plan.gang:
            data["gang"] = True
        if queue is not None:
            data["namespace"], data["queue"] = queue
        if row["gpu_milli_per_pod"] is not None:
            data["gpu_milli"] = row["gpu_milli_per_pod"]
        elif plan.gpus:
            requests["nvidia.com/gpu"] = plan.gpus
        data["requests"] = requests
        if utilization is not None:
            data["gpu_utilization"] = utilization
        if row["gpu_model"] and labelled:
            data["affinity"] = _affinity(row["gpu_model"])
        gpu_term = _model_expression(row["gpu_model"]) if row["gpu_model"] and labelled else None
        data.update(slurm.fields(row["queue"], row["qos"], gpu_term))
        key = _template_key(data)
        jobs.append(_job(data, templates, runtimes, key))
        seen[same] = (key, plan.pods, gpu_term)
    return jobs


#: Per-job fields; a history's jobs share everything else with many others (``_job``).
_PER_JOB = ("id", "submit_s", "runtime", "pods")
#: The history's job columns a replayed job is built from, but its id.
_SHARED_COLUMNS = (
    "job_class", "team", "user", "priority", "pods", "gpus_per_pod", "gpu_milli_per_pod",
    "cpu_per_pod", "memory_per_pod", "gpu_model", "owner_kind", "queue", "qos",
)  # fmt: skip
_RUNTIME = Runtime(default=MIN_RUNTIME_S)


def _template_key(data: dict[str, Any]) -> str:
    """What a job shares with its copies: every field of ``data`` but the per-job ones."""
    return repr(sorted((k, v) for k, v in data.items() if k not in _PER_JOB))


def _copyable(job_id: Any, pods: int) -> bool:
    """Whether a job with this id and pod count may be a template's copy (else it is validated itself)."""
    return bool(job_id) and 1 <= pods <= MAX_PODS_PER_JOB


def _copy(
    template: Job, job_id: str, submit_s: float, runtime_s: float, pods: int, runtimes: dict[float, Runtime]
) -> Job:
    """``template`` with its own id, submit time, runtime (shared with jobs of equal runtime) and pods."""
    seconds = float(runtime_s)
    runtime = runtimes.get(seconds)
    if runtime is None:
        runtime = runtimes[seconds] = _RUNTIME.model_copy(update={"default": seconds})
    update = {"id": job_id, "submit_s": submit_s, "runtime": runtime, "pods": pods}
    return template.model_copy(update=update)


def _job(data: dict[str, Any], templates: dict[str, Job], runtimes: dict[float, Runtime], key: str) -> Job:
    """The job ``data`` describes, validated once per shape (``key``: its ``_template_key``): a job whose
    other fields equal an earlier one's is that job's copy with its own id, submit time, runtime and pod
    count (checked here), which keeps a long history's jobs small and quick to build. Jobs of equal
    runtime share one (frozen) ``Runtime`` from ``runtimes``."""
    template = templates.get(key)
    if template is not None and _copyable(data["id"], data["pods"]):
        return _copy(template, data["id"], data["submit_s"], data["runtime"], data["pods"], runtimes)
    try:
        job = Job.model_validate(data)
    except ValidationError as exc:
        raise SpecError("<history jobs>", problems_from_validation(exc, f"job {data['id']!r}")) from None
    templates.setdefault(key, job)
    return job


def node_shapes(history: History) -> list[Shape]:
    """The distinct (CPU cores, GPUs, memory) of the history's nodes as replayed (missing fields filled)."""
    nodes, _ = complete_nodes(history) if history.nodes.num_rows else ([], [])
    return sorted({(float(n["cpu"]), int(n["gpus"]), int(n["memory"])) for n in nodes})


def with_image_pulls(history: History, jobs: Sequence[Job], pull_s: float) -> tuple[Job, ...]:
    """The jobs with the pull model of ``Knobs.image_pull_s``: a job whose image pull the history measured
    gets the shared image (``pull_s`` × the pools' pull bandwidth bytes, so a first pull on a node takes
    ``pull_s`` and a later one nothing, or what is left of a pull under way), and its data download loses
    the measured pull, so that the replayed preparation is the model's pull plus the rest of what was
    measured. Jobs without a measured pull keep their whole measured preparation and pull nothing."""
    pulls = job_columns(history).image_pull
    image = Image(name=HISTORY_IMAGE, size=round(pull_s * PREP_BANDWIDTH))
    out: list[Job] = []
    for job, measured in zip(jobs, pulls, strict=True):
        if pull_s <= 0 or np.isnan(measured):
            out.append(job)
            continue
        data = max(job.data_size - round(float(measured) * PREP_BANDWIDTH), 0)
        out.append(job.model_copy(update={"image": image, "data_size": data}))
    return tuple(out)


def background_loads(cluster: Cluster, share: float) -> list[dict[str, Any]]:
    """A constant ``share`` of every pool of fixed, unshared nodes (model/background.py)."""
    return [
        {"pool": p.name, "share": share}
        for p in cluster.pools
        if p.autoscaling is None and p.failures is None and p.interruptions is None
        and p.replicated is None and p.mig is None
    ]  # fmt: skip


def history_scenario(
    history: History,
    knobs: Knobs,
    name: str = "calibrated",
    jobs: tuple[Job, ...] | None = None,
    kueue: list[dict[str, Any]] | None = None,
    fair_sharing: bool = False,
    job_limits: Sequence[JobLimit] = (),
    fair_share: FairShare | None = None,
    scheduling_delay: SchedulingDelay | None = None,
) -> Scenario:
    """The replay scenario with the given knobs (everything else at fleetlab's defaults); ``jobs``, when
    given, are ``history_jobs(history, ...)`` built once for several replays; ``kueue``: the Kueue objects
    the jobs' queues name (``history_policy``), with fair sharing on when ``fair_sharing``; ``job_limits``
    and ``fair_share``: a batch scheduler's job-count limits and fair-share ordering (``history_batch``);
    ``scheduling_delay``: the delay each job draws (``delay_fit``)."""
    built = jobs if jobs is not None else tuple(history_jobs(history))
    cluster, replayed, replay_names, autoscaled = cluster_and_downtime(history, knobs)
    data: dict[str, Any] = {}
    if kueue:
        data["kueue"] = kueue
        if fair_sharing:
            data["kueue_configuration"] = {"fairSharing": {"enable": True}}
    if job_limits:
        data["job_limits"] = tuple(job_limits)
    if knobs.background_share > 0:
        data["background"] = background_loads(cluster, knobs.background_share)
    classes = tier_classes(history)
    if classes:
        data["priority_classes"] = classes
    rules = batch_preemption(history)
    if rules is not None:
        data["batch_preemption"] = rules
    limits = time_limits(history)
    if limits is not None:
        data["time_limits"] = limits
    scheduler = SchedulerConfig.model_validate(
        {
            "scheduling_latency_s": knobs.scheduling_latency_s,
            "queueing": knobs.queueing,
            "fair_share": fair_share,
            **({"preemption": False} if slurm_preempts(history) else {}),
            **backfill_settings(history),
            "scheduling_delay": scheduling_delay,
        }
    )
    return Scenario.model_validate(
        {
            "name": name,
            "description": f"replay of a measured history ({', '.join(history.sources) or 'unknown source'})",
            "cluster": cluster,
            "workload": Workload(jobs=with_image_pulls(history, built, knobs.image_pull_s)),
            "scheduler": scheduler,
            "recorded": recorded_behaviour(history, replayed, replay_names, autoscaled),
            **data,
        }
    )


def _job_document(job: Job) -> dict[str, Any]:
    doc: dict[str, Any] = job.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    if "cpu" in doc.get("requests", {}):
        doc["requests"]["cpu"] = f"{doc['requests']['cpu']}m"
    return doc


def _document_without_jobs(scenario: Scenario) -> dict[str, Any]:
    doc: dict[str, Any] = scenario.model_dump(
        mode="json", by_alias=True, exclude_defaults=True, exclude={"workload": {"jobs"}}
    )
    for pool in doc["cluster"]["pools"]:
        if "cpu" in pool:
            pool["cpu"] = f"{pool['cpu']}m"
    if scenario.kueue is not None:  # as the Kueue objects a person applies, quotas as quantities
        doc["kueue"] = kueue_objects(scenario.kueue, scenario.cluster) + [
            c.model_dump(mode="json", by_alias=True, exclude_defaults=True)
            for c in scenario.kueue.workload_priority_classes
        ]
    return doc


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    """The scenario as a YAML-ready mapping that loads back equal: CPU amounts, which the model holds in
    milli-cores, are written as ``<n>m`` quantities (a bare number would read as cores)."""
    doc = _document_without_jobs(scenario)
    if scenario.workload.jobs is not None:
        doc.setdefault("workload", {})["jobs"] = [_job_document(j) for j in scenario.workload.jobs]
    return doc


#: Jobs turned into YAML at once by ``scenario_yaml`` (bounds memory on long histories).
YAML_CHUNK = 2000


def scenario_yaml(scenario: Scenario) -> Iterator[str]:
    """:func:`scenario_document` as YAML text, a piece at a time: everything but the jobs, then the jobs
    in chunks (a 190,000-job history never sits in memory as one document), each job's block written by
    spec/yaml_block.py as PyYAML would write it."""
    doc = _document_without_jobs(scenario)
    jobs = scenario.workload.jobs
    if jobs is None:
        yield dump(doc)
        return
    workload = doc.pop("workload", {})
    yield dump(doc)
    yield dump({"workload": workload}) if workload else ""
    yield "workload:\n  jobs:\n" if not workload else "  jobs:\n"
    for start in range(0, len(jobs), YAML_CHUNK):
        yield block_list((_job_document(j) for j in jobs[start : start + YAML_CHUNK]), indent=2)
