"""``looptrace proxy`` (and ``--emulate``) against hostile traffic (issue 21).

Each test names the defect it catches: request bodies that are not UTF-8 re-encoded
on the way, no request body limit, every chunk of a stream stored, a truncated
upstream answer relayed as a complete one, a hung upstream never recorded, the
emulator's 500 for a body of the wrong types, secrets of custom headers and body
fields stored in plain text. The upstream is a small real HTTP server on
127.0.0.1 that misbehaves on purpose; limits are set through ``WireServer``'s
parameters.
"""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tracer.wire import WireServer


class _Upstream(BaseHTTPRequestHandler):
    """A provider that misbehaves as the request path asks."""

    protocol_version = "HTTP/1.1"
    got: list[tuple[str, dict[str, str], bytes]]
    release: threading.Event

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        self.got.append((self.path, dict(self.headers.items()), body))
        mode = self.path.rsplit("/", 1)[-1].split("?")[0]
        if mode == "hang":
            self.release.wait(30)
            return
        if mode == "stream" or mode == "stream-hang":
            count = int(self.path.split("n=")[-1]) if "n=" in self.path else 3000
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(count):
                self._chunk(_sse(f"w{i} "))
                if mode == "stream-hang" and i == 2:
                    self.release.wait(30)
                    return
            self._chunk(_sse_end())
            self.wfile.write(b"0\r\n\r\n")
            return
        if mode == "short":  # a Content-Length it does not honour
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"choices": [{"message": {"content": "cut')
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if mode == "cut-stream":  # a chunked stream that stops mid-way
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._chunk(_sse("half"))
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        data = json.dumps(_completion("fine")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _completion(text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}]}


def _sse(text: str) -> str:
    return "data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1,
                                  "model": "gpt-4o-mini", "choices": [{
                                      "index": 0, "delta": {"content": text},
                                      "finish_reason": None}]}) + "\n\n"


def _sse_end() -> str:
    return ("data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1,
                                   "model": "gpt-4o-mini", "choices": [{
                                       "index": 0, "delta": {}, "finish_reason": "stop"}]})
            + "\n\ndata: [DONE]\n\n")


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    got: list[tuple[str, dict[str, str], bytes]] = []
    release = threading.Event()
    handler = type("U", (_Upstream,), {"got": got, "release": release})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", got
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()


def _post(url: str, path: str, body: bytes, headers: dict[str, str] | None = None,
          timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    host = url.removeprefix("http://")
    conn = http.client.HTTPConnection(host, timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json",
                                                      **(headers or {})})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def _wire(db: Path) -> list[dict[str, Any]]:
    """Every wire row of the file (linked to a run made of its traffic, or not)."""
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM wire ORDER BY id")]
    finally:
        conn.close()


def _proxy(upstream: str, db: Path, **kw: Any) -> WireServer:
    return WireServer(mode="forward", provider="openai", upstream=upstream, db=db, **kw)


# -- bytes unchanged ----------------------------------------------------------------------

BODIES = {
    "binary": bytes(range(256)) * 16,  # 4,096 bytes (was: 7,462 arrived)
    "gzip": gzip.compress(json.dumps({"model": "m", "messages": []}).encode()),
    "latin-1": '{"model": "m", "messages": [{"role": "user", "content": "Grüße, café"}]}'
               .encode("latin-1"),
}


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_request_bodies_are_forwarded_byte_for_byte(upstream: tuple[str, list[Any]],
                                                    tmp_path: Path, kind: str) -> None:
    """Was: decoded as UTF-8 with replacement and encoded again."""
    url, got = upstream
    body = BODIES[kind]
    headers = {"Content-Encoding": "gzip"} if kind == "gzip" else {}
    with _proxy(url, tmp_path / "p.db") as proxy:
        status, _, _ = _post(proxy.url, "/v1/chat/completions", body, headers)
    assert status == 200
    assert got[-1][2] == body
    if kind == "gzip":  # the record's copy is readable
        (row,) = _wire(tmp_path / "p.db")
        assert json.loads(row["request_body"]) == {"model": "m", "messages": []}


def test_a_request_body_over_the_limit_is_a_413(upstream: tuple[str, list[Any]],
                                                tmp_path: Path) -> None:
    """Was: no limit (a 100 MB body was read whole and forwarded)."""
    url, got = upstream
    with _proxy(url, tmp_path / "p.db", max_request=1000) as proxy:
        status, _, data = _post(proxy.url, "/v1/chat/completions", b"x" * 5000)
        assert status == 413
        assert json.loads(data)["error"]["type"] == "request_too_large"
        # one chunk declaring a gigabyte: refused before it is read
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
                      b"chunked\r\n\r\n40000000\r\n" + b"x" * 10)
            answer = s.recv(65536)
        assert answer.startswith(b"HTTP/1.1 413")
    assert got == []


# -- streams --------------------------------------------------------------------------------

def test_a_stream_is_stored_reassembled_and_its_chunks_bounded(
        upstream: tuple[str, list[Any]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: every chunk stored (a 200 MB stream: 800 MB of chunks, 4 GB of RSS)."""
    from tracer.wire import spool

    monkeypatch.setattr(spool, "MAX_CHUNKS", 50)
    url, _ = upstream
    with _proxy(url, tmp_path / "p.db") as proxy:
        status, _, data = _post(proxy.url, "/v1/stream?n=3000", b"{}")
    assert status == 200
    relayed = data.decode()
    assert relayed.count("data: ") == 3002  # every chunk reached the client
    (row,) = _wire(tmp_path / "p.db")
    body = json.loads(row["response_body"])
    assert body["choices"][0]["message"]["content"] == "".join(f"w{i} " for i in range(3000))
    chunks = json.loads(row["chunks"])
    assert len(chunks) == 51 and "2952 more chunks" in chunks[-1]
    assert chunks[:50] == [_sse(f"w{i} ") for i in range(50)]
    assert row["error"] is None


# -- a broken or silent upstream ------------------------------------------------------------

@pytest.mark.parametrize("path", ["/v1/short", "/v1/cut-stream"])
def test_a_truncated_upstream_answer_reaches_the_client_truncated(
        upstream: tuple[str, list[Any]], tmp_path: Path, path: str) -> None:
    """Was: the proxy ended its chunked answer properly: a complete-looking 200."""
    url, _ = upstream
    with _proxy(url, tmp_path / "p.db") as proxy, pytest.raises(http.client.IncompleteRead):
        _post(proxy.url, path, b"{}")
    (row,) = wait_rows(tmp_path / "p.db", 1)
    assert row["error"] and "upstream response broken" in row["error"]


def test_a_hung_upstream_is_a_504_recorded_after_the_timeout(upstream: tuple[str, list[Any]],
                                                             tmp_path: Path) -> None:
    """Was: a thread held for 600 s and the exchange never recorded."""
    url, _ = upstream
    with _proxy(url, tmp_path / "p.db", upstream_timeout=0.5) as proxy:
        t0 = time.monotonic()
        status, _, data = _post(proxy.url, "/v1/hang", b"{}")
        assert status == 504 and time.monotonic() - t0 < 10
        assert "no answer" in json.loads(data)["error"]["message"]
        # silent in the middle of a stream: cut for the client, recorded
        with pytest.raises(http.client.IncompleteRead):
            _post(proxy.url, "/v1/stream-hang", b"{}")
    rows = wait_rows(tmp_path / "p.db", 2)
    assert rows[0]["status"] == 504 and "no answer" in rows[0]["error"]
    assert "cut" in rows[1]["error"]


def wait_rows(db: Path, n: int) -> list[dict[str, Any]]:
    end = time.monotonic() + 10
    while True:
        rows = _wire(db)
        if len(rows) >= n or time.monotonic() > end:
            return rows
        time.sleep(0.05)


# -- the emulator ---------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "body", "shape"), [
    ("/v1/chat/completions", {"model": "gpt-4o-mini", "messages": "hello"}, "openai"),
    ("/v1/chat/completions", {"model": "gpt-4o-mini", "messages": [1, 2]}, "openai"),
    ("/v1/messages", {"model": "claude-haiku-4-5", "max_tokens": 9, "messages": [7]},
     "anthropic"),
    ("/api/chat", {"model": "llama3.1", "messages": [None]}, "ollama"),
])
def test_the_emulator_answers_wrong_body_types_with_a_400(tmp_path: Path, path: str,
                                                          body: dict[str, Any],
                                                          shape: str) -> None:
    """Was: a 500 carrying a Python exception; the real APIs answer 400."""
    with WireServer(mode="emulate", script="weather", db=tmp_path / "e.db") as emu:
        status, _, data = _post(emu.url, path, json.dumps(body).encode())
    assert status == 400, data
    err = json.loads(data)
    if shape == "anthropic":
        assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
    elif shape == "ollama":
        assert isinstance(err["error"], str)
    else:
        assert err["error"]["type"] == "invalid_request_error"
    assert "Traceback" not in data.decode() and "looptrace_error" not in data.decode()


# -- secrets --------------------------------------------------------------------------------

def test_secrets_in_custom_headers_and_body_fields_are_masked(
        upstream: tuple[str, list[Any]], tmp_path: Path) -> None:
    """Was: ``X-Custom-Auth`` and a body ``"token"`` stored in plain text."""
    url, got = upstream
    secrets = {"X-Custom-Auth": "custom-auth-s3cret", "X-Session-Token": "sess-s3cret",
               "X-Client-Secret": "client-s3cret"}
    body = json.dumps({"model": "m", "messages": [], "token": "tok-s3cret",
                       "api_key": "key-s3cret", "password": "pw-s3cret",
                       "max_tokens": 5}).encode()
    with _proxy(url, tmp_path / "p.db") as proxy:
        assert _post(proxy.url, "/v1/chat/completions", body, secrets)[0] == 200
    assert got[-1][2] == body  # forwarded as sent
    assert all(got[-1][1][k] == v for k, v in secrets.items())
    (row,) = _wire(tmp_path / "p.db")
    stored = json.dumps(row)
    for word in ("custom-auth-s3cret", "sess-s3cret", "client-s3cret", "tok-s3cret",
                 "key-s3cret", "pw-s3cret"):
        assert word not in stored
    assert json.loads(row["request_body"])["max_tokens"] == 5
    headers = json.loads(row["request_headers"])
    assert headers["Content-Type"] == "application/json"
