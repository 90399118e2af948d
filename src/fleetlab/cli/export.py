"""``fleetlab export [SCENARIO] --out DIR``: the scenario's policy as real cluster configuration files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from fleetlab.cli.common import out_path
from fleetlab.spec.errors import SpecError


def export_cmd(
    scenario: Annotated[
        str | None,
        typer.Argument(
            help="Scenario YAML file, or a built-in scenario name (default: the built-in 'default')."
        ),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out", parser=out_path, help="Folder to write (replaced as a whole; created if missing)."
        ),
    ] = Path("fleetlab-config"),
    snapshot: Annotated[
        list[Path] | None,
        typer.Option(
            "--snapshot",
            help="The cluster's nodes (`fleetlab snapshot` or `kubectl get nodes -o json`): ResourceFlavors "
            "select each pool by labels its real nodes carry.",
        ),
    ] = None,
    kueue_api: Annotated[
        str,
        typer.Option("--kueue-api", help="Kueue API version to write: v1beta2 (default) or v1beta1."),
    ] = "v1beta2",
    force: Annotated[
        bool, typer.Option("--force", help="Replace --out even if fleetlab did not write it.")
    ] = False,
) -> None:
    """Write KubeSchedulerConfiguration (also as a second scheduler), Kueue objects and NVIDIA GPU Operator
    configs for a scenario."""
    from fleetlab.export.write import ExportOptions, export_scenario
    from fleetlab.spec.kube_snapshot import load_snapshot
    from fleetlab.spec.loader import load_scenario

    console, err = Console(width=200, soft_wrap=True), Console(stderr=True, soft_wrap=True)
    if out.exists() and not out.is_dir():
        err.print(f"[bold red]error:[/bold red] --out {escape(str(out))}: exists and is not a directory")
        raise typer.Exit(2)
    if kueue_api not in ("v1beta2", "v1beta1"):
        err.print(f"[bold red]error:[/bold red] --kueue-api {escape(kueue_api)}: expected v1beta2 or v1beta1")
        raise typer.Exit(2)
    try:
        loaded = load_scenario(scenario)[0]
        snap = load_snapshot(snapshot) if snapshot else None
        options = ExportOptions(snapshot=snap, kueue_api=f"kueue.x-k8s.io/{kueue_api}")
        result = export_scenario(loaded, out, options, force=force)
    except SpecError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        err.print(
            f"[bold red]error:[/bold red] --out {escape(str(out))}: cannot write: {exc.strerror or exc}"
        )
        raise typer.Exit(2) from None
    for name in result.files:
        console.print(f"wrote {out / name}", highlight=False, markup=False)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
