"""Time and peak memory of one large Prometheus answer, read the way ``fleetlab import --prometheus`` reads
it: streamed one series at a time (``spec.history.prometheus_api``) and every sample converted (as the
DCGM utilisation query needs).

Writes a ``query_range`` matrix answer of about --megabytes MB (--series series of up to 10,000 samples,
the most Prometheus gives one series), serves it from a local HTTP server on 127.0.0.1 with its
Content-Length, and reads it in a fresh process, reporting wall time, CPU time and peak RSS.

Run: .venv/bin/python bench/bench_prometheus.py [--megabytes 480] [--series 2200]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CHILD = """
import json, resource, sys, time
from fleetlab.spec.history.prometheus import _samples
from fleetlab.spec.history.prometheus_api import PrometheusClient
t, cpu = time.perf_counter(), time.process_time()
client = PrometheusClient(sys.argv[1], None, timeout_s=600)
series = samples = 0
for one in client.query_range("DCGM_FI_DEV_GPU_UTIL", 1714557600, 1714557600 + 600000, 60):
    series += 1
    samples += len(_samples(one["values"], "bench"))
print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - cpu, "series": series,
                  "samples": samples, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_answer(path: Path, megabytes: int, series: int) -> None:
    """A matrix answer: ``series`` DCGM series, samples added round-robin until the size is reached."""
    per_series = min(10_000, megabytes * 2**20 // (series * 18) + 1)  # about 18 bytes a sample
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{"status":"success","data":{"resultType":"matrix","result":[')
        for s in range(series):
            metric = json.dumps({"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": str(s % 8), "exported_namespace": "ns",
                                 "exported_pod": f"pod-{s // 8}", "Hostname": f"node-{s // 8}"})  # fmt: skip
            values = ",".join(f'[{1714557600 + 60 * i},"{(i * 7 + s) % 100}"]' for i in range(per_series))
            fh.write(("," if s else "") + f'{{"metric":{metric},"values":[{values}]}}')
        fh.write("]}}")


def serve(path: Path) -> tuple[ThreadingHTTPServer, str]:
    size = path.stat().st_size

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            with path.open("rb") as fh:
                shutil.copyfileobj(fh, self.wfile, 1 << 20)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=480)
    parser.add_argument("--series", type=int, default=2200)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-prometheus-"))
    answer = folder / "answer.json"
    t = time.perf_counter()
    write_answer(answer, args.megabytes, args.series)
    print(
        f"answer: {answer.stat().st_size / 2**20:.0f} MiB, {args.series} series, written in {time.perf_counter() - t:.1f} s"
    )
    server, url = serve(answer)
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, url], capture_output=True, text=True, check=False
        )
    finally:
        server.shutdown()
        shutil.rmtree(folder)
    if result.returncode != 0:
        sys.exit(result.stderr[-2000:])
    figures = json.loads(result.stdout)
    print(f"read: wall {figures['wall_s']:.1f} s, CPU {figures['cpu_s']:.1f} s, peak RSS {figures['peak_rss_mib']:.0f} MiB; "
          f"{figures['series']} series, {figures['samples']:,} samples")  # fmt: skip


if __name__ == "__main__":
    main()
