"""``fleetlab cost gpus|buy-vs-rent|ledger|reconcile`` are the ``plan`` commands under the name users are
told to expect: the same callables, the same output for the same arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetlab import cli
from fleetlab.cli.cost import cost_app
from fleetlab.cli.cost_plan import plan_app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "plan"
runner = CliRunner()


def _callbacks(app: object) -> dict[str, object]:
    return {c.name: c.callback for c in app.registered_commands}  # type: ignore[attr-defined]


def test_cost_commands_are_the_plan_callables() -> None:
    cost, plan = _callbacks(cost_app), _callbacks(plan_app)
    for name in ("gpus", "buy-vs-rent", "ledger", "reconcile"):
        assert cost[name] is plan[name], name
    assert "checkpoint" in cost


@pytest.mark.parametrize(
    "args",
    [
        ["gpus", str(EXAMPLES / "llm-finetune.yaml"), "--json", "--cloud", "aws"],
        ["buy-vs-rent", "--utilisation", "0.6", "--json"],
        ["gpus", "--gpu", "B999"],
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
