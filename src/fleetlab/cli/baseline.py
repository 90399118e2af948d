"""``fleetlab baseline`` and ``fleetlab calibrate``: measure a cluster's own history, then replay it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fleetlab.cli.common import (
    JsonOpt,
    Output,
    OutputOpt,
    check_out,
    emit,
    err_console,
    fail,
    out_console,
    out_path,
    output_format,
    print_table,
)
from fleetlab.experiment.seed_counts import DEFAULT_SEEDS, MAX_SEEDS
from fleetlab.spec.errors import SpecError

if TYPE_CHECKING:
    from fleetlab.model.history import History

HistoryArg = Annotated[
    Path | None,
    typer.Argument(help="A history folder (jobs.parquet, nodes.parquet, bill.parquet, history.json)."),
]
AlibabaPodsOpt = Annotated[
    Path | None,
    typer.Option("--alibaba-pods", help="Instead of a folder: an Alibaba 2023 (openb) pod list CSV."),
]
AlibabaNodesOpt = Annotated[
    Path | None,
    typer.Option("--alibaba-nodes", help="The openb node list that goes with --alibaba-pods."),
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", parser=out_path, help="Write the results here (atomically).")
]


def load_history_input(history: Path | None, pods: Path | None, nodes: Path | None) -> History:
    """A history folder, or an openb pod list (+ node list); exactly one of the two."""
    if (history is None) == (pods is None):
        raise SpecError("<command line>", ["give a history folder or --alibaba-pods FILE (not both)"])
    if nodes is not None and pods is None:
        raise SpecError("<command line>", ["--alibaba-nodes goes with --alibaba-pods"])
    if pods is not None:
        from fleetlab.spec.history.alibaba import load_alibaba_history

        return load_alibaba_history(pods, nodes)
    assert history is not None
    return load_history_checked(history)


def load_history_checked(folder: Path) -> History:
    """A history folder (as ``fleetlab import`` writes it) that passed the sanity checks."""
    from fleetlab.spec.history.checks import check_history
    from fleetlab.spec.history.store import load_history

    return check_history(load_history(folder), str(folder))


def _write_out(out: Path, fill: Callable[[Path], None]) -> None:
    """Stage ``fill``'s files and rename them into ``out``; an OS error is one clear line, exit 2."""
    from fleetlab.report.baseline_files import write_staged

    try:
        write_staged(out, fill)
    except SpecError as exc:  # a folder fleetlab did not write, or another run writing it now
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"--out {out}: cannot write results: {exc.strerror or exc}") from None


def baseline_cmd(
    history: HistoryArg = None,
    out: OutOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    alibaba_pods: AlibabaPodsOpt = None,
    alibaba_nodes: AlibabaNodesOpt = None,
) -> None:
    """Measure today's cluster from its history: waits, prep, compute, failures, idle capacity, cost."""
    from fleetlab.metrics.baseline import compute_baseline
    from fleetlab.report.baseline_files import baseline_payload, write_baseline_files
    from fleetlab.report.baseline_report import baseline_table, baseline_tables, cluster_lines, history_title

    fmt = output_format(json_out, output)
    check_out(out)
    try:
        loaded = load_history_input(history, alibaba_pods, alibaba_nodes)
    except SpecError as exc:
        raise fail(str(exc)) from None
    result = compute_baseline(loaded)
    title = history_title(loaded, "measured baseline")
    payload = baseline_payload(result)
    _publish(
        out,
        lambda folder: write_baseline_files(result, folder, title),
        fmt,
        payload,
        lambda: (
            [baseline_table(payload["rows"], title)]
            if fmt is Output.WIDE
            else baseline_tables(payload["rows"], title)
        ),
        [*cluster_lines(result.cluster), *result.notes],
        f"baseline written to {out}",
    )


def _publish(
    out: Path | None,
    fill: Callable[[Path], None],
    fmt: Output,
    payload: dict[str, Any],
    tables: Callable[[], list[Any]],
    lines: list[str],
    written: str,
) -> None:
    """Write the files (when --out), then print the payload (JSON or YAML) or the tables, their notes and
    where the files went: the one ending of ``baseline`` and ``calibrate``."""
    from fleetlab.report.baseline_files import dumps

    if out is not None:
        _write_out(out, fill)
    json_print = lambda: out_console.print(  # noqa: E731
        dumps(payload), highlight=False, markup=False, end="", soft_wrap=True
    )
    if emit(fmt, payload, json_print):
        return
    for table in tables():
        print_table(table, fmt)
    for line in lines:
        out_console.print(line, highlight=False, markup=False)
    if out is not None:
        out_console.print(written, highlight=False, markup=False)


def _tolerances(items: list[str] | None) -> dict[str, float]:
    from fleetlab.experiment.calibration import DEFAULT_TOLERANCES

    out: dict[str, float] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or key not in DEFAULT_TOLERANCES:
            raise SpecError(
                "--tolerance", [f"{item!r}: use KEY=NUMBER with KEY one of {', '.join(DEFAULT_TOLERANCES)}"]
            )
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not (0 <= number < float("inf")):
            raise SpecError("--tolerance", [f"{item!r}: the value must be a number >= 0"])
        out[key] = number
    return out


def calibrate_cmd(
    history: HistoryArg = None,
    out: OutOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    alibaba_pods: AlibabaPodsOpt = None,
    alibaba_nodes: AlibabaNodesOpt = None,
    tolerance: Annotated[
        list[str] | None,
        typer.Option("--tolerance", help="Override a tolerance, KEY=VALUE (e.g. wait_ks=0.2); repeat it."),
    ] = None,
    no_fit: Annotated[bool, typer.Option("--no-fit", help="Replay once with no fitted knob.")] = False,
    fit_until: Annotated[
        str | None,
        typer.Option(
            "--fit-until",
            help="Fit on jobs submitted before this: a share of the submissions (default 0.667), seconds "
            "from the history's start, or an RFC 3339 time; the later jobs validate what was fitted.",
        ),
    ] = None,
    max_latency: Annotated[
        float | None,
        typer.Option("--max-latency", help="Flag a fitted scheduling latency longer than this (seconds)."),
    ] = None,
    seeds: Annotated[
        int,
        typer.Option(
            "--seeds",
            min=1,
            max=MAX_SEEDS,
            help="Replay the calibrated scenario under this many seeds (each part is judged on the mean); "
            "once when nothing in it is drawn at random. Knob candidates that draw at random are scored "
            f"on the mean over the first {DEFAULT_SEEDS} at most.",
        ),
    ] = DEFAULT_SEEDS,
) -> None:
    """Say why jobs waited, replay the history on its own nodes with its policy, fit on the earlier part
    and validate on the later part, metric by metric."""
    from fleetlab.experiment.calibration import calibrate
    from fleetlab.report.baseline_files import (
        calibration_payload,
        write_calibration_files,
    )
    from fleetlab.report.baseline_report import calibration_table, history_title
    from fleetlab.report.progress import DelayedProgress

    fmt = output_format(json_out, output)
    check_out(out)
    try:
        tolerances = _tolerances(tolerance)
        loaded = load_history_input(history, alibaba_pods, alibaba_nodes)
        with DelayedProgress(err_console) as progress:
            result = calibrate(
                loaded, tolerances, fit=not no_fit, progress=lambda d, t: progress("fit", d, t),
                fit_until=fit_until, max_latency_s=max_latency, seeds=seeds,
            )  # fmt: skip
    except SpecError as exc:
        raise fail(str(exc)) from None
    title = history_title(loaded, "calibration")
    payload = calibration_payload(result)
    if not json_out:
        lines = [*payload["why"], *payload["seed_verdict"], *(f"flag: {f}" for f in payload["flags"])]
        for line in lines:
            out_console.print(line, highlight=False, markup=False)
    _publish(
        out,
        lambda folder: write_calibration_files(result, folder, title),
        fmt,
        payload,
        lambda: [calibration_table(payload, title)],
        list(result.notes),
        f"calibration written to {out} (scenario.yaml: the calibrated scenario)",
    )
