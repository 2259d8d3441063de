"""One local HTTP server, two modes: a provider emulator and a recording proxy.

``WireServer(mode="emulate")`` answers ``POST /v1/chat/completions`` and
``/v1/responses`` (OpenAI), ``/v1/messages`` (Anthropic) and ``/api/chat``
(Ollama) from a scripted conversation, as JSON or as a stream (SSE, NDJSON)
when the request asks for one, so the real LangChain adapters run end to end
with no key and no network. For the Responses API it also remembers the
conversations it answered, so a request continuing one by
``previous_response_id`` gets its history back as the real server would.

``WireServer(mode="forward", provider=..., upstream=...)`` forwards every
request to the upstream provider (streaming the response through as it
arrives) and records both directions.

Either way each exchange is recorded (``WireRecorder``): streamed responses
are split into their raw chunks and reassembled into the final body; a
response that cannot be parsed is recorded with ``error`` set. The server
listens on 127.0.0.1 only.

Bounded, and faithful. A request body is read with a hard limit (``max_request``,
413 past it, however it is framed: ``tracer.vocab.httpbody``) and forwarded byte for byte
(only the record's copy is decoded). A response is relayed as it arrives and
held for the record in a ``Spool`` (memory up to a few MB, then a temporary
file): a stream is stored reassembled, its raw chunks only in part. An upstream
response cut short is cut short for the client too (no final chunk: its HTTP
client sees the truncation, as it would have); an upstream silent for
``upstream_timeout`` seconds is a 504 (or a cut response) recorded with its
error. A client connection silent for ``timeout`` seconds is closed.

Example:
    ```python
    with WireServer(mode="emulate", script="weather", db="trace.db") as srv:
        llm = ChatOpenAI(base_url=srv.url + "/v1", api_key="sk-fake", max_retries=0)
    ```
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

from tracer.errors import InvalidOption
from tracer.vocab.httpbody import BodyError, decompress, read_body

from .capture import Exchange, WireRecorder
from .providers import (
    FORMATS,
    MalformedStream,
    OllamaFormat,
    Request,
    ResponsesFormat,
    WireFormat,
    format_for_path,
    get_format,
)
from .scenarios import Script, count_tokens, load_script
from .spool import Spool

MODES = ("emulate", "forward")
MAX_REQUEST = 32 * 1024 * 1024  # request body limit (bytes)
MAX_RECORDED_BODY = 16 * 1024 * 1024  # of a response that is not a stream, bytes stored
UPSTREAM_TIMEOUT = 300.0  # seconds the upstream may stay silent
TIMEOUT = 60.0  # seconds a client connection may stay silent
OLDER_OLLAMA = OllamaFormat(ids=False)  # an Ollama server before 0.12.10: no tool call ids
# Hop-by-hop headers never relayed (RFC 9110), plus ones we set ourselves.
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                  "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length",
                  "accept-encoding"})


class ForwardUpstream(Exception):
    """Raised by an emulator script that has no answer for a request: the server
    forwards it to its ``upstream`` (emulate mode with an upstream: ``looptrace proxy
    --rerun RUN --upstream URL``)."""


class WireServer:
    """A threaded HTTP server on 127.0.0.1 in emulate or forward mode (emulate mode with
    an ``upstream``: a request the script raises ``ForwardUpstream`` for is forwarded)."""

    def __init__(self, *, mode: str = "emulate", provider: str | None = None,
                 upstream: str | None = None, script: str | Script | None = None,
                 db: str | os.PathLike[str] | None = None, recorder: WireRecorder | None = None,
                 port: int = 0, on_exchange: Callable[[Exchange], None] | None = None,
                 ollama_ids: bool = True, max_request: int = MAX_REQUEST,
                 upstream_timeout: float = UPSTREAM_TIMEOUT, timeout: float = TIMEOUT) -> None:
        if mode not in MODES:
            msg = f"mode must be one of {MODES}, not {mode!r}"
            raise InvalidOption(msg)
        if provider is not None:
            get_format(provider)
        if mode == "forward" and provider is None and upstream is None:
            msg = "forward mode needs a provider or an upstream URL"
            raise InvalidOption(msg)
        self.mode = mode
        self.provider = provider
        self.upstream = (upstream or get_format(provider).default_upstream
                         if mode == "forward" and provider else upstream)
        self.script = load_script(script) if mode == "emulate" else None
        self.recorder = recorder or (WireRecorder(db) if db is not None else None)
        self.on_exchange = on_exchange
        # the emulator answers like an Ollama server >= 0.12.10 (ids), or like an older one
        self.ollama_ids = ollama_ids
        self.max_request = max_request
        self.upstream_timeout = upstream_timeout
        self.timeout = timeout
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        # Requests being answered: ``stop`` waits for them (a streaming client has its
        # whole answer before its exchange is recorded).
        self._busy = 0
        self._idle = threading.Condition(self._lock)
        # The emulator's stored Responses API conversations (items), by response id.
        self._stored: dict[str, list[Any]] = {}
        handler = type("Handler", (_Handler,), {"server_obj": self, "timeout": timeout})
        self._httpd = _QuietServer(("127.0.0.1", port), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever,
                                            name=f"looptrace-wire-{self.port}", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self, wait: float = 10.0) -> None:
        """Stop serving; wait up to ``wait`` seconds for requests being answered to
        be recorded, then close the recorder (which builds the runs from traffic)."""
        self._httpd.shutdown() if self._thread is not None else None
        with self._idle:
            self._idle.wait_for(lambda: self._busy == 0, timeout=wait)
        self._httpd.server_close()
        self._thread = None
        if self.recorder is not None:
            self.recorder.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, ex: Exchange) -> None:
        with self._lock:
            self.exchanges.append(ex)
        if self.recorder is not None:
            try:
                self.recorder.record(ex)
            except Exception as err:  # noqa: BLE001 - recording never breaks the traffic
                self.recorder.writer.warn("wire", f"looptrace could not record an exchange: "
                                                   f"{err!r}")
        if self.on_exchange is not None:
            self.on_exchange(ex)

    def store(self, response_id: str, items: list[Any]) -> None:
        with self._lock:
            self._stored[response_id] = items

    def stored(self, response_id: str) -> list[Any] | None:
        """The conversation items up to and including emulated response ``response_id``."""
        with self._lock:
            return self._stored.get(response_id)


# What some clients ask before chatting (model lists, server version).
_LISTINGS: dict[str, Any] = {
    "/v1/models": {"object": "list", "data": [
        {"id": m, "object": "model", "created": 1767225600, "owned_by": "looptrace-emulator"}
        for m in ("gpt-4o-mini", "claude-haiku-4-5")]},
    "/api/tags": {"models": [{"name": "llama3.1", "model": "llama3.1", "size": 0,
                              "digest": "emulated", "details": {"family": "llama"}}]},
    "/api/version": {"version": "0.0.0-looptrace-emulator"},
}


class _QuietServer(ThreadingHTTPServer):
    """A client dropping its kept-alive connection is normal, not a traceback."""

    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server_obj: WireServer
    _deferred: tuple[int, dict[str, str], bytes] | None
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    # -- plumbing -------------------------------------------------------------
    def _body(self) -> bytes:
        srv = self.server_obj
        try:
            return read_body(self.rfile, self.headers, limit=srv.max_request,
                             deadline=srv.timeout)
        except BodyError:
            self.close_connection = True  # (its end is unknown)
            raise

    def _send_head(self, status: int, headers: dict[str, str], *, chunked: bool) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _json(self, status: int, obj: Any) -> tuple[dict[str, str], str]:
        """Prepare a JSON response; it is sent once the exchange is recorded."""
        text = json.dumps(obj)
        data = text.encode()
        headers = {"Content-Type": "application/json", "Content-Length": str(len(data))}
        self._deferred = (status, headers, data)
        return headers, text

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        srv = self.server_obj
        with srv._idle:
            srv._busy += 1
        try:
            self._answer(method)
        finally:
            with srv._idle:
                srv._busy -= 1
                srv._idle.notify_all()

    def _answer(self, method: str) -> None:
        srv = self.server_obj
        t0 = time.perf_counter()
        self._pending_end = False
        self._cut = False  # the response was cut short upstream: no final chunk
        self._deferred = None
        ex = Exchange(provider=srv.provider or "", method=method, url=self.path,
                      request_headers=dict(self.headers.items()), request_body="")
        fmt = format_for_path(self.path) or (get_format(srv.provider) if srv.provider else None)
        if isinstance(fmt, OllamaFormat) and not srv.ollama_ids:
            fmt = OLDER_OLLAMA
        if fmt is not None:
            ex.provider = fmt.name
        try:
            self.raw_body = self._body()
            ex.request_body = _readable(self.raw_body, self.headers.get("Content-Encoding", ""))
            if srv.mode == "emulate":
                self._emulate(ex, fmt)
            else:
                self._forward(ex, fmt)
        except BodyError as err:
            ex.status = err.status
            ex.error = f"request refused: {err}"
            ex.response_headers, ex.response_body = self._json(
                err.status, error_body(ex.provider, str(err), "request_too_large"
                                       if err.status == 413 else "invalid_request_error"))
        except (BrokenPipeError, ConnectionResetError) as err:
            ex.error = ex.error or f"client went away: {err}"
        except Exception as err:  # noqa: BLE001 - a script or upstream bug: answer 500
            ex.error = f"{srv.mode} failed: {type(err).__name__}: {err}"
            if not self._pending_end:
                ex.status = 500
                ex.response_headers, ex.response_body = self._json(500, {"error": {
                    "type": "looptrace_error", "message": ex.error}})
            elif self._cut:  # the upstream cut its answer short: so is the client's
                self.close_connection = True
        finally:
            ex.duration_ms = (time.perf_counter() - t0) * 1000
            if fmt is not None or srv.mode == "forward":
                srv.record(ex)
            # Finish the response only once the exchange is recorded (and
            # linked): when the client has the whole response, the row is on disk.
            try:
                if self._deferred is not None:
                    status, headers, data = self._deferred
                    if self.close_connection:
                        headers = {**headers, "Connection": "close"}
                    self._send_head(status, headers, chunked=False)
                    self.wfile.write(data)
                    self.wfile.flush()
                elif self._pending_end and not self._cut:
                    self._end_chunks()
            except OSError:
                pass
            if self._cut:
                self.close_connection = True

    # -- emulate --------------------------------------------------------------
    def _emulate(self, ex: Exchange, fmt: WireFormat | None) -> None:
        srv = self.server_obj
        ex.url = "emulator:" + self.path
        # The port changes from run to run: keep recordings reproducible.
        ex.request_headers = {k: ("emulator" if k.lower() == "host" else v)
                              for k, v in ex.request_headers.items()}
        listing = _LISTINGS.get(self.path.split("?", 1)[0].rstrip("/"))
        if listing is not None and self.command == "GET":
            ex.status = 200
            ex.response_headers, ex.response_body = self._json(200, listing)
            return
        if fmt is None or self.command != "POST":
            ex.status = 404
            ex.response_headers, ex.response_body = self._json(404, {"error": {
                "type": "not_found", "message": f"the emulator does not serve {self.path}"}})
            return
        try:
            payload = json.loads(ex.request_body or "{}")
            if not isinstance(payload, dict):
                msg = "the request body is not a JSON object"
                raise ValueError(msg)  # noqa: TRY004 - reported like a JSON error
        except ValueError as err:
            ex.status = 400
            ex.error = f"bad request: {err}"
            ex.response_headers, ex.response_body = self._json(
                400, error_body(fmt.name, str(err)))
            return
        if isinstance(fmt, ResponsesFormat):
            payload = self._resume(ex, fmt, payload)
            if payload is None:
                return
        try:
            req = fmt.read_request(payload)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as err:
            # a field of the wrong type ("messages": "hi", a number for a message):
            # the real APIs answer 400 in their error shape, not 500
            ex.status = 400
            ex.error = f"bad request: {type(err).__name__}: {err}"
            ex.response_headers, ex.response_body = self._json(400, error_body(
                fmt.name, f"invalid request body: a field has the wrong type ({err})"))
            return
        refused = unanswered_calls(fmt.name, req)
        if refused is not None:  # what the real API answers (see unanswered_calls)
            ex.status = 400
            ex.response_headers, ex.response_body = self._json(400, error_body(fmt.name,
                                                                                refused))
            return
        assert srv.script is not None
        try:
            reply = count_tokens(req, srv.script(req))
        except ForwardUpstream:
            if not srv.upstream:
                raise
            # (the script has no answer: the upstream gives it, recorded as forwarded)
            ex.request_headers = dict(self.headers.items())
            self._forward(ex, fmt)
            return
        if isinstance(fmt, ResponsesFormat) and payload.get("store") is not False:
            body = fmt.response(reply)
            srv.store(body["id"], fmt.stored_items(payload, body))
        ex.status = 200
        if not req.stream:
            ex.response_headers, ex.response_body = self._json(200, fmt.response(reply))
            return
        chunks = fmt.stream_chunks(reply, req)
        headers = {"Content-Type": fmt.stream_content_type, "Cache-Control": "no-cache"}
        self._send_head(200, headers, chunked=True)
        for c in chunks:
            self._write_chunk(c.encode())
        self._pending_end = True
        ex.response_headers = headers
        ex.chunks = chunks
        ex.response_body = json.dumps(fmt.reassemble(chunks))

    def _resume(self, ex: Exchange, fmt: ResponsesFormat,
                payload: dict[str, Any]) -> dict[str, Any] | None:
        """A Responses API request with the history its ``previous_response_id``
        names put back in (the scripts count turns); None, and a 400, for an id
        this emulator did not answer (or was told not to store)."""
        prev = payload.get("previous_response_id")
        if prev is None:
            return payload
        stored = self.server_obj.stored(str(prev))
        if stored is None:
            ex.status = 400
            ex.error = f"bad request: unknown previous_response_id {prev!r}"
            ex.response_headers, ex.response_body = self._json(400, {"error": {
                "message": f"Previous response with id '{prev}' not found.",
                "type": "invalid_request_error", "param": "previous_response_id",
                "code": "previous_response_not_found"}})
            return None
        return fmt.resume(payload, stored)

    # -- forward --------------------------------------------------------------
    def _forward(self, ex: Exchange, fmt: WireFormat | None) -> None:
        srv = self.server_obj
        up = urlsplit(srv.upstream or "")
        prefix = up.path.rstrip("/")
        target = prefix + self.path
        ex.url = f"{up.scheme}://{up.netloc}{target}"
        conn_cls = (http.client.HTTPSConnection if up.scheme == "https"
                    else http.client.HTTPConnection)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in _HOP and not k.lower().startswith("x-looptrace-")}
        headers["Accept-Encoding"] = "identity"
        body = self.raw_body  # (the bytes as they came: never re-encoded)
        try:
            conn = conn_cls(up.netloc, timeout=srv.upstream_timeout)
            conn.request(self.command, target, body=body or None, headers=headers)
            resp = conn.getresponse()
        except TimeoutError as err:
            ex.status = 504
            ex.error = f"upstream {up.netloc} sent no answer in {srv.upstream_timeout:g} s: {err}"
            ex.response_headers, ex.response_body = self._json(504, {"error": {
                "type": "proxy_error", "message": ex.error}})
            return
        except (OSError, http.client.HTTPException) as err:
            ex.status = 502
            ex.error = f"upstream {up.netloc} unreachable: {err}"
            ex.response_headers, ex.response_body = self._json(502, {"error": {
                "type": "proxy_error", "message": ex.error}})
            return
        ex.status = resp.status
        rheaders = {k: v for k, v in resp.getheaders() if k.lower() not in _HOP}
        ex.response_headers = rheaders
        ctype = resp.getheader("Content-Type", "") or ""
        streaming = "event-stream" in ctype or "ndjson" in ctype
        self._send_head(resp.status, rheaders, chunked=True)
        spool = Spool()
        try:
            self._relay(ex, resp, spool, conn)
            self._pending_end = True
            self._record_body(ex, fmt, spool, ctype, streaming=streaming)
        finally:
            spool.close()
        if resp.status >= 400 and not ex.error:
            ex.error = f"upstream answered HTTP {resp.status}"

    def _relay(self, ex: Exchange, resp: Any, spool: Spool, conn: Any) -> None:
        """The upstream's response body to the client as it arrives, and into ``spool``.
        A body cut short upstream (the connection lost, a timeout, fewer bytes than its
        Content-Length) is cut short for the client too."""
        try:
            while True:
                piece = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                if not piece:
                    break
                spool.write(piece)
                self._write_chunk(piece)
            if resp.length:  # (http.client counts down a Content-Length)
                msg = f"{resp.length} bytes short of its Content-Length"
                raise http.client.IncompleteRead(b"", resp.length) from OSError(msg)
        except TimeoutError:
            self._cut = True
            ex.error = (f"upstream response cut: nothing for "
                        f"{self.server_obj.upstream_timeout:g} s after {spool.size} bytes")
        except (OSError, http.client.HTTPException) as err:
            self._cut = True
            ex.error = f"upstream response broken after {spool.size} bytes: {err!r}"
        finally:
            conn.close()

    def _record_body(self, ex: Exchange, fmt: WireFormat | None, spool: Spool, ctype: str,
                     *, streaming: bool) -> None:
        """What the record keeps of the response: a stream reassembled (and its first
        chunks), any other body as text up to ``MAX_RECORDED_BODY``."""
        if streaming and fmt is not None:
            try:
                ex.response_body = json.dumps(fmt.reassemble(spool.chunks(fmt)))
            except MalformedStream as err:
                ex.response_body = spool.text(MAX_RECORDED_BODY)
                ex.error = ex.error or f"malformed stream: {err}"
            ex.chunks = spool.stored_chunks()
            return
        text = spool.text(MAX_RECORDED_BODY)
        ex.response_body = text
        if spool.size > MAX_RECORDED_BODY:
            ex.error = ex.error or (f"response body of {spool.size} bytes: its first "
                                    f"{MAX_RECORDED_BODY} stored")
        elif "json" in ctype or not ctype:
            try:
                json.loads(text)
            except ValueError as err:
                ex.error = ex.error or f"malformed JSON response: {err}"
        elif ex.status is not None and ex.status < 400 and fmt is not None:
            ex.error = ex.error or f"unexpected content type {ctype!r}"


def _readable(raw: bytes, encoding: str) -> str:
    """The record's copy of a request body: decompressed if it can be, decoded as UTF-8
    with bad bytes replaced (what is forwarded is ``raw`` itself)."""
    try:
        raw = decompress(raw, encoding, MAX_REQUEST)
    except BodyError:
        pass
    return raw.decode("utf-8", "replace")


def error_body(provider: str, message: str, kind: str = "invalid_request_error") -> Any:
    """An error answer in the shape the provider's real API gives it."""
    if provider == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    if provider == "ollama":
        return {"error": message}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def unanswered_calls(provider: str, req: Request) -> str | None:
    """The 400 message the real API gives a history where a tool call has no result
    (OpenAI chat completions and Responses, Anthropic), or None. Ollama's server
    accepts such a history: the model just sees a call that was never answered."""
    if provider == "ollama":
        return None
    msgs = req.messages
    for i, m in enumerate(msgs):
        if not m.tool_calls:
            continue
        answered = set()
        for later in msgs[i + 1:]:
            if later.role != "tool":
                break
            answered.add(later.tool_call_id)
        missing = [c.id for c in m.tool_calls if c.id not in answered]
        if not missing:
            continue
        ids = ", ".join(missing)
        if provider == "anthropic":  # (user and assistant alternate: assistant k is at 2k-1)
            at = 2 * sum(1 for x in msgs[:i + 1] if x.role == "assistant") - 1
            return (f"messages.{at}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {ids}. Each `tool_use` block must have a "
                    "corresponding `tool_result` block in the next message.")
        if provider == "openai-responses":
            return f"No tool output found for function call {missing[0]}."
        return ("An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {ids}")
    return None


def providers_served() -> list[str]:
    return [f"{f.name} {f.path}" for f in FORMATS.values()]
