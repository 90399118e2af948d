"""Shared checks for command-line options: every float option must be a finite number.

The option parser accepts ``inf`` and ``nan`` for any float (and ``nan`` passes every min/max check, since
comparisons with NaN are false); a rate, price or throughput of infinity only crashes later, so each float
option is given ``callback=finite_float``, which also caps magnitudes at ``MAX_OPTION_FLOAT`` (no price,
rate, throughput or size given on a command line is anywhere near 10**12; past it divisions underflow to 0).
"""

from __future__ import annotations

import math
from typing import Annotated

import typer

MAX_OPTION_FLOAT = 1e12


def finite_float(param: typer.CallbackParam, value: float | None) -> float | None:
    """Option callback: refuse NaN, infinities and huge values, naming the option (exit code 2)."""
    if value is not None and not math.isfinite(value):
        name = param.opts[0] if param.opts else param.name
        raise typer.BadParameter(f"{value} is not a finite number", param_hint=f"'{name}'")
    if value is not None and abs(value) > MAX_OPTION_FLOAT:
        name = param.opts[0] if param.opts else param.name
        raise typer.BadParameter(f"{value:g} is beyond ±{MAX_OPTION_FLOAT:g}", param_hint=f"'{name}'")
    return value


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
