"""The shipped default rates of an owned GPU server (data/plan/tco_defaults.json), read without the cost
model: ``plan buy-vs-rent --help`` shows them, and help must not import catalogs and numpy."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def default_rates() -> dict[str, dict[str, Any]]:
    """The shipped default rates, each ``{"value": ..., "source": ...}``."""
    text = resources.files("fleetlab.data").joinpath("plan/tco_defaults.json").read_text(encoding="utf-8")
    rates: dict[str, dict[str, Any]] = json.loads(text)["rates"]
    return rates
