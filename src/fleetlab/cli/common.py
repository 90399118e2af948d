"""What every ``fleetlab`` command shares: the consoles, the error paragraph, the ``--out`` checks, the
option types and the output formats. Command modules import this module only, never ``fleetlab.cli`` (which
assembles the app).

Output formats (``-o/--output``, kubectl's convention): ``table`` (the default; tables fit 100 columns or
wrap their cells), ``wide`` (every column, for commands whose full table is wider), ``json`` and ``yaml``
(the same payload; ``--json`` stays as the short form of ``-o json``). A command computes its payload once
and calls :func:`emit`, which prints JSON or YAML and returns True, or returns False for the command to
render its table.

Every float option must be a finite number: the option parser accepts ``inf`` and ``nan`` for any float (and
``nan`` passes every min/max check, since comparisons with NaN are false); a rate, price or throughput of
infinity only crashes later, so each float option is given ``callback=finite_float``, which also caps
magnitudes at ``MAX_OPTION_FLOAT`` (no price, rate, throughput or size given on a command line is anywhere
near 10**12; past it divisions underflow to 0).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from fleetlab.report.strict_json import strict_dumps
from fleetlab.spec.errors import SpecError

if TYPE_CHECKING:
    from fleetlab.experiment.run import Run

MAX_OPTION_FLOAT = 1e12
#: Tables are laid out for this width when output goes to a file or a pipe (and never wider on a terminal).
TABLE_WIDTH = 100
#: ``-h`` as well as ``--help`` on every command (child commands inherit the root's context settings).
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def make_console(stderr: bool = False) -> Console:
    """A console that does not wrap tables at 80 columns when output goes to a file or a pipe."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=200)


class Output(StrEnum):
    """What ``-o`` accepts."""

    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    YAML = "yaml"


OutputOpt = Annotated[
    Output | None,
    typer.Option(
        "--output",
        "-o",
        case_sensitive=False,
        help="table (default; fits 100 columns), wide (every column), json or yaml.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (the same as -o json).")]


def print_table(table: Any, fmt: Output, console: Console | None = None) -> None:
    """A table laid out in at most ``TABLE_WIDTH`` columns (cells wrap), or at its natural width for wide."""
    target = console or out_console
    if fmt is Output.WIDE:
        from rich.measure import Measurement

        natural = Measurement.get(target, target.options.update_width(10_000), table).maximum
        if natural > target.width:  # a console never prints wider than itself: one as wide as the table
            target = Console(stderr=target.stderr, width=natural, force_terminal=target.is_terminal)
        target.print(table)
        return
    target.print(table, width=min(target.width, TABLE_WIDTH))


def output_format(json_flag: bool, output: Output | None) -> Output:
    """The format asked for by ``--json`` and ``-o``; both naming different formats is an error."""
    if json_flag and output not in (None, Output.JSON):
        assert output is not None
        raise fail(f"--json and -o {output.value} ask for two formats; give one of them")
    return Output.JSON if json_flag else (output or Output.TABLE)


def yaml_text(payload: Any) -> str:
    """The JSON payload as YAML: the same values (non-finite numbers as null), keys in payload order."""
    import yaml

    data = json.loads(strict_dumps(payload))
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000))


def emit(
    fmt: Output,
    payload: Any,
    json_print: Callable[[], None] | None = None,
    console: Console | None = None,
) -> bool:
    """Print ``payload`` as JSON (``json_print`` when the command has its own JSON layout) or YAML and
    return True; return False for table and wide, which the command renders itself."""
    target = console or out_console
    if fmt is Output.JSON:
        if json_print is not None:
            json_print()
        else:
            target.print_json(strict_dumps(payload))
        return True
    if fmt is Output.YAML:
        target.print(yaml_text(payload), markup=False, highlight=False, end="", soft_wrap=True)
        return True
    return False


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
#: Options of the commands that give a verdict (compare, report, experiment report).
MinEffectOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--min-effect",
        help="METRIC=VALUE: the smallest change a verdict calls better or worse (2m, 0.5, 5%; 0: any); "
        "repeat it. Defaults per metric: docs/decision.md.",
    ),
]
PriceOpt = Annotated[
    list[str] | None,
    typer.Option("--price", help="POOL=USD/h: price a pool per node-hour (an assumption); repeat it."),
]
ResampleOpt = Annotated[
    str,
    typer.Option(
        "--resample",
        help="auto: each seed resamples a trace or job list (bootstrap by class and hour, runtimes per "
        "class, arrival jitter); off: replay it as given.",
    ),
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
