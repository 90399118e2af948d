"""Which reader a source needs, and one History from many sources.

A source is ``[FORMAT:]PATH``; without a format the file's name and first bytes decide (see
:func:`detect_format`). All kubectl files form one kubectl history, so pods in one file meet their Jobs,
Workloads and events in others. Prometheus is read over HTTP from :class:`PrometheusSource`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fleetlab.model.history import History
from fleetlab.spec.credentials import public_url
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.checks import check_history
from fleetlab.spec.history.common import SourceData, assemble, head_bytes
from fleetlab.spec.history.focus import read_focus, read_gcp_export
from fleetlab.spec.history.job_columns import returned_memory
from fleetlab.spec.history.kubectl import KubeHistory, read_kubectl
from fleetlab.spec.history.opencost import read_opencost
from fleetlab.spec.history.philly import read_philly
from fleetlab.spec.history.prometheus import DEFAULT_STEP_S, DEFAULT_WINDOW_S, read_prometheus
from fleetlab.spec.history.prometheus_api import DEFAULT_IMPORT_DEADLINE_S
from fleetlab.spec.history.slurm import read_slurm
from fleetlab.spec.history.swf import SwfNodes, read_swf

FORMATS = (
    "kubectl",
    "slurm",
    "focus",
    "gcp-billing",
    "opencost",
    "philly",
    "swf",
    "alibaba",
    "sacctmgr",
    "sshare",
    "scontrol",
    "scontrol-partition",
    "scontrol-node",
)
HEAD_BYTES = 64 * 1024
#: The time line that starts a ``scontrol show node`` snapshot (``date -u +%FT%T``).
_SNAPSHOT_TIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d$")
#: (label, done, total) — the CLI's progress bar.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class PrometheusSource:
    """A Prometheus server and the range to read; the token is only ever sent, never shown."""

    url: str
    start: float
    end: float
    token: str | None = None
    step_s: float = DEFAULT_STEP_S
    timeout_s: float = 30.0
    window_s: float = DEFAULT_WINDOW_S
    deadline_s: float = DEFAULT_IMPORT_DEADLINE_S

    def __repr__(self) -> str:  # keep the token (and any credentials in the URL) out of logs and tracebacks
        return f"PrometheusSource(url={public_url(self.url)!r}, start={self.start}, end={self.end})"


def split_source(text: str) -> tuple[str | None, Path]:
    """``slurm:sacct.txt`` -> ("slurm", sacct.txt); a plain path -> (None, path)."""
    prefix, sep, rest = text.partition(":")
    if sep and prefix in FORMATS and rest:
        return prefix, Path(rest)
    return None, Path(text)


def refuse_empty(path: Path) -> None:
    """An empty (or whitespace-only) input is said to be empty, with the usual reason it is."""
    if head_bytes(path, HEAD_BYTES).strip():
        return
    raise SpecError(
        str(path),
        [
            "is empty: there is nothing to import from it. `kubectl get ... -o json > FILE` leaves the file "
            "empty when the command fails, e.g. `kubectl get workloads` on a cluster without Kueue (no "
            "such resource type); leave the file out, or capture it again"
        ],
    )


def detect_format(path: Path) -> str:
    """The reader for a file from its suffix and first bytes, or a SpecError saying how to name it."""
    head = head_bytes(path, HEAD_BYTES).decode("utf-8", errors="replace")
    stripped = head.lstrip()
    first_line = stripped.split("\n", 1)[0]
    if path.suffix.lower() == ".swf" or stripped.startswith(";"):
        return "swf"
    if stripped.startswith(("{", "[")):
        if '"totalCost"' in head:
            return "opencost"
        if '"kind"' in head:
            return "kubectl"
        if '"submitted_time"' in head or '"attempts"' in head:
            return "philly"
        if '"jobs"' in head:
            return "slurm"
    elif "|" in first_line and "JobID" in first_line:
        return "slurm"
    elif "|" in first_line and ("RawShares" in first_line or "NormShares" in first_line):
        return "sshare"
    elif "|" in first_line and (
        "GrpTRES" in first_line or "MaxTRESPU" in first_line or "NodeName|TimeStart" in first_line
    ):
        return "sacctmgr"
    elif stripped.startswith("Configuration data as of") or "\nPriorityType" in head:
        return "scontrol"
    elif first_line.startswith("PartitionName="):
        return "scontrol-partition"
    elif first_line.startswith("NodeName=") or (
        _SNAPSHOT_TIME.match(first_line.strip()) and "\nNodeName=" in head
    ):
        return "scontrol-node"
    elif "BilledCost" in first_line:
        return "focus"
    elif "TotalCost" in first_line and "Namespace" in first_line:
        return "opencost"
    elif "usage_start_time" in first_line:
        return "gcp-billing"
    elif "num_gpus" in first_line and "timestamp" in first_line:
        return "philly"
    elif first_line.startswith(("name,cpu_milli,", "sn,cpu_milli,")):
        return "alibaba"
    elif stripped.startswith(("apiVersion", "kind", "items", "---")):
        return "kubectl"
    raise SpecError(
        str(path),
        [
            "cannot tell the format from the file; name it as FORMAT:PATH with FORMAT one of "
            + ", ".join(FORMATS)
        ],
    )


def _file_progress(progress: Progress | None, path: Path) -> Callable[[int], None] | None:
    if progress is None:
        return None
    try:
        total = path.stat().st_size
    except OSError:
        return None
    return lambda done: progress(path.name, min(done, total), total)


def read_source(
    fmt: str,
    path: Path,
    progress: Progress | None = None,
    swf_processors: str = "cpus",
    swf_nodes: SwfNodes | None = None,
) -> SourceData:
    """One file through its reader (kubectl files are better read together, see :func:`import_sources`)."""
    tick = _file_progress(progress, path)
    if fmt == "kubectl":
        return read_kubectl([path], tick)
    if fmt == "slurm":
        return read_slurm(path, tick)
    if fmt == "focus":
        return read_focus(path, tick)
    if fmt == "gcp-billing":
        return read_gcp_export(path)
    if fmt == "opencost":
        return read_opencost(path, tick)
    if fmt == "philly":
        return read_philly(path, tick)
    if fmt == "swf":
        return read_swf(path, swf_processors, tick, swf_nodes)
    if fmt == "alibaba":
        from fleetlab.spec.history.alibaba import read_alibaba

        return read_alibaba(path)
    if fmt in ("scontrol-partition", "scontrol-node"):
        from fleetlab.spec.history import slurm_nodes

        read = (
            slurm_nodes.read_scontrol_partitions
            if fmt == "scontrol-partition"
            else slurm_nodes.read_scontrol_nodes
        )
        return read(path)
    if fmt in ("sacctmgr", "sshare", "scontrol"):
        from fleetlab.spec.history import slurm_policy

        reader = {"sacctmgr": slurm_policy.read_sacctmgr, "sshare": slurm_policy.read_sshare,
                  "scontrol": slurm_policy.read_scontrol_config}[fmt]  # fmt: skip
        return reader(path)
    raise SpecError(str(path), [f"unknown format {fmt!r}; allowed: {', '.join(FORMATS)}"])


def import_sources(
    sources: Sequence[str | Path],
    prometheus: PrometheusSource | None = None,
    end: float | None = None,
    swf_processors: str = "cpus",
    progress: Progress | None = None,
    swf_nodes: SwfNodes | None = None,
) -> History:
    """:func:`_import_sources` with freed memory returned at once (``job_columns.returned_memory``)."""
    with returned_memory():
        return _import_sources(sources, prometheus, end, swf_processors, progress, swf_nodes)


def _import_sources(
    sources: Sequence[str | Path],
    prometheus: PrometheusSource | None = None,
    end: float | None = None,
    swf_processors: str = "cpus",
    progress: Progress | None = None,
    swf_nodes: SwfNodes | None = None,
) -> History:
    """One History from files (``[FORMAT:]PATH``) and, optionally, a Prometheus server.

    ``end`` (Unix seconds) is when the record ends; by default the latest instant any source mentions
    (or the Prometheus range's end). The result passes :func:`.checks.check_history` (times in lifecycle
    order and inside the record), so ``baseline`` and ``calibrate`` accept what ``import`` writes."""
    if not sources and prometheus is None:
        raise SpecError("import", ["no sources given; name files (FORMAT:PATH) or --prometheus URL"])
    kube_files: list[Path] = []
    others: list[tuple[str, Path]] = []
    for source in sources:
        fmt, path = split_source(str(source))
        refuse_empty(path)
        fmt = fmt or detect_format(path)
        if fmt == "kubectl":
            kube_files.append(path)
        else:
            others.append((fmt, path))
    parts: list[SourceData] = []
    if kube_files:
        total = sum(p.stat().st_size for p in kube_files if p.is_file())
        offsets = [0]

        def tick(done: int) -> None:
            if progress is not None:
                progress("kubectl", min(offsets[0] + done, total), total)

        parts.append(_read_kube(kube_files, tick, offsets))
    if prometheus is not None:
        parts.append(
            read_prometheus(
                prometheus.url, prometheus.start, prometheus.end, prometheus.token, prometheus.step_s,
                prometheus.timeout_s, (lambda done: progress("prometheus", done, 6)) if progress else None,
                prometheus.window_s, prometheus.deadline_s,
            )
        )  # fmt: skip
    for fmt, path in others:
        parts.append(read_source(fmt, path, progress, swf_processors, swf_nodes))
    label = ", ".join(str(s) for s in sources) or (public_url(prometheus.url) if prometheus else "import")
    history = assemble(parts, end)
    parts.clear()  # the sources' own tables (absolute times) are not needed past this point
    if not (history.jobs.num_rows or history.nodes.num_rows or history.bill.num_rows):
        left_out = "; ".join(f"{reason}: {count}" for reason, count in list(history.skipped.items())[:4])
        raise SpecError(
            label,
            ["holds no job, node or bill line to import" + (f" (left out: {left_out})" if left_out else "")
             + "; check the files (or the range and queries of --prometheus)"],
        )  # fmt: skip
    return check_history(history, label)


def _read_kube(paths: list[Path], tick: Callable[[int], None], offsets: list[int]) -> SourceData:
    history = KubeHistory(",".join(str(p) for p in paths))
    for path in paths:
        history.read(path, tick)
        offsets[0] += path.stat().st_size if path.is_file() else 0
    return history.finish()
