"""Command-line conventions: ``-h`` on every command, typer's shell completion, ``-o table|wide|json|yaml``
wherever ``--json`` exists (the same payload in both structured formats), honest source counts, tables that
fit 100 columns, and the error messages a new user meets first (an empty capture file, a folder given to
``report``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from typer.testing import CliRunner

from fleetlab.cli import app
from fleetlab.cli.common import TABLE_WIDTH

ROOT = Path(__file__).resolve().parents[1]
HISTORY = ROOT / "examples" / "history"
KUBECTL_FILES = [HISTORY / n for n in ("pods-jobs.json", "workloads.json", "events.json", "nodes.json")]
runner = CliRunner()


def _commands() -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf command with its path (``("plan", "gpus")``), hidden aliases included."""

    def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from walk(sub, (*path, name))
        else:
            yield path, command

    yield from walk(typer.main.get_command(app), ())


COMMANDS = list(_commands())


def _options(command: Any) -> set[str]:
    return {o for p in command.params for o in getattr(p, "opts", [])}


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=" ".join)
def test_dash_h_is_help_everywhere(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "-h"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_group_help_and_root_help_take_dash_h() -> None:
    for path in ([], ["plan"], ["experiment"]):
        result = runner.invoke(app, [*path, "-h"])
        assert result.exit_code == 0 and "Commands" in result.output, path


def test_shell_completion_is_typers(monkeypatch: pytest.MonkeyPatch) -> None:
    # Typer reads the shell from the process tree unless told not to; a run with no shell above it
    # (a detached job, a CI runner) then finds none, so the test names the shell itself.
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    root = _options(typer.main.get_command(app))
    assert {"--install-completion", "--show-completion"} <= root
    script = runner.invoke(app, ["--show-completion", "bash"], prog_name="fleetlab")
    assert script.exit_code == 0
    assert "_FLEETLAB_COMPLETE=complete_bash" in script.output


def test_every_json_command_takes_dash_o() -> None:
    with_json = [path for path, command in COMMANDS if "--json" in _options(command)]
    assert len(with_json) >= 14  # diagnose, import, lint, check, baseline, calibrate, simulate, compare, ...
    missing = [
        path for path, command in COMMANDS if "--json" in _options(command) and "-o" not in _options(command)
    ]
    assert missing == []


def _yaml_equals_json(args: list[str]) -> dict[str, Any]:
    as_json = runner.invoke(app, [*args, "--json"])
    as_yaml = runner.invoke(app, [*args, "-o", "yaml"])
    assert as_json.exit_code == as_yaml.exit_code == 0, as_json.output + as_yaml.output
    data = json.loads(as_json.stdout)
    assert yaml.safe_load(as_yaml.stdout) == data
    assert runner.invoke(app, [*args, "-o", "json"]).stdout == as_json.stdout
    return dict(data)


def test_yaml_is_the_json_payload(tmp_path: Path) -> None:
    checkpoint = _yaml_equals_json(["plan", "checkpoint", "--write-time", "5m", "--mtbi", "6h"])
    assert checkpoint["young_s"] == pytest.approx(3600.0)  # sqrt(2 * 300 s * 21600 s) = 3600 s
    history = tmp_path / "history"
    imported = runner.invoke(app, ["import", *map(str, KUBECTL_FILES), "--out", str(history), "-o", "yaml"])
    assert imported.exit_code == 0, imported.output
    assert yaml.safe_load(imported.stdout)["jobs"] == 5
    baseline = _yaml_equals_json(["baseline", str(history)])
    assert baseline["rows"][0]["group"] == "all"


def test_json_and_another_output_format_conflict() -> None:
    result = runner.invoke(
        app, ["plan", "checkpoint", "--write-time", "5m", "--mtbi", "6h", "--json", "-o", "yaml"]
    )
    assert result.exit_code == 2
    assert "--json and -o yaml ask for two formats" in result.output


def test_import_counts_every_file_it_was_given(tmp_path: Path) -> None:
    """Three kubectl files are read as one kubectl history, but the user named three sources."""
    result = runner.invoke(app, ["import", *map(str, KUBECTL_FILES[:3]), "--out", str(tmp_path / "h")])
    assert result.exit_code == 0, result.output
    assert "from 3 source(s)" in result.output


def test_baseline_table_fits_100_columns_and_wide_holds_every_column(tmp_path: Path) -> None:
    history = tmp_path / "history"
    assert runner.invoke(app, ["import", *map(str, KUBECTL_FILES), "--out", str(history)]).exit_code == 0
    table = runner.invoke(app, ["baseline", str(history)])
    assert table.exit_code == 0, table.output
    assert max(len(line) for line in table.stdout.splitlines()) <= TABLE_WIDTH
    assert "…" not in table.stdout  # headers wrap, never cut short ("evictio…")
    wide = runner.invoke(app, ["baseline", str(history), "-o", "wide"])
    header = next(line for line in wide.stdout.splitlines() if "group" in line)
    for name in ("jobs", "censored", "prep mean", "GPU-h alloc", "cost / done"):
        assert name in header  # one table, one header line, all 17 columns
    assert max(len(line) for line in wide.stdout.splitlines()) > TABLE_WIDTH


def test_an_empty_capture_file_is_said_to_be_empty(tmp_path: Path) -> None:
    """`kubectl get workloads -A -o json > workloads.json` on a cluster without Kueue writes nothing."""
    empty = tmp_path / "workloads.json"
    empty.write_text("", encoding="utf-8")
    for source in (str(empty), f"kubectl:{empty}"):
        result = runner.invoke(app, ["import", str(KUBECTL_FILES[0]), source, "--out", str(tmp_path / "h")])
        assert result.exit_code == 2
        assert "workloads.json: is empty" in result.output
        assert "cannot tell the format" not in result.output
        assert "without Kueue" in result.output


def test_report_on_a_baseline_folder_says_what_it_takes(tmp_path: Path) -> None:
    history, baseline = tmp_path / "history", tmp_path / "baseline"
    assert runner.invoke(app, ["import", *map(str, KUBECTL_FILES), "--out", str(history)]).exit_code == 0
    assert runner.invoke(app, ["baseline", str(history), "--out", str(baseline)]).exit_code == 0
    result = runner.invoke(app, ["report", str(baseline), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "is a directory" not in result.output
    assert "measured baseline folder" in result.output and "--baseline" in result.output
    result = runner.invoke(app, ["report", str(history), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "fleetlab calibrate" in result.output
    plain = tmp_path / "plain"
    shutil.copytree(HISTORY, plain)
    result = runner.invoke(app, ["report", str(plain), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "manifest.json" in result.output
