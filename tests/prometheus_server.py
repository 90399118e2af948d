"""A real Prometheus server for tests: the fixture writes OpenMetrics text, backfills it into TSDB blocks
with ``promtool tsdb create-blocks-from openmetrics`` and starts ``prometheus`` on 127.0.0.1 on a free port.

Skips when Debian's ``prometheus`` package (server and promtool) is not installed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
needs_prometheus = pytest.mark.skipif(
    PROMETHEUS is None or PROMTOOL is None,
    reason="prometheus/promtool not installed (Debian package prometheus)",
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def openmetrics(series: dict[str, list[tuple[str, list[tuple[float, float]]]]]) -> str:
    """``{metric: [(labels text, [(t, v), ...]), ...]}`` as OpenMetrics text (gauges, times in seconds)."""
    lines: list[str] = []
    for metric, items in series.items():
        lines.append(f"# TYPE {metric} gauge")
        for labels, samples in items:
            lines.extend(f"{metric}{{{labels}}} {float(v)!r} {t:.0f}" for t, v in samples)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


@contextmanager
def prometheus_server(folder: Path, text: str) -> Iterator[str]:
    """A Prometheus serving the backfilled ``text``; yields its base URL and stops it afterwards."""
    assert PROMETHEUS is not None and PROMTOOL is not None
    data = folder / "data"
    data.mkdir()
    source = folder / "series.om"
    source.write_text(text)
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    config = folder / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    port = free_port()
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"prometheus did not start: {(folder / 'prometheus.log').read_text()[-2000:]}"
                )
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
