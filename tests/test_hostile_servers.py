"""A metrics server cannot take the token elsewhere, hang the import, flood its memory or get the token
printed: redirects, drips, floods, truncated bodies, echoed headers and answers of the wrong shape, served by
a hostile HTTP server on 127.0.0.1 (tests/hostile_http.py). The happy path against a real Prometheus is
tests/test_history_prometheus.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetlab.spec.credentials import check_server_url, check_token, public_url, scrub
from fleetlab.spec.errors import SpecError
from fleetlab.spec.history import prometheus_api
from fleetlab.spec.history.prometheus_api import PrometheusClient
from hostile_http import (
    Behaviour,
    drip,
    drip_headers,
    echo_headers_error,
    flood,
    hostile_server,
    json_answer,
    redirect_to,
    send,
    truncated_chunked,
)
from prometheus_server import needs_prometheus, prometheus_server
from test_cli import invoke

#: A token no message, file or URL of fleetlab may ever show.
TOKEN = "fl-planted-token-7Q2x9ZkL0"
START, END = "2024-05-01T10:00:00Z", "2024-05-01T11:00:00Z"


def _matrix(result: Any) -> str:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def _import(url: str, out: Path, *extra: str, timeout: str = "5") -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROM_TOKEN", TOKEN)
        return invoke(
            "import", "--prometheus", url, "--start", START, "--end", END, "--token-env", "PROM_TOKEN",
            "--timeout", timeout, "--out", str(out), *extra,
        )  # fmt: skip


def _no_token_anywhere(result: Any, tmp_path: Path) -> None:
    """The planted token in no message and no file written anywhere under the test's folder."""
    assert TOKEN not in result.output and TOKEN not in (result.stderr or "")
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def _clean_failure(result: Any, *needles: str) -> str:
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    message = " ".join(result.stderr.split())
    for needle in needles:
        assert needle in message, message
    return message


# --- credentials ---------------------------------------------------------------------------------------


def test_redirect_to_another_host_is_refused_and_the_token_never_leaves(tmp_path: Path) -> None:
    with hostile_server(json_answer(_matrix([]))) as elsewhere, hostile_server(redirect_to("")) as origin:
        origin.behaviour = redirect_to(f"{elsewhere.url}/api/v1/query_range?steal=1")
        result = _import(origin.url, tmp_path / "h")
        _clean_failure(result, "HTTP 302", "follows no redirect", elsewhere.url)
        assert elsewhere.requests == []  # nothing was sent there, with or without the token
        assert origin.requests[0]["authorization"] == f"Bearer {TOKEN}"  # only the URL given got it
    _no_token_anywhere(result, tmp_path)
    assert not (tmp_path / "h").exists()


def test_same_origin_redirect_is_refused_too(tmp_path: Path) -> None:
    with hostile_server(redirect_to("/prometheus/api/v1/query_range")) as server:
        _clean_failure(_import(server.url, tmp_path / "h"), "HTTP 302", "give the final URL")
        assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("htps://admin:hunter2PW@127.0.0.1:9090", "holds credentials"),  # credentials checked before scheme
        ("http://admin:hunter2PW@127.0.0.1:9090", "holds credentials"),
        (f"http://127.0.0.1:9090/?token={TOKEN}", "query string"),
        (f"http://127.0.0.1:9090/#{TOKEN}", "query string or fragment"),
        ("http://127.0.0.1:99999", "not a URL"),
        ("ftp://127.0.0.1", "http:// or https://"),
    ],
)
def test_server_urls_are_checked_and_shown_without_secrets(tmp_path: Path, url: str, needle: str) -> None:
    message = _clean_failure(_import(url, tmp_path / "h"), needle)
    assert "hunter2PW" not in message and TOKEN not in message and "admin" not in message
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize(
    ("token", "needle"),
    [
        (f"{TOKEN}\nsecond-line", "a line break at character 27"),
        (f"{TOKEN} x", "a space at character 27"),
        (f"{TOKEN}\x01", "a control character at character 27"),
        ("é" + TOKEN, "not allowed at character 1"),
        ("a" * 9000, "at most 8,192"),
    ],
)
def test_tokens_are_checked_before_use_and_never_shown(tmp_path: Path, token: str, needle: str) -> None:
    with hostile_server(json_answer(_matrix([]))) as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROM_TOKEN", token)
        result = invoke("import", "--prometheus", server.url, "--start", START, "--end", END,
                        "--token-env", "PROM_TOKEN", "--out", str(tmp_path / "h"))  # fmt: skip
        message = _clean_failure(result, "--token-env PROM_TOKEN", needle)
        assert server.requests == []  # refused before anything was sent
    assert TOKEN not in message and "second-line" not in message and "aaaa" not in message


def test_token_file_with_a_second_line_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\nold-{TOKEN}\n")
    result = invoke("import", "--prometheus", "http://127.0.0.1:1", "--start", START, "--end", END,
                    "--token-file", str(token_file), "--out", str(tmp_path / "h"))  # fmt: skip
    assert TOKEN not in _clean_failure(result, "expected one line holding the token")


def test_an_error_body_that_echoes_the_request_is_scrubbed(tmp_path: Path) -> None:
    with hostile_server(echo_headers_error) as server:
        result = _import(server.url, tmp_path / "h")
        message = _clean_failure(result, "HTTP 500", "internal", "Bearer <redacted>")
    assert TOKEN not in message
    _no_token_anywhere(result, tmp_path)


def test_scrub_and_public_url() -> None:
    assert public_url("https://u:p@prom.example:9443/base/?token=x#f") == "https://prom.example:9443/base/"
    assert scrub(f"GET https://u:p@h/x Authorization: Bearer {TOKEN}\x1b[2J", [TOKEN]) == (
        "GET https://<redacted>@h/x Authorization: Bearer <redacted> [2J"
    )
    assert check_server_url("http://127.0.0.1:9090/prom/", "--prometheus") == "http://127.0.0.1:9090/prom/"
    assert check_token("abc.DEF-_~+/==", "--x") == "abc.DEF-_~+/=="


# --- hangs and floods ----------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", [drip, drip_headers], ids=["drip-body", "drip-headers"])
def test_a_dripping_server_is_cut_at_the_query_deadline(tmp_path: Path, behaviour: Behaviour) -> None:
    with hostile_server(behaviour) as server:
        started = time.monotonic()
        result = _import(server.url, tmp_path / "h", timeout="2")
        elapsed = time.monotonic() - started
    _clean_failure(result, "no complete answer within 2s", "one query (--timeout)")
    assert elapsed < 8, elapsed  # the deadline bounds the whole answer, not each read


def test_the_import_deadline_bounds_all_queries_together(tmp_path: Path) -> None:
    with hostile_server(drip) as server:
        started = time.monotonic()
        result = _import(server.url, tmp_path / "h", "--deadline", "1", timeout="60")
        elapsed = time.monotonic() - started
    _clean_failure(result, "within 1s", "the whole import (--deadline)")
    assert elapsed < 6, elapsed


def test_a_flood_is_refused_at_the_cap_while_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cap is 512 MiB; here 4 MiB, with an 8 MiB chunked answer (no Content-Length to refuse up front).
    monkeypatch.setattr(prometheus_api, "MAX_RESPONSE_BYTES", 4 * 2**20)
    with hostile_server(lambda h: flood(h, megabytes=8)) as server:
        client = PrometheusClient(server.url, TOKEN, 30)
        with pytest.raises(SpecError, match="larger than 4 MiB"):
            list(client.query_range("up", 1714557600, 1714561200, 60))


def test_a_declared_length_past_the_cap_is_refused_before_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus_api, "MAX_RESPONSE_BYTES", 1000)
    answer = json_answer(_matrix([{"metric": {}, "values": [[1, "1"]] * 200}]))
    with hostile_server(answer) as server, pytest.raises(SpecError, match="at most 1,000 are read"):
        list(PrometheusClient(server.url, None, 10).query_range("up", 1714557600, 1714561200, 60))


def test_a_truncated_chunked_body_is_a_clear_error(tmp_path: Path) -> None:
    with hostile_server(truncated_chunked) as server:
        _clean_failure(_import(server.url, tmp_path / "h"), "ended early")


# --- answers of the wrong shape ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        ('{"status": "success", "data": []}', "no 'data' object"),
        ('{"status": "success", "data": {"resultType": "vector", "result": []}}', "resultType 'vector'"),
        ('{"status": "success", "data": {"resultType": "matrix", "result": {}}}', "range-query matrix"),
        (_matrix([5]), "a series is a int"),
        (_matrix([{"metric": [], "values": []}]), "'metric' is not an object"),
        (_matrix([{"metric": {"pod": 5}, "values": []}]), "'metric' is not an object"),
        (_matrix([{"metric": {}, "values": {}}]), "'values' is a dict"),
        (_matrix([{"metric": {"namespace": "a", "pod": "b"}, "values": [[1, "x"]]}]), "not numeric"),
        (_matrix([{"metric": {"namespace": "a", "pod": "b"}, "values": [5]}]), "not [time, value]"),
        ('{"status": "error", "errorType": "bad_data", "error": "parse error"}', "bad_data: parse error"),
        ("[1, 2]", "not a JSON object"),
        ("not json", "not a JSON object"),
        ('{"status": "success", "data": {"resultType": "matrix", "result": [', "character 67: invalid JSON"),
        ('{"status": NaN}', "invalid JSON"),
    ],
)
def test_answers_of_the_wrong_shape_are_clean_errors(tmp_path: Path, answer: str, needle: str) -> None:
    with hostile_server(json_answer(answer)) as server:
        _clean_failure(_import(server.url, tmp_path / "h"), needle)


def _per_query(answers: dict[str, list[dict[str, Any]]]) -> Behaviour:
    """Answer each query_range call with the series given for its metric name (none for others)."""

    def behave(handler: Any) -> None:
        from urllib.parse import parse_qs, urlsplit

        query = parse_qs(urlsplit(handler.path).query)["query"][0]
        name = query.split("{")[0].split(" ")[0]
        send(handler, 200, _matrix(answers.get(name, [])).encode())

    return behave


def test_kube_job_owner_without_owner_kind_is_counted_not_a_traceback(tmp_path: Path) -> None:
    pod = {"namespace": "a", "pod": "p-0"}
    answers = {
        "kube_pod_created": [{"metric": pod, "values": [[1714557600, "1714557600"]]}],
        "kube_job_owner": [{"metric": {"namespace": "a", "job_name": "p", "owner_name": "x"}, "values": []}],
    }
    with hostile_server(_per_query(answers)) as server:
        result = _import(server.url, tmp_path / "h", "--json")
    assert result.exit_code == 0, result.output
    skipped = json.loads(result.stdout)["skipped"]
    assert (
        skipped[
            "prometheus: kube_job_owner series without owner_kind or owner_name (the Job is its own owner)"
        ]
        == 1
    )


# --- structure-aware fuzz of the server-facing path ----------------------------------------------------

_VALUES: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6),
    st.just([]), st.just({}), st.just([[1714557600, "1"]]), st.just([["x", "NaN"]]),
)  # fmt: skip


@st.composite
def _answers(draw: st.DrawFn) -> str:
    """A Prometheus answer with one to three places replaced by a hostile value or cut short."""
    series: dict[str, Any] = {
        "metric": {"namespace": "a", "pod": "p"},
        "values": [[1714557600, "1714557600"]],
    }
    doc: dict[str, Any] = {"status": "success", "data": {"resultType": "matrix", "result": [series]}}
    places: list[tuple[dict[str, Any], str]] = [(doc, "status"), (doc, "data"), (doc["data"], "resultType"),
                                                (doc["data"], "result"), (series, "metric"), (series, "values")]  # fmt: skip
    for _ in range(draw(st.integers(0, 3))):
        parent, key = draw(st.sampled_from(places))
        parent[key] = draw(_VALUES)
    text = json.dumps(doc)
    return text[: draw(st.integers(0, len(text)))] if draw(st.integers(0, 4)) == 0 else text


@settings(max_examples=int(os.environ.get("FLEETLAB_FUZZ_EXAMPLES", "30")), deadline=None, derandomize=True,
          database=None)  # fmt: skip
@given(answer=_answers())
def test_fuzz_prometheus_answers(answer: str) -> None:
    with hostile_server(json_answer(answer)) as server:
        client = PrometheusClient(server.url, TOKEN, 5)
        started = time.monotonic()
        try:
            list(client.query_range("up", 1714557600, 1714561200, 60))
        except SpecError as exc:
            assert "\n" not in str(exc) and TOKEN not in str(exc)
        assert time.monotonic() - started < 5


# --- the planted token: in no message and no file, on every path --------------------------------------

_FAILING: dict[str, Behaviour] = {
    "redirect elsewhere": redirect_to("http://127.0.0.1:1/api/v1/query_range"),
    "401 echoing the header": lambda h: send(
        h, 401, f'{{"error": "bad {h.headers.get("Authorization")}"}}'.encode()
    ),
    "500 echoing every header": echo_headers_error,
    "bad_data error echoing the query": json_answer(
        '{"status": "error", "errorType": "bad_data", "error": "Authorization: Bearer ' + TOKEN + '"}', 400
    ),
    "not JSON, token in the body": json_answer(f"<html>{TOKEN}</html>"),
    "truncated chunked body": truncated_chunked,
    "drip": drip,
}


@pytest.mark.parametrize("behaviour", sorted(_FAILING))
def test_planted_token_in_no_message_and_no_file_on_failing_paths(tmp_path: Path, behaviour: str) -> None:
    with hostile_server(_FAILING[behaviour]) as server:
        result = _import(server.url, tmp_path / "h", timeout="1")
    _clean_failure(result)
    _no_token_anywhere(result, tmp_path)


@pytest.mark.parametrize(
    ("url", "token"),
    [
        (f"http://127.0.0.1:1/?access_token={TOKEN}", "ok-token"),
        (f"htps://user:{TOKEN}@127.0.0.1:1", "ok-token"),
        ("http://127.0.0.1:1", f"{TOKEN}\n"),
        ("http://127.0.0.1:1", f"Bearer {TOKEN}"),
    ],
)
def test_planted_token_in_no_message_when_refused_before_sending(
    tmp_path: Path, url: str, token: str
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROM_TOKEN", token)
        result = invoke("import", "--prometheus", url, "--start", START, "--end", END, "--token-env",
                        "PROM_TOKEN", "--out", str(tmp_path / "h"))  # fmt: skip
    _clean_failure(result)
    _no_token_anywhere(result, tmp_path)


def test_planted_token_in_no_output_of_a_subprocess(tmp_path: Path) -> None:
    """The whole command in its own process: stdout, stderr (a thread's output included) and files."""
    import subprocess
    import sys

    with hostile_server(echo_headers_error) as server:
        env = {**os.environ, "PROM_TOKEN": TOKEN}
        done = subprocess.run(
            [sys.executable, "-m", "fleetlab", "import", "--prometheus", server.url, "--start", START, "--end",
             END, "--token-env", "PROM_TOKEN", "--out", str(tmp_path / "h")],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert TOKEN not in done.stdout + done.stderr
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or TOKEN.encode() not in path.read_bytes()


@needs_prometheus
def test_planted_token_in_no_file_of_a_successful_import(tmp_path: Path) -> None:
    from test_history_prometheus import END as PROM_END
    from test_history_prometheus import T0, _world

    (tmp_path / "prom").mkdir()
    with prometheus_server(tmp_path / "prom", _world()) as url, pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROM_TOKEN", TOKEN)
        result = invoke("import", "--prometheus", url, "--start", str(T0 - 600), "--end", str(PROM_END),
                        "--token-env", "PROM_TOKEN", "--out", str(tmp_path / "h"), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sources"] == [f"prometheus:{url}"]
    _no_token_anywhere(result, tmp_path)
