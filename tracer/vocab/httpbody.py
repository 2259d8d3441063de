"""Request bodies read with hard limits, whatever their transfer and content encodings.

The OTLP receiver (``otel.collect``) and the recording proxy (``wire.proxy``) both
read request bodies from clients they do not control. ``read_body`` reads one
through ``Content-Length`` or ``Transfer-Encoding: chunked`` a piece at a time, so
that no single declared size (a chunk of 800 MB, a ``Content-Length`` of 10 GB) is
ever allocated before it is checked: past ``limit`` bytes it stops with a 413. A
chunk size that is not hex, a missing chunk terminator or a ``Content-Length``
that is not a number is a 400. ``deadline`` bounds the whole transfer (a client
sending one byte every few seconds holds a thread no longer than that).

``decompress`` inflates a gzip / deflate body into at most ``limit`` bytes (a
compression bomb stops there, with a 413).

Example:
    >>> body = read_body(handler.rfile, handler.headers, limit=1 << 20, deadline=30.0)
"""

from __future__ import annotations

import time
import zlib
from typing import Any, BinaryIO

PIECE = 64 * 1024
_MAX_LINE = 4096  # a chunk-size line (with extensions) longer than this is malformed


class BodyError(Exception):
    """An HTTP error answer for a request body: its status and what to say."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def read_body(rfile: Any, headers: Any, *, limit: int,
              deadline: float | None = None) -> bytes:
    """The request body (still content-encoded), at most ``limit`` bytes; raise
    ``BodyError`` (400 malformed framing, 413 over the limit, 408 past ``deadline``
    seconds from now)."""
    until = None if deadline is None else time.monotonic() + deadline
    if headers.get("Transfer-Encoding", "").strip().lower() == "chunked":
        return _chunked(rfile, limit, until)
    raw = headers.get("Content-Length")
    try:
        n = int(raw) if raw not in (None, "") else 0
    except ValueError:
        raise BodyError(400, f"invalid Content-Length {raw!r}") from None
    if n < 0:
        raise BodyError(400, f"invalid Content-Length {raw!r}")
    if n > limit:
        raise BodyError(413, f"request body of {n} bytes is over the limit of {limit} bytes")
    return _exactly(rfile, n, until)


def _exactly(rfile: BinaryIO, n: int, until: float | None) -> bytes:
    out = bytearray()
    while len(out) < n:
        _check(until)
        piece = rfile.read(min(PIECE, n - len(out)))
        if not piece:
            raise BodyError(400, f"request body ended after {len(out)} of {n} bytes")
        out += piece
    return bytes(out)


def _chunked(rfile: BinaryIO, limit: int, until: float | None) -> bytes:
    out = bytearray()
    while True:
        _check(until)
        line = rfile.readline(_MAX_LINE + 1)
        if len(line) > _MAX_LINE or not line.endswith(b"\n"):
            raise BodyError(400, "malformed chunked body: chunk-size line missing or too long")
        field = line.split(b";", 1)[0].strip()
        try:
            size = int(field, 16)
        except ValueError:
            raise BodyError(400, f"malformed chunked body: chunk size {field[:20]!r} is not "
                                 "hexadecimal") from None
        if size < 0 or field.startswith((b"-", b"+", b"0x", b"0X")):
            raise BodyError(400, f"malformed chunked body: chunk size {field[:20]!r}")
        if size == 0:
            _trailers(rfile, until)
            return bytes(out)
        if len(out) + size > limit:
            raise BodyError(413, f"request body over the limit of {limit} bytes")
        out += _exactly(rfile, size, until)
        if rfile.readline(_MAX_LINE) not in (b"\r\n", b"\n"):
            raise BodyError(400, "malformed chunked body: a chunk is not followed by CRLF")


def _trailers(rfile: BinaryIO, until: float | None) -> None:
    for _ in range(100):
        _check(until)
        line = rfile.readline(_MAX_LINE + 1)
        if line in (b"\r\n", b"\n", b""):
            return
    raise BodyError(400, "malformed chunked body: too many trailer lines")


def _check(until: float | None) -> None:
    if until is not None and time.monotonic() > until:
        raise BodyError(408, "request body not received in time")


def decompress(raw: bytes, encoding: str, limit: int) -> bytes:
    """``raw`` inflated per its ``Content-Encoding`` (gzip, deflate or none), at most
    ``limit`` bytes; raise ``BodyError`` (415 another encoding, 400 malformed, 413
    over the limit once inflated)."""
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return raw
    if enc not in ("gzip", "deflate", "x-gzip"):
        raise BodyError(415, f"unsupported Content-Encoding {encoding!r} (gzip, deflate or none)")
    # gzip (wbits 31), zlib-wrapped deflate (15), or raw deflate (-15)
    for wbits in ((31,) if enc != "deflate" else (15, -15)):
        d = zlib.decompressobj(wbits)
        try:
            out = d.decompress(raw, limit + 1)
        except zlib.error as exc:
            if wbits == 15:
                continue
            raise BodyError(400, f"malformed {enc} body: {exc}") from None
        if len(out) > limit:
            raise BodyError(413, f"request body over the limit of {limit} bytes once "
                                 "decompressed")
        if not d.eof:
            raise BodyError(400, f"malformed {enc} body: truncated")
        return out
    raise BodyError(400, f"malformed {enc} body")
