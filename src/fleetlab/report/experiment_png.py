"""The experiment report's charts as PNG files (for slides), drawn by plotly's kaleido in headless Chrome.

kaleido (``pip install 'fleetlab[png]'``) drives a Chrome or Chromium already on the machine; which one
is taken from ``BROWSER_PATH`` or the first of the usual executable names on ``PATH``. Without either a
``PngUnavailable`` says what to install.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from fleetlab.experiment.png_export import draw_png
from fleetlab.experiment.results import load_results
from fleetlab.report.experiment_charts import build_charts
from fleetlab.spec.inputs_read import refuse_overlap


def write_png_report(folder: Path, target: Path) -> tuple[list[Path], list[str]]:
    """Write one PNG per chart into ``target``; returns the files and the notes of charts left out."""
    results = load_results(folder)
    refuse_overlap(target, "--png")  # never into (or over) the experiment folder just read
    sections = build_charts(folder, results).sections
    drawn = [s for s in sections if s.figure is not None]
    skipped = [f"{s.heading}: {s.note}" for s in sections if s.figure is None]
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-png-", dir=target))
    try:
        staged = [staging / f"{s.key}.png" for s in drawn]
        draw_png([s.figure for s in drawn], staged)
        files = []
        for path in staged:
            os.chmod(path, 0o644)
            os.replace(path, target / path.name)
            files.append(target / path.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return files, skipped
