"""Bearer tokens and server URLs: checked before use, and kept out of every message, file and URL fleetlab
prints or stores.

A token must be an RFC 6750 ``b64token`` (letters, digits and ``-._~+/``, then ``=`` padding) of at most
8 KiB: a newline, space or control character would otherwise end in an HTTP header error that quotes the
token. A server URL may not carry credentials (``user:password@``), a query string or a fragment (where
tokens also hide); what fleetlab shows or stores of it is :func:`public_url`: scheme, host, port and path.
Anything a server answers is passed through :func:`scrub` before it is shown. See docs/input-limits.md.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable

from fleetlab.spec.errors import SpecError

#: Longest token accepted (real bearer tokens, JWTs included, are a few KiB at most).
MAX_TOKEN_CHARS = 8192
#: RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
#: ``scheme://user:password@`` in any text (a server may echo a URL back).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]*@")
REDACTED = "<redacted>"


def check_token(token: str, option: str) -> str:
    """``token`` if it can be sent as ``Authorization: Bearer``; else a SpecError naming ``option`` and the
    position of the first character not allowed, never the token."""
    if not token:
        raise SpecError(option, ["the token is empty"])
    if len(token) > MAX_TOKEN_CHARS:
        raise SpecError(option, [f"the token is {len(token):,} characters; a bearer token is at most "
                                 f"{MAX_TOKEN_CHARS:,}"])  # fmt: skip
    match = _B64TOKEN.match(token)
    if match is None or match.end() != len(token):
        at = 0 if match is None else match.end()
        kind = _describe(token[at])
        raise SpecError(
            option,
            [f"the token holds {kind} at character {at + 1}; a bearer token is letters, digits and "
             "-._~+/ followed by = padding (RFC 6750). Check how it was saved (a trailing line of another "
             "value, quotes, spaces)"],
        )  # fmt: skip
    return token


def _describe(char: str) -> str:
    if char in "\r\n":
        return "a line break"
    if char.isspace():
        return "a space"
    if not char.isprintable():
        return "a control character"
    return "a character that is not allowed"


def public_url(url: str) -> str:
    """``url`` as fleetlab may show or store it: scheme, host, port and path; no credentials, query or
    fragment (an unparsable URL shows as ``<a URL that cannot be parsed>``)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<a URL that cannot be parsed>"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_server_url(url: str, option: str) -> str:
    """The base URL of a metrics server, or a SpecError that shows it without credentials: no
    ``user:password@``, query or fragment, an http(s) scheme and a host. Returns :func:`public_url`."""
    shown = f"{option} {public_url(url)}"
    try:
        parts = urllib.parse.urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number 0..65535
    except ValueError:
        raise SpecError(shown, ["is not a URL (check the host and port)"]) from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise SpecError(
            shown,
            ["the URL holds credentials; give a bearer token with --token-env or --token-file instead "
             "(credentials in a URL end up in logs and shell history)"],
        )  # fmt: skip
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise SpecError(
            shown,
            ["the URL holds a query string or fragment; give the server's base URL (a token belongs in "
             "--token-env or --token-file, never in a URL)"],
        )  # fmt: skip
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SpecError(shown, ["expected an http:// or https:// URL of a Prometheus server"])
    return public_url(url)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret and every URL's ``user:password@`` replaced, and control characters
    (which could rewrite a terminal line) turned into spaces."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return "".join(c if c.isprintable() else " " for c in text)
