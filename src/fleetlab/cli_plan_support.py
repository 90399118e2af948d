"""What every ``fleetlab plan`` command module shares: the CLI's error paragraph and its consoles.

Looked up on ``fleetlab.cli`` at call time, so the plan commands print exactly as the rest of the CLI does.
"""

from __future__ import annotations

from typing import Any

import typer


def fail(message: str) -> typer.Exit:
    """The CLI's error paragraph and exit 2, shown verbatim."""
    from fleetlab import cli

    return cli._fail(message)  # cli._fail escapes rich markup itself


def consoles() -> tuple[Any, Any]:
    """The CLI's standard-output and standard-error consoles."""
    from fleetlab import cli

    return cli.out_console, cli.err_console
