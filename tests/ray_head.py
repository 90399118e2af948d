"""A real local Ray head for the Ray engine's tests: ``ray start --head --block`` reachable on 127.0.0.1
only, in a session of its own so that stopping it signals that process group and nothing else.

Loopback only: ``--node-ip-address=127.0.0.1`` alone is not enough, because on Linux ``ray start`` turns
a loopback address into the machine's own one (``resolve_ip_for_localhost``) and the GCS, raylet and
client server then listen there. ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` puts the head in Ray's
single-machine mode: node address 127.0.0.1, every server bound to it, and no other node may join.

tests/test_ray_engine.py starts one with ``FLEETLAB_RAY_TESTS=1``; .ci/run starts one before the suite:

    python tests/ray_head.py start DIR [--timeout S]  ->  prints "PGID ray://127.0.0.1:PORT TEMP_DIR"
    python tests/ray_head.py stop PGID TEMP_DIR
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: Environment of the head: single-machine mode (loopback only), no usage report, and no 30 s drain on
#: SIGTERM (nothing to drain in a test cluster).
HEAD_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
}
#: A client connects and runs one task: the head answers Ray Client, not just its port.
PROBE = """\
import sys
import ray
ray.init(sys.argv[1], log_to_driver=False)
@ray.remote
def answer():
    return 42
assert ray.get(answer.remote(), timeout=60) == 42
"""
SOCKET_PATH_MAX = 107  # sun_path; Ray's longest socket is about 64 bytes below its temp dir


class HeadError(Exception):
    """The head did not start or did not answer a client in time (the message says what it printed)."""


@dataclass(frozen=True)
class RayHead:
    """A started head: its process group (the ``ray start`` process leads it) and Ray Client address."""

    pgid: int
    address: str
    temp_dir: Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ray_command() -> str | None:
    """The ``ray`` script beside this Python (a virtual environment's), else the one on PATH."""
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else shutil.which("ray")


def start(temp_dir: Path, timeout_s: float = 180.0, num_cpus: int = 2) -> RayHead:
    """Start a head with its files in ``temp_dir`` (new or empty; a short folder under /tmp instead when
    its path is too long for Ray's Unix sockets) and wait until a Ray Client can run a task on it."""
    ray = ray_command()
    if ray is None:
        raise HeadError("the ray command is not installed: pip install 'fleetlab[ray]'")
    temp_dir = temp_dir.resolve()
    if len(str(temp_dir)) > SOCKET_PATH_MAX - 64:
        temp_dir = Path(tempfile.mkdtemp(prefix="fl-ray-", dir="/tmp"))
    elif temp_dir.exists() and (not temp_dir.is_dir() or any(temp_dir.iterdir())):
        raise HeadError(f"Ray temp dir {temp_dir}: exists and is not an empty folder")
    temp_dir.mkdir(parents=True, exist_ok=True)
    gcs, client = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | HEAD_ENV
    log_path = temp_dir / "ray-start.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [ray, "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={gcs}",
             f"--ray-client-server-port={client}", f"--num-cpus={num_cpus}", "--num-gpus=0",
             "--object-store-memory=200000000", "--include-dashboard=false", "--disable-usage-stats",
             f"--temp-dir={temp_dir}"],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    head = RayHead(process.pid, f"ray://127.0.0.1:{client}", temp_dir)
    try:
        _wait_until_answering(head, process, log_path, time.monotonic() + timeout_s, timeout_s)
    except BaseException:
        stop(head)
        process.wait()
        raise
    return head


def _wait_until_answering(
    head: RayHead, process: subprocess.Popen[bytes], log_path: Path, deadline: float, timeout_s: float
) -> None:
    last = "its client port never opened"
    client_port = int(head.address.rsplit(":", 1)[1])
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise HeadError(f"ray start --head exited with {process.returncode}:\n{_tail(log_path)}")
        try:
            socket.create_connection(("127.0.0.1", client_port), timeout=1).close()
        except OSError:
            time.sleep(0.5)
            continue
        try:
            probe = subprocess.run(
                [sys.executable, "-c", PROBE, head.address],
                env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
                capture_output=True, timeout=max(1.0, deadline - time.monotonic()),
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            last = "a client connected but its task did not finish"
            break
        if probe.returncode == 0:
            return
        said = probe.stderr.decode(errors="replace").strip().splitlines() or ["(no output)"]
        last = f"a client probe failed: {said[-1]}"
        time.sleep(1.0)
    raise HeadError(
        f"the Ray head did not answer a client at {head.address} within {timeout_s:.0f} s ({last}); "
        f"ray start printed:\n{_tail(log_path)}"
    )


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _group_alive(pgid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pgid, os.WNOHANG)  # reap the leader if it is our child
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop(head: RayHead, grace_s: float = 20.0) -> None:
    """SIGTERM the head's process group, SIGKILL what is left after ``grace_s``; remove its temp dir."""
    try:
        _stop_group(head.pgid, grace_s)
    finally:
        shutil.rmtree(head.temp_dir, ignore_errors=True)


def _stop_group(pgid: int, grace_s: float) -> None:
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        time.sleep(0.2)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return
    while _group_alive(pgid) and time.monotonic() < deadline + 10:
        time.sleep(0.2)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Start or stop a loopback-only local Ray head for tests.")
    commands = parser.add_subparsers(dest="command", required=True)
    start_cmd = commands.add_parser("start", help='start one; prints "PGID ray://127.0.0.1:PORT TEMP_DIR"')
    start_cmd.add_argument("temp_dir", type=Path, help="Ray's temp dir: a new or empty folder")
    start_cmd.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for a client")
    start_cmd.add_argument("--num-cpus", type=int, default=2)
    stop_cmd = commands.add_parser("stop", help="stop the head whose process group is PGID")
    stop_cmd.add_argument("pgid", type=int)
    stop_cmd.add_argument("temp_dir", type=Path, help="its temp dir, removed")
    args = parser.parse_args(argv)
    if args.command == "stop":
        stop(RayHead(args.pgid, "", args.temp_dir))
        return 0
    try:
        head = start(args.temp_dir, args.timeout, args.num_cpus)
    except HeadError as exc:
        print(f"ray head: {exc}", file=sys.stderr)
        return 1
    print(head.pgid, head.address, head.temp_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
