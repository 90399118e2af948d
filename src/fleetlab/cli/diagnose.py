"""``fleetlab diagnose``: why pods are not running, from `kubectl get ... -o json` files (read-only).

Exit status: 0 when nothing is pending, 1 when some pod waits (unplaced or not yet running), 2 for bad
input. ``--json`` prints the same diagnosis as plain data for scripts.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from fleetlab.cli.common import JsonOpt, OutputOpt, emit, err_console, fail, out_console, output_format
from fleetlab.report.strict_json import strict_dumps


def _parse_now(value: str | None) -> datetime | None:
    if value is None:
        return None
    from fleetlab.spec.bounded import parse_timestamp

    try:
        return parse_timestamp(value)
    except ValueError as exc:
        hint = "expected an RFC 3339 time such as 2026-11-30T10:00:00Z"
        raise ValueError(f"--now {value!r}: {exc}; {hint}") from None


def diagnose_cmd(
    nodes: Annotated[
        list[Path] | None, typer.Option("--nodes", help="`kubectl get nodes -o json` output (JSON or YAML).")
    ] = None,
    pods: Annotated[
        list[Path] | None, typer.Option("--pods", help="`kubectl get pods -A -o json` output (JSON or YAML).")
    ] = None,
    snapshot: Annotated[
        list[Path] | None,
        typer.Option("--snapshot", help="One v1 List holding nodes and pods (`fleetlab snapshot --out`)."),
    ] = None,
    kueue: Annotated[
        list[Path] | None,
        typer.Option(
            "--kueue", help="Kueue ClusterQueues/LocalQueues/Workloads/ResourceFlavors (kubectl -o json)."
        ),
    ] = None,
    events: Annotated[
        list[Path] | None,
        typer.Option("--events", help="`kubectl get events -A -o json`: the cluster's own last messages."),
    ] = None,
    priorityclasses: Annotated[
        list[Path] | None,
        typer.Option(
            "--priorityclasses", help="`kubectl get priorityclasses -o json`, for pods without spec.priority."
        ),
    ] = None,
    storage: Annotated[
        list[Path] | None,
        typer.Option(
            "--storage",
            help="`kubectl get pv,pvc,storageclasses -A -o json`: where the pods' volumes let them run.",
        ),
    ] = None,
    now: Annotated[
        str | None,
        typer.Option(
            "--now", help="Measure waits against this time (default: newest timestamp in the files)."
        ),
    ] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Why pods are pending: GPUs advertised, per-node scheduler reasons and the real block, stuck starts."""
    from fleetlab.kube.cluster import build_live_cluster
    from fleetlab.kube.diagnose import diagnose
    from fleetlab.report.diagnosis import print_diagnosis
    from fleetlab.spec.errors import SpecError
    from fleetlab.spec.kube_snapshot import load_snapshot

    fmt = output_format(json_out, output)
    files = [*(snapshot or []), *(nodes or []), *(pods or [])]
    if not files:
        raise fail("give --snapshot FILE, or --nodes FILE and --pods FILE (kubectl get ... -o json output)")
    try:
        at = _parse_now(now)
        snap = load_snapshot(files, kueue or [], events or [], priorityclasses or [], storage or [])
        live = build_live_cluster(snap)
        result = diagnose(live, at or snap.newest)
    except (SpecError, ValueError) as exc:
        raise fail(str(exc)) from None
    payload = result.as_dict()
    if not emit(fmt, payload, lambda: typer.echo(strict_dumps(payload, indent=2, sort_keys=True))):
        print_diagnosis(out_console, result)
    if not snap.pods:
        err_console.print("warning: no Pod objects given; pass --pods to see pending pods", highlight=False)
    raise typer.Exit(1 if result.anything_pending else 0)
