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
    assert len(blob) * 5 < as_objects


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
