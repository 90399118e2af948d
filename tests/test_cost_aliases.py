"""One command group for cost and planning: ``fleetlab plan …`` holds every command, and ``fleetlab cost …``
is the same group under a hidden alias (the name earlier releases used): the same callables, the same
output for the same arguments, and nothing of ``cost`` in the top-level help."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.cli.cost_plan import plan_app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plan"
runner = CliRunner()


def test_plan_holds_every_cost_command_and_cost_is_a_hidden_alias() -> None:
    names = {c.name for c in plan_app.registered_commands}
    assert {"gpus", "mix", "buy-vs-rent", "ledger", "reconcile", "checkpoint", "profile"} <= names
    groups = {g.name: g for g in cli.app.registered_groups}
    assert groups["plan"].typer_instance is plan_app and not groups["plan"].hidden
    assert groups["cost"].typer_instance is plan_app and groups["cost"].hidden
    listed = [line.split()[1] for line in runner.invoke(cli.app, ["--help"]).output.splitlines()
              if line.startswith("│ ") and len(line.split()) > 2]  # fmt: skip
    assert "plan" in listed and "cost" not in listed


@pytest.mark.parametrize(
    "args",
    [
        ["gpus", str(EXAMPLES / "llm-finetune.yaml"), "--json", "--cloud", "aws"],
        ["buy-vs-rent", "--utilisation", "0.6", "--json"],
        ["gpus", "--gpu", "B999"],
        ["checkpoint", "--write-time", "5m", "--mtbi", "6h"],
    ],
)
def test_cost_and_plan_give_the_same_output(args: list[str]) -> None:
    via_cost = runner.invoke(cli.app, ["cost", *args])
    via_plan = runner.invoke(cli.app, ["plan", *args])
    assert via_cost.exit_code == via_plan.exit_code
    assert via_cost.output == via_plan.output


def test_cost_ledger_then_cost_reconcile_with_billing_flag(tmp_path: Path) -> None:
    out = tmp_path / "run"
    made = runner.invoke(cli.app, ["cost", "ledger", str(EXAMPLES / "gcp-cluster.yaml"), "--out", str(out)])
    assert made.exit_code == 0, made.output
    assert (out / "ledger.parquet").is_file()
    bill = EXAMPLES / "gcp-billing-export.csv"
    result = runner.invoke(cli.app, ["cost", "reconcile", "--run", str(out), "--billing", str(bill)])
    assert result.exit_code == 0, result.output
    assert "research" in result.stdout
