"""What every ``fleetlab`` command shares: the consoles, the error paragraph, the ``--out`` checks and the
option types. Command modules import this module only, never ``fleetlab.cli`` (which assembles the app).

Every float option must be a finite number: the option parser accepts ``inf`` and ``nan`` for any float (and
``nan`` passes every min/max check, since comparisons with NaN are false); a rate, price or throughput of
infinity only crashes later, so each float option is given ``callback=finite_float``, which also caps
magnitudes at ``MAX_OPTION_FLOAT`` (no price, rate, throughput or size given on a command line is anywhere
near 10**12; past it divisions underflow to 0).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from fleetlab.spec.errors import SpecError

if TYPE_CHECKING:
    from fleetlab.experiment.run import Run

MAX_OPTION_FLOAT = 1e12


def make_console(stderr: bool = False) -> Console:
    """A console that does not wrap tables at 80 columns when output goes to a file or a pipe."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=200)


out_console = make_console()
err_console = make_console(stderr=True)

ScenarioArg = Annotated[
    str | None,
    typer.Argument(help="Scenario YAML file, or a built-in scenario name (default: the built-in 'default')."),
]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Override the scenario's seed.")]


def out_path(value: str) -> Path:
    """Option parser for ``--out``: an empty path would mean the current folder by accident (``--out
    "$UNSET"``), so it is refused; ``--out .`` says so on purpose."""
    if not value.strip():
        raise typer.BadParameter("is an empty path; give a folder (--out . for the current one)")
    return Path(value)


OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out", parser=out_path, help="Write jobs/nodes/timeline Parquet and summary.json here (atomically)."
    ),
]
ForceOpt = Annotated[
    bool,
    typer.Option("--force", help="Replace --out even if it is a non-empty folder fleetlab did not write."),
]


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print the error paragraph (rich markup in ``message`` shown verbatim); raise the returned Exit."""
    err_console.print(
        f"[bold red]error:[/bold red] {escape(message)}", highlight=False, markup=True, soft_wrap=True
    )
    return typer.Exit(code)


def check_out(out: Path | None, force: bool = False) -> None:
    """Refuse an --out that can never be written (or must not be replaced) before spending time on the run."""
    from fleetlab.spec.out_folder import check_replaceable

    if out is not None:
        try:
            check_replaceable(out.absolute(), force=force)
        except SpecError as exc:
            raise fail(str(exc)) from None


def write_runs(
    runs: list[Run], out: Path, single: bool, extra: dict[str, Any] | None = None, force: bool = False
) -> None:
    """Write the runs' files into --out atomically; a refusal or an OS error is one paragraph, exit 2."""
    from fleetlab.experiment.output import write_results

    try:
        write_results(runs, out, single=single, extra=extra, force=force)
    except SpecError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"--out {out}: cannot write results: {exc.strerror or exc}") from None


def finite_float(param: typer.CallbackParam, value: float | None) -> float | None:
    """Option callback: refuse NaN, infinities and huge values, naming the option (exit code 2)."""
    if value is not None and not math.isfinite(value):
        name = param.opts[0] if param.opts else param.name
        raise typer.BadParameter(f"{value} is not a finite number", param_hint=f"'{name}'")
    if value is not None and abs(value) > MAX_OPTION_FLOAT:
        name = param.opts[0] if param.opts else param.name
        raise typer.BadParameter(f"{value:g} is beyond ±{MAX_OPTION_FLOAT:g}", param_hint=f"'{name}'")
    return value
