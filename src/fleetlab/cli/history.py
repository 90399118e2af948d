"""``fleetlab import``: read a real cluster's records (kubectl JSON, Kueue Workloads, events, Prometheus,
Slurm, FOCUS bills, OpenCost allocations, Philly, SWF) into one history folder that ``baseline`` and
``calibrate`` read.

Prints jobs by state and rows skipped by reason (or ``--json``); exit 2 with one paragraph for bad input.
"""

from __future__ import annotations

import math
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from fleetlab.cli.common import (
    JsonOpt,
    OutputOpt,
    check_out,
    emit,
    err_console,
    fail,
    out_console,
    out_path,
    output_format,
)

MAX_TOKEN_BYTES = 64 * 1024


def parse_instant(option: str, value: str) -> float:
    """An RFC 3339 time (``2024-05-01T00:00:00Z``) or Unix seconds, as Unix seconds, inside the years a
    history may span (1990..2100, ``spec.history.common``)."""
    from fleetlab.spec.history.common import MAX_UNIX_S, MIN_UNIX_S

    try:
        number = float(value)
    except ValueError:
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            number = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
        except (ValueError, OverflowError):
            raise ValueError(
                f"{option} {value[:40]!r}: expected an RFC 3339 time such as 2024-05-01T00:00:00Z or "
                "Unix seconds"
            ) from None
    if not (math.isfinite(number) and MIN_UNIX_S <= number <= MAX_UNIX_S):
        raise ValueError(
            f"{option} {value[:40]!r}: outside 1990-01-01..2100-01-01 (Unix seconds {MIN_UNIX_S:.0f}.."
            f"{MAX_UNIX_S:.0f}), the years a cluster's history may span"
        )
    return number


def read_token(token_env: str | None, token_file: Path | None) -> str | None:
    """The bearer token from an environment variable or a file, checked (``credentials.check_token``);
    errors never include its value."""
    from fleetlab.spec.credentials import check_token

    if token_env and token_file:
        raise ValueError("give --token-env or --token-file, not both")
    if token_env:
        value = os.environ.get(token_env)
        if not value:
            raise ValueError(f"--token-env {token_env}: the environment variable is not set or empty")
        return check_token(value.strip(), f"--token-env {token_env}")
    if token_file:
        try:
            with token_file.open("rb") as fh:
                raw = fh.read(MAX_TOKEN_BYTES + 1)
        except OSError as exc:
            raise ValueError(f"--token-file {token_file}: cannot be read: {exc.strerror or exc}") from None
        if len(raw) > MAX_TOKEN_BYTES:
            raise ValueError(
                f"--token-file {token_file}: larger than {MAX_TOKEN_BYTES // 1024} KiB; not a token"
            )
        token = raw.decode("utf-8", errors="replace").strip()
        if not token or any(c in token for c in "\r\n"):
            raise ValueError(f"--token-file {token_file}: expected one line holding the token")
        return check_token(token, f"--token-file {token_file}")
    return None


def import_cmd(
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            help="Files to import, each as [FORMAT:]PATH with FORMAT one of kubectl, slurm, focus, "
            "gcp-billing, opencost, philly, swf, alibaba, sacctmgr, sshare, scontrol, scontrol-partition, "
            "scontrol-node (detected from the file "
            "when left out). kubectl files may hold pods, Jobs, JobSets, Kueue Workloads and queues, "
            "ResourceQuotas, PriorityClasses, events and nodes; opencost is an /allocation API response "
            "(JSON) or OpenCost's CSV export.",
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", parser=out_path, help="History folder to write (atomically).")
    ] = Path("history"),
    prometheus: Annotated[
        str | None, typer.Option("--prometheus", help="Prometheus base URL (kube-state-metrics + DCGM).")
    ] = None,
    start: Annotated[
        str | None, typer.Option("--start", help="Range start for --prometheus (RFC 3339 or Unix seconds).")
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            "--end", help="When the record ends (default: the latest time seen; for --prometheus: now)."
        ),
    ] = None,
    step: Annotated[float, typer.Option("--step", help="Prometheus query step in seconds.")] = 60.0,
    token_env: Annotated[
        str | None, typer.Option("--token-env", help="Environment variable holding a bearer token.")
    ] = None,
    token_file: Annotated[
        Path | None, typer.Option("--token-file", help="File holding a bearer token.")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds one Prometheus query may take, start to last byte.")
    ] = 60.0,
    deadline: Annotated[
        float, typer.Option("--deadline", help="Seconds the whole Prometheus import may take.")
    ] = 3600.0,
    swf_processors: Annotated[
        str, typer.Option("--swf-processors", help="SWF processors are 'cpus' (default) or 'gpus'.")
    ] = "cpus",
    swf_nodes: Annotated[
        str | None,
        typer.Option(
            "--swf-nodes",
            help="The machine an SWF log ran on, COUNTxPROCS[xMEMORY] (e.g. 120x2x1Gi); default: the "
            "header's MaxNodes x MaxProcs/MaxNodes.",
        ),
    ] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Import a cluster's history (jobs, nodes, bill lines) into --out for `baseline` and `calibrate`."""
    from fleetlab.report.progress import DelayedProgress
    from fleetlab.spec.credentials import scrub
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.history.sources import PrometheusSource, import_sources
    from fleetlab.spec.history.store import history_meta, write_history
    from fleetlab.spec.history.swf import parse_swf_nodes

    fmt = output_format(json_out, output)
    check_out(out)
    token = None
    try:
        end_at = parse_instant("--end", end) if end else None
        source = None
        if prometheus is not None:
            if start is None:
                raise ValueError("--prometheus needs --start (the first instant to read)")
            token = read_token(token_env, token_file)
            source = PrometheusSource(
                url=prometheus,
                start=parse_instant("--start", start),
                end=end_at if end_at is not None else datetime.now(UTC).timestamp(),
                token=token,
                step_s=step,
                timeout_s=timeout,
                deadline_s=deadline,
            )
        elif start is not None or token_env or token_file:
            raise ValueError("--start, --token-env and --token-file go with --prometheus")
        if not 0 < timeout <= 3600 or not 0 < deadline <= 86400:
            raise ValueError(f"--timeout {timeout:g}, --deadline {deadline:g}: allowed 0 < seconds <= 3600 "
                             "and 0 < seconds <= 86400")  # fmt: skip
        if swf_processors not in ("cpus", "gpus"):
            raise ValueError(f"--swf-processors {swf_processors!r}: allowed are cpus, gpus")
        machine = parse_swf_nodes(swf_nodes) if swf_nodes is not None else None
        with DelayedProgress(err_console) as progress:
            history = import_sources(list(sources or []), source, end_at, swf_processors, progress, machine)
    except (SpecError, ValueError) as exc:
        raise fail(scrub(str(exc), [token] if token else [])) from None
    try:
        write_history(history, out)
    except SpecError as exc:  # --out is a non-empty folder fleetlab did not write, or locked
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"--out {out}: cannot write the history: {exc.strerror or exc}") from None
    meta = history_meta(history)
    inputs = len(sources or []) + (prometheus is not None)
    if emit(fmt, meta):
        return
    _print_summary(out_console, meta, out, inputs)


def _print_summary(console: Console, meta: dict[str, Any], out: Path, inputs: int) -> None:
    """Jobs by state beside the total, nodes, bill lines, then what was left out and why. ``inputs`` counts
    what the user named (files and a Prometheus server): kubectl files are read as one source but counted
    one by one."""
    from rich.table import Table

    hours = float(meta["end_s"]) / 3600
    console.print(
        f"history from {meta['epoch']}, {hours:.1f} h, from {inputs} source(s)",
        highlight=False,
        markup=False,
    )
    table = Table()
    table.add_column("jobs by state")
    table.add_column("count", justify="right")
    for state, count in meta["jobs_by_state"].items():
        table.add_row(state, str(count))
    table.add_row("total jobs", str(meta["jobs"]), style="bold")
    table.add_row("nodes", str(meta["nodes"]))
    table.add_row("bill lines", str(meta["bill_lines"]))
    if meta["jobs_wait_unmeasured"]:
        table.add_row("jobs with no measured wait", str(meta["jobs_wait_unmeasured"]))
    if meta["node_down_windows"]:
        table.add_row("node down/drain windows", str(meta["node_down_windows"]))
    for kind, count in meta["policy"].items():
        table.add_row(f"policy: {escape(kind)}", str(count))
    console.print(table)
    if meta["skipped"]:
        skips = Table(title="left out, by reason")
        skips.add_column("reason")
        skips.add_column("count", justify="right")
        for reason, count in meta["skipped"].items():
            skips.add_row(escape(reason), str(count))
        console.print(skips)
    for note in meta["notes"]:
        console.print(f"note: {note}", highlight=False, markup=False)
    console.print(f"history written to {out}", highlight=False, markup=False)
