"""A hostile HTTP server on 127.0.0.1 for the Prometheus client's tests: each request is answered by a
behaviour the test sets (redirect elsewhere, drip a byte at a time, flood, cut a chunked body short, echo
the request's headers into an error), and every request's headers are recorded so a test can check where a
token went."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: A behaviour writes the whole answer to the raw socket file (status line included).
Behaviour = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Hostile:
    """A running server: its base URL, the behaviour for the next requests, and what it received."""

    url: str
    behaviour: Behaviour
    requests: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    #: Errors in the server's own threads (kept here: printed, they would reach the output under test).
    errors: list[str] = field(default_factory=list)


class _QuietServer(ThreadingHTTPServer):
    """socketserver prints a handler thread's exception to stderr, which a test that captures the command's
    output would read as the command's own traceback; a client hanging up (a deadline, a cap) is expected
    here and dropped, anything else is recorded on the ``Hostile``."""

    errors: list[str]

    def handle_error(self, request: object, client_address: object) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            self.errors.append(repr(exc))


@contextmanager
def hostile_server(behaviour: Behaviour) -> Iterator[Hostile]:
    """Serve ``behaviour`` on a free port of 127.0.0.1 until the block ends."""
    state = Hostile(url="", behaviour=behaviour)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            state.requests.append({k.lower(): v for k, v in self.headers.items()})
            state.paths.append(self.path)
            with contextlib.suppress(OSError):  # the client hung up (a deadline or a cap)
                state.behaviour(self)

        def log_message(self, *args: object) -> None:
            pass

    server = _QuietServer(("127.0.0.1", 0), Handler)
    server.errors = state.errors
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def send(
    handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None
) -> None:
    handler.send_response(status)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def redirect_to(location: str) -> Behaviour:
    return lambda h: send(h, 302, b"", {"Location": location})


def json_answer(text: str, status: int = 200) -> Behaviour:
    return lambda h: send(h, status, text.encode(), {"Content-Type": "application/json"})


def echo_headers_error(h: BaseHTTPRequestHandler) -> None:
    """A 500 whose error text repeats every request header (as some proxies and debug servers do)."""
    echoed = "; ".join(f"{k}: {v}" for k, v in h.headers.items())
    send(h, 500, ('{"status": "error", "errorType": "internal", "error": "' + echoed + '"}').encode())


def drip(h: BaseHTTPRequestHandler, seconds: float = 30.0) -> None:
    """A valid-looking answer sent one byte every 0.2 s (never finished within a test's deadline)."""
    body = b'{"status": "success", "data": {"resultType": "matrix", "result": [' + b" " * 10_000
    h.send_response(200)
    h.send_header("Content-Length", str(len(body) + 3))
    h.end_headers()
    h.wfile.flush()
    stop = time.monotonic() + seconds
    for byte in body:
        if time.monotonic() > stop:
            break
        h.wfile.write(bytes([byte]))
        h.wfile.flush()
        time.sleep(0.2)


def drip_headers(h: BaseHTTPRequestHandler) -> None:
    """A status line and then header bytes one every 0.2 s (a stalled answer before any body)."""
    h.wfile.write(b"HTTP/1.1 200 OK\r\n")
    h.wfile.flush()
    for _ in range(300):
        h.wfile.write(b"X")
        h.wfile.flush()
        time.sleep(0.2)


def flood(h: BaseHTTPRequestHandler, megabytes: int = 600) -> None:
    """A chunked answer of ``megabytes`` MiB of one long series (no Content-Length to refuse up front)."""
    h.send_response(200)
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()

    def chunk(data: bytes) -> None:
        h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    chunk(b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [')
    piece = b'[1714557600, "1"],' * 50_000
    for _ in range(megabytes * 2**20 // len(piece) + 1):
        chunk(piece)
    h.wfile.write(b"0\r\n\r\n")


def truncated_chunked(h: BaseHTTPRequestHandler) -> None:
    """A chunked answer whose connection closes in the middle of a chunk."""
    h.send_response(200)
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    data = b'{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {"pod": "x"'
    h.wfile.write(f"{len(data) + 100:x}\r\n".encode() + data)
    h.wfile.flush()
    h.connection.shutdown(socket.SHUT_RDWR)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
