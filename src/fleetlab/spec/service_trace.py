"""Read a service's request-rate trace: CSV rows ``time,rps`` (time in seconds from the run start or a
duration such as ``1h30m``; rps >= 0; times strictly increasing). Relative paths are resolved against the
scenario file's folder, and the rows are put into the raw mapping before validation."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fleetlab.model.units import parse_duration
from fleetlab.spec.bounded import csv_rows, read_text_file
from fleetlab.spec.errors import SpecError


def parse_rate_trace(label: str, text: str) -> tuple[list[float], list[float]]:
    """(times_s, rps) of a trace's rows, or a SpecError naming every bad line and column."""
    reader = csv_rows(label, text)
    header = [h.strip().lower() for h in next(reader, [])]
    if header != ["time", "rps"]:
        raise SpecError(label, [f"line 1: header must be 'time,rps', got {','.join(header)!r}"])
    problems: list[str] = []
    times: list[float] = []
    rates: list[float] = []
    for line, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != 2:
            problems.append(f"line {line}: {len(row)} column(s), expected 2 (time,rps)")
            continue
        try:
            t = parse_duration(row[0].strip())
        except ValueError as exc:
            problems.append(f"line {line}, column time: {exc}")
            continue
        try:
            rps = float(row[1].strip())
        except ValueError:
            problems.append(f"line {line}, column rps: {row[1].strip()!r} is not a number")
            continue
        if not math.isfinite(rps) or rps < 0:
            problems.append(f"line {line}, column rps: {row[1].strip()!r} must be a finite number >= 0")
            continue
        if times and t <= times[-1]:
            problems.append(
                f"line {line}, column time: {t:g} s is not after the previous row's {times[-1]:g} s "
                "(times must increase)"
            )
            continue
        times.append(t)
        rates.append(rps)
    if not problems and not times:
        problems.append("the trace has no rows after its header")
    if problems:
        raise SpecError(label, problems)
    return times, rates


def resolve_service_traces(data: dict[str, Any], label: str, base: Path | None) -> None:
    """Read every service's rate trace into its raw mapping (absolute path, times_s, rps)."""
    services = data.get("services")
    if not isinstance(services, list):
        return
    for service in services:
        rate = service.get("rate") if isinstance(service, dict) else None
        if not (isinstance(rate, dict) and rate.get("kind") == "trace" and isinstance(rate.get("path"), str)):
            continue
        file = Path(rate["path"])
        if not file.is_absolute() and base is not None:
            file = base / file
        times, rates = parse_rate_trace(str(file), read_text_file(file, "request-rate trace file not found"))
        service["rate"] = {**rate, "path": str(file), "times_s": times, "rps": rates}
