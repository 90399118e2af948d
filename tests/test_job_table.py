"""JobTable: jobs as columns plus shared templates must read back exactly as the pydantic-built jobs.

The reference for the generator is the per-job construction it replaced (the same draws, one
``Job.model_validate`` of the row's whole spec per draw), so a table that drifted from it in any field, in the order of set fields or of
the per-GPU runtimes, fails here as it would fail ``bench/example_hashes.py``.
"""

from __future__ import annotations

import math
import pickle
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetlab.model.job import Job
from fleetlab.model.job_table import CACHED_JOBS, JobTable
from fleetlab.model.scenario import ResolvedScenario
from fleetlab.model.workload import Generator, JobClassSpec
from fleetlab.spec.generator import _choose, _durations, _job_spec, generate_jobs
from fleetlab.spec.loader import load, resolve


def reference_jobs(generator: Generator, seed: int) -> list[Job]:
    """The generator as it was: the same draws, one validated Job per draw, then a stable submit sort."""
    rng = np.random.Generator(np.random.PCG64(seed))
    jobs: list[Job] = []
    for spec in generator.classes:
        start = generator.start_s if spec.start_s is None else spec.start_s
        jobs.extend(_reference_class(rng, spec, start))
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_s, i))
    return [jobs[i] for i in order]


def _reference_class(rng: np.random.Generator, spec: JobClassSpec, start_s: float) -> list[Job]:
    n = spec.count
    if n == 0:
        return []
    gaps = rng.exponential(3600.0 / spec.arrivals_per_hour, size=n)
    submits = start_s + np.round(np.cumsum(gaps), 3)
    pods = _choose(rng, spec.pods, n)
    gpus = _choose(rng, spec.gpus_per_pod, n)
    durations = _durations(rng, spec.duration, n)
    teams = rng.integers(len(spec.teams), size=n)
    # the per-row spec the columnar path replaced, validated job by job
    return [
        Job.model_validate(
            _job_spec(
                spec,
                i,
                float(submits[i]),
                int(pods[i]),
                int(gpus[i]),
                spec.teams[int(teams[i])],
                float(durations[i]),
            )
        )
        for i in range(n)
    ]


def same_job(a: Job, b: Job) -> None:
    """Equal in every field, in the fields set and in the order of the per-GPU runtimes."""
    assert a == b
    assert a.model_fields_set == b.model_fields_set
    assert a.runtime.model_fields_set == b.runtime.model_fields_set
    assert list(a.runtime.by_gpu) == list(b.runtime.by_gpu)
    assert type(a.submit_s) is float and type(a.runtime.default) is float and type(a.pods) is int


def one_class(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "batch",
        "class": "batch",
        "arrivals_per_hour": 60,
        "count": 200,
        "gpus_per_pod": {"values": [0, 1, 2, 8], "weights": [1, 4, 2, 1]},
        "duration": {"kind": "lognormal", "median": "30m", "sigma": 1.2},
    }
    base.update(fields)
    return base


def test_generated_jobs_equal_the_per_job_construction_on_the_built_in_scenarios() -> None:
    for name in ("default", "two-teams"):
        resolved = load(name)
        generator = resolved.scenario.workload.generator
        assert generator is not None and isinstance(resolved.jobs, JobTable)
        expected = reference_jobs(generator, resolved.scenario.seed)
        assert len(resolved.jobs) == len(expected)
        for got, want in zip(resolved.jobs, expected, strict=True):
            same_job(got, want)


classes = st.fixed_dictionaries(
    {
        "count": st.integers(0, 60),
        "pods": st.fixed_dictionaries({"values": st.lists(st.integers(1, 4), min_size=1, max_size=3)}),
        "gpus_per_pod": st.fixed_dictionaries(
            {"values": st.lists(st.integers(0, 8), min_size=1, max_size=3)}
        ),
        "teams": st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True),
        "speedup_by_gpu": st.dictionaries(st.sampled_from(["H100", "A100-80GB", "T4"]), st.floats(0.25, 4)),
        "duration": st.one_of(
            st.fixed_dictionaries({"kind": st.just("exponential"), "mean": st.integers(1, 100_000)}),
            st.fixed_dictionaries({"kind": st.just("fixed"), "median": st.integers(1, 100_000)}),
        ),
        "gang": st.booleans(),
        "priority": st.integers(-5, 5),
        "start_s": st.one_of(st.none(), st.floats(0, 1e6)),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(classes, min_size=1, max_size=3), st.integers(0, 2**32))
def test_generated_table_equals_per_job_construction_for_any_settings(
    drawn: list[dict[str, Any]], seed: int
) -> None:
    generator = Generator.model_validate(
        {
            "classes": [
                one_class(**c, name=f"c{k}", topology_preferred="fleetlab.io/rack") | {"gang": True}
                if c["gang"]
                else one_class(**c, name=f"c{k}")
                for k, c in enumerate(drawn)
            ]
        }
    )
    table = generate_jobs(generator, seed)
    expected = reference_jobs(generator, seed)
    assert len(table) == len(expected)
    for got, want in zip(table, expected, strict=True):
        same_job(got, want)
    assert np.array_equal(table.column("submit_s"), [j.submit_s for j in expected])
    assert np.array_equal(table.column("pods"), [j.pods for j in expected])
    for model in ("H100", "T4"):
        assert np.array_equal(table.runtime_on(model), [j.runtime.on(model) for j in expected])


def generated(count: int = 500) -> JobTable:
    generator = Generator.model_validate(
        {
            "classes": [
                one_class(count=count, speedup_by_gpu={"H100": 2.0}),
                one_class(name="t", count=count // 2),
            ]
        }
    )
    return generate_jobs(generator, 7)


def test_take_slice_index_and_concat() -> None:
    table = generated()
    jobs = list(table)
    order = np.arange(len(table))[::-1]
    reversed_table = table.take(order)
    assert [j.id for j in reversed_table] == [j.id for j in jobs[::-1]]
    assert list(table[10:20]) == jobs[10:20]
    assert table[-1] == jobs[-1] and table[0] == jobs[0]
    with pytest.raises(IndexError):
        table[len(table)]
    both = JobTable.concat([table, JobTable.from_jobs(jobs[:3])])
    assert len(both) == len(table) + 3 and list(both)[len(table) :] == jobs[:3]
    assert both.column("by_gpu[H100]")[-1] == jobs[2].runtime.by_gpu.get("H100", math.nan) or math.isnan(
        both.column("by_gpu[H100]")[-1]
    )


def test_take_in_the_same_order_shares_the_id_column() -> None:
    """Jobs already in submit order: the identity take keeps every job and reuses the (immutable) ids."""
    table = generated(20)
    same = table.take(np.arange(len(table)))
    assert same.ids is table.ids and list(same) == list(table)
    shorter = table.take(np.arange(len(table) - 1))
    assert shorter.ids is not table.ids and list(shorter) == list(table)[:-1]


def test_from_jobs_keeps_each_job_and_columns_match() -> None:
    jobs = list(generated(50))
    table = JobTable.from_jobs(jobs)
    assert table == jobs and list(table) == jobs
    for got, want in zip(table, jobs, strict=True):
        same_job(got, want)
    assert table.per_template(lambda j: j.gpus_per_pod, np.int64).tolist() == [j.gpus_per_pod for j in jobs]
    assert table.ids.to_pylist() == [j.id for j in jobs]
    with pytest.raises(KeyError, match="no column"):
        table.column("team")
    column = table.column("submit_s")
    with pytest.raises(ValueError):
        column[0] = 1.0  # columns are read-only views


def test_pickle_round_trip_is_compact() -> None:
    table = generated(5000)
    blob = pickle.dumps(table)
    back = pickle.loads(blob)
    assert back == table and list(back) == list(table)
    # per job: id, submit, runtime, one override, pods and template (about 50 bytes) plus a few templates
    assert len(blob) < 80 * len(table), len(blob)
    as_objects = len(pickle.dumps(list(table)))
    assert len(blob) * 4 < as_objects


def test_materialised_jobs_do_not_share_mutable_dicts_and_the_cache_is_bounded() -> None:
    table = generated(CACHED_JOBS)
    first, second = table[0], table[1]
    assert first.requests is not second.requests and first.node_selector is not second.node_selector
    assert table[0] is first  # cached while recent
    for i in range(len(table)):
        table[i]
    assert len(table._cache) <= CACHED_JOBS


def test_repr_is_short() -> None:
    table = generated(300)
    text = repr(table)
    assert text.startswith("JobTable(450 jobs, ") and "templates" in text and len(text) < 100
    assert repr(JobTable.empty()) == "JobTable(0 jobs, 0 templates)"


def test_resolved_scenario_takes_a_tuple_of_jobs_as_a_table() -> None:
    resolved = load("default")
    again = ResolvedScenario(scenario=resolved.scenario, jobs=tuple(resolved.jobs))
    assert isinstance(again.jobs, JobTable) and again.jobs == resolved.jobs
    assert pickle.loads(pickle.dumps(resolved)).jobs == resolved.jobs


def test_resolve_counts_pods_and_refuses_duplicate_ids_from_columns() -> None:
    resolved = load("default")
    jobs = list(resolved.jobs)
    dup = [*jobs[:3], jobs[1]]
    scenario = resolved.scenario.model_copy(
        update={
            "workload": resolved.scenario.workload.model_copy(update={"jobs": tuple(dup), "generator": None})
        }
    )
    with pytest.raises(Exception, match="is used twice \\(entries 1 and 3\\)"):
        resolve(scenario)


def test_preflight_names_the_same_jobs_per_template_as_per_job() -> None:
    """Jobs no node can run are found once per template; the warning names every such job, in job order,
    exactly as checking each job's pod spec would."""
    from fleetlab.experiment.run import preflight, profile_for
    from fleetlab.placement.feasibility import unsatisfiable
    from fleetlab.sim.specs import build_nodes, pod_spec

    resolved = load("default")
    generator = resolved.scenario.workload.generator
    assert generator is not None
    huge = one_class(name="huge", count=12, gpus_per_pod={"values": [1, 64]}, teams=["a", "b"])
    scenario = resolved.scenario.model_copy(
        update={
            "workload": resolved.scenario.workload.model_copy(
                update={"generator": Generator.model_validate({"classes": [*generator.classes, huge]})}
            )
        }
    )
    resolved = resolve(scenario)
    profile = profile_for(resolved, None)
    per_job = unsatisfiable(build_nodes(resolved), [(j.id, pod_spec(j)) for j in resolved.jobs], profile)
    assert per_job and all(ids for ids in per_job.values())
    warnings = [w for w in preflight(resolved, profile) if w.startswith("no node could ever run")]
    assert len(warnings) == len(per_job)
    for warning, ids in zip(warnings, per_job.values(), strict=True):
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        assert warning.endswith(f"job(s) {shown}")


def test_a_generated_job_out_of_range_is_one_clear_error() -> None:
    # 0.00001 arrivals per hour: gaps of 3.6e8 s on average, so within a few dozen jobs the submit times
    # pass the 100-year limit (3,153,600,000 s); the first such job is named, with its class and field
    from fleetlab.spec.errors import SpecError

    generator = Generator.model_validate(
        {"classes": [one_class(name="slow", arrivals_per_hour=0.00001, count=50)]}
    )
    with pytest.raises(SpecError) as info:
        generate_jobs(generator, 1, "s.yaml")
    assert info.value.source == "s.yaml"
    first, hint = info.value.problems
    assert first.startswith("workload.generator class 'slow', job slow-000") and ": submit_s: " in first
    assert "is longer than 3,153,600,000 s" in first and "arrivals_per_hour" in hint


@pytest.mark.parametrize("name", ["default", "two-teams"])
def test_simulator_columns_from_the_table_equal_those_read_job_by_job(name: str) -> None:
    """sim/job_arrays.py builds the simulator's per-job columns from a JobTable's templates; every column
    (and the spec keys, numbered in order of first appearance) equals the job-by-job build."""
    from dataclasses import fields

    from fleetlab.sim.job_arrays import job_arrays

    table = load(name).jobs
    order = np.argsort(table.column("submit_s"), kind="stable")[::-1]  # any order: keys follow it
    for jobs in (table, table.take(order)):
        fast, slow = job_arrays(jobs), job_arrays(list(jobs))
        for field in fields(fast):
            got, want = getattr(fast, field.name), getattr(slow, field.name)
            assert got.dtype == want.dtype and got.tolist() == want.tolist(), field.name


def test_runtime_and_template_of_one_job_without_building_it() -> None:
    table = generated(200)
    for i, job in enumerate(table):
        assert table.template_of(i).requests == job.requests and table.template_of(i).team == job.team
        for model in (None, "H100", "T4"):
            assert table.runtime_of(i, model) == job.runtime.on(model)


def _own_templates(jobs: list[Job]) -> JobTable:
    """``from_jobs`` as it was: every job its own template."""
    models = sorted({m for job in jobs for m in job.runtime.by_gpu})
    return JobTable(
        _arrow_ids(jobs),
        np.array([j.submit_s for j in jobs], dtype=np.float64),
        np.array([j.runtime.default for j in jobs], dtype=np.float64),
        np.array([j.pods for j in jobs], dtype=np.int32),
        np.arange(len(jobs), dtype=np.int32),
        jobs,
        [tuple(j.runtime.by_gpu) for j in jobs],
        {m: np.array([j.runtime.by_gpu.get(m, np.nan) for j in jobs]) for m in models},
    )


def _arrow_ids(jobs: list[Job]) -> Any:
    return pa.array([j.id for j in jobs], type=pa.large_string())


def _copy(job: Job, k: int, **shared: Any) -> Job:
    """``job`` with its own per-job fields (and ``shared`` fields changed, when given)."""
    runtime = job.runtime.model_copy(update={"default": 10.0 + k})
    return job.model_copy(
        update={"id": f"c{k}", "submit_s": float(k), "runtime": runtime, "pods": 1 + k % 3, **shared}
    )


def test_copies_of_one_job_share_its_template_by_hand() -> None:
    """a, its copies c1 and c2, b validated apart with a's values, c3 a copy with another priority, c4 a
    copy of b, c5 a copy with a by-GPU override, c6 a copy of a job that did not set its pods (the copy
    sets them): templates a (a, c1, c2), b (b, c4), c3, c5, d, c6 — 6 templates for 9 jobs, each job read
    back as the table of one template per job reads it."""
    spec = {"id": "a", "submit_s": 0, "pods": 2, "requests": {"cpu": "2", "nvidia.com/gpu": 1}, "runtime": 30}
    a = Job.model_validate(spec)
    b = Job.model_validate({**spec, "id": "b"})
    override = a.runtime.model_copy(update={"by_gpu": {"H100": 5.0}})
    c5 = a.model_copy(update={"id": "c5", "runtime": override})
    d = Job.model_validate({"id": "d", "requests": {"cpu": "1"}, "runtime": 30})
    jobs = [a, _copy(a, 1), b, _copy(a, 2), _copy(a, 3, priority=2), _copy(b, 4), c5, d, _copy(d, 6)]
    table = JobTable.from_jobs(jobs)
    assert table.column("template").tolist() == [0, 0, 1, 0, 2, 1, 3, 4, 5]
    assert [t.id for t in table.templates] == ["a", "b", "c3", "c5", "d", "c6"]
    reference = _own_templates(jobs)  # a table sets submit_s on every job it builds, as it always did
    for got, old, want in zip(table, reference, jobs, strict=True):
        assert got == want
        same_job(got, old)
    assert table == reference


def test_interned_tables_read_as_one_template_per_job_on_random_mixes() -> None:
    rng = np.random.default_rng(5)
    bases = [
        Job.model_validate(
            {
                "id": f"b{i}",
                "submit_s": 0,
                "pods": 1,
                "requests": {"cpu": str(1 + i)},
                "runtime": 20 + i,
                "team": t,
            }
        )
        for i, t in enumerate(["x", "y", "x"])
    ]
    for _ in range(20):
        jobs: list[Job] = []
        for k in range(int(rng.integers(1, 40))):
            base = bases[int(rng.integers(len(bases)))]
            choice = int(rng.integers(4))
            if choice == 0:
                jobs.append(base)
            elif choice == 1:
                jobs.append(_copy(base, k))
            elif choice == 2:
                jobs.append(_copy(base, k, priority=int(rng.integers(3))))
            else:
                jobs.append(Job.model_validate({**base.model_dump(by_alias=True), "id": f"v{k}"}))
        table, reference = JobTable.from_jobs(jobs), _own_templates(jobs)
        assert len(table.templates) <= len(jobs)
        for got, old, want in zip(table, reference, jobs, strict=True):
            same_job(got, want)
            same_job(got, old)
        assert table == reference and reference == table
        for value in (lambda j: j.priority, lambda j: j.team, lambda j: j.requests.get("cpu", 0)):
            assert table.per_template(value).tolist() == reference.per_template(value).tolist()
