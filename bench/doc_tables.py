"""Tables of measured figures are written by the script that measures them, never by hand.

A page marks each such table with a pair of HTML comments naming the script::

    <!-- measured-table bench_scale begin: written by `bench/bench_scale.py --write-docs docs/scale.md` -->
    | jobs | ... |
    <!-- measured-table bench_scale end -->

and the script calls :func:`write_table` with its rows after measuring: the text between the markers is
replaced (atomically, the rest of the page untouched). tests/test_doc_tables.py checks that every marked
table names a script that exists and calls this function.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

BEGIN = re.compile(r"<!-- measured-table (?P<name>[\w-]+) begin: written by `(?P<command>[^`]+)` -->\n")


def markers(text: str) -> dict[str, str]:
    """Each marked table's name and the command the begin marker says writes it."""
    return {m.group("name"): m.group("command") for m in BEGIN.finditer(text)}


def render(header: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[bool]) -> str:
    """A Markdown table; ``right`` marks the columns aligned right (numbers)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def replace_table(text: str, name: str, table: str) -> str:
    """``text`` with the table between ``name``'s markers replaced; a page without them is an error."""
    begin = next((m for m in BEGIN.finditer(text) if m.group("name") == name), None)
    end_marker = f"<!-- measured-table {name} end -->"
    end = text.find(end_marker, begin.end()) if begin else -1
    if begin is None or end < 0:
        raise ValueError(f"no '{name}' measured-table markers (begin and end) in the page")
    return text[: begin.end()] + table + text[end:]


def write_table(page: str | Path, name: str, table: str) -> None:
    """Replace the marked table ``name`` in ``page`` in place, atomically."""
    path = Path(page)
    updated = replace_table(path.read_text(encoding="utf-8"), name, table)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(updated)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
