"""A workload's jobs as columns: what varies per job in numpy/Arrow arrays, the rest in shared templates.

A million generated jobs as pydantic ``Job`` objects take ~4 KB each; most of that is the same tolerations,
selectors, image and requests repeated. :class:`JobTable` keeps per job only its id, submit time, runtime
(default and per-GPU overrides), pod count and the index of its *template*: an already validated ``Job``
holding every other field, shared by all jobs of one shape. ``table[i]`` builds the ``Job`` from those parts
without validating again, so every consumer of ``Sequence[Job]`` keeps working; hot paths read columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeVar, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from fleetlab.model.arrow_arrays import arrow_array, string_array
from fleetlab.model.job import Job, Runtime

__all__ = ["JobTable", "ids_of", "templates_by"]

K = TypeVar("K")

#: Jobs materialised by ``table[i]`` kept per table (a simulator reads the same few live jobs repeatedly);
#: bounded, so memory stays proportional to what is alive, not to the workload.
CACHED_JOBS = 16384

_set = object.__setattr__
#: Per-job fields: the only ones a template does not hold.
PER_JOB_FIELDS = ("id", "submit_s", "runtime", "pods")


def _build(cls: type[Any], values: dict[str, Any], fields_set: set[str]) -> Any:
    """A pydantic model from already validated field values (what ``model_construct`` does, minus its
    per-field default filling: ``values`` holds every field)."""
    obj = object.__new__(cls)
    _set(obj, "__dict__", values)
    _set(obj, "__pydantic_fields_set__", fields_set)
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


def _interned(jobs: Sequence[Job]) -> tuple[npt.NDArray[np.int32], list[Job]]:
    """Per job its template's index, and the templates: jobs of one class whose fields but the per-job
    ones are the same objects (by identity, so equal values of another type or sharing stay apart), with
    the same set fields and the same runtime overrides' models and set fields, share the first's."""
    out = np.empty(len(jobs), dtype=np.int32)
    templates: list[Job] = []
    index: dict[tuple[Any, ...], int] = {}
    shared: Callable[[dict[str, Any]], tuple[Any, ...]] | None = None
    width = 0
    for i, job in enumerate(jobs):
        values = job.__dict__
        if shared is None:
            names = [k for k in values if k not in PER_JOB_FIELDS]
            shared, width = itemgetter(*names), len(values)
        if type(job) is not Job or len(values) != width:  # another layout: its own template
            out[i] = len(templates)
            templates.append(job)
            continue
        runtime = job.runtime
        key = (
            tuple(map(id, shared(values))),
            frozenset(job.__pydantic_fields_set__),
            tuple(runtime.by_gpu),
            frozenset(runtime.__pydantic_fields_set__),
        )
        k = index.get(key)
        if k is None:
            k = index[key] = len(templates)
            templates.append(job)
        out[i] = k
    return out, templates


def _shape(job: Job) -> dict[str, Any]:
    """A template's fields that its jobs share (all but the per-job ones)."""
    return {k: v for k, v in job.__dict__.items() if k not in PER_JOB_FIELDS}


class JobTable(Sequence[Job]):
    """An immutable sequence of jobs stored as columns plus interned templates (see the module doc).

    Columns, one value per job: ``id`` (Arrow large_string), ``submit_s`` and ``runtime_s`` (float64),
    ``pods`` (int32), ``template`` (int32, index into :attr:`templates`) and, per GPU model named by some
    job's runtime overrides, ``by_gpu[model]`` (float64, NaN where the job has no override). A template is a
    validated ``Job`` whose per-job fields are those of the first job of its shape; which overrides its jobs
    carry (``template_models``) is part of the template, so dict order and set fields match the source.
    """

    __slots__ = (
        "_by_gpu",
        "_cache",
        "_fields",
        "_id_data",
        "_id_offsets",
        "_ids",
        "_models",
        "_pods",
        "_runtime",
        "_submit",
        "_template",
        "_templates",
    )

    def __init__(
        self,
        ids: pa.Array,
        submit_s: npt.NDArray[np.float64],
        runtime_s: npt.NDArray[np.float64],
        pods: npt.NDArray[np.int32],
        template: npt.NDArray[np.int32],
        templates: Sequence[Job],
        template_models: Sequence[tuple[str, ...]],
        by_gpu: Mapping[str, npt.NDArray[np.float64]] | None = None,
    ) -> None:
        """Columns already checked by the caller (a reader or generator validates before building)."""
        n = len(ids)
        self._ids = ids if ids.type == pa.large_string() else ids.cast(pa.large_string())
        self._submit = np.ascontiguousarray(submit_s, dtype=np.float64)
        self._runtime = np.ascontiguousarray(runtime_s, dtype=np.float64)
        self._pods = np.ascontiguousarray(pods, dtype=np.int32)
        self._template = np.ascontiguousarray(template, dtype=np.int32)
        self._templates = tuple(templates)
        self._models = tuple(tuple(m) for m in template_models)
        self._by_gpu = {m: np.ascontiguousarray(v, dtype=np.float64) for m, v in (by_gpu or {}).items()}
        columns: dict[str, npt.NDArray[Any]] = {
            "submit_s": self._submit,
            "runtime_s": self._runtime,
            "pods": self._pods,
            "template": self._template,
        }
        columns.update(self._by_gpu)
        for name, col in columns.items():
            if len(col) != n:
                raise ValueError(f"column {name} has {len(col)} values for {n} jobs")
        if len(self._models) != len(self._templates):
            raise ValueError("one tuple of runtime override models per template")
        if n and (int(self._template.min()) < 0 or int(self._template.max()) >= len(self._templates)):
            raise ValueError("template index out of range")
        self._id_data: bytes | None = None
        self._id_offsets: npt.NDArray[np.int64] | None = None
        self._cache: dict[int, Job] = {}
        #: Per template, the fields a job of it has set: the template's own plus the per-job ones. One set
        #: is shared by the template's jobs (pydantic copies it before changing it, in model_copy); made
        #: when a job of the template is first built (a table of built jobs has a template per job).
        self._fields: dict[int, set[str]] = {}

    # --- building -----------------------------------------------------------------------------------

    @classmethod
    def from_jobs(cls, jobs: Iterable[Job]) -> JobTable:
        """A table of already built jobs (inline YAML, snapshots, services, a history's replayed jobs).
        Jobs that hold the very same objects in every field but the per-job ones (copies of one job with
        their own id, submit time, runtime and pods, as a history's are) and the same set fields share a
        template, the first of them; any other job is its own template. A job of the table is then the
        one given, field for field."""
        if isinstance(jobs, JobTable):
            return jobs
        items = list(jobs)
        template, templates = _interned(items)
        models = sorted({m for job in items for m in job.runtime.by_gpu})
        return cls(
            string_array([job.id for job in items], pa.large_string()),
            np.fromiter((job.submit_s for job in items), np.float64, len(items)),
            np.fromiter((job.runtime.default for job in items), np.float64, len(items)),
            np.fromiter((job.pods for job in items), np.int32, len(items)),
            template,
            templates,
            [tuple(job.runtime.by_gpu) for job in templates],
            {
                m: np.fromiter((job.runtime.by_gpu.get(m, np.nan) for job in items), np.float64, len(items))
                for m in models
            },
        )

    @classmethod
    def empty(cls) -> JobTable:
        """No jobs."""
        return cls.from_jobs(())

    @classmethod
    def concat(cls, tables: Sequence[JobTable]) -> JobTable:
        """The jobs of ``tables`` one after the other (template indices shifted)."""
        if len(tables) == 1:
            return tables[0]
        shifts = np.cumsum([0, *(len(t._templates) for t in tables)])
        n = sum(len(t) for t in tables)
        models = sorted({m for t in tables for m in t._by_gpu})
        return cls(
            pa.concat_arrays([t._ids for t in tables]) if tables else string_array([], pa.large_string()),
            np.concatenate([t._submit for t in tables]) if tables else np.empty(0),
            np.concatenate([t._runtime for t in tables]) if tables else np.empty(0),
            np.concatenate([t._pods for t in tables]) if tables else np.empty(0, np.int32),
            np.concatenate([t._template + np.int32(s) for t, s in zip(tables, shifts, strict=False)])
            if tables
            else np.empty(0, np.int32),
            [tpl for t in tables for tpl in t._templates],
            [m for t in tables for m in t._models],
            {m: np.concatenate([t._by_gpu.get(m, np.full(len(t), np.nan)) for t in tables]) for m in models}
            if n
            else {},
        )

    def take(self, order: npt.ArrayLike) -> JobTable:
        """The jobs at positions ``order`` (a permutation or any selection), sharing the templates."""
        idx = np.asarray(order, dtype=np.int64)
        # Arrow arrays are immutable, so the identity order (jobs already in submit order) shares the id
        # column; Array.take would import pyarrow.compute (0.03 s of start-up) for nothing.
        same = len(idx) == len(self) and bool(np.array_equal(idx, np.arange(len(idx))))
        return JobTable(
            self._ids if same else self._ids.take(arrow_array(idx)),
            self._submit[idx],
            self._runtime[idx],
            self._pods[idx],
            self._template[idx],
            self._templates,
            self._models,
            {m: v[idx] for m, v in self._by_gpu.items()},
        )

    def map_templates(self, change: Callable[[Job], Job]) -> JobTable:
        """The same jobs with ``change`` applied to every template (it must not touch per-job fields)."""
        new = [change(t) for t in self._templates]
        if all(a is b for a, b in zip(new, self._templates, strict=True)):
            return self
        return JobTable(
            self._ids,
            self._submit,
            self._runtime,
            self._pods,
            self._template,
            new,
            self._models,
            self._by_gpu,
        )

    # --- reading ------------------------------------------------------------------------------------

    @property
    def templates(self) -> tuple[Job, ...]:
        """The interned templates (a template's per-job fields are those of one of its jobs)."""
        return self._templates

    @property
    def ids(self) -> pa.Array:
        """Job ids as an Arrow large_string array."""
        return self._ids

    def column(self, name: str) -> npt.NDArray[Any]:
        """A per-job column: ``submit_s``, ``runtime_s``, ``pods``, ``template`` or ``by_gpu[MODEL]``
        (NaN where a job has no override); read-only views, not copies."""
        out: npt.NDArray[Any]
        if name.startswith("by_gpu[") and name.endswith("]"):
            col = self._by_gpu.get(name[7:-1])
            out = np.full(len(self), np.nan) if col is None else col
        else:
            cols: dict[str, npt.NDArray[Any]] = {
                "submit_s": self._submit,
                "runtime_s": self._runtime,
                "pods": self._pods,
                "template": self._template,
            }
            if name not in cols:
                raise KeyError(f"no column {name!r}: submit_s, runtime_s, pods, template, by_gpu[MODEL]")
            out = cols[name]
        view = out.view()
        view.flags.writeable = False
        return view

    def per_template(
        self, value: Callable[[Job], Any], dtype: npt.DTypeLike | None = None
    ) -> npt.NDArray[Any]:
        """A per-job column of ``value(template)`` computed once per template (class, priority, GPUs per
        pod, ...): for template-level fields only, never id, submit time, runtime or pods."""
        per = np.asarray([value(t) for t in self._templates], dtype=dtype)
        if per.ndim != 1:
            per = np.fromiter((value(t) for t in self._templates), dtype=object, count=len(self._templates))
        return per[self._template]

    def runtime_on(self, gpu_model: str | None) -> npt.NDArray[np.float64]:
        """Every job's runtime on ``gpu_model`` (its override there, else its default), as Runtime.on."""
        col = self._by_gpu.get(gpu_model) if gpu_model is not None else None
        if col is None:
            return self._runtime.copy()
        return np.where(np.isnan(col), self._runtime, col)

    def _overrides(self, model: str) -> npt.NDArray[np.float64]:
        """Per job, its runtime override on ``model`` (NaN where its template has none)."""
        col = self._by_gpu.get(model)
        if col is None:
            return np.full(len(self), np.nan)
        has = np.asarray([model in names for names in self._models], dtype=bool)
        return np.where(has[self._template], col, np.nan)

    def runtime_of(self, index: int, gpu_model: str | None) -> float:
        """Job ``index``'s runtime on ``gpu_model`` (``Runtime.on`` without building the job)."""
        i = int(index)
        if gpu_model is not None and gpu_model in self._models[int(self._template[i])]:
            return float(self._by_gpu[gpu_model][i])
        return float(self._runtime[i])

    def template_of(self, index: int) -> Job:
        """Job ``index``'s template, without building the job: every field but id, submit_s, runtime and
        pods is the job's own (priority, class, requests, constraints, ...)."""
        return self._templates[int(self._template[index])]

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> Job: ...

    @overload
    def __getitem__(self, index: slice) -> JobTable: ...

    def __getitem__(self, index: int | slice) -> Job | JobTable:
        if isinstance(index, slice):
            return self.take(np.arange(len(self))[index])
        job = self._cache.get(index)  # hot: a recently read job
        if job is not None:
            return job
        i = int(index)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"job index {index} out of range for {n} jobs")
        job = self._cache.get(i)
        if job is None:
            job = self._job(i)
            if len(self._cache) >= CACHED_JOBS:
                del self._cache[next(iter(self._cache))]
            self._cache[i] = job
        return job

    def __iter__(self) -> Iterator[Job]:
        for i in range(len(self)):
            yield self._cache.get(i) or self._job(i)

    def _job_id(self, i: int) -> str:
        if self._id_data is None or self._id_offsets is None:
            ids = self._ids
            offsets = np.frombuffer(ids.buffers()[1], dtype=np.int64)[ids.offset : ids.offset + len(ids) + 1]
            data = ids.buffers()[2]
            self._id_data = data.to_pybytes() if data is not None else b""
            self._id_offsets = offsets
        start, end = self._id_offsets[i], self._id_offsets[i + 1]
        return self._id_data[start:end].decode()

    def _job(self, i: int) -> Job:
        k = int(self._template[i])
        template = self._templates[k]
        models = self._models[k]
        by_gpu = {m: float(self._by_gpu[m][i]) for m in models}
        old = template.runtime
        runtime = _build(
            Runtime, {"default": float(self._runtime[i]), "by_gpu": by_gpu}, old.model_fields_set
        )
        values = dict(template.__dict__)
        values["id"] = self._job_id(i)
        values["submit_s"] = float(self._submit[i])
        values["pods"] = int(self._pods[i])
        values["runtime"] = runtime
        values["requests"] = dict(template.requests)
        values["node_selector"] = dict(template.node_selector)
        fields = self._fields.get(k)
        if fields is None:
            fields = self._fields[k] = template.model_fields_set | {"id", "submit_s", "runtime"}
        return _build(Job, values, fields)  # type: ignore[no-any-return]

    # --- protocol -----------------------------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            JobTable,
            (
                self._ids,
                self._submit,
                self._runtime,
                self._pods,
                self._template,
                self._templates,
                self._models,
                self._by_gpu,
            ),
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JobTable):
            if len(self) != len(other):
                return False
            same = (
                self._ids.equals(other._ids)
                and np.array_equal(self._submit, other._submit)
                and np.array_equal(self._runtime, other._runtime)
                and np.array_equal(self._pods, other._pods)
            )
            if not same:
                return False
            pairs = set(zip(self._template.tolist(), other._template.tolist(), strict=True))
            if any(_shape(self._templates[a]) != _shape(other._templates[b]) for a, b in pairs):
                return False
            if any(self._models[a] != other._models[b] for a, b in pairs):
                return False
            models = {m for names in self._models for m in names}
            return all(
                np.array_equal(self._overrides(m), other._overrides(m), equal_nan=True) for m in models
            )
        if isinstance(other, tuple | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        n = len(self)
        span = f", submit {self._submit.min():g}–{self._submit.max():g} s" if n else ""
        return f"JobTable({n:,} jobs, {len(self._templates):,} templates{span})"

    def nbytes(self) -> int:
        """Bytes held by the per-job columns (templates not counted)."""
        cols: list[npt.NDArray[Any]] = [self._submit, self._runtime, self._pods, self._template]
        cols.extend(self._by_gpu.values())
        return int(self._ids.nbytes + sum(c.nbytes for c in cols))


def templates_by(jobs: JobTable, value: Callable[[Job], K | None]) -> dict[K, list[int]]:
    """Templates grouped by ``value(template)`` (None: left out), each group's templates and the groups
    in the order of their first job: what a per-job loop grouping by that value would find, at the cost
    of one call per template."""
    template = jobs.column("template")
    used, first = np.unique(template, return_index=True)
    out: dict[K, list[int]] = {}
    for t in used[np.argsort(first, kind="stable")].tolist():
        key = value(jobs.templates[t])
        if key is not None:
            out.setdefault(key, []).append(t)
    return out


def ids_of(jobs: JobTable, templates: Sequence[int]) -> list[str]:
    """Ids of the jobs of ``templates``, in job order."""
    rows = np.flatnonzero(np.isin(jobs.column("template"), np.asarray(templates, dtype=np.int32)))
    ids: list[str] = jobs.ids.take(arrow_array(rows)).to_pylist()
    return ids
