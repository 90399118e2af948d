"""The inputs one command has read, so that no output of it can replace, contain or sit inside one.

Every bounded reader (``spec.bounded``) and every folder reader (history, run and experiment folders)
notes what it opens while a command's scope is open (the CLI opens one per command). The output writer
(``spec.out_folder``) then refuses an ``--out`` that equals an input, holds one (replacing it would delete
the input) or sits inside one (writing there would change it). Outside a scope nothing is recorded, so
library callers and long-lived processes keep no list. See docs/output-folders.md.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from fleetlab.spec.errors import SpecError

_SCOPES: list[set[str]] = []


@contextlib.contextmanager
def command_inputs() -> Iterator[set[str]]:
    """Record every input read until the block ends (nested scopes see their own reads only)."""
    seen: set[str] = set()
    _SCOPES.append(seen)
    try:
        yield seen
    finally:
        _SCOPES.remove(seen)


def note_input(path: Path | str) -> None:
    """Record ``path`` (a file or a folder) as read by the current command, if a scope is open."""
    if _SCOPES:
        _SCOPES[-1].add(os.path.realpath(path))


def inputs_read() -> frozenset[str]:
    """The real paths read in the current scope (empty outside one)."""
    return frozenset(_SCOPES[-1]) if _SCOPES else frozenset()


def _inside(path: str, folder: str) -> bool:
    return path != folder and path.startswith(folder.rstrip(os.sep) + os.sep)


def refuse_overlap(
    out: Path,
    option: str = "--out",
    inputs: Iterable[Path | str] = (),
    own: Callable[[str], bool] | None = None,
) -> None:
    """A SpecError when ``out`` equals, holds or sits inside an input this command read (or ``inputs``).

    Paths are compared after resolving links, so a link to an input counts as the input. ``own`` tells
    an input fleetlab itself wrote inside a folder it writes in place (a report's experiment.json)."""
    target = os.path.realpath(out)
    for given in sorted({*inputs_read(), *(os.path.realpath(p) for p in inputs)}):
        if target == given:
            problem = f"is {given}, an input of this command"
        elif _inside(given, target):
            if own is not None and own(given):
                continue
            problem = f"holds {given}, an input of this command (replacing the folder would delete it)"
        elif _inside(target, given):
            problem = f"is inside {given}, an input of this command (writing there would change it)"
        else:
            continue
        raise SpecError(f"{option} {out}", [f"{problem}; give an output folder apart from every input"])
