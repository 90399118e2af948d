"""The diagnosis as rich tables for an on-call engineer: GPU nodes with problems, each pending pod's
scheduler message next to the real block, and pods stuck between bind and Running."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from fleetlab.kube.diagnose import Diagnosis, PendingPod
from fleetlab.kube.gpu_nodes import GpuNode

#: Nodes named per reason before the rest are counted.
NODES_NAMED = 4


def duration(seconds: float | None) -> str:
    """``6m37s`` / ``2h05m`` / ``3d4h``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    s = int(seconds)
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600}h"


def _resource_cell(g: GpuNode) -> str:
    """One line per GPU resource: advertised / healthy / allocated / free."""
    return (
        "\n".join(
            f"{r.resource.removeprefix('nvidia.com/')}: {r.advertised}/{r.healthy}/{r.allocated}/{r.free}"
            for r in g.resources
        )
        or "none advertised"
    )


def _totals(diagnosis: Diagnosis) -> str:
    """Per GPU resource, the four columns summed over every GPU node (nvidia.com/gpu first)."""
    sums: dict[str, list[int]] = {"nvidia.com/gpu": [0, 0, 0, 0]}
    for g in diagnosis.gpu_nodes:
        for r in g.resources:
            row = sums.setdefault(r.resource, [0, 0, 0, 0])
            for i, v in enumerate((r.advertised, r.healthy, r.allocated, r.free)):
                row[i] += v
    return "\n".join(
        f"{name.removeprefix('nvidia.com/')}: {'/'.join(map(str, row))}" for name, row in sums.items()
    )


def gpu_node_table(diagnosis: Diagnosis) -> Table:
    """Stage (a): every GPU node with its totals per GPU resource; the header sums the same rows."""
    healthy = len([g for g in diagnosis.gpu_nodes if not g.problems])
    title = (
        f"(a) nvidia.com/gpu: {diagnosis.gpus_advertised} advertised, {diagnosis.gpus_allocatable} healthy "
        f"({diagnosis.gpus_schedulable} on schedulable nodes), {diagnosis.gpus_allocated} allocated, "
        f"{diagnosis.gpus_free} free; {healthy} of {len(diagnosis.gpu_nodes)} GPU node(s) without problems"
    )
    table = Table(title=title, title_justify="left")
    for column in ("node", "product (model)", "advertised/healthy/allocated/free", "mode", "problem"):
        table.add_column(column)
    for g in diagnosis.gpu_nodes:
        product = g.product or "-"
        if g.model is not None and g.model != product:
            product += f" ({g.model})"
        mode = "\n".join(m for m in (g.mig, g.sharing) if m)
        table.add_row(
            Text(g.node),
            Text(product),
            Text(_resource_cell(g)),
            Text(mode, style="dim"),
            Text("\n".join(g.problems), style="red"),
        )
    if diagnosis.gpu_nodes:
        table.add_row(Text("total", style="bold"), "", Text(_totals(diagnosis), style="bold"), "", "")
    return table


def pending_table(pod: PendingPod) -> Table:
    """Stage (b) for one pod: the verdict, the scheduler's line and which nodes failed how."""
    requests = ", ".join(f"{k}={v}" for k, v in pod.requests.items())
    where = f"  #{pod.queue_position} in queue" if pod.queue_position else ""
    table = Table(
        title=escape(f"{pod.pod}  [{requests}]  pending {duration(pod.waiting_s)}{where}"),
        title_justify="left",
        show_header=False,
    )
    table.add_column("what", style="bold")
    table.add_column("detail")
    if pod.placed_on is not None:
        table.add_row("fits", Text(pod.detail, style="bold green"))
    else:
        table.add_row("blocked by", Text(f"{pod.blocked_by}: {pod.detail}", style="bold red"))
    table.add_row("kube-scheduler", Text(pod.message))
    if pod.preemption:
        table.add_row("preemption", Text(pod.preemption))
    if pod.reported and not pod.reported.startswith(pod.message):
        table.add_row("cluster said", Text(pod.reported, style="yellow"))
    for group in pod.nodes:
        nodes = group.nodes
        reason = "fits" if group.fits else "; ".join(group.reasons) or str(group.plugin)
        named = ", ".join(nodes[:NODES_NAMED]) + (
            f" +{len(nodes) - NODES_NAMED}" if len(nodes) > NODES_NAMED else ""
        )
        table.add_row(f"{len(nodes)} node(s)", Text(f"{reason}: {named}"))
    return table


def workload_table(diagnosis: Diagnosis) -> Table:
    """Kueue Workloads not admitted: queue, verdict, Kueue's own message and the quota rows."""
    table = Table(
        title=f"(b) {len(diagnosis.workloads)} Kueue workload(s) not admitted", title_justify="left"
    )
    for column in (
        "workload",
        "queue",
        "state",
        "asks",
        "quota (flavor resource: nominal/used/available, borrowed part)",
        "why",
    ):
        table.add_column(column)
    for w in diagnosis.workloads:
        asks = ", ".join(f"{k}={v}" for k, v in w.requests.items())
        rows = "\n".join(
            f"{q.flavor} {q.resource}: {q.nominal}/{q.used}/{q.available}, {q.borrowable} borrowed"
            + (f" (borrowingLimit {q.borrowing_limit})" if q.borrowing_limit is not None else "")
            for q in w.quota
        )
        why = w.verdict + (f"\nKueue: {w.message}" if w.message else "")
        queue = f"{w.local_queue} -> {w.cluster_queue or '?'}"
        table.add_row(Text(w.workload), Text(queue), w.state, Text(asks), Text(rows), Text(why))
    return table


def starting_table(diagnosis: Diagnosis) -> Table:
    """Stage (c): bound pods not yet Running, longest wait first."""
    table = Table(title="(c) bound but not running", title_justify="left")
    for column in ("pod", "node", "stage", "since", "evidence"):
        table.add_column(column)
    rows = sorted(diagnosis.starting, key=lambda s: (-(s.waiting_s or 0), s.pod))
    for s in rows:
        table.add_row(Text(s.pod), Text(s.node), s.stage, duration(s.waiting_s), Text(s.reason))
    return table


def print_diagnosis(console: Console, diagnosis: Diagnosis) -> None:
    """All three stages, then notes; one line when nothing waits."""
    console.print(
        f"{diagnosis.nodes} node(s), measured at {diagnosis.now or 'unknown time'}",
        highlight=False,
    )
    console.print(gpu_node_table(diagnosis))
    if diagnosis.pending:
        console.print(f"(b) {len(diagnosis.pending)} pod(s) not placed", style="bold", highlight=False)
        for pod in diagnosis.pending:
            console.print(pending_table(pod))
    if diagnosis.workloads:
        console.print(workload_table(diagnosis))
    if diagnosis.starting:
        console.print(starting_table(diagnosis))
    for note in diagnosis.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    if not diagnosis.anything_pending:
        console.print("nothing pending: every pod is placed and running", style="green")
