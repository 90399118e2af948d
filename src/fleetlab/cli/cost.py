"""``fleetlab plan checkpoint``: Young's and Daly's checkpoint intervals under spot interruptions (a cost
calculator that needs no simulation; registered on the ``plan`` group in ``cost_plan``)."""

from __future__ import annotations

from typing import Annotated

import typer

from fleetlab.cli.common import JsonOpt, OutputOpt, emit, fail, finite_float, out_console, output_format

#: Daly's model grows as exp(restart / MTBI); past this ratio the job never ends (and floats overflow).
MAX_MTBI_RATIO = 50.0


def _duration(option: str, text: str | None, allow_zero: bool = False) -> float | None:
    """Seconds from a duration option, or a clear error naming the option and what is allowed."""
    from fleetlab.model.units import parse_duration

    if text is None:
        return None
    if text.strip().startswith("-"):
        raise fail(f"{option} {text!r}: must not be negative; give a duration such as 5m, 90s or 1h30m")
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise fail(f"{option} {text!r}: {exc}") from None
    if seconds <= 0 and not allow_zero:
        raise fail(f"{option} {text!r}: must be a duration > 0, e.g. 5m or 90s")
    return seconds


def _fmt(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.2f}h"


def checkpoint_cmd(
    write_time: Annotated[
        str, typer.Option("--write-time", help="Wall time one checkpoint write takes, e.g. 5m.")
    ],
    mtbi: Annotated[
        str | None, typer.Option("--mtbi", help="Mean time between interruptions of the job, e.g. 6h.")
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate-per-hour", callback=finite_float, help="Interruptions per hour (instead of --mtbi)."
        ),
    ] = None,
    restart_time: Annotated[
        str, typer.Option("--restart-time", help="Wall time to restart after an interruption.")
    ] = "0s",
    price: Annotated[
        float | None,
        typer.Option(
            "--price-per-hour",
            callback=finite_float,
            help="Price of the job's nodes per hour, for the cost column.",
        ),
    ] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Young's and Daly's checkpoint intervals, their expected overhead, and a few intervals around them."""
    from rich.table import Table

    from fleetlab.cost.checkpoint import MIN_RATE_PER_HOUR, daly_interval, interval_table, young_interval

    write_s = _duration("--write-time", write_time)
    restart_s = _duration("--restart-time", restart_time, allow_zero=True)
    if (mtbi is None) == (rate is None):
        raise fail("give exactly one of --mtbi (a duration, e.g. 6h) or --rate-per-hour (a number > 0)")
    if rate is not None and not (MIN_RATE_PER_HOUR <= rate < float("inf")):
        raise fail(
            f"--rate-per-hour {rate:g}: allowed {MIN_RATE_PER_HOUR:.3g} (one interruption in 100 years, the "
            "longest fleetlab models) up to a finite number"
        )
    if price is not None and not (price >= 0 and price < float("inf")):
        raise fail(f"--price-per-hour {price}: must be a finite number >= 0")
    mtbi_s = _duration("--mtbi", mtbi) if mtbi is not None else 3600.0 / float(rate or 1.0)
    assert write_s is not None and restart_s is not None and mtbi_s is not None
    if mtbi_s <= write_s or restart_s >= MAX_MTBI_RATIO * mtbi_s:
        raise fail(
            f"mean time between interruptions {_fmt(mtbi_s)} is not longer than one checkpoint write "
            f"({_fmt(write_s)}) or is far shorter than a restart ({_fmt(restart_s)}): the job would never "
            "make progress, so no checkpoint interval helps; give a longer --mtbi or a lower --rate-per-hour"
        )
    fmt = output_format(json_out, output)
    young, daly = young_interval(write_s, mtbi_s), daly_interval(write_s, mtbi_s)
    rows = interval_table(write_s, mtbi_s, restart_s, price)
    from dataclasses import asdict

    payload = {
        "write_s": write_s,
        "restart_s": restart_s,
        "mtbi_s": mtbi_s,
        "price_per_hour": price,
        "young_s": young,
        "daly_s": daly,
        "intervals": [asdict(row) for row in rows],
    }
    if emit(fmt, payload):
        return
    out_console.print(
        f"write {_fmt(write_s)}, restart {_fmt(restart_s)}, mean time between interruptions {_fmt(mtbi_s)}: "
        f"Young √(2CM) = {_fmt(young)}, Daly = {_fmt(daly)}",
        highlight=False,
    )
    table = Table(title="expected overhead (Daly's exponential model)", title_justify="left")
    for column in ("interval", "", "overhead", "lost per interruption", "wall per compute-hour"):
        table.add_column(column, justify="right" if column else "left")
    if price is not None:
        table.add_column("cost per compute-hour", justify="right")
    for row in rows:
        cells = [
            _fmt(row.interval_s),
            row.label,
            f"{row.overhead:.1%}",
            _fmt(row.lost_per_interruption_s),
            _fmt(3600.0 * (1.0 + row.overhead)),
        ]
        if row.cost_per_work_hour is not None:
            cells.append(f"${row.cost_per_work_hour:,.2f}")
        table.add_row(*cells)
    out_console.print(table)
