"""The measured baseline as a rich table and as a self-contained HTML page (no scripts, opens offline).

Every name that comes from input (teams, queues, job classes) is HTML-escaped; lower bounds read ``≥``.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from fleetlab.report.table import _duration

#: (column title, formatter) for the per-group table.
Cell = Callable[[dict[str, Any]], str]


def _bound(row: dict[str, Any], key: str) -> str:
    value = row.get(f"{key}_s")
    if value is None:
        return "—"
    return ("≥ " if row.get(f"{key}_lower_bound") else "") + _duration(float(value))


def _seconds(key: str) -> Cell:
    return lambda r: "—" if r.get(key) is None else _duration(float(r[key]))


def _hours(key: str) -> Cell:
    return lambda r: "—" if r.get(key) is None else f"{float(r[key]):,.1f}"


def _pct(key: str) -> Cell:
    return lambda r: "—" if r.get(key) is None else f"{100 * float(r[key]):.1f} %"


def _money(row: dict[str, Any]) -> str:
    value = row.get("cost_per_completed_job")
    return "—" if value is None else f"{float(value):,.2f}"


COLUMNS: tuple[tuple[str, Cell], ...] = (
    ("group", lambda r: f"{r['group_by']}={r['group']}" if r["group_by"] != "all" else "all"),
    ("jobs", lambda r: str(r["jobs_submitted"])),
    ("done / failed / cancelled", lambda r: f"{r['completed']} / {r['failed']} / {r['cancelled']}"),
    ("running / pending", lambda r: f"{r['running']} / {r['pending']}"),
    ("wait mean", lambda r: _bound(r, "wait_mean")),
    ("wait p50", lambda r: _bound(r, "wait_p50")),
    ("wait p95", lambda r: _bound(r, "wait_p95")),
    ("wait p99", lambda r: _bound(r, "wait_p99")),
    ("censored", lambda r: str(r["wait_censored"])),
    (
        "quota / node wait",
        lambda r: f"{_seconds('quota_wait_mean_s')(r)} / {_seconds('node_wait_mean_s')(r)}",
    ),
    ("prep mean", _seconds("prep_mean_s")),
    ("compute mean", _seconds("compute_mean_s")),
    ("restarts / evictions", lambda r: f"{r['restarts']} / {r['evictions']}"),
    ("GPU-h alloc", _hours("gpu_hours_allocated")),
    ("GPU-h lost", _hours("gpu_hours_lost")),
    ("GPU util (measured)", _pct("gpu_util_measured")),
    ("cost / done job", _money),
)


#: The table split so each part fits 100 columns: jobs by state, then waits and times, then GPU-hours and
#: cost (the group column repeated in each); ``wide`` prints the whole table in one.
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("", ("jobs", "done / failed / cancelled", "running / pending", "censored", "restarts / evictions")),
    ("waits and times by group", ("wait mean", "wait p50", "wait p95", "wait p99", "quota / node wait",
                                  "prep mean", "compute mean")),
    ("GPU-hours and cost by group", ("GPU-h alloc", "GPU-h lost", "GPU util (measured)", "cost / done job")),
)  # fmt: skip


def baseline_table(
    rows: Sequence[dict[str, Any]], title: str, columns: Sequence[tuple[str, Cell]] = COLUMNS
) -> Table:
    """One line per group (all, each class, team, queue); headers wrap rather than being cut short."""
    table = Table(title=Text(title), title_justify="left")
    for name, _ in columns:
        table.add_column(
            name,
            justify="left" if name == "group" else "right",
            no_wrap=name == "group",
            overflow="fold",
        )
    for row in rows:
        table.add_row(*(Text(cell(row)) for _, cell in columns))  # names from input stay text
    return table


def baseline_tables(rows: Sequence[dict[str, Any]], title: str) -> list[Table]:
    """The per-group table as the three ``PARTS``, each within 100 columns."""
    by_name = dict(COLUMNS)
    return [
        baseline_table(rows, heading or title, [COLUMNS[0], *((name, by_name[name]) for name in names)])
        for heading, names in PARTS
    ]


def history_title(history: Any, label: str) -> str:
    """The heading of a baseline or calibration: jobs, nodes, days and where the history came from."""
    return (
        f"{label}: {history.jobs.num_rows} jobs, {history.nodes.num_rows} nodes, "
        f"{history.end_s / 86400:.1f} days ({', '.join(history.sources) or 'unknown source'})"
    )


def cluster_lines(cluster: dict[str, Any]) -> list[str]:
    """The cluster-wide figures as short lines."""

    def num(key: str, fmt: str = "{:,.1f}") -> str:
        value = cluster.get(key)
        return "—" if value is None else fmt.format(value)

    cost = cluster.get("cost_total")
    cost_text = "—" if cost is None else f"{cost:,.2f} {cluster.get('currency') or ''}".strip()
    return [
        f"nodes {cluster.get('nodes', 0)}, node-hours {num('node_hours')}, "
        f"idle node-hours {num('node_hours_idle')}",
        f"GPU capacity-hours {num('gpu_capacity_hours')}, allocated {num('gpu_hours_allocated')}, "
        f"idle {num('gpu_hours_idle')} (allocation {num('gpu_allocation_ratio', '{:.2%}')})",
        f"cost {cost_text} (source: {cluster.get('cost_source', 'none')})",
    ]


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}caption{text-align:left;font-weight:bold}.note{color:#555}
td{white-space:nowrap}
"""


def baseline_body(payload: dict[str, Any], heading: str) -> str:
    """The baseline's cluster lines, per-group table (counts by state beside every average, ``≥`` on lower
    bounds), notes and skipped counts as one HTML section, so that the standalone page and the decision
    report show the same tables. ``heading`` is HTML already (escape before calling)."""
    e = html.escape
    head = "".join(f"<th>{e(name)}</th>" for name, _ in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{e(cell(row))}</td>" for _, cell in COLUMNS) + "</tr>"
        for row in payload["rows"]
    )
    cluster = "".join(f"<li>{e(line)}</li>" for line in cluster_lines(payload.get("cluster") or {}))
    notes = "".join(f"<li class='note'>{e(str(n))}</li>" for n in payload.get("notes", []))
    skipped = (payload.get("cluster") or {}).get("skipped") or {}
    skipped_rows = "".join(f"<tr><td>{e(str(k))}</td><td>{int(v)}</td></tr>" for k, v in skipped.items())
    return (
        f"<section id='baseline'>{heading}<ul>{cluster}</ul>"
        "<table data-table='baseline'><caption>Measured baseline per job class, team and queue</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        "<p class='note'>Waits are Kaplan–Meier estimates: jobs that never started are censored "
        "when they left or when the record ends; ≥ marks a lower bound. Definitions: docs/baseline.md.</p>"
        f"<ul>{notes}</ul>"
        + (
            "<table data-table='baseline-skipped'><caption>Rows skipped on import</caption>"
            f"{skipped_rows}</table>"
            if skipped_rows
            else ""
        )
        + "</section>"
    )


def baseline_html(payload: dict[str, Any], title: str) -> str:
    """A standalone page: the cluster lines, the per-group table, the notes and the skipped counts."""
    return _page(title, baseline_body(payload, f"<h1>{html.escape(title)}</h1>"))


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>{body}</body></html>\n"
    )


def _value(kind: str, value: float | None) -> str:
    if value is None:
        return "—"
    if kind == "abs_s":
        return _duration(value)
    if kind in ("rel", "abs_share"):
        return f"{100 * value:.1f} %"
    return f"{value:.3f}" if abs(value) < 1e4 else f"{value:,.0f}"


def _knob(value: Any) -> str:
    if value is None:
        return "none"
    return value if isinstance(value, str) else f"{value:g}"


def calibration_table(payload: dict[str, Any], title: str) -> Table:
    """Measured vs simulated per part (fit, then validation), class and metric: the error, the tolerance
    and the verdict."""
    fitted = ", ".join(f"{k} = {_knob(v)}" for k, v in payload["fitted"].items()) or "nothing"
    validation = payload.get("validation")
    held_out = f"; validation {validation['verdict']}" if validation else ""
    table = Table(
        title=Text(f"{title} — fit {payload['verdict']}{held_out} (fitted: {fitted})"), title_justify="left"
    )
    table.add_column("part")
    for name in CALIBRATION_COLUMNS:
        table.add_column(name, justify="left" if name in ("class", "metric") else "right")
    for part, rows in (("fit", payload["rows"]), ("validation", (validation or {}).get("rows", []))):
        for r in rows:
            table.add_row(Text(part), *(Text(c) for c in _calibration_cells(r)))
    return table


def _calibration_cells(r: dict[str, Any]) -> list[str]:
    shown = {"abs_s": "abs_s", "abs_share": "abs_share"}.get(r["error_kind"], "")

    def bound(side: str) -> str:
        text = _value(shown, r[side])
        return f"≥ {text}" if r.get(f"{side}_lower_bound") and r[side] is not None else text

    return [
        r["job_class"],
        r["metric"],
        bound("measured"),
        bound("simulated"),
        _value(r["error_kind"], r["error"]),
        _value(r["error_kind"], r["tolerance"]),
        "—" if r["within"] is None else ("yes" if r["within"] else "NO"),
    ]


def _wait(seconds: float, started: bool) -> str:
    return _duration(seconds) + ("" if started else " (never started: ≥)")


CALIBRATION_COLUMNS = ("class", "metric", "measured", "simulated", "error", "tolerance", "within")


#: Beside the mean over seeds on calibration.html: each seed's error and how many seeds are within.
SEED_COLUMNS = ("error per seed", "seeds within")


def seed_cells(summary: dict[str, Any] | None, kind: str) -> list[str]:
    """A row's spread over the seeds (calibration.json ``seed_summary``): each seed's error (``seed: e``,
    ``—`` where it has none) and ``k of n`` seeds within the tolerance (of those judged)."""
    if summary is None:
        return ["—", "—"]
    pairs = zip(summary["seeds"], summary["errors"], strict=True)
    errors = " · ".join(f"{seed}: {_value(kind, err)}" for seed, err in pairs)
    judged = summary["judged_seeds"]
    return [errors, f"{summary['within_seeds']} of {judged}" if judged else "—"]


def _calibration_body(rows: list[dict[str, Any]], part: str, summary: list[dict[str, Any]]) -> str:
    by_row = {(s["job_class"], s["metric"]): s for s in summary if s["part"] == part}
    return "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in [
            *_calibration_cells(r), *seed_cells(by_row.get((r["job_class"], r["metric"])), r["error_kind"])
        ]) + "</tr>"
        for r in rows
    )  # fmt: skip


def calibration_html(payload: dict[str, Any], title: str) -> str:
    """A standalone page: verdict, fitted knobs and the search, the comparison tables (each row the mean
    over the seeds, with each seed's error and how many are within), the disagreements."""
    e = html.escape
    head = "".join(f"<th>{name}</th>" for name in (*CALIBRATION_COLUMNS, *SEED_COLUMNS))
    summary = payload.get("seed_summary") or []
    body = _calibration_body(payload["rows"], "fit", summary)
    validation = payload.get("validation") or {}
    later = _calibration_body(validation.get("rows", []), "validation", summary)
    spread = "".join(f"<li>{e(line)}</li>" for line in payload.get("seed_verdict") or [])
    why = "".join(f"<li>{e(line)}</li>" for line in [*payload.get("why", []), *payload.get("flags", [])])
    search = "".join(
        f"<tr><td>{e(row['knob'])}</td><td>{e(_knob(row['value']))}</td><td>{row['wait_ks']:.3f}</td>"
        f"<td>{_value('ks', row.get('image_pull_ks'))}</td></tr>"
        for row in payload["search"]
    )
    worst = "".join(
        f"<tr><td>{e(d['job_id'])}</td><td>{e(d['job_class'])}</td>"
        f"<td>{e(_wait(d['measured_wait_s'], d['measured_started']))}</td>"
        f"<td>{e(_wait(d['simulated_wait_s'], d['simulated_started']))}</td></tr>"
        for d in payload["disagreements"]
    )
    not_fitted = "".join(f"<li>{e(k)}: {e(v)}</li>" for k, v in payload["not_fitted"].items())
    notes = "".join(f"<li class='note'>{e(n)}</li>" for n in payload.get("notes", []))
    fitted = ", ".join(f"{k} = {_knob(v)}" for k, v in payload["fitted"].items()) or "nothing"
    held_out = (
        f" Validation (the later {validation['jobs']} jobs, replayed with what was fitted): "
        f"<b>{e(validation['verdict'])}</b>."
        if validation
        else ""
    )
    return _page(
        title,
        f"<section id='calibration'><h1>{e(title)}</h1><h2>Why jobs waited</h2><ul>{why}</ul>"
        f"<p>Verdict on the fit part: <b>{e(payload['verdict'])}</b>.{held_out} Fitted: {e(fitted)}.</p>"
        f"<ul>{not_fitted}{notes}</ul><h2>Over the seeds</h2><ul id='seeds'>{spread}</ul>"
        f"<table><caption>Measured vs simulated: fit part</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
        f"<table><caption>Measured vs simulated: validation (later part)</caption><thead><tr>{head}</tr>"
        f"</thead><tbody>{later}</tbody></table>"
        "<table><caption>Knob search (KS distance of all waits; of image pulls, which choose image_pull_s)"
        "</caption><tr><th>knob</th><th>value</th><th>KS waits</th><th>KS pulls</th></tr>"
        f"{search}</table>"
        "<table><caption>Largest disagreements</caption><tr><th>job</th><th>class</th><th>measured wait</th>"
        f"<th>simulated wait</th></tr>{worst}</table></section>",
    )
