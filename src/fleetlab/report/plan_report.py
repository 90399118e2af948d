"""Terminal tables and a plotly page for ``fleetlab plan``: GPU offers, scaling choices, buy vs rent."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from fleetlab.cost.gpu_plan import Plan, PlanRow, ScalingOption
from fleetlab.cost.reconcile import ESTIMATED, Reconciliation
from fleetlab.cost.tco import HybridOption
from fleetlab.model.plan_job import PlanJob
from fleetlab.spec.out_folder import replace_file


def _hours(hours: float) -> str:
    if hours < 1:
        return f"{hours * 60:.1f} min"
    return f"{hours:,.2f} h" if hours < 100 else f"{hours:,.0f} h"


def print_plan(console: Console, job: PlanJob, plan: Plan, top: int) -> None:
    """The cheapest ``top`` offers, then what was left out."""
    training = job.kind == "training"
    table = Table(title=f"{job.name}: {len(plan.rows)} offers, cheapest {min(top, len(plan.rows))} shown")
    for name in ("GPU", "cloud", "instance", "region", "capacity", "$/h", "layout", "time"):
        table.add_column(name, justify="right" if name in ("$/h", "time") else "left")
    table.add_column("$ per job" if training else "$ for the window", justify="right")
    table.add_column("$ per M samples", justify="right")
    if not training:
        table.add_column("latency", justify="right")
    table.add_column("price from")
    table.add_column("!")
    flagged: dict[tuple[str, ...], int] = {}
    for row in plan.rows[:top]:
        o = row.offer
        flag = ""
        if o.notes:
            flag = f"!{flagged.setdefault(o.notes, len(flagged) + 1)}"
        cells = [
            o.gpu,
            o.cloud,
            o.instance_type,
            o.region,
            o.capacity_type,
            f"{o.price_per_hour:,.2f}",
            row.layout,
            _hours(row.hours),
            f"{row.cost_usd:,.2f}",
            f"{row.cost_per_million_samples:,.4f}",
        ]
        if not training:
            cells.append("" if row.latency_ms is None else f"{row.latency_ms:,.1f} ms")
        cells += [f"{short_source(o.price_source)} {o.price_date}", flag]
        table.add_row(*cells)
    console.print(table)
    console.print(
        "$/h: the offer's catalog price per instance-hour for its capacity type (on-demand or spot), "
        "billed per second; price from: the catalog and the date its prices were taken.",
        highlight=False,
        markup=False,
    )
    for notes, number in flagged.items():
        console.print(f"!{number}: anomalous catalog row: " + "; ".join(notes), highlight=False, markup=False)


def short_source(source: str) -> str:
    """``<built-in aws catalog aws.csv>`` -> ``aws catalog``; a user's file by its name."""
    if source.startswith("<built-in "):
        return " ".join(source.strip("<>").split()[1:3])
    return source.rsplit("/", 1)[-1]


def print_scaling(console: Console, options: Sequence[ScalingOption]) -> None:
    """More GPUs of the same model beside the next faster model, each at its cheapest offer."""
    if not options:
        return
    base = options[0].row
    table = Table(title="More GPUs vs faster GPUs (cheapest offer of each)")
    for name in ("option", "offer", "time", "speed-up", "$ per job", "cost ratio"):
        table.add_column(name, justify="left" if name in ("option", "offer") else "right")
    for option in options:
        row = option.row
        if row is None:
            table.add_row(option.label, option.missing, "", "", "", "")
            continue
        speed = f"{base.hours / row.hours:.2f}x" if base else ""
        ratio = f"{row.cost_usd / base.cost_usd:.2f}x" if base else ""
        where = f"{row.offer.cloud} {row.offer.instance_type} {row.offer.region} {row.offer.capacity_type}"
        table.add_row(option.label, where, _hours(row.hours), speed, f"{row.cost_usd:,.2f}", ratio)
    console.print(table)


def write_plan_html(job: PlanJob, rows: Sequence[PlanRow], target: Path) -> None:
    """Time to finish against dollars per job, one point per offer, coloured by GPU model (offline page)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    figure = go.Figure()
    for gpu in sorted({r.offer.gpu for r in rows}):
        mine = [r for r in rows if r.offer.gpu == gpu]
        figure.add_trace(
            go.Scatter(
                x=[r.hours for r in mine],
                y=[r.cost_usd for r in mine],
                mode="markers",
                name=gpu,
                text=[
                    html.escape(
                        f"{r.offer.cloud} {r.offer.instance_type} {r.offer.region} "
                        f"{r.offer.capacity_type} {r.layout}"
                    )
                    for r in mine
                ],
                hovertemplate="%{text}<br>%{x:.2f} h, $%{y:,.2f}<extra></extra>",
            )
        )
    figure.update_layout(
        title=html.escape(f"{job.name}: time to finish vs cost per job"),
        xaxis_title="hours",
        yaxis_title="USD per job" if job.kind == "training" else "USD for the window",
        template="plotly_white",
    )
    replace_file(target, str(pio.to_html(figure, include_plotlyjs=True, full_html=True)), "--html")


def _input_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.4g}" if isinstance(value, float) else str(value)


def print_buy_vs_rent(console: Console, result: dict[str, Any], hybrid: Sequence[HybridOption]) -> None:
    """Owned cost lines, the break-even utilisation and the hybrid options."""
    server = result["owned_server"]
    yearly = result["yearly_usd"]
    rented = result["rented"]
    inputs = Table(title="Inputs (change any with its option; see --help)")
    for name in ("input", "value", "unit", "source"):
        inputs.add_column(name, overflow="fold")
    for row in result["inputs"]:
        value = row["value"]
        inputs.add_row(row["label"], _input_text(value), row["unit"], row["source"])
    console.print(inputs)
    table = Table(title=f"One owned {server['gpus_per_server']}-GPU {server['gpu_model']} server, per year")
    table.add_column("line")
    table.add_column("USD/year", justify="right")
    for line, value in yearly.items():
        table.add_row(line, f"{value:,.0f}")
    console.print(table)
    u, be = result["utilisation"], result["break_even_utilisation"]
    owned = result["owned_usd_per_used_gpu_hour"]
    where = " ".join(
        str(rented[k]) for k in ("cloud", "instance_type", "region", "capacity_type") if rented[k]
    )
    lines = [
        f"rented: {where} = ${rented['usd_per_gpu_hour']:.3f} per GPU-hour",
        f"utilisation {u:.1%}: owned ${owned:.3f} per used GPU-hour",
        f"break-even utilisation: {be:.1%} — "
        + ("owning is cheaper" if u > be else "renting is cheaper")
        + f" at {u:.1%}",
    ]
    for name, value in result["measured"].items():
        lines.append(f"measured {name.replace('_', ' ')}: {value:.1%}")
    for line in lines:
        console.print(line, highlight=False, markup=False)
    modes = Table(
        title=f"Owning at {u:.1%} utilisation (${owned:.3f} per used GPU-hour) against each way of renting"
    )
    for name in ("rent", "USD per GPU-hour", "break-even utilisation", f"cheaper at {u:.0%}"):
        modes.add_column(name, justify="left" if name == "rent" else "right")
    for option in result["rental_options"]:
        modes.add_row(
            option["billing_mode"],
            f"{option['usd_per_gpu_hour']:.3f}",
            f"{option['break_even_utilisation']:.1%}",
            option["cheaper_at_utilisation"],
        )
    console.print(modes)
    if not hybrid:
        return
    chosen = result["chosen_percentile"]
    cheapest = min(hybrid, key=lambda h: h.total_usd)
    table = Table(
        title="Hybrid: own servers for a demand percentile, rent the peaks (per year, if the run repeats)"
    )
    for name in (
        "own at",
        "servers",
        "owned GPU-h",
        "rented GPU-h",
        "owned $",
        "rented $",
        "transfer $",
        "total $",
        "or wait: mean delay",
    ):
        table.add_column(name, justify="right")
    for h in hybrid:
        mark = (" *" if h.percentile == chosen else "") + (" (cheapest)" if h is cheapest else "")
        table.add_row(
            f"p{h.percentile:g}{mark}",
            str(h.servers),
            f"{h.owned_gpu_hours:,.0f}",
            f"{h.rented_gpu_hours:,.0f}",
            f"{h.owned_usd:,.0f}",
            f"{h.rented_usd:,.0f}",
            f"{h.transfer_usd:,.0f}",
            f"{h.total_usd:,.0f}",
            _wait_text(h),
        )
    console.print(table)
    console.print(
        "or wait: if the peaks are not rented, the work above the owned capacity queues for it; mean delay "
        "of that work (a fluid queue over the run's demand curve: the backlog grows while demand exceeds "
        "the owned GPUs and drains at the spare ones). Rented $ is what avoids that wait.",
        highlight=False,
        markup=False,
    )


def _wait_text(option: HybridOption) -> str:
    if option.rented_gpu_hours <= 0:
        return "-"
    return f"{option.mean_wait_h:,.1f} h" if math.isfinite(option.mean_wait_h) else "never clears"


def _window(window: tuple[datetime, datetime]) -> str:
    return f"{window[0]:%Y-%m-%d %H:%M} - {window[1]:%Y-%m-%d %H:%M} UTC"


def print_reconciliation(console: Console, result: Reconciliation) -> None:
    """Gap by category, then by project x period."""
    table = Table(title="Bill vs estimate by category (USD)")
    for name in ("category", "bill", "estimate", "gap"):
        table.add_column(name, justify="left" if name == "category" else "right")
    for c in result.categories:
        note = (
            " (missing in estimate)"
            if c.category not in ESTIMATED and c.bill_usd and not c.estimate_usd
            else ""
        )
        table.add_row(c.category + note, f"{c.bill_usd:,.2f}", f"{c.estimate_usd:,.2f}", f"{c.gap_usd:+,.2f}")
    table.add_row("credits", f"{result.credits_usd:,.2f}", "0.00", f"{result.credits_usd:+,.2f}")
    gap = result.bill_total_usd - result.estimate_total_usd
    table.add_row(
        "[bold]total[/bold]",
        f"{result.bill_total_usd:,.2f}",
        f"{result.estimate_total_usd:,.2f}",
        f"{gap:+,.2f}",
    )
    console.print(table)
    lines = [
        f"idle inside the estimate (capacity billed, no pod): ${result.idle_estimate_usd:,.2f}",
        f"missing in the estimate (storage, egress, license, tax, other where unpriced): "
        f"${result.missing_in_estimate_usd:,.2f}",
        f"bill window {_window(result.bill_window)}; estimate {_window(result.estimate_window)}",
    ]
    split = result.gpu_split
    if split is not None:
        lines.append(
            f"GPU gap {split.bill_usd - split.estimate_usd:+,.2f} = price {split.price_effect_usd:+,.2f} "
            f"(billed ${split.bill_price:,.4f} vs estimated ${split.estimate_price:,.4f} per GPU-hour, over "
            f"{split.bill_quantity:,.1f} billed GPU-hours) + quantity {split.quantity_effect_usd:+,.2f} "
            f"({split.bill_quantity:,.1f} billed vs {split.estimate_quantity:,.1f} estimated GPU-hours, "
            "at the estimate's price)"
        )
    for line in lines:
        console.print(line, highlight=False, markup=False)
    by = Table(title=f"By project ({result.group_label}) and {result.period} (USD)")
    for name in ("project", result.period, "bill", "estimate", "gap"):
        by.add_column(name, justify="right" if name in ("bill", "estimate", "gap") else "left")
    fmt = {"hour": "%Y-%m-%d %H:00", "day": "%Y-%m-%d", "month": "%Y-%m"}[result.period]
    for (project, when), (bill, estimate) in sorted(result.by_group.items()):
        by.add_row(
            project, when.strftime(fmt), f"{bill:,.2f}", f"{estimate:,.2f}", f"{bill - estimate:+,.2f}"
        )
    console.print(by)
