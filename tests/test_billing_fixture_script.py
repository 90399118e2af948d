"""examples/plan/make_billing_fixture.py still writes the committed GCP bill fixture: the same rows and
cells, numbers equal to the last digits a different summation order can move (the script is how the
fixture is remade when the ledger changes, so it must keep running)."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "plan" / "make_billing_fixture.py"
COMMITTED = ROOT / "examples" / "plan" / "gcp-billing-export.csv"


def _rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _same_cell(written: str, committed: str) -> bool:
    if written == committed:
        return True
    try:
        return math.isclose(float(written), float(committed), rel_tol=1e-12)
    except ValueError:
        return False


def test_the_script_writes_the_committed_bill(tmp_path: Path) -> None:
    out = tmp_path / "bill.csv"
    committed_bytes = COMMITTED.read_bytes()
    done = subprocess.run([sys.executable, str(SCRIPT), str(out)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    written, committed = _rows(out), _rows(COMMITTED)
    assert done.stdout.strip() == f"{len(committed) - 1} rows written"
    assert written[0] == committed[0]
    assert len(written) == len(committed)
    differing = [
        (i, j, w, c)
        for i, (row_w, row_c) in enumerate(zip(written, committed, strict=True))
        for j, (w, c) in enumerate(zip(row_w, row_c, strict=True))
        if not _same_cell(w, c)
    ]
    assert differing == []
    assert COMMITTED.read_bytes() == committed_bytes  # it wrote only where it was told
