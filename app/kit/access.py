"""The app's one lock: ``looptrace ui --host ... --password`` (or ``--token``).

Streamlit has no authentication of its own. When ``$LOOPTRACE_TOKEN`` is set (by
``looptrace ui``), every page's script first asks for it: from the URL
(``?token=...``, the link ``looptrace ui`` prints) or from a password field; once
given, the browser session keeps it. A session without it sees the password field
and nothing else: no run, no message, no path. Every run's data reaches a browser
only through a page's script, so this guards all of it.

What it does not guard: Streamlit's own static files (the app's JavaScript, no
data) and its health endpoint; nor the wire: over plain HTTP the token and every
page travel in clear text on the network (use an SSH tunnel, or Streamlit's
``--server.sslCertFile``/``--server.sslKeyFile``, across a network you do not trust).

Wrong passwords are limited (``Limiter``): per browser session and per client address,
the first ``FREE_GUESSES`` in a row cost nothing, each next one locks the session and
the address out for twice as long as the one before (2 s, 4 s ... up to ``LOCK_MAX``);
a password given while locked out is not even compared. Each wrong one is logged on
the server's stderr (the address, never the password).

Beside the pages, ``app/serve.py`` (the server ``looptrace ui`` starts) puts ``Guard``
in front of every request Streamlit's server answers: a Host
header that is not this machine (``localhost``, a loopback address) or the ``--host``
given is refused on every route (421 Misdirected Request; 403 for the WebSocket),
and so is a WebSocket whose Origin is not: a page of another site that a browser was
made to send here by DNS rebinding gets nothing. With a password, Streamlit's metrics
(``/_stcore/metrics``) need it too (``?token=`` or ``Authorization: Bearer``), and a
session that has not given it cannot clear the caches (a ``clear_cache`` message).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import math
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import streamlit as st

from . import state

ENV = "LOOPTRACE_TOKEN"

FREE_GUESSES = 3  # wrong passwords in a row that cost no wait
LOCK_MAX = 900.0  # the longest lockout, in seconds
FORGET = 3600.0  # seconds without a wrong password after which the count starts again

LOG = logging.getLogger("looptrace.access")
if not LOG.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("looptrace ui: %(message)s"))
    LOG.addHandler(_handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False


def lock_seconds(failures: int) -> float:
    """How long a session or address waits after its ``failures``-th wrong password in
    a row: nothing for the first ``FREE_GUESSES``, then 2 s, 4 s, 8 s ... ``LOCK_MAX``."""
    if failures <= FREE_GUESSES:
        return 0.0
    return min(2.0 ** (failures - FREE_GUESSES), LOCK_MAX)


class Limiter:
    """Wrong passwords counted per key (a session, a client address), each key locked
    out for ``lock_seconds`` of its count after each one. Thread-safe (every browser
    session's script runs in its own thread)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[str, tuple[int, float, float]] = {}  # failures, last, locked until

    def wait(self, *keys: str) -> float:
        """Seconds before any of ``keys`` may try again (0.0: now)."""
        now = self._clock()
        with self._lock:
            return max([0.0, *(self._keys[k][2] - now for k in keys if k in self._keys)])

    def failed(self, *keys: str) -> tuple[int, float]:
        """Count a wrong password for each key: the highest count, and the wait it makes."""
        now = self._clock()
        worst = 0
        with self._lock:
            if len(self._keys) > 10_000:  # (forget the keys quiet for long)
                self._keys = {k: v for k, v in self._keys.items() if now - v[1] < FORGET}
            for k in keys:
                n, last, _ = self._keys.get(k, (0, now, now))
                n = 1 if now - last > FORGET else n + 1
                self._keys[k] = (n, now, now + lock_seconds(n))
                worst = max(worst, n)
        return worst, lock_seconds(worst)

    def succeeded(self, *keys: str) -> None:
        with self._lock:
            for k in keys:
                self._keys.pop(k, None)


LIMITER = Limiter()


def attempt(given: str, token: str, keys: tuple[str, ...], where: str,
            limiter: Limiter | None = None) -> str:
    """Check one password given by ``keys`` (limited): ``"ok"``, ``"wrong"``, or
    ``"wait N"`` (locked out for N more seconds; the password was not compared)."""
    limiter = LIMITER if limiter is None else limiter
    wait = limiter.wait(*keys)
    if wait > 0:
        return f"wait {math.ceil(wait)}"
    if hmac.compare_digest(given.encode(), token.encode()):
        limiter.succeeded(*keys)
        return "ok"
    n, lock = limiter.failed(*keys)
    LOG.warning("wrong password (%s) from %s: %d in a row%s", where, ", ".join(keys), n,
                f"; locked out for {lock:.0f} s" if lock else "")
    return "wrong"


def _session_keys() -> tuple[str, ...]:
    """This browser session's keys in the limiter: its own, and its client address's."""
    if state.ACCESS_SESSION not in st.session_state:
        st.session_state[state.ACCESS_SESSION] = secrets.token_hex(8)
    session = state.get(state.ACCESS_SESSION)
    return (f"session {session}", f"address {st.context.ip_address or 'loopback'}")


def _check(given: str, token: str, source: str, keys: tuple[str, ...]) -> str:
    """``attempt`` for a value of this session, except that the same wrong value given
    again (the URL's ``?token=`` on every rerun, a field left as typed) is not counted
    again: it is still wrong."""
    digest = hashlib.sha256(given.encode()).hexdigest()
    failed: dict[str, str] = state.get(state.ACCESS_FAILED) or {}
    if failed.get(source) == digest and LIMITER.wait(*keys) <= 0:
        return "wrong"
    outcome = attempt(given, token, keys, source)
    if outcome == "wrong":
        st.session_state[state.ACCESS_FAILED] = {**failed, source: digest}
    return outcome


def gate() -> None:
    """Stop the page here unless this session has given the token (no-op without one)."""
    token = os.environ.get(ENV, "")
    if not token or state.get(state.ACCESS_OK):
        return
    keys = _session_keys()
    outcomes = []
    given = st.query_params.get("token", "")
    if given:
        outcomes.append(_check(given, token, "the link's ?token=", keys))
        if outcomes[-1] == "ok":
            st.session_state[state.ACCESS_OK] = True
            return
    st.title("looptrace")
    typed = st.text_input("Password", type="password", key=state.ACCESS_PASSWORD)
    if typed:
        outcomes.append(_check(typed, token, "the password field", keys))
        if outcomes[-1] == "ok":
            st.session_state[state.ACCESS_OK] = True
            st.rerun()
    waits = [o for o in outcomes if o.startswith("wait ")]
    if waits:
        st.error(f"Too many wrong passwords: try again in {waits[-1][5:]} s.")
    elif typed:
        st.error("Wrong password.")
    st.stop()


# -- the server's door (app/serve.py installs it) ----------------------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
WILDCARD = ("", "0.0.0.0", "::")


def _hostname(value: str | None) -> str | None:
    """The host name of a Host header (``name``, ``name:port``, ``[v6]:port``),
    lowercased, without its port; None for anything else."""
    if not value:
        return None
    try:
        parts = urlsplit(f"//{value}")
        _ = parts.port  # (checks that a port is a number in range)
    except ValueError:
        return None
    if (not parts.hostname or parts.username is not None or parts.password is not None
            or parts.path or parts.query or parts.fragment):
        return None
    return parts.hostname.lower().rstrip(".")


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def host_allowed(host: str | None, bound: str) -> bool:
    """Whether a request's Host header names this server: ``localhost``, a loopback
    address, or the address it listens on (``bound``, ``--host``). Listening on every
    interface (``0.0.0.0``, ``::``), also any address and the machine's own names. A
    name a DNS rebinding points here (``evil.example``) is none of these."""
    name = _hostname(host)
    if name is None:
        return False
    ip = _ip(name)
    if name == "localhost" or (ip is not None and ip.is_loopback):
        return True
    wanted = bound.strip().strip("[]").lower().rstrip(".")
    if name == wanted or (ip is not None and ip == _ip(wanted)):
        return True
    if wanted in WILDCARD:
        return ip is not None or name in {socket.gethostname().lower(),
                                          socket.getfqdn().lower()}
    return False


def origin_allowed(origin: str | None, bound: str) -> bool:
    """Whether a WebSocket's Origin is a page of this server (none given: not a browser)."""
    if origin is None:
        return True
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and host_allowed(parts.netloc, bound)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


class Guard:
    """ASGI middleware in front of Streamlit's whole server: the Host (and a WebSocket's
    Origin) must name this server; with a token, the metrics need it."""

    def __init__(self, app: ASGIApp, *, bound: str, token: str) -> None:
        self.app = app
        self.bound = bound
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        client = scope.get("client") or ("?", 0)
        if not host_allowed(host, self.bound):
            LOG.warning("refused a request for Host %r from %s (%s)", host, client[0],
                        scope.get("path"))
            await self._refuse(scope, receive, send, 421, "Misdirected Request: unknown Host\n")
            return
        if kind == "websocket":
            origin = _header(scope, b"origin")
            if not origin_allowed(origin, self.bound):
                LOG.warning("refused a WebSocket from Origin %r (%s)", origin, client[0])
                await self._refuse(scope, receive, send, 403, "Forbidden: unknown Origin\n")
                return
        elif self.token and str(scope.get("path", "")).rstrip("/").endswith("/_stcore/metrics"):
            outcome = self._metrics_token(scope, str(client[0]))
            if outcome != "ok":
                status, text = ((429, "Too many wrong passwords\n") if outcome.startswith("wait")
                                else (403, ("Forbidden: the metrics need the password "
                                            "(?token= or Authorization: Bearer)\n")))
                await self._refuse(scope, receive, send, status, text)
                return
        await self.app(scope, receive, send)

    def _metrics_token(self, scope: Scope, client: str) -> str:
        query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
        given = (query.get("token") or [""])[0]
        auth = _header(scope, b"authorization") or ""
        if not given and auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        ip = _ip(client)
        address = "loopback" if ip is not None and ip.is_loopback else client
        return attempt(given, self.token, (f"address {address}",), "/_stcore/metrics")

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, status: int,
                      text: str) -> None:
        body = text.encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"),
                   (b"content-length", str(len(body)).encode())]
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        # (a WebSocket closed before it is accepted: the server answers 403 Forbidden)
        await receive()  # (websocket.connect)
        await send({"type": "websocket.close", "code": 1008})


def let_in(session_state: Any) -> bool:
    """Whether a session (its Streamlit ``SessionState``) may do what needs the
    password: it gave it, or there is none."""
    if not os.environ.get(ENV):
        return True
    # (Streamlit's SessionState has ``in`` and ``[]`` but no ``get``)
    return bool(state.ACCESS_OK in session_state and session_state[state.ACCESS_OK])  # noqa: RUF019
