"""The assumptions a decision rests on, stated before it: the calibration banner and each pool's price
with its source, date and billing mode (unpriced pools flagged), for the terminal and the page."""

from __future__ import annotations

import html
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from fleetlab.experiment.decision_context import DecisionContext
from fleetlab.experiment.pricing import PoolPrice
from fleetlab.report.metric_names import money_text


def price_line(p: PoolPrice) -> str:
    """``h100: $55.04/h per node × 6 nodes, on-demand — built-in aws catalog row (...), 2026-12-03``."""
    price = "NO PRICE ($0)" if p.unpriced else f"{money_text(p.per_hour)}/h per node"
    kind = f" ({p.instance_type})" if p.instance_type else ""
    return f"{p.pool}{kind}: {price} × {p.nodes} nodes, {p.billing_mode} — {p.source}; price date {p.date}"


def print_assumptions(console: Console, context: DecisionContext) -> None:
    """The calibration banner (when the scenario came from one) and the price of every pool."""
    if context.calibration is not None:
        failed = context.calibration.verdict != "pass"
        console.print(Text(context.calibration.banner(), style="bold red" if failed else "bold"))
        fitted = "; ".join(f.text() for f in context.calibration.fitted)
        if fitted:
            console.print(Text(f"fitted by calibration: {fitted}", style="dim"))
    if context.prices:
        console.print(Text("Prices assumed (per node-hour; --price POOL=USD/h to change):", style="bold"))
        for p in context.prices:
            console.print(Text("  " + price_line(p), style="bold red" if p.unpriced else ""))
    console.print()


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def prices_table(prices: Sequence[PoolPrice]) -> str:
    """The price assumptions as an HTML table (unpriced pools marked)."""
    names = ("pool", "instance type", "nodes", "$/h per node", "billing mode", "price source", "price date")
    head = "".join(f"<th>{h}</th>" for h in names)
    rows = "".join(
        f"<tr{' class=unpriced' if p.unpriced else ''}><td>{_e(p.pool)}</td>"
        f"<td>{_e(p.instance_type or '-')}</td><td>{_e(p.nodes)}</td>"
        f"<td>{'no price ($0)' if p.unpriced else _e(money_text(p.per_hour))}</td>"
        f"<td>{_e(p.billing_mode)}</td><td class='l'>{_e(p.source)}</td><td>{_e(p.date)}</td></tr>"
        for p in prices
    )
    return (
        "<table data-table='prices'><caption>Prices assumed (every cost below rests on them)</caption>"
        f"<tr>{head}</tr>{rows}</table>"
    )


def banner_html(context: DecisionContext) -> str:
    """The calibration banner and fitted values for the top of the page ('' without a calibration)."""
    calibration = context.calibration
    if calibration is None:
        return ""
    css = "banner ok" if calibration.verdict == "pass" else "banner fail"
    fitted = "".join(f"<li>{_e(f.text())}</li>" for f in calibration.fitted)
    errors = "".join(
        f"<li>{_e(m)}: {_e(_error_text(e.absolute, e.relative))} ({_e(e.source)})</li>"
        for m, e in calibration.model_errors.items()
    )
    return (
        f"<div class='{css}' id='calibration'><b>{_e(calibration.banner())}</b>"
        + (f"<p>Fitted by calibration:</p><ul>{fitted}</ul>" if fitted else "")
        + (f"<p>Model error used by the verdict:</p><ul>{errors}</ul>" if errors else "")
        + "</div>"
    )


def _error_text(absolute: float | None, relative: float | None) -> str:
    parts = [f"±{absolute:g} (absolute)"] if absolute is not None else []
    parts += [f"±{relative:.0%} (relative)"] if relative is not None else []
    return ", ".join(parts)
