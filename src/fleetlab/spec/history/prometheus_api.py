"""Range queries against a Prometheus HTTP API that cannot hang, flood or leak.

* **No redirects.** A 3xx answer is an error naming where it pointed (scheme, host, path only): the bearer
  token is never sent anywhere but the URL the user gave.
* **One deadline per query, one per import.** Connecting, the headers and every byte of the body must
  arrive before the query's deadline (``--timeout``) and the import's (``--deadline``); a server dripping a
  byte a second is cut off there, not ``--timeout`` after each byte. A watchdog closes the connection at the
  deadline, so even a stalled TLS handshake or header line ends.
* **Streamed and capped.** The answer is parsed one series at a time (:class:`.json_stream.StreamReader`)
  and refused past ``MAX_RESPONSE_BYTES``: memory holds one series, never the whole answer.
* **Nothing secret shown.** URLs are shown as ``credentials.public_url`` and anything the server says goes
  through ``credentials.scrub`` with the token, so an error body that echoes the request shows no token.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

from fleetlab.spec.credentials import check_server_url, check_token, public_url, scrub
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history.json_stream import StreamReader, array_items

#: Largest response body read for one query; beyond it the query range or step must change.
MAX_RESPONSE_BYTES = 512 * 1024 * 1024
#: Most of an error answer's body read (for its ``error`` text).
MAX_ERROR_BYTES = 64 * 1024
#: Longest import (all queries together) unless --deadline says otherwise.
DEFAULT_IMPORT_DEADLINE_S = 3600.0
_READ = 64 * 1024


class Deadline:
    """An instant after which an operation is abandoned, with what to call it in the error."""

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds = seconds
        self.what = what
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    @staticmethod
    def first(*deadlines: Deadline) -> Deadline:
        return min(deadlines, key=lambda d: d.at)


class _Body(io.RawIOBase):
    """The response body as a raw stream that stops at the deadline and at the size cap."""

    def __init__(self, response: http.client.HTTPResponse, client: PrometheusClient, deadline: Deadline,
                 where: str) -> None:  # fmt: skip
        super().__init__()
        self.response, self.client, self.deadline, self.where = response, client, deadline, where
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline.left() <= 0:
            raise self.client.late(self.where, self.deadline)
        try:
            chunk = self.response.read1(min(len(buffer), _READ))
        except http.client.IncompleteRead as exc:
            got = self.read_bytes + len(exc.partial)
            raise SpecError(
                self.where, [f"the answer ended early after {got:,} bytes (the connection closed mid-answer)"]
            ) from None
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            raise self.client.failed(self.where, exc, self.deadline) from None
        self.read_bytes += len(chunk)
        if self.read_bytes > MAX_RESPONSE_BYTES:
            raise SpecError(
                self.where,
                [f"the answer is larger than {MAX_RESPONSE_BYTES // 2**20} MiB; import a shorter range, a "
                 "larger --step, or fewer series"],
            )  # fmt: skip
        buffer[: len(chunk)] = chunk
        return len(chunk)


class PrometheusClient:
    """``query_range`` calls with no redirects, a deadline per query and per import, a streamed, capped
    answer and errors that name the URL and query, never the token."""

    def __init__(
        self, url: str, token: str | None, timeout_s: float, deadline_s: float = DEFAULT_IMPORT_DEADLINE_S
    ) -> None:
        self.base = check_server_url(url, "--prometheus").rstrip("/")
        self.token = None if token is None else check_token(token, "--token-env/--token-file")
        self.timeout_s = timeout_s
        self.deadline = Deadline(deadline_s, "the whole import (--deadline)")
        parts = urllib.parse.urlsplit(self.base)
        self._https = parts.scheme == "https"
        self._host, self._port, self._path = parts.hostname or "", parts.port, parts.path.rstrip("/")

    def scrubbed(self, text: str) -> str:
        return scrub(text, [self.token] if self.token else [])[:300]

    def late(self, where: str, deadline: Deadline) -> SpecError:
        return SpecError(
            where,
            [f"no complete answer within {deadline.seconds:g}s, the deadline for {deadline.what}; try a "
             "shorter range, a larger --step, or a larger --timeout / --deadline"],
        )  # fmt: skip

    def failed(self, where: str, exc: BaseException, deadline: Deadline) -> SpecError:
        if deadline.left() <= 0 or isinstance(exc, TimeoutError):
            return self.late(where, deadline)
        if isinstance(exc, ssl.SSLError):
            return SpecError(where, [f"TLS failed ({self.scrubbed(exc.reason or str(exc))})"])
        if isinstance(exc, http.client.HTTPException):
            return SpecError(where, [f"the server's answer is not HTTP ({type(exc).__name__}); is "
                                     "--prometheus the Prometheus server's URL?"])  # fmt: skip
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        return SpecError(
            where, [f"cannot reach the server ({self.scrubbed(str(reason))}); check --prometheus and that "
                    "Prometheus is up"],
        )  # fmt: skip

    def query_range(self, query: str, start: float, end: float, step: float) -> Iterator[dict[str, Any]]:
        """The series of the ``matrix`` result of one range query, one at a time."""
        params = urllib.parse.urlencode(
            {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        )
        where = f"Prometheus {self.base}, query {query}"
        deadline = Deadline.first(Deadline(self.timeout_s, "one query (--timeout)"), self.deadline)
        if deadline.left() <= 0:
            raise self.late(where, deadline)
        with self._connection(where, deadline) as connection:
            response = self._response(
                connection, f"{self._path}/api/v1/query_range?{params}", where, deadline
            )
            text = io.TextIOWrapper(
                io.BufferedReader(_Body(response, self, deadline, where)), encoding="utf-8"
            )
            try:
                # Samples become floats one series at a time (no recursion, any integer size is safe).
                reader = StreamReader(text, where, None, lines=False, shallow=False)
                yield from _matrix(reader, where, self)
            except UnicodeDecodeError:
                raise SpecError(
                    where, ["the answer is not UTF-8 JSON; is --prometheus the server's URL?"]
                ) from None

    @contextlib.contextmanager
    def _connection(self, where: str, deadline: Deadline) -> Iterator[http.client.HTTPConnection]:
        """A connection that a watchdog shuts at the deadline (so no read can outlast it)."""
        timeout = max(deadline.left(), 0.001)
        connection: http.client.HTTPConnection
        if self._https:
            connection = http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        watchdog = threading.Timer(timeout, _shut, args=(connection,))
        watchdog.daemon = True
        watchdog.start()
        try:
            yield connection
        finally:
            watchdog.cancel()
            connection.close()

    def _response(
        self, connection: http.client.HTTPConnection, target: str, where: str, deadline: Deadline
    ) -> http.client.HTTPResponse:
        headers = {"Accept": "application/json", "Accept-Encoding": "identity", "User-Agent": "fleetlab"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            connection.request("GET", target, headers=headers)
            response = connection.getresponse()
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            raise self.failed(where, exc, deadline) from None
        if 300 <= response.status < 400:
            location = public_url(response.getheader("Location") or "")
            raise SpecError(
                where,
                [f"HTTP {response.status}: the server redirects (to {location}); fleetlab follows no "
                 "redirect for a metrics API, so the token is never sent elsewhere: give the final URL"],
            )  # fmt: skip
        if response.status in (401, 403):
            raise SpecError(
                where, [f"HTTP {response.status}: not authorised; check the token given with --token-env or "
                        "--token-file"],
            )  # fmt: skip
        if response.status != 200:
            raise SpecError(where, [f"HTTP {response.status}: {self._error_text(response, deadline)}"])
        length = response.getheader("Content-Length")
        if length and length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
            raise SpecError(
                where,
                [f"the answer is {int(length):,} bytes; at most {MAX_RESPONSE_BYTES:,} are read: import a "
                 "shorter range or a larger --step"],
            )  # fmt: skip
        return response

    def _error_text(self, response: http.client.HTTPResponse, deadline: Deadline) -> str:
        """What an error answer says (Prometheus' ``errorType: error``), scrubbed and cut short."""
        body = b""
        with contextlib.suppress(TimeoutError, OSError, http.client.HTTPException):
            while len(body) < MAX_ERROR_BYTES and deadline.left() > 0:
                chunk = response.read1(MAX_ERROR_BYTES - len(body))
                if not chunk:
                    break
                body += chunk
        try:
            payload = json.loads(body)
            detail = f"{payload.get('errorType', 'error')}: {payload.get('error', '')}"
        except (ValueError, AttributeError, RecursionError):
            detail = str(response.reason)
        return self.scrubbed(detail)


def _shut(connection: http.client.HTTPConnection) -> None:
    """Close a connection's socket from the watchdog thread: a blocked read or handshake ends at once."""
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _matrix(reader: StreamReader, where: str, client: PrometheusClient) -> Iterator[dict[str, Any]]:
    """Each series of ``{"status": "success", "data": {"resultType": "matrix", "result": [...]}}``."""
    if reader.peek() != "{":
        raise SpecError(
            where, ["the answer is not a JSON object; is --prometheus the Prometheus server's URL?"]
        )
    reader.expect("{", "'{'")
    top: dict[str, Any] = {}
    while reader.peek() != "}":
        if top:
            reader.expect(",", "',' or '}'")
        name = reader.value()
        reader.expect(":", "':'")
        if name == "data" and reader.peek() == "{" and top.get("status", "success") == "success":
            yield from _data(reader, where)
            top[name] = True
        elif name == "data":
            reader.value()  # an error answer's data, or data that is no object: refused below
            top[name] = False
        else:
            top[str(name)] = reader.value()
    if top.get("status") != "success":
        error = f"{top.get('errorType', 'error')}: {top.get('error', '')}"
        raise SpecError(where, [f"Prometheus answered with an error: {client.scrubbed(error)}"])
    if top.get("data") is not True:
        raise SpecError(where, ["the answer holds no 'data' object; expected a range-query matrix"])
    reader.expect("}", "'}'")


def _data(reader: StreamReader, where: str) -> Iterator[dict[str, Any]]:
    reader.expect("{", "'{'")
    seen: dict[str, Any] = {}
    while reader.peek() != "}":
        if seen:
            reader.expect(",", "',' or '}'")
        name = reader.value()
        reader.expect(":", "':'")
        if name == "result" and reader.peek() == "[":
            if seen.get("resultType", "matrix") != "matrix":
                raise SpecError(
                    where, [f"resultType {str(seen['resultType'])[:40]!r}: expected a range-query matrix"]
                )
            for series in array_items(reader):
                yield _series(series, where)
            seen[name] = True
        else:
            seen[str(name)] = reader.value()
    reader.expect("}", "'}'")
    if seen.get("resultType") != "matrix" or seen.get("result") is not True:
        raise SpecError(where, ["expected a range-query matrix in the answer (data.resultType 'matrix' and a "
                                "data.result list)"])  # fmt: skip


def _series(series: Any, where: str) -> dict[str, Any]:
    """One series, checked: a ``metric`` object of text labels and a ``values`` list."""
    if not isinstance(series, dict):
        raise SpecError(where, [f"a series is a {type(series).__name__}; expected an object"])
    metric = series.get("metric")
    metric = {} if metric is None else metric
    if not isinstance(metric, dict) or not all(isinstance(v, str) for v in metric.values()):
        raise SpecError(where, ["a series' 'metric' is not an object of label names to text values"])
    values = series.get("values")
    values = [] if values is None else values
    if not isinstance(values, list):
        raise SpecError(where, [f"a series' 'values' is a {type(values).__name__}; expected a list"])
    return {"metric": metric, "values": values}
