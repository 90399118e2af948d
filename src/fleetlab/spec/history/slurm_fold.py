"""Slurm attempts (one accounting record each, as ``sacct`` lists them) folded into jobs, as Arrow columns.

Both sacct formats become one table of attempts in file order (:data:`ATTEMPT_SCHEMA`); here each job id's
attempts fold into one JOB_SCHEMA row with absolute times: the last attempt's state, resources, account
and partition, the earliest submit and start, the requeues as restarts and the preemptions and node
failures as evictions. Everything is vectorised (a million attempts take about a second), and every cell a
fast path cannot read goes through the same per-cell function that names the file, place and value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fleetlab.model.gpus import GPU_MODELS
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import MAX_COUNT, SourceData, bounded_number, short
from fleetlab.spec.history.job_columns import has_repeats

COMPLETED = frozenset({"COMPLETED"})
FAILED = frozenset({"FAILED", "OUT_OF_MEMORY", "NODE_FAIL", "TIMEOUT", "BOOT_FAIL", "DEADLINE", "PREEMPTED"})
#: States where the job was taken away rather than failing by itself.
EVICTED = frozenset({"PREEMPTED", "NODE_FAIL", "REQUEUED"})
WAITING = frozenset({"PENDING", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
MAX_NODES_LISTED = 10_000
MODELS_LOWER = {name.lower().replace("-", ""): name for name in GPU_MODELS}
_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)$")
_MEM_UNITS = {"": 1 << 20, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
#: A number the fast path reads as Python's float() would (anything else goes through bounded_number).
_PLAIN_NUMBER = r"^[0-9]+(\.[0-9]*)?$"

#: Typed scalars for compute calls (a bare Python value makes Arrow infer its type, which costs an import
#: attempt per call: a second per million rows).
EMPTY, NO_TEXT, NO_FLOAT = (
    pa.scalar("", pa.string()),
    pa.scalar(None, pa.string()),
    pa.scalar(None, pa.float64()),
)
TRUE, FALSE = pa.scalar(True), pa.scalar(False)
_COMMA, _ONE = pa.scalar(",", pa.string()), pa.scalar(1, pa.int32())
_FINAL = pa.array(["completed", "failed", "cancelled"])
_ENDED = pa.array(["completed", "failed"])
_EVICTED = pa.array(sorted(EVICTED))

#: One accounting record per row as a reader gives it, in file order: times are absolute Unix seconds
#: (null: none), ``tres`` the ``AllocTRES`` text (``ReqTRES`` while pending).
ATTEMPT_SCHEMA = pa.schema(
    [
        pa.field("job_id", pa.string()),
        pa.field("submit", pa.float64()),
        pa.field("start", pa.float64()),
        pa.field("end", pa.float64()),
        pa.field("state", pa.string()),
        pa.field("tres", pa.string()),
        pa.field("partition", pa.string()),
        pa.field("account", pa.string()),
        pa.field("priority", pa.float64()),
        pa.field("nodes", pa.string()),
        pa.field("restarts", pa.int32()),  # at most MAX_COUNT
        pa.field("user", pa.string()),
        pa.field("timelimit", pa.float64()),  # requested wall time, seconds (null: none or unlimited)
        pa.field("qos", pa.string()),
    ]
)


def parse_tres(text: str) -> dict[str, str]:
    """``cpu=8,gres/gpu=2,mem=64G`` as a mapping (a name given twice keeps its last value)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if sep:
            out[name.strip()] = value.strip()
    return out


def expand_hostlist(text: str) -> list[str]:
    """``gpu[01-03,07],cpu1`` -> gpu01, gpu02, gpu03, gpu07, cpu1 (one bracket per name, bounded)."""
    names: list[str] = []
    for prefix, body, suffix, plain in re.findall(r"([^,\[]*)\[([^\]]*)\]([^,]*)|([^,\[\]]+)", text):
        if plain:
            names.append(plain)
            continue
        for item in body.split(","):
            lo, _, hi = item.partition("-")
            if hi and lo.isdigit() and hi.isdigit() and int(hi) - int(lo) < MAX_NODES_LISTED:
                names.extend(f"{prefix}{str(n).zfill(len(lo))}{suffix}" for n in range(int(lo), int(hi) + 1))
            else:
                names.append(f"{prefix}{item}{suffix}")
        if len(names) > MAX_NODES_LISTED:
            break
    return names[:MAX_NODES_LISTED]


def memory_bytes(text: str, source: str, where: str) -> float:
    """``mem=`` of AllocTRES (``64G``, ``512000M``; no unit means MiB) in bytes."""
    match = _MEM.match(text.strip())
    if match is None:
        raise SpecError(source, [f"{where}: mem={short(text)} is not a size such as 64G or 512000M"])
    return float(int(float(match.group(1)) * _MEM_UNITS[match.group(2)]))


def _array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One contiguous array (Arrow's compute functions return chunked ones for table columns)."""
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def tres_fields(tres: pa.Array, names: tuple[str, ...]) -> tuple[dict[str, pa.Array], pa.Array]:
    """The value of each of ``names`` in every TRES text, as :func:`parse_tres` reads it (null where
    absent), and the type of the first ``gres/gpu:TYPE=`` part. Texts as sacct writes them (no blanks,
    each name once) are read vectorised; the rest through :func:`parse_tres`."""
    text = pc.binary_join_element_wise(_COMMA, pc.fill_null(tres, EMPTY), _COMMA, EMPTY)  # ",cpu=8,mem=64G,"
    odd = pc.match_substring_regex(text, r"\s").to_numpy(zero_copy_only=False)
    found: dict[str, pa.Array] = {}
    for name in names:
        odd |= pc.greater(pc.count_substring(text, f",{name}="), _ONE).to_numpy(zero_copy_only=False)
        found[name] = pc.struct_field(pc.extract_regex(text, f",{re.escape(name)}=(?P<v>[^,]*),"), [0])
    kinds = pc.struct_field(pc.extract_regex(text, r",gres/gpu:(?P<k>[^=,]*)="), [0])
    if not odd.any():
        return found, kinds
    rows = np.nonzero(odd)[0]
    parsed = [parse_tres(tres[int(i)].as_py() or "") for i in rows]
    for name in names:
        patched = found[name].to_pylist()
        for i, cells in zip(rows, parsed, strict=True):
            patched[i] = cells.get(name)
        found[name] = pa.array(patched, pa.string())
    gpu = kinds.to_pylist()
    for i, cells in zip(rows, parsed, strict=True):
        gpu[i] = next((k.split(":", 1)[1] for k in cells if k.startswith("gres/gpu:")), None)
    return found, pa.array(gpu, pa.string())


def _numbers(
    texts: pa.Array, reader: Callable[[str, str], float], where: Callable[[int], str], hi: float
) -> np.ndarray:
    """Floats of a text column (0 where absent or empty): plain numbers up to ``hi`` vectorised; anything
    else goes through ``reader``, which returns the value or names the place (``where``) and the value."""
    plain = pc.fill_null(pc.match_substring_regex(texts, _PLAIN_NUMBER), FALSE)
    values = np.array(
        pc.cast(pc.if_else(plain, texts, NO_TEXT), pa.float64()).to_numpy(zero_copy_only=False),
        dtype=np.float64,
    )
    blank = pc.fill_null(pc.equal(texts, EMPTY), TRUE).to_numpy(zero_copy_only=False)
    values[blank] = 0.0
    slow = (~plain.to_numpy(zero_copy_only=False) & ~blank) | (values > hi)
    for i in np.nonzero(slow)[0]:
        values[i] = reader(texts[int(i)].as_py(), where(int(i)))
    return values


def _gpu_model(kinds: pa.Array) -> pa.Array:
    """The fleetlab GPU model of each ``gres/gpu:TYPE`` (the type itself where fleetlab has no such
    model), or null."""
    encoded = _array(pc.dictionary_encode(kinds))
    names = [
        MODELS_LOWER.get(k.lower().replace("-", "").replace("_", ""), k)
        for k in encoded.dictionary.to_pylist()
    ]
    return pa.DictionaryArray.from_arrays(encoded.indices, pa.array(names, pa.string()))


def _first_word(state: pa.Array) -> pa.Array:
    return pc.fill_null(pc.struct_field(pc.extract_regex(state, r"^\s*(?P<w>\S*)"), [0]), EMPTY)


def _state_of(word: str, started: bool) -> tuple[str, str | None]:
    """JOB_STATES state and end reason of a job from its last attempt's first state word."""
    if word in COMPLETED:
        return "completed", "COMPLETED"
    if word in FAILED:
        return "failed", word
    if word == "CANCELLED":
        return "cancelled", "CANCELLED"
    if word in WAITING or (word == "REQUEUED" and not started):
        return "pending", None
    return "running", None  # RUNNING, SUSPENDED, RESIZING, REQUEUED with a start


def _states(word: pa.Array, started: np.ndarray) -> tuple[pa.DictionaryArray, pa.DictionaryArray]:
    """State and end reason of every row (dictionary-encoded), computed once per distinct (word, started)
    pair."""
    encoded = _array(pc.dictionary_encode(word))
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32) * 2 + started
    pairs = [_state_of(w, bool(s)) for w in encoded.dictionary.to_pylist() for s in (False, True)]
    states = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array([p[0] for p in pairs], pa.string()))
    reason_names = sorted({p[1] for p in pairs if p[1] is not None})
    reason_codes = np.array([-1 if p[1] is None else reason_names.index(p[1]) for p in pairs], dtype=np.int32)
    picked = reason_codes[codes]
    reasons = pa.DictionaryArray.from_arrays(
        pa.array(picked, mask=picked < 0), pa.array(reason_names, pa.string())
    )
    return states, reasons


def _node_names(listed: pa.Array) -> pa.Array:
    """Each NodeList as sorted, comma-joined node names (a plain name as it is, host lists expanded)."""
    plain = pc.fill_null(pc.match_substring_regex(listed, r"^[^,\[\]]+$"), TRUE).to_numpy(
        zero_copy_only=False
    )
    if plain.all():
        return _blank_null(listed)
    values = listed.to_pylist()
    for i in np.nonzero(~plain)[0]:
        values[i] = ",".join(sorted(set(expand_hostlist(values[i])))) or None
    return pa.array(values, pa.string())


def owned(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    """An Arrow array holding its own copy of ``values``: a block's long-lived columns then sit in Arrow's
    memory pool rather than among the block's short-lived numpy arrays, which would leave most of a
    million-row import's freed memory in pages that cannot be returned (Arrow wraps numpy data without
    copying)."""
    wrapped = pa.array(values, mask=mask)
    return pa.concat_arrays([wrapped, wrapped[:0]])


def _few(values: pa.Array) -> pa.Array:
    """A text column of few distinct values as a dictionary (a block's columns stay small until the
    attempts are folded and every column is written out once, :func:`_plain`)."""
    return _array(pc.dictionary_encode(values))


def _plain(table: pa.Table) -> pa.Table:
    """Every dictionary column of the blocks' rows as one plain text array (one allocation a column)."""
    for index, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            column = table.column(index).combine_chunks().cast(pa.string())
            table = table.set_column(index, pa.field(f.name, pa.string()), column)
    return table


def _constant(text: str | None, n: int) -> pa.Array:
    dictionary = pa.array([] if text is None else [text], pa.string())
    indices = pa.nulls(n, pa.int8()) if text is None else pa.array(np.zeros(n, dtype=np.int8))
    return pa.DictionaryArray.from_arrays(indices, dictionary)


def _blank_null(values: pa.Array) -> pa.Array:
    return pc.if_else(pc.fill_null(pc.equal(values, EMPTY), TRUE), NO_TEXT, values)


#: Columns a job row carries besides JOB_SCHEMA's until the attempts are folded: the latest instant the
#: attempt mentions and whether its End comes before its Start.
FOLD_FIELDS = (pa.field("latest", pa.float64()), pa.field("backwards", pa.bool_()))


def job_rows(attempts: pa.Table, source: str) -> pa.Table:
    """Each attempt (ATTEMPT_SCHEMA, one block of them) as the job it would be alone: JOB_SCHEMA columns
    with absolute times plus FOLD_FIELDS; ``evictions`` is 1 for an attempt taken away (preempted, node
    failure, requeued). A count that is not a number in 0..MAX_COUNT or a memory size that is not one is an
    error naming the job. Columns without values share one null array."""
    n = attempts.num_rows
    ids = attempts.column("job_id")

    def where(field: str) -> Callable[[int], str]:
        return lambda i: f"job {ids[i].as_py()} AllocTRES {field}"

    def count(text: str, place: str) -> float:
        return bounded_number(text, source, place, 0, MAX_COUNT)

    found, kinds = tres_fields(_array(attempts.column("tres")), ("node", "gres/gpu", "cpu", "mem"))
    pods = np.maximum(np.trunc(_numbers(found["node"], count, where("node"), MAX_COUNT)), 1.0).astype(
        np.int32
    )
    gpus = _numbers(found["gres/gpu"], count, where("gres/gpu"), MAX_COUNT)
    cpus = _numbers(found["cpu"], count, where("cpu"), MAX_COUNT)
    memory = _memory(found["mem"], source, ids)
    word = _first_word(_array(attempts.column("state")))
    start, raw_end = attempts.column("start"), attempts.column("end")
    state, reason = _states(word, _array(pc.is_valid(start)).to_numpy(zero_copy_only=False).astype(np.int32))
    final = pc.take(pc.is_in(state.dictionary, value_set=_FINAL), state.indices)
    no_float = pa.nulls(n, pa.float64())
    job_class = pa.DictionaryArray.from_arrays(pa.array((gpus > 0).astype(np.int8)), ["batch", "training"])
    columns = {
        "job_id": ids,
        "source": _constant("slurm", n),
        "owner_kind": _constant("SlurmJob", n),
        "namespace": _constant(None, n),
        "team": _few(_blank_null(_array(attempts.column("account")))),
        "queue": _few(_blank_null(_array(attempts.column("partition")))),
        "job_class": job_class,
        "priority": attempts.column("priority"),
        "pods": owned(pods),
        "gpus_per_pod": owned(gpus / pods),
        "gpu_milli_per_pod": pa.nulls(n, pa.int32()),
        "cpu_per_pod": owned(cpus / pods),
        "memory_per_pod": owned(memory // pods),
        "gpu_model": _gpu_model(kinds),
        "submit_s": attempts.column("submit"),
        "admitted_s": no_float,
        "scheduled_s": start,
        "running_s": start,
        "end_s": pc.if_else(final, raw_end, NO_FLOAT),
        "state": state,
        "end_reason": reason,
        "restarts": pc.cast(attempts.column("restarts"), pa.int32()),
        "evictions": pc.cast(pc.is_in(word, value_set=_EVICTED), pa.int32()),
        "nodes": _few(_node_names(_array(attempts.column("nodes")))),
        "user": _few(_blank_null(_array(attempts.column("user")))),
        "walltime_s": attempts.column("timelimit"),
        "qos": _few(_blank_null(_array(attempts.column("qos")))),
        "gpu_util_mean": no_float,
        "gpu_mem_used_max": no_float,
        "image_pull_s": no_float,
        "run_s": no_float,
        "latest": pc.max_element_wise(attempts.column("submit"), start, raw_end, skip_nulls=True),
        "backwards": pc.fill_null(pc.less(raw_end, start), FALSE),
    }
    return pa.table(columns)


def _union_nodes(rows: pa.Table, groups: pa.Table, folded: np.ndarray) -> pa.Array:
    """The last row's node names, or for a job of several attempts every attempt's, sorted and joined."""
    last_rows = groups.column("row_max")
    out = pc.take(rows.column("nodes"), last_rows).to_pylist()
    wanted = set(pc.filter(groups.column("job_id"), pa.array(folded)).to_pylist())
    names: dict[str, set[str]] = {job: set() for job in wanted}
    for job, listed in zip(rows.column("job_id").to_pylist(), rows.column("nodes").to_pylist(), strict=True):
        if job in names and listed:
            names[job].update(listed.split(","))
    ids = groups.column("job_id").to_pylist()
    for i in np.nonzero(folded)[0]:
        out[i] = ",".join(sorted(names[ids[i]])) or None
    return pa.array(out, pa.string())


def fold_attempts(rows: pa.Table, data: SourceData) -> pa.Table:
    """One JOB_SCHEMA row (absolute times) per job id from the job rows of its attempts in file order
    (:func:`job_rows`): the last attempt's row, with the earliest submit and start, requeues counted as
    restarts and every attempt's evictions and nodes. Jobs with no submit, whose last attempt ends before
    it starts, or that finished without an end are left out and counted in ``data`` by reason."""
    rows = _plain(rows)
    if has_repeats(rows.column("job_id")):
        rows = _fold_repeated(rows)
    no_submit = pc.is_null(rows.column("submit_s")).to_numpy(zero_copy_only=False)
    backwards = rows.column("backwards").to_numpy() & ~no_submit
    ended = pc.is_in(rows.column("state"), value_set=_ENDED).to_numpy(zero_copy_only=False)
    no_end = ended & pc.is_null(rows.column("end_s")).to_numpy(zero_copy_only=False) & ~no_submit & ~backwards
    for mask, reason in (
        (no_submit, "job without a Submit time"),
        (backwards, "job ended before it started (clocks went backwards)"),
        (no_end, "job finished with no End time"),
    ):
        if mask.any():
            data.skip(reason, int(mask.sum()))
    dropped = no_submit | backwards | no_end
    if dropped.any():
        rows = rows.filter(pa.array(~dropped))
    if rows.num_rows:
        data.saw(pc.max(rows.column("latest")).as_py())
    return rows.drop_columns([f.name for f in FOLD_FIELDS])


def _fold_repeated(rows: pa.Table) -> pa.Table:
    """Rows of repeated job ids (requeued with ``--duplicates``) folded into their last one."""
    rows = rows.append_column("row", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    groups = rows.group_by("job_id", use_threads=False).aggregate(
        [("submit_s", "min"), ("running_s", "min"), ("row", "max"), ("row", "count"), ("evictions", "sum"),
         ("restarts", "sum"), ("latest", "max")]
    )  # fmt: skip
    folded = groups.column("row_count").to_numpy() > 1
    last = rows.take(groups.column("row_max")).drop_columns(["row"])
    restarts = groups.column("row_count").to_numpy() - 1 + groups.column("restarts_sum").to_numpy()
    replace = {
        "submit_s": groups.column("submit_s_min"),
        "scheduled_s": groups.column("running_s_min"),
        "running_s": groups.column("running_s_min"),
        "restarts": pa.array(restarts.astype(np.int32)),
        "evictions": pc.cast(groups.column("evictions_sum"), pa.int32()),
        "nodes": _union_nodes(rows, groups, folded),
        "latest": groups.column("latest_max"),
    }
    for name, column in replace.items():
        last = last.set_column(last.schema.get_field_index(name), name, column)
    return last


def _memory(texts: pa.Array, source: str, ids: pa.Array) -> np.ndarray:
    """Bytes from ``mem=`` texts (0 where absent) as int64; a size past int64 is left for the range check
    as 2**62."""
    match = pc.extract_regex(pc.fill_null(texts, EMPTY), r"^(?P<n>[0-9]+(?:\.[0-9]+)?)(?P<u>[KMGTP]?)$")
    number = np.array(pc.cast(pc.struct_field(match, [0]), pa.float64()).to_numpy(zero_copy_only=False))
    units = _array(pc.dictionary_encode(pc.fill_null(pc.struct_field(match, [1]), EMPTY)))
    factors = np.array([_MEM_UNITS[u] for u in units.dictionary.to_pylist()] or [0], dtype=np.float64)
    values = number * factors[units.indices.to_numpy(zero_copy_only=False)]
    blank = pc.fill_null(pc.equal(texts, EMPTY), TRUE).to_numpy(zero_copy_only=False)
    values[blank] = 0.0
    for i in np.nonzero(pc.is_null(match).to_numpy(zero_copy_only=False) & ~blank)[0]:
        values[i] = memory_bytes(texts[int(i)].as_py(), source, f"job {ids[int(i)].as_py()} AllocTRES")
    out: np.ndarray = np.trunc(np.minimum(values, float(2**62))).astype(np.int64)
    return out
