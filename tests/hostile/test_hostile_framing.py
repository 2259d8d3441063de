"""Request framing that two parsers could read two ways (issue 36, item 14).

``looptrace collect`` and ``looptrace proxy`` read request bodies through
``tracer.vocab.httpbody.read_body``. Each test names the defect it catches: a request with
both ``Content-Length`` and ``Transfer-Encoding: chunked`` kept its connection open
and the bytes after the chunked body were answered as a second request (request
smuggling: RFC 9112 6.3 says close), and two different ``Content-Length`` values (two
headers, or ``5, 7``) were accepted with the first one, so the proxy forwarded a body
cut to it. Raw sockets on 127.0.0.1 against the real servers; the upstream behind the
proxy is a small real HTTP server that records what it is sent.
"""

from __future__ import annotations

import email.message
import http.client
import io
import json
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.vocab.httpbody import BodyError, read_body
from tracer.otel.collect import CollectServer
from tracer.wire import WireServer


def _talk(port: int, data: bytes, wait: float = 3.0) -> tuple[bytes, bool]:
    """Send ``data`` on one connection; return what comes back and whether the server
    closed the connection (False: still open after ``wait`` seconds of silence)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        out = b""
        try:
            while True:
                piece = s.recv(65536)
                if not piece:
                    return out, True
                out += piece
        except TimeoutError:
            return out, False


def _answers(got: bytes) -> list[int]:
    """The status of every response in ``got``, in order."""
    return [int(status) for status in re.findall(rb"HTTP/1\.[01] (\d{3}) ", got)]


# A second request smuggled after the first one's body: a GET (405 from collect, 501
# from the proxy, which has no handler for it).
SMUGGLED = b"GET /v1/traces HTTP/1.1\r\nHost: x\r\n\r\n"


def _both(path: bytes) -> bytes:
    return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"2\r\n{}\r\n0\r\n\r\n" + SMUGGLED)


def _two_lengths(path: bytes, lengths: list[str], body: bytes) -> bytes:
    head = (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + b"".join(f"Content-Length: {v}\r\n".encode() for v in lengths) + b"\r\n")
    return head + body


CONFLICTS = {"two headers": ["2", "9"], "one list": ["2, 9"]}
BODY = b'{}"model"'  # 9 bytes; its first 2 are valid JSON on their own


# -- looptrace collect ---------------------------------------------------------------------

@pytest.fixture
def collect(tmp_path: Path) -> Iterator[CollectServer]:
    with CollectServer(tmp_path / "got.db", port=0, quiet=0.1, max_body=1 << 20,
                       timeout=5.0) as s:
        yield s


def test_collect_refuses_content_length_with_chunked_and_closes(collect: CollectServer) -> None:
    """Was: 200 for the chunked body, the connection kept open, and the smuggled GET
    answered as a second request (405)."""
    got, closed = _talk(collect.port, _both(b"/v1/traces"))
    assert _answers(got) == [400], got[:300]
    assert b"Content-Length and Transfer-Encoding" in got
    assert closed


@pytest.mark.parametrize("kind", sorted(CONFLICTS))
def test_collect_refuses_two_content_lengths_and_closes(collect: CollectServer,
                                                        kind: str) -> None:
    """Was: 200 for a body cut to the first length, then the rest of the bytes read
    as a request line."""
    got, closed = _talk(collect.port, _two_lengths(b"/v1/traces", CONFLICTS[kind], BODY))
    assert _answers(got) == [400], got[:300]
    assert b"conflicting Content-Length" in got
    assert closed


def test_collect_still_takes_a_repeated_equal_content_length(collect: CollectServer) -> None:
    """RFC 9110 8.6 lets a recipient accept the same length given twice: it does."""
    got, _ = _talk(collect.port, _two_lengths(b"/v1/traces", ["2, 2"], b"{}") + SMUGGLED,
                   wait=1.0)
    assert _answers(got) == [200, 405], got[:300]


# -- looptrace proxy -----------------------------------------------------------------------

class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    got: list[bytes]

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.got.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        data = json.dumps({"id": "c1", "object": "chat.completion", "created": 1,
                           "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                                      "message": {"role": "assistant",
                                                                  "content": "ok"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[WireServer, list[bytes]]]:
    got: list[bytes] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("U", (_Upstream,), {"got": got}))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with WireServer(mode="forward", provider="openai", db=tmp_path / "p.db",
                        upstream=f"http://127.0.0.1:{httpd.server_address[1]}") as srv:
            yield srv, got
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_proxy_refuses_content_length_with_chunked_and_closes(
        proxy: tuple[WireServer, list[bytes]]) -> None:
    """Was: the chunked body forwarded (200), the connection kept open, and the
    smuggled GET answered as a second request."""
    srv, got = proxy
    answer, closed = _talk(srv.port, _both(b"/v1/chat/completions"))
    assert _answers(answer) == [400], answer[:300]
    assert closed
    assert got == []  # nothing forwarded


@pytest.mark.parametrize("kind", sorted(CONFLICTS))
def test_proxy_refuses_two_content_lengths_and_closes(
        proxy: tuple[WireServer, list[bytes]], kind: str) -> None:
    """Was: 200, with the body forwarded cut to the first length (``{}`` of 9 bytes)."""
    srv, got = proxy
    answer, closed = _talk(srv.port, _two_lengths(b"/v1/chat/completions",
                                                   CONFLICTS[kind], BODY))
    assert _answers(answer) == [400], answer[:300]
    assert b"conflicting Content-Length" in answer
    assert closed
    assert got == []


def test_proxy_still_forwards_a_repeated_equal_content_length(
        proxy: tuple[WireServer, list[bytes]]) -> None:
    srv, got = proxy
    answer, _ = _talk(srv.port, _two_lengths(b"/v1/chat/completions", ["9", "9"], BODY),
                      wait=1.0)
    assert _answers(answer) == [200], answer[:300]
    assert got == [BODY]


# -- the rule, over the space of Content-Length fields --------------------------------------

def _headers(fields: list[tuple[str, str]]) -> email.message.Message:
    head = "".join(f"{k}: {v}\r\n" for k, v in fields) + "\r\n"
    return http.client.parse_headers(io.BytesIO(head.encode()))


_number = st.integers(min_value=0, max_value=40)
_value = st.one_of(_number.map(str), _number.map(lambda n: f"0{n}"),
                   st.sampled_from(["", "x", "-1", "+3", "0x5", "1.0", " 4 "]))
_field = st.lists(_value, min_size=1, max_size=3).map(", ".join)


@settings(max_examples=300, deadline=None)
@given(fields=st.lists(_field, min_size=1, max_size=3), chunked=st.booleans())
def test_read_body_takes_a_length_only_when_every_value_agrees(fields: list[str],
                                                               chunked: bool) -> None:
    """Accepted exactly when there is no Transfer-Encoding and every non-empty value of
    every Content-Length field is the same decimal number; then that many bytes are
    read, no more."""
    values = [v.strip() for f in fields for v in f.split(",") if v.strip()]
    wellformed = all(v.isdigit() for v in values)
    numbers = {int(v) for v in values} if wellformed else set()
    expect = None if chunked or not wellformed or len(numbers) > 1 else (
        numbers.pop() if numbers else 0)
    stream = b"y" * 50 + b"z"
    pairs = [("Content-Length", f) for f in fields]
    if chunked:
        pairs.append(("Transfer-Encoding", "chunked"))
    rfile = io.BytesIO(b"5\r\nhello\r\n0\r\n\r\n" if chunked else stream)
    try:
        body = read_body(rfile, _headers(pairs), limit=1000)
    except BodyError as err:
        assert expect is None, (fields, chunked, err)
        assert err.status == 400
    else:
        assert expect is not None, (fields, chunked, body)
        assert body == stream[:expect]


@pytest.mark.parametrize(("coding", "status"), [("gzip, chunked", 501), ("identity", 400),
                                                ("chunked, gzip", 400)])
def test_a_transfer_encoding_other_than_chunked_is_refused(coding: str, status: int) -> None:
    """Was: read as no body at all (the request's bytes then read as the next request)."""
    rfile = io.BytesIO(b"5\r\nhello\r\n0\r\n\r\n")
    with pytest.raises(BodyError) as err:
        read_body(rfile, _headers([("Transfer-Encoding", coding)]), limit=1000)
    assert err.value.status == status
