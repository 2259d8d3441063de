"""Request bodies read with hard limits, whatever their transfer and content encodings.

The OTLP receiver (``otel.collect``) and the recording proxy (``wire.proxy``) both
read request bodies from clients they do not control. ``read_body`` reads one
through ``Content-Length`` or ``Transfer-Encoding: chunked`` a piece at a time, so
that no single declared size (a chunk of 800 MB, a ``Content-Length`` of 10 GB) is
ever allocated before it is checked: past ``limit`` bytes it stops with a 413. A
chunk size that is not hex, a missing chunk terminator or a ``Content-Length``
that is not a number is a 400; so are both framings in one request and two
different ``Content-Length`` values (RFC 9112 6.3: the body's end is unknown; the
servers close the connection after any refusal). ``deadline`` bounds the whole
transfer (a client sending one byte every few seconds holds a thread no longer than
that).

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
    codings = _values(headers, "Transfer-Encoding")
    lengths = _values(headers, "Content-Length")
    if codings:
        # RFC 9112 6.1, 6.3: both framings at once is how requests are smuggled
        if lengths or headers.get("Content-Length") is not None:
            raise BodyError(400, "request has both Content-Length and Transfer-Encoding")
        if codings != ["chunked"]:
            raise BodyError(400 if codings[-1] != "chunked" else 501,
                            f"unsupported Transfer-Encoding {', '.join(codings)!r} "
                            "(chunked only)")
        return _chunked(rfile, limit, until)
    for raw in lengths:
        if not (raw.isascii() and raw.isdigit()):
            raise BodyError(400, f"invalid Content-Length {raw!r}")
    if len({int(raw) for raw in lengths}) > 1:  # RFC 9110 8.6: "5, 7" is unrecoverable
        raise BodyError(400, f"conflicting Content-Length values {', '.join(lengths)!r}")
    n = int(lengths[0]) if lengths else 0
    if n > limit:
        raise BodyError(413, f"request body of {n} bytes is over the limit of {limit} bytes")
    return _exactly(rfile, n, until)


def _values(headers: Any, name: str) -> list[str]:
    """Every comma-separated value of every ``name`` header, stripped, empty ones
    left out (lowercased: only ``Transfer-Encoding``'s codings and digits are read)."""
    fields = headers.get_all(name) if hasattr(headers, "get_all") else [headers.get(name)]
    return [v.strip().lower() for f in fields or () if f is not None
            for v in str(f).split(",") if v.strip()]


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
