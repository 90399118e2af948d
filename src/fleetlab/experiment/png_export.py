"""Plotly figures as PNG files, drawn by kaleido in the machine's own headless Chrome or Chromium.

kaleido (``pip install 'fleetlab[png]'``) drives a browser already on the machine: ``BROWSER_PATH`` or
the first of the usual executable names on ``PATH``. Without either, ``PngUnavailable`` says what to
install. MathJax is off so nothing is fetched from the network.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
WIDTH, HEIGHT, SCALE = 1200, 600, 2
INSTALL_HINT = (
    "PNG export needs plotly's kaleido and a Chrome or Chromium browser: "
    "pip install 'fleetlab[png]' and install Chromium (Debian/Ubuntu: apt-get install -y chromium), "
    "or point BROWSER_PATH at a Chrome/Chromium executable"
)


class PngUnavailable(Exception):
    """kaleido or a browser is missing, or the browser failed to draw the charts."""


def find_browser() -> str | None:
    """The Chrome/Chromium executable to use: ``BROWSER_PATH`` when set (and executable), else PATH."""
    configured = os.environ.get("BROWSER_PATH")
    if configured:
        return configured if os.path.isfile(configured) and os.access(configured, os.X_OK) else None
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def _browser_env(path: str) -> Iterator[None]:
    """Pin kaleido's browser lookup to ``path`` for the duration of the export."""
    before = os.environ.get("BROWSER_PATH")
    os.environ["BROWSER_PATH"] = path
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("BROWSER_PATH", None)
        else:
            os.environ["BROWSER_PATH"] = before


def _check_available() -> str:
    if importlib.util.find_spec("kaleido") is None:
        raise PngUnavailable(f"kaleido is not installed. {INSTALL_HINT}")
    browser = find_browser()
    if browser is None:
        where = os.environ.get("BROWSER_PATH")
        found = f"BROWSER_PATH={where} is not an executable file" if where else "no Chrome/Chromium on PATH"
        raise PngUnavailable(f"{found}. {INSTALL_HINT}")
    return browser


def _draw(figures: Sequence[Any], paths: Sequence[Path]) -> None:
    """One browser session for all charts; MathJax off so kaleido's page loads nothing from the network
    (plotly.js comes from the installed plotly package)."""
    kaleido = importlib.import_module("kaleido")
    specs = [
        {
            "fig": figure.to_dict(),
            "path": path,
            "opts": {"format": "png", "width": WIDTH, "height": HEIGHT, "scale": SCALE},
        }
        for figure, path in zip(figures, paths, strict=True)
    ]
    kaleido.write_fig_from_object_sync(specs, kopts={"mathjax": False})


def draw_png(figures: Sequence[Any], paths: Sequence[Path]) -> None:
    """Draw each plotly figure into its PNG path with the machine's browser, or raise PngUnavailable."""
    browser = _check_available()
    with _browser_env(browser):
        try:
            _draw(figures, paths)
        except Exception as exc:  # kaleido and its browser driver raise many kinds
            raise PngUnavailable(f"the browser {browser} could not draw the charts: {exc}") from None
