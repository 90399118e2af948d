"""Replicates that vary what is uncertain, and a statement of what they varied.

A seed redraws a generated workload and every random dynamic (node failures by MTBF, spot interruptions by
rate, stockouts, boot times). A recorded workload — a trace, a job list, a calibrated history — would
otherwise come back identical under every seed, so its replicates would differ only in the scheduler's
tie-breaks and their intervals would say nothing about how the decision depends on the workload. Here
each seed resamples it instead (``resample_jobs``), before it reaches the simulator:

* a bootstrap of the jobs by class and submit window: each (job class, ``window_s`` slice of the submit
  times) stratum draws as many jobs as it has, with replacement, so the mix and the arrival profile stay;
* each drawn job's runtime is drawn from the measured runtimes of its class (its per-GPU runtime overrides
  keep their ratios to it); jobs with a work profile keep their own runtime, bound jobs (a snapshot's
  running pods) are kept as they are;
* each arrival moves by a uniform jitter in ±``jitter_s`` (never before 0);
* node failure traces move by the same jitter (spot interruption traces are files: they stay as recorded
  and the statement says so).

``variation`` says, for a scenario, what its replicates vary; when that is nothing but tie-breaks, the
replicates are deterministic and the verdict takes the first one as the answer (experiment/verdict.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from fleetlab.model.cluster import NodePool
from fleetlab.model.job_table import JobTable
from fleetlab.model.scenario import ResolvedScenario, Scenario
from fleetlab.spec.errors import SpecError

#: Entropy mixed with the seed for resampling draws (distinct from the simulator's streams).
RESAMPLE_STREAM = 0x5E5A
MODES = ("auto", "off")
MAX_WINDOW_S = 10 * 365 * 86400.0


@dataclass(frozen=True)
class Resampling:
    """How replicates vary a recorded workload: ``auto`` resamples traces, job lists and failure traces;
    ``off`` keeps them as given (the seeds then vary only what is random in the scenario itself)."""

    mode: str = "auto"
    window_s: float = 3600.0
    jitter_s: float = 300.0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SpecError("--resample", [f"{self.mode!r}: choose one of {', '.join(MODES)}"])
        for name in ("window_s", "jitter_s"):
            value = getattr(self, name)
            if not 0.0 <= value <= MAX_WINDOW_S:
                raise SpecError("resample", [f"{name} {value!r}: give 0..{MAX_WINDOW_S:g} seconds"])

    def as_dict(self) -> dict[str, Any]:
        """For fingerprints, the manifest and JSON."""
        return asdict(self)


def _duration(seconds: float) -> str:
    if seconds % 3600 == 0 and seconds >= 3600:
        return f"{seconds / 3600:g} h"
    if seconds % 60 == 0 and seconds >= 60:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


@dataclass(frozen=True)
class Variation:
    """What changes from one replicate to the next, and what stays fixed though one might expect it not to."""

    varies: tuple[str, ...]
    fixed: tuple[str, ...] = ()
    #: ``random`` (kube-scheduler picks among equal nodes at random) or ``first``.
    tie_break: str = "random"

    @property
    def deterministic(self) -> bool:
        """Nothing varies but the scheduler's tie-breaks: one replicate is the answer."""
        return not self.varies

    def text(self) -> str:
        """The statement the verdict prints."""
        ties = "the scheduler's tie-breaks" if self.tie_break == "random" else "nothing (tie_break: first)"
        head = ", ".join(self.varies) + (f" and {ties}" if self.tie_break == "random" else "")
        text = head if self.varies else ties
        return text + (f"; fixed: {', '.join(self.fixed)}" if self.fixed else "")

    def as_dict(self) -> dict[str, Any]:
        """For the manifest and JSON."""
        return {"varies": list(self.varies), "fixed": list(self.fixed), "tie_break": self.tie_break,
                "deterministic": self.deterministic, "text": self.text()}  # fmt: skip


def _pool_names(pools: list[NodePool]) -> str:
    return ", ".join(p.name for p in pools[:3]) + (f" and {len(pools) - 3} more" if len(pools) > 3 else "")


def _dynamics(scenario: Scenario, resampling: Resampling) -> tuple[list[str], list[str]]:
    pools = list(scenario.cluster.pools)
    varies: list[str] = []
    fixed: list[str] = []
    drawn = [p for p in pools if p.failures is not None and p.failures.mtbf is not None]
    traced = [p for p in pools if p.failures is not None and p.failures.trace]
    if drawn:
        varies.append(f"node failures (drawn, pools {_pool_names(drawn)})")
    if traced and resampling.mode == "auto" and resampling.jitter_s > 0:
        varies.append(f"node failure times (trace jittered ±{_duration(resampling.jitter_s)})")
    elif traced:
        fixed.append("the node failure trace")
    spot = [p for p in pools if p.interruptions is not None and p.interruptions.per_node_hour() is not None]
    spot_traced = [p for p in pools if p.interruptions is not None and p.interruptions.trace is not None]
    if spot:
        varies.append(f"spot interruptions (drawn, pools {_pool_names(spot)})")
    if spot_traced:
        fixed.append(f"the spot interruption trace (pools {_pool_names(spot_traced)})")
    stockouts = [p for p in pools if p.autoscaling is not None and p.autoscaling.stockout.probability > 0]
    if stockouts:
        varies.append(f"scale-up stockouts (pools {_pool_names(stockouts)})")
    boots = [
        p for p in pools
        if p.autoscaling is not None and p.autoscaling.boot_time is not None
        and p.autoscaling.boot_time.kind != "fixed"
    ]  # fmt: skip
    if boots:
        varies.append(f"node boot times (pools {_pool_names(boots)})")
    return varies, fixed


def variation(scenario: Scenario, jobs: int | None, resampling: Resampling) -> Variation:
    """What a scenario's replicates vary under ``resampling`` (``jobs``: how many its workload has, None
    when not known without reading its trace)."""
    workload = scenario.workload
    varies: list[str] = []
    fixed: list[str] = []
    if workload.generator is not None:
        varies.append(f"the generated workload (redrawn from its {len(workload.generator.classes)} classes)")
    elif resampling.mode == "auto" and jobs != 0:
        jitter = f", arrivals jittered ±{_duration(resampling.jitter_s)}" if resampling.jitter_s else ""
        count = "the trace's" if jobs is None else f"its {jobs:,}"
        varies.append(
            f"the workload (bootstrap of {count} jobs by class and {_duration(resampling.window_s)} "
            f"submit window, runtimes drawn per class{jitter})"
        )
    else:
        fixed.append("the workload (as given" + ("" if jobs is None else f": {jobs:,} jobs") + ")")
    more, still = _dynamics(scenario, resampling)
    return Variation(tuple(varies + more), tuple(fixed + still), scenario.scheduler.tie_break)


def _stream(seed: int, part: int) -> np.random.Generator:
    seq = np.random.SeedSequence([seed, RESAMPLE_STREAM, part])
    return np.random.Generator(np.random.PCG64(seq))


def _draw_by_group(
    want: np.ndarray, pool: np.ndarray, pool_groups: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """For each entry of ``want`` (a group code present in ``pool_groups``), a member of ``pool`` of that
    group, drawn uniformly with replacement."""
    order = np.argsort(pool_groups, kind="stable")
    codes, starts, sizes = np.unique(pool_groups[order], return_index=True, return_counts=True)
    where = np.searchsorted(codes, want)
    offset = np.minimum((rng.random(len(want)) * sizes[where]).astype(np.int64), sizes[where] - 1)
    return np.asarray(pool[order[starts[where] + offset]], dtype=np.int64)


def resample_jobs(jobs: JobTable, seed: int, resampling: Resampling) -> JobTable:
    """One bootstrap replicate of a recorded workload (see the module docstring); deterministic per seed."""
    kept = jobs.per_template(lambda t: t.bound_node is not None, dtype=bool)
    free = np.flatnonzero(~kept)
    if not len(free) or resampling.mode == "off":
        return jobs
    rng = _stream(seed, 0)
    submit, runtime = jobs.column("submit_s"), jobs.column("runtime_s")
    own_runtime = jobs.per_template(lambda t: t.work is not None, dtype=bool)
    classes = jobs.per_template(lambda t: t.job_class.value, dtype=object).astype(str)
    _, class_code = np.unique(classes, return_inverse=True)
    slot = np.zeros(len(jobs), dtype=np.int64)
    if resampling.window_s > 0:
        slot = np.floor((submit - submit[free].min()) / resampling.window_s).astype(np.int64)
    strata = class_code.astype(np.int64) * (int(slot[free].max()) + 1) + slot
    picks = _draw_by_group(strata[free], free, strata[free], rng)  # as many per stratum as it has
    donors = _draw_by_group(class_code[picks], free, class_code[free], rng)
    new_runtime = np.where(own_runtime[picks], runtime[picks], runtime[donors])
    jitter = resampling.jitter_s
    new_submit = np.maximum(
        submit[picks] + (rng.uniform(-jitter, jitter, len(picks)) if jitter else 0.0), 0.0
    )
    order = np.concatenate([np.flatnonzero(kept), picks])
    drawn = jobs.take(order)
    submit_all = np.concatenate([submit[kept], new_submit])
    runtime_all = np.concatenate([runtime[kept], new_runtime])
    old = drawn.column("runtime_s")
    scale = np.divide(runtime_all, old, out=np.ones(len(order)), where=old > 0)
    models = tuple(tuple(t.runtime.by_gpu) for t in jobs.templates)
    by_gpu = {m: drawn.column(f"by_gpu[{m}]") * scale for m in sorted({m for names in models for m in names})}
    rebuilt = JobTable(
        pa.array(_unique_ids(drawn.ids.to_pylist()), type=pa.large_string()), submit_all, runtime_all,
        drawn.column("pods"), drawn.column("template"), drawn.templates, models, by_gpu,
    )  # fmt: skip
    return rebuilt.take(np.lexsort((np.arange(len(order)), submit_all)))


def jitter_failures(scenario: Scenario, seed: int, resampling: Resampling) -> Scenario:
    """The scenario with every node failure trace event moved by a uniform jitter in ±``jitter_s``."""
    traced = [p.failures is not None and bool(p.failures.trace) for p in scenario.cluster.pools]
    if resampling.mode == "off" or resampling.jitter_s <= 0 or not any(traced):
        return scenario
    rng = _stream(seed, 1)
    pools = []
    for pool, has in zip(scenario.cluster.pools, traced, strict=True):
        if has:
            assert pool.failures is not None
            events = tuple(
                e.model_copy(
                    update={"at_s": max(0.0, e.at_s + rng.uniform(-resampling.jitter_s, resampling.jitter_s))}
                )
                for e in pool.failures.trace
            )
            pool = pool.model_copy(update={"failures": pool.failures.model_copy(update={"trace": events})})
        pools.append(pool)
    cluster = scenario.cluster.model_copy(update={"pools": tuple(pools)})
    return scenario.model_copy(update={"cluster": cluster})


def replicate(resolved: ResolvedScenario, seed: int, resampling: Resampling) -> ResolvedScenario:
    """The replicate of ``resolved`` for ``seed``: a recorded workload resampled and failure traces
    jittered (``auto``), or ``resolved`` itself (``off``; a generated workload is already seed-drawn)."""
    if resampling.mode == "off":
        return resolved
    scenario = jitter_failures(resolved.scenario, seed, resampling)
    generated = scenario.workload.generator is not None
    jobs = resolved.jobs if generated else resample_jobs(resolved.jobs, seed, resampling)
    if scenario is resolved.scenario and jobs is resolved.jobs:
        return resolved
    return resolved.model_copy(update={"scenario": scenario, "jobs": jobs})


def _unique_ids(ids: list[str]) -> list[str]:
    """The first copy of a job keeps its id; later copies get ``~2``, ``~3``, ... (never an existing id)."""
    taken = set(ids)
    seen: dict[str, int] = {}
    out: list[str] = []
    for job_id in ids:
        count = seen.get(job_id, 0) + 1
        seen[job_id] = count
        new = job_id if count == 1 else f"{job_id}~{count}"
        while count > 1 and new in taken:
            count += 1
            new = f"{job_id}~{count}"
        taken.add(new)
        out.append(new)
    return out
