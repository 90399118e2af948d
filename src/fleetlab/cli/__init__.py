"""The ``fleetlab`` command: assembles the app from one module per command group and exposes ``app`` and
``main``. Command modules import ``fleetlab.cli.common``, never this package, so nothing imports back here.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from fleetlab import __version__
from fleetlab.cli.baseline import baseline_cmd, calibrate_cmd
from fleetlab.cli.check import check_cmd
from fleetlab.cli.common import CONTEXT_SETTINGS, err_console, out_console
from fleetlab.cli.cost_plan import plan_app
from fleetlab.cli.diagnose import diagnose_cmd
from fleetlab.cli.experiment import experiment_app
from fleetlab.cli.export import export_cmd
from fleetlab.cli.fgd import fgd_experiment
from fleetlab.cli.history import import_cmd
from fleetlab.cli.lint import lint_cmd
from fleetlab.cli.report import report_cmd
from fleetlab.cli.schema import schema_cmd
from fleetlab.cli.simulate import compare_cmd, policies, simulate, validate
from fleetlab.cli.snapshot import snapshot_cmd

__all__ = ["app", "main"]

app = typer.Typer(
    help="fleetlab: replay GPU workloads on a model of your Kubernetes cluster, one policy change at a time.",
    no_args_is_help=True,
    add_completion=True,
    context_settings=CONTEXT_SETTINGS,
    pretty_exceptions_enable=False,
)
app.add_typer(experiment_app, name="experiment")
app.command(name="diagnose")(diagnose_cmd)
app.command(name="import")(import_cmd)
app.command(name="snapshot")(snapshot_cmd)
app.command(name="lint")(lint_cmd)
app.command(name="check")(check_cmd)
app.command(name="export")(export_cmd)
app.command("fgd-experiment")(fgd_experiment)
app.command(name="report")(report_cmd)
app.command(name="schema")(schema_cmd)
app.command(name="baseline")(baseline_cmd)
app.command(name="calibrate")(calibrate_cmd)
app.add_typer(plan_app, name="plan")
app.add_typer(plan_app, name="cost", hidden=True)  # the same commands under the name older docs used


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version, and which build of admission runs, and exit."),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Log diagnostics (engines, trace cache) to stderr.")
    ] = False,
) -> None:
    from fleetlab.spec.inputs_read import command_inputs

    ctx.with_resource(command_inputs())  # what the command reads, so no --out replaces it
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s", stream=sys.stderr)
    if version:
        from fleetlab.compiled import describe

        out_console.print(f"fleetlab {__version__}", highlight=False)
        out_console.print(f"Kueue admission: {describe()}", highlight=False)
        raise typer.Exit(0)


app.command()(simulate)
app.command(name="compare")(compare_cmd)
app.command()(validate)
app.command()(policies)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted; nothing was written")
        sys.exit(130)
