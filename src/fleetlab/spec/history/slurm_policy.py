"""Slurm's recorded policy: association and QOS limits, fair share, priority weights and node events.

* ``sacctmgr show assoc --parsable2`` (columns by header name: Cluster, Account, User, Partition, Share,
  Priority, GrpJobs, GrpTRES, GrpSubmit, MaxJobs, MaxTRES, MaxSubmit, MaxWall, QOS, Def QOS);
* ``sacctmgr show qos --parsable2`` (Name, Priority, Preempt, PreemptMode, UsageFactor, GrpTRES, GrpJobs,
  GrpSubmit, MaxTRES, MaxWall, MaxTRESPU, MaxJobsPU, MaxSubmitPU);
* ``sacctmgr show event --parsable2`` (NodeName, TimeStart, TimeEnd, State, Reason): a node in a ``DOWN``
  state is a down window, one in a ``DRAIN``/``DRAINING``/``DRAINED`` state a drain window; cluster
  events (no node) are not node windows;
* ``sshare --parsable2`` (Account, User, RawShares, NormShares, RawUsage, EffectvUsage, FairShare);
* ``scontrol show config`` (``PriorityType``, the whole-number ``PriorityWeight*`` lines, ``SchedulerType``,
  ``SchedulerParameters``' ``bf_interval``/``bf_window``/``bf_max_job_test``, ``PreemptType``,
  ``PreemptMode``, ``PreemptExemptTime``, ``PriorityCalcPeriod``, ``PriorityMaxAge``,
  ``PriorityDecayHalfLife``, ``PriorityFavorSmall``, ``PriorityFlags``, ``EnforcePartLimits``);
  QOS rows also give ``GraceTime`` and ``PreemptExemptTime``.

TRES amounts keep ``cpu`` (cores), ``mem`` (bytes; K/M/G/T/P, M when no unit), ``node`` and ``gres/gpu``
(the typed ``gres/gpu:MODEL`` counts summed when no plain count is given). An empty cell is "not set".
Which of the three ``sacctmgr`` tables a file holds comes from its header.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from fleetlab.model.history_policy import (
    FairShareRow,
    HistoryPolicy,
    SlurmAssociation,
    SlurmBackfill,
    SlurmLimits,
    SlurmQos,
)
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.common import (
    NodeDownRecord,
    SourceData,
    open_text,
    parse_naive_utc,
    short,
)
from fleetlab.spec.history.slurm import expand_hostlist, parse_wall

MAX_LINE_CHARS = 1 << 16
MAX_ROWS = 1_000_000
TIME_HINT = "YYYY-MM-DDTHH:MM:SS (run `TZ=UTC sacctmgr ...`)"
_MEM = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)$")
_MEM_UNITS = {"": 1 << 20, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
DOWN_STATES = ("DOWN", "FAIL", "FAILING", "NOT_RESPONDING")
DRAIN_STATES = ("DRAIN", "DRAINING", "DRAINED")


def _rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and every row of a ``|``-separated file (a trailing ``|`` of ``--parsable`` allowed)."""
    source = str(path)
    rows: list[tuple[int, dict[str, str]]] = []
    with open_text(path) as fh:
        try:
            header = fh.readline(MAX_LINE_CHARS).rstrip("\r\n").rstrip("|").split("|")
            for number, line in enumerate(iter(lambda: fh.readline(MAX_LINE_CHARS), ""), start=2):
                if not line.endswith("\n") and len(line) >= MAX_LINE_CHARS:
                    raise SpecError(source, [f"line {number}: longer than {MAX_LINE_CHARS} characters"])
                cells = line.rstrip("\r\n").rstrip("|").split("|")
                if cells == [""]:
                    continue
                if len(cells) < len(header):
                    cells += [""] * (len(header) - len(cells))
                rows.append((number, {name.strip(): cells[i].strip() for i, name in enumerate(header)}))
                if len(rows) > MAX_ROWS:
                    raise SpecError(source, [f"more than {MAX_ROWS} rows; not a sacctmgr/sshare table"])
        except UnicodeDecodeError as exc:
            raise SpecError(source, [f"is not UTF-8 text ({exc.reason})"]) from None
    return [h.strip() for h in header], rows


def _number(text: str, source: str, where: str, whole: bool) -> float | None:
    """A cell as a number >= 0 (whole when ``whole``, at most 2^62); empty: None; else a SpecError."""
    if text == "":
        return None
    try:
        value = float(int(text)) if whole else float(text)
    except OverflowError:  # a whole number past float range
        value = math.inf
    except ValueError:
        raise SpecError(
            source, [f"{where}: {short(text)} is not a {'whole ' if whole else ''}number"]
        ) from None
    if not math.isfinite(value) or not 0 <= value <= 2**62:
        raise SpecError(source, [f"{where}: {short(text)} is outside 0..2^62"])
    return value


def _int(text: str, source: str, where: str) -> int | None:
    value = _number(text, source, where, whole=True)
    return None if value is None else int(text)


def _float(text: str, source: str, where: str) -> float | None:
    return _number(text, source, where, whole=False)


def parse_tres_limits(text: str, source: str, where: str) -> dict[str, int]:
    """``cpu=64,mem=1000G,gres/gpu:a100=8`` as {cpu: 64, mem: bytes, gres/gpu: 8} (others left out)."""
    out: dict[str, int] = {}
    typed = 0
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep:
            raise SpecError(source, [f"{where}: {short(part)} is not NAME=VALUE"])
        if name == "mem":
            match = _MEM.match(value)
            if match is None:
                raise SpecError(source, [f"{where}: mem={short(value)} is not a size such as 64G"])
            size = float(match.group(1)) * _MEM_UNITS[match.group(2)]
            if not size <= 2**62:  # also inf from a run of digits
                raise SpecError(source, [f"{where}: mem={short(value)} is over 2^62 bytes"])
            out["mem"] = int(size)
        elif name in ("cpu", "node", "gres/gpu"):
            out[name] = _int(value, source, f"{where} {name}") or 0
        elif name.startswith("gres/gpu:"):
            typed += _int(value, source, f"{where} {name}") or 0
    if typed and "gres/gpu" not in out:
        out["gres/gpu"] = typed
    return out


def _limits(row: dict[str, str], source: str, where: str) -> SlurmLimits:
    def tres(name: str) -> dict[str, int]:
        return parse_tres_limits(row.get(name, ""), source, f"{where} {name}")

    def count(*names: str) -> int | None:
        for name in names:
            if row.get(name):
                return _int(row[name], source, f"{where} {name}")
        return None

    return SlurmLimits(
        grp_tres=tres("GrpTRES"), grp_jobs=count("GrpJobs"), grp_submit=count("GrpSubmit", "GrpSubmitJobs"),
        max_jobs=count("MaxJobs"), max_submit=count("MaxSubmit", "MaxSubmitJobs"),
        max_tres_per_job=tres("MaxTRES"), max_tres_per_user=tres("MaxTRESPU") or tres("MaxTRESPerUser"),
        max_jobs_per_user=count("MaxJobsPU", "MaxJobsPerUser"),
        max_submit_per_user=count("MaxSubmitPU", "MaxSubmitJobsPU", "MaxSubmitJobsPerUser"),
        max_wall_s=parse_wall(row.get("MaxWall", ""), source, f"{where} MaxWall"),
    )  # fmt: skip


def _names(text: str) -> tuple[str, ...]:
    return tuple(n for n in (p.strip() for p in text.split(",")) if n)


def read_sacctmgr(path: Path) -> SourceData:
    """Associations, QOS or node events, told apart by the header."""
    source = str(path)
    header, rows = _rows(path)
    data = SourceData(label=source, kind="sacctmgr")
    if "NodeName" in header and "TimeStart" in header:
        _events(rows, source, data)
    elif "Account" in header:
        associations = []
        for number, row in rows:
            where = f"line {number}"
            if not row.get("Account"):
                data.skip("association row without an Account")
                continue
            associations.append(
                SlurmAssociation(
                    cluster=row.get("Cluster") or None, account=row["Account"], user=row.get("User") or None,
                    partition=row.get("Partition") or None,
                    share=_int(row.get("Share", "") if row.get("Share", "").isdigit() else "", source, where),
                    priority=_int(row.get("Priority", ""), source, f"{where} Priority"),
                    qos=_names(row.get("QOS", "")), default_qos=row.get("Def QOS") or None,
                    limits=_limits(row, source, where),
                )
            )  # fmt: skip
        data.policy = HistoryPolicy(slurm_associations=tuple(associations))
    elif "Name" in header:
        qos = [
            SlurmQos(
                name=row["Name"], priority=_int(row.get("Priority", ""), source, f"line {n} Priority"),
                preempt=_names(row.get("Preempt", "")), preempt_mode=row.get("PreemptMode") or None,
                usage_factor=_float(row.get("UsageFactor", ""), source, f"line {n} UsageFactor"),
                limits=_limits(row, source, f"line {n}"),
                grace_time_s=parse_wall(row.get("GraceTime", ""), source, f"line {n} GraceTime"),
                preempt_exempt_time_s=parse_wall(
                    row.get("PreemptExemptTime", ""), source, f"line {n} PreemptExemptTime"
                ),
            )
            for n, row in rows
            if row.get("Name")
        ]  # fmt: skip
        data.policy = HistoryPolicy(slurm_qos=tuple(qos))
    else:
        raise SpecError(
            source,
            [f"line 1: {short('|'.join(header))} is not the header of `sacctmgr show assoc|qos|event "
             "--parsable2`"],
        )  # fmt: skip
    return data


def _events(rows: list[tuple[int, dict[str, str]]], source: str, data: SourceData) -> None:
    for number, row in rows:
        where = f"line {number}"
        node = row.get("NodeName", "")
        if not node:
            data.skip("cluster event (no node)")
            continue
        words = set(re.split(r"[+*~#!%$@^-]+", row.get("State", "").upper()))
        kind = "down" if words & set(DOWN_STATES) else "drain" if words & set(DRAIN_STATES) else None
        if kind is None:
            data.skip("node event in a state that takes no node out")
            continue
        start = parse_naive_utc(row.get("TimeStart", ""), source, f"{where} TimeStart", TIME_HINT)
        end = parse_naive_utc(row.get("TimeEnd", ""), source, f"{where} TimeEnd", TIME_HINT)
        if start is None:
            data.skip("node event without TimeStart")
            continue
        if end is not None and end < start:
            data.skip("node event that ended before it started (clocks went backwards)")
            continue
        data.saw(start, end)
        for name in expand_hostlist(node):
            data.node_down.append(NodeDownRecord(name, start, end, kind, row.get("Reason") or None, "slurm"))


def read_sshare(path: Path) -> SourceData:
    """``sshare --parsable2`` rows (``-l`` adds columns that are ignored)."""
    source = str(path)
    header, rows = _rows(path)
    if "Account" not in header or not {"RawShares", "NormShares"} & set(header):
        raise SpecError(
            source, ["line 1: expected the header of `sshare --parsable2` (Account|User|RawShares|...)"]
        )
    data = SourceData(label=source, kind="sshare")
    out = []
    for n, row in rows:
        raw = row.get("RawShares", "")
        out.append(
            FairShareRow(
                account=row.get("Account") or "root", user=row.get("User") or None,
                raw_shares=_int(raw if raw.isdigit() else "", source, f"line {n} RawShares"),
                norm_shares=_float(row.get("NormShares", ""), source, f"line {n} NormShares"),
                raw_usage=_float(row.get("RawUsage", ""), source, f"line {n} RawUsage"),
                effective_usage=_float(row.get("EffectvUsage", ""), source, f"line {n} EffectvUsage"),
                fair_share=_float(row.get("FairShare", ""), source, f"line {n} FairShare"),
            )
        )  # fmt: skip
    data.policy = HistoryPolicy(fair_share=tuple(out))
    return data


def _scheduler_parameters(text: str, source: str, where: str) -> dict[str, float | int]:
    """The backfill settings of ``SchedulerParameters`` (``bf_interval`` s, ``bf_window`` minutes,
    ``bf_max_job_test``); the other parameters are not replayed."""
    out: dict[str, float | int] = {}
    for part in text.split(","):
        name, _, value = part.strip().partition("=")
        if name in ("bf_interval", "bf_window", "bf_max_job_test"):
            number = _int(value, source, f"{where} {name}")
            if number is None or number <= 0 or number > 1_000_000_000:
                raise SpecError(source, [f"{where}: {name}={short(value)} is not a whole number in 1..10^9"])
            if name == "bf_interval":
                out["interval_s"] = float(number)
            elif name == "bf_window":
                out["window_s"] = 60.0 * number
            else:
                out["max_job_test"] = number
    return out


#: ``scontrol show config`` lines holding a Slurm time (``[days-]hh:mm:ss``), and their field.
_TIMES = {
    "PreemptExemptTime": "preempt_exempt_time_s", "PriorityCalcPeriod": "calc_period_s",
    "PriorityMaxAge": "max_age_s", "PriorityDecayHalfLife": "decay_half_life_s",
}  # fmt: skip


_UNIT_TIME = re.compile(r"^(\d{1,9}) ?(sec|min)$")


def _config_time(value: str, source: str, where: str) -> float | None:
    """A time of ``scontrol show config``: ``[days-]hh:mm:ss``, or ``N sec`` / ``N min`` as some lines
    print it."""
    match = _UNIT_TIME.match(value)
    if match:
        return float(match.group(1)) * (60.0 if match.group(2) == "min" else 1.0)
    return parse_wall(value, source, where)


def _choice(value: str, allowed: tuple[str, ...], source: str, where: str) -> str:
    word = value.strip().upper()
    if word not in allowed:
        raise SpecError(source, [f"{where}: {short(value)} is not one of {', '.join(allowed)}"])
    return word


def _yes_no(value: str, source: str, where: str) -> bool:
    return _choice(value, ("YES", "NO"), source, where) == "YES"


#: The most TRES a ``PriorityWeightTRES`` line may weigh (Slurm's TRES table is a few dozen types).
MAX_TRES_WEIGHTS = 64


def _tres_weights(value: str, source: str, where: str) -> dict[str, float]:
    """``CPU=1000,Mem=2000,GRES/gpu=3000``: per TRES (lower case) a weight in 0..1e9."""
    weights: dict[str, float] = {}
    for part in value.split(","):
        name, sep, weight = part.partition("=")
        if not part.strip():
            continue
        if not sep or not name.strip():
            raise SpecError(source, [f"{where}: {short(part)} is not TYPE=WEIGHT (such as CPU=1000)"])
        place = f"{where} {short(name.strip())}"
        number = _float(weight.strip(), source, place)
        if number is None or number > 1e9:
            raise SpecError(source, [f"{place}: {short(weight)} is not a weight in 0..1e9"])
        weights[name.strip().lower()] = number
        if len(weights) > MAX_TRES_WEIGHTS:
            raise SpecError(source, [f"{where}: more than {MAX_TRES_WEIGHTS} TRES weights"])
    return weights


def read_scontrol_config(path: Path) -> SourceData:
    """``PriorityType``, the ``PriorityWeight*`` whole numbers, ``SchedulerType``, the backfill
    ``SchedulerParameters``, ``PreemptType`` and ``PreemptMode`` of ``scontrol show config``."""
    source = str(path)
    weights: dict[str, int] = {}
    kind: str | None = None
    scheduler: dict[str, object] = {}
    with open_text(path) as fh:
        for number, line in enumerate(iter(lambda: fh.readline(MAX_LINE_CHARS), ""), start=1):
            name, sep, value = line.partition("=")
            name, value = name.strip(), value.strip()
            if not sep:
                continue
            if name == "PriorityType":
                kind = value
            elif name.startswith("PriorityWeight") and value.isdigit():
                weights[name] = _int(value, source, f"line {number} {name}") or 0
            elif name == "SchedulerType":
                scheduler["scheduler_type"] = value
            elif name == "SchedulerParameters" and value != "(null)":
                scheduler.update(_scheduler_parameters(value, source, f"line {number} SchedulerParameters"))
            elif name == "PreemptType":
                scheduler["preempt_type"] = value
            elif name == "PreemptMode":
                scheduler["preempt_mode"] = value.upper()
            elif name in _TIMES and value not in ("", "(null)", "NONE"):
                scheduler[_TIMES[name]] = _config_time(value, source, f"line {number} {name}")
            elif name == "PriorityFavorSmall":
                scheduler["favor_small"] = _yes_no(value, source, f"line {number} {name}")
            elif name == "PriorityFlags":
                scheduler["priority_flags"] = tuple(
                    f.strip().upper() for f in value.split(",") if f.strip() and value != "(null)"
                )
            elif name == "PriorityWeightTRES" and value not in ("", "(null)"):
                scheduler["tres_weights"] = _tres_weights(value, source, f"line {number} {name}")
            elif name == "EnforcePartLimits":
                scheduler["enforce_part_limits"] = _choice(
                    value, ("NO", "ALL", "ANY", "YES"), source, f"line {number} {name}"
                )
    if kind is None and not weights and not scheduler:
        raise SpecError(
            source, ["no PriorityType, PriorityWeight*, SchedulerType or Preempt* line; expected "
                     "`scontrol show config`"]
        )  # fmt: skip
    data = SourceData(label=source, kind="scontrol")
    data.policy = HistoryPolicy(
        priority_weights=weights, priority_type=kind, slurm_scheduler=SlurmBackfill.model_validate(scheduler)
    )
    return data
