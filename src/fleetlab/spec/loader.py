"""Read a scenario file (YAML), validate it, and materialise its workload into a job list.

This is the only module that knows scenario files exist; everything after it works on model objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from fleetlab.model.job import Job
from fleetlab.model.job_table import JobTable
from fleetlab.model.limits import MAX_SEED, MAX_TOTAL_PODS
from fleetlab.model.scenario import ResolvedScenario, Scenario
from fleetlab.model.workload import TraceSource, Workload
from fleetlab.spec.bounded import load_yaml, read_text_file
from fleetlab.spec.dra_objects import check_dra_selectors
from fleetlab.spec.errors import SpecError, problems_from_validation
from fleetlab.spec.interruption_trace import resolve_interruption_traces
from fleetlab.spec.pools import catalog_warnings, resolve_catalog_pools
from fleetlab.spec.service_trace import resolve_service_traces

BUILTIN = "default"


def builtin_scenarios() -> list[str]:
    """Names of scenarios shipped inside the package."""
    folder = resources.files("fleetlab") / "scenarios"
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def read_scenario_text(path: str | None) -> tuple[str, str, Path | None]:
    """(label, YAML text, directory for relative paths) of a scenario file or a built-in name."""
    if path is None or (not Path(path).exists() and path in builtin_scenarios()):
        name = path or BUILTIN
        text = (resources.files("fleetlab") / "scenarios" / f"{name}.yaml").read_text(encoding="utf-8")
        return f"<built-in scenario {name}>", text, None
    file = Path(path)
    missing = (
        f"file not found (give a scenario YAML file or a built-in name: {', '.join(builtin_scenarios())})"
    )
    return str(file), read_text_file(file, missing), file.resolve().parent


def parse_yaml(label: str, text: str) -> dict[str, Any]:
    """YAML text to a mapping, with line and column on syntax errors."""
    data = load_yaml(label, text)
    if not isinstance(data, dict):
        raise SpecError(
            label, ["the top level must be a mapping with cluster, workload and scheduler sections"]
        )
    return data


def load_scenario(path: str | None = None) -> tuple[Scenario, str, Path | None]:
    """Validate a scenario file (or the built-in default); returns (scenario, label, base directory)."""
    label, text, base = read_scenario_text(path)
    data = parse_yaml(label, text)
    resolve_catalog_pools(data, label, base)
    resolve_interruption_traces(data, label, base)
    resolve_service_traces(data, label, base)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        from fleetlab.spec.field_reference import docs_pointer

        raise SpecError(label, problems_from_validation(exc, docs=docs_pointer)) from None
    return scenario, label, base


def _distinct_ids(jobs: JobTable) -> int:
    """How many distinct ids the table's id column holds (pyarrow.compute, imported here: a scenario of
    inline jobs never needs it, and importing it costs 0.03 s of every process start)."""
    import pyarrow.compute as pc

    return int(pc.count_distinct(jobs.ids).as_py())


def check_unique_ids(label: str, jobs: Sequence[Job]) -> None:
    """Duplicate job ids make per-job results ambiguous: refuse them."""
    if isinstance(jobs, JobTable) and _distinct_ids(jobs) == len(jobs):
        return  # the common case, decided on the id column without building a dict of every id
    seen: dict[str, int] = {}
    dups: list[str] = []
    ids = jobs.ids.to_pylist() if isinstance(jobs, JobTable) else [job.id for job in jobs]
    for i, job_id in enumerate(ids):
        if job_id in seen:
            dups.append(
                f"job id {job_id!r} is used twice (entries {seen[job_id]} and {i}); ids must be unique"
            )
        else:
            seen[job_id] = i
    if dups:
        raise SpecError(label, dups)


def check_bound_nodes(label: str, jobs: Sequence[Job], scenario: Scenario) -> None:
    """A job bound to a node (a snapshot's running pod) must name a node of the cluster: refused here, not
    half-way through the run."""
    if isinstance(jobs, JobTable) and all(t.bound_node is None for t in jobs.templates):
        return  # bound_node is a template field
    bound = [job for job in jobs if job.bound_node is not None]
    if not bound:
        return
    names = {pool.node_name(i) for pool in scenario.cluster.pools for i in range(pool.node_slots)}
    bad = [
        f"job {job.id!r}: bound_node {job.bound_node!r} is not a node of the cluster"
        for job in bound
        if job.bound_node not in names
    ]
    if bad:
        example = scenario.cluster.pools[0].node_name(0)
        raise SpecError(label, [*bad, f"nodes are named <pool>-<index>, e.g. {example}"])


def resolve(scenario: Scenario, label: str = "<scenario>", base: Path | None = None) -> ResolvedScenario:
    """Materialise the workload (inline, trace or generator) into a job list."""
    workload = scenario.workload
    warnings: list[str] = []
    jobs: JobTable
    if workload.jobs is not None:
        jobs = JobTable.from_jobs(workload.jobs)
        source = label
    elif workload.trace is not None:
        from fleetlab.spec.traces import load_trace

        trace_path = Path(workload.trace.path)
        if not trace_path.is_absolute() and base is not None:
            trace_path = base / trace_path
        jobs, warnings = load_trace(trace_path, workload.trace)
        source = str(trace_path)
    else:
        from fleetlab.spec.generator import generate_jobs  # with pyarrow.compute: only generators need it

        assert workload.generator is not None
        jobs = generate_jobs(workload.generator, scenario.seed, label)
        source = f"{label} (generator, seed {scenario.seed})"
    priced = [p.model_dump() for p in scenario.cluster.pools if p.cloud is not None]
    warnings.extend(catalog_warnings(priced, base))
    # Inline jobs are Job objects already: their ids are checked without an Arrow kernel.
    check_unique_ids(source, workload.jobs if workload.jobs is not None else jobs)
    check_bound_nodes(source, jobs, scenario)
    total_pods = int(jobs.column("pods").sum(dtype=np.int64))
    if total_pods > MAX_TOTAL_PODS:
        raise SpecError(
            source, [f"the workload has {total_pods:,} pods; at most {MAX_TOTAL_PODS:,} fit in one run"]
        )
    from fleetlab.model.scenario import apply_priority_classes, check_job_queues
    from fleetlab.spec.measured_profile import resolve_job_work_files

    jobs = resolve_job_work_files(jobs, base, source)

    try:
        check_job_queues(jobs, scenario.kueue)
        kueue = scenario.kueue
        wpcs = {c.metadata.name: c.value for c in kueue.workload_priority_classes} if kueue else {}
        jobs = apply_priority_classes(jobs, scenario.priority_classes, wpcs)
    except ValueError as exc:
        raise SpecError(source, [str(exc)]) from None
    if scenario.kueue is not None:
        warnings.extend(scenario.kueue.notes)
    warnings.extend(scenario.kueue_configuration.notes)
    if scenario.dra is not None:
        check_dra_selectors(scenario.dra.dra_objects(), source)
        warnings.extend(scenario.dra.notes)
    return ResolvedScenario(scenario=scenario, jobs=jobs, source=source, warnings=tuple(warnings))


def load(path: str | None = None, seed: int | None = None) -> ResolvedScenario:
    """Load and resolve in one step; ``seed`` replaces the file's seed (generator draws and tie-breaks)."""
    scenario, label, base = load_scenario(path)
    if seed is not None:
        if not 0 <= seed <= MAX_SEED:
            raise SpecError("--seed", [f"{seed} is outside 0..{MAX_SEED:,} (2**63 - 1)"])
        scenario = scenario.model_copy(update={"seed": seed})
    return resolve(scenario, label, base)


def openb_scenario(node_csv: Path, pod_csv: Path, limit: int | None = None) -> ResolvedScenario:
    """A ready-to-run scenario: openb nodes as the cluster, openb pods (the first ``limit``) as the jobs."""
    from fleetlab.spec.alibaba import load_openb_nodes  # with pyarrow: only openb scenarios need it

    scenario = Scenario(
        name="alibaba-openb",
        description=f"Alibaba GPU trace 2023 (openb): nodes from {node_csv.name}, pods from {pod_csv.name}",
        cluster=load_openb_nodes(node_csv),
        workload=Workload(trace=TraceSource(path=str(pod_csv), format="alibaba-openb", limit=limit)),
    )
    return resolve(scenario, label=str(pod_csv))
