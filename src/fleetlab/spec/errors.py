"""Input errors that name the file, the place inside it, the bad value and what is allowed.

The CLI turns a SpecError into one paragraph on stderr and exit code 2; nothing else about bad input
ever reaches the user as a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleetlab.model.validation_problems import DEFAULT_DOCS, location, problems_from_validation

MAX_LISTED = 8


class SpecError(Exception):
    """A scenario, trace or catalog that cannot be used as given."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = list(problems)
        super().__init__(self.render())

    def render(self) -> str:
        """One paragraph: the file, then each problem (the first few, with a count of the rest)."""
        shown = self.problems[:MAX_LISTED]
        more = len(self.problems) - len(shown)
        text = f"{self.source}: " + "; ".join(shown)
        if more > 0:
            text += f"; and {more} more problem(s)"
        return " ".join(text.split()) if "\n" in text or "\r" in text else text


__all__ = ["DEFAULT_DOCS", "SpecError", "location", "problems_from_validation"]
