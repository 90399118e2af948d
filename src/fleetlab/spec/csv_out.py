"""Every CSV fleetlab writes goes through here, so no cell can run as a spreadsheet formula.

A team, job or variant name such as ``=HYPERLINK(...)`` or ``@SUM(...)`` written raw into a CSV runs as a
formula when the file is opened in Excel, LibreOffice or Google Sheets (CSV injection). Following OWASP's
rule, a text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
``'``, which spreadsheets show as text and never evaluate. Numbers stay numbers (``-3`` is written as
``-3``). fleetlab's own readers of its CSV (native traces) drop that one ``'`` again
(:func:`restore_cell`), so a table written and read back is unchanged. See docs/output-folders.md.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

#: First characters that make a spreadsheet read a cell as a formula (OWASP, "CSV Injection").
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")
#: A cell as :func:`neutral_cell` wrote it: the quote, then a formula lead.
NEUTRALISED = re.compile(r"^'(?=[=+\-@\t\r])")


def neutral_cell(value: Any) -> Any:
    """``value`` with a ``'`` in front when it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_LEADS):
        return "'" + value
    return value


def restore_cell(text: str) -> str:
    """The inverse of :func:`neutral_cell` for a text cell read back from fleetlab's own CSV."""
    return text[1:] if NEUTRALISED.match(text) else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]], line_end: str = "\n") -> str:
    """A CSV document with every text cell neutralised, the header included."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=line_end)
    writer.writerow([neutral_cell(name) for name in header])
    writer.writerows([neutral_cell(cell) for cell in row] for row in rows)
    return buffer.getvalue()


def dict_rows_text(rows: Sequence[dict[str, Any]]) -> str:
    """:func:`csv_text` of mappings that share the first one's keys (empty text for no rows)."""
    if not rows:
        return ""
    header = list(rows[0])
    return csv_text(header, ([row.get(name, "") for name in header] for row in rows))
