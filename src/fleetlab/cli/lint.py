"""``fleetlab lint FILE...``: GPU request mistakes in Kubernetes manifests, as a table or JSON.

Exit codes: 0 no errors (warnings allowed), 1 at least one error, 2 a file or scenario that cannot be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from fleetlab.cli.common import JsonOpt, OutputOpt, emit, make_console, output_format
from fleetlab.spec.errors import SpecError

if TYPE_CHECKING:
    from fleetlab.lint.check import LintReport


def _table(report: LintReport) -> Table:
    table = Table(title=f"{len(report.findings)} finding(s)", show_lines=True)
    for column in ("rule", "severity", "where", "path", "message", "fix"):
        table.add_column(column, overflow="fold")
    for f in report.findings:
        where = f"{f.file}:{f.line}" if f.line else f.file
        colour = "red" if f.severity == "error" else "yellow"
        table.add_row(
            f.rule,
            f"[{colour}]{f.severity}[/{colour}]",
            escape(f"{where}\n{f.object_ref}"),
            escape(f.path),
            escape(f.message),
            escape(f.fix),
        )
    return table


def lint_cmd(
    files: Annotated[list[Path], typer.Argument(help="Manifest files: YAML (multi-document) or JSON.")],
    scenario: Annotated[
        str | None,
        typer.Option(
            "--scenario",
            help="Scenario file or built-in name: also check selectors, taints, node sizes and gang "
            "topology against its node pools.",
        ),
    ] = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Check workload manifests for GPU request mistakes (rules: GPU000-GPU012)."""
    from fleetlab.lint.check import lint_paths

    out, err = make_console(), make_console(stderr=True)
    fmt = output_format(json_out, output)
    try:
        resolved = None
        if scenario is not None:
            from fleetlab.spec.loader import load_scenario

            resolved = load_scenario(scenario)[0]
        report = lint_paths(files, resolved)
    except SpecError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    payload = {
        "findings": [f.as_dict() for f in report.findings],
        "errors": report.errors,
        "warnings": report.warnings,
        "objects": report.objects,
        "pod_templates": report.pod_templates,
        "scenario": report.scenario,
    }
    if not emit(fmt, payload, console=out):
        if report.findings:
            out.print(_table(report))
        checked = f"{report.objects} object(s), {report.pod_templates} pod template(s)"
        against = f" against scenario {report.scenario!r}" if report.scenario else ""
        out.print(
            f"{checked}{against}: {report.errors} error(s), {report.warnings} warning(s)", highlight=False
        )
    raise typer.Exit(1 if report.errors else 0)
