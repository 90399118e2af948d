"""The command line starts without the simulator: ``fleetlab --help``, ``--version`` and every command's
help import only typer, rich and the command modules, so they answer in a fraction of a second. A command
module that imports the simulator, the models, numpy or Arrow at its top undoes that; these tests name it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: What a command imports only once it runs (the scenario models, the engine, numpy, Arrow, the catalogs).
HEAVY = (
    "numpy",
    "pyarrow",
    "duckdb",
    "yaml",
    "fleetlab.model.scenario",
    "fleetlab.sim",
    "fleetlab.placement",
    "fleetlab.admission",
    "fleetlab.experiment.run",
    "fleetlab.spec.loader",
    "fleetlab.spec.catalog",
    "fleetlab.cost.tco",
    "fleetlab.lint.check",
    "fleetlab.metrics",
)

PROBE = """
import json, sys
from fleetlab.cli import app
sys.argv = ["fleetlab", *json.loads(sys.argv[1])]
code = 0
try:
    app()
except SystemExit as exc:
    code = exc.code or 0
sys.stderr.write("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def imported_modules(argv: list[str]) -> list[str]:
    """Every module a fresh ``fleetlab ARGV`` process holds once the command has succeeded."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr[-2000:]
    modules: list[str] = report["modules"]
    return modules


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["--help"],
        ["simulate", "--help"],
        ["compare", "--help"],
        ["plan", "buy-vs-rent", "--help"],
        ["calibrate", "--help"],
        ["lint", "--help"],
    ],
)
def test_help_and_version_import_nothing_heavy(argv: list[str]) -> None:
    modules = imported_modules(argv)
    assert "fleetlab.cli.simulate" in modules  # the probe did build the whole app
    assert _heavy(modules) == []


def test_a_command_that_runs_still_imports_what_it_needs() -> None:
    """The probe can see heavy imports: ``policies`` reads the presets and the built-in scenarios."""
    assert "fleetlab.placement.profiles" in _heavy(imported_modules(["policies"]))


def test_help_lists_the_policy_names_the_presets_define() -> None:
    """The help's policy names come from a plain module; they must be the presets' own names, in order."""
    from fleetlab.model.policy_names import DEFAULT_COMPARE, PRESET_NAMES, SHARE_POLICY_NAMES
    from fleetlab.placement.profiles import PRESETS, SHARE_POLICY_DESCRIPTIONS

    assert tuple(PRESETS) == PRESET_NAMES
    assert tuple(SHARE_POLICY_DESCRIPTIONS) == SHARE_POLICY_NAMES
    assert set(DEFAULT_COMPARE) <= set(PRESET_NAMES)
