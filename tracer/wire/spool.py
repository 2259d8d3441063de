"""A response body as the proxy relays it, held in bounded memory for the record.

The proxy passes every byte to its client as it arrives and keeps a copy for the
wire row. ``Spool`` keeps that copy in memory up to ``MEMORY`` bytes and on disk
past it (a temporary file, deleted on close), so a 200 MB stream costs a few MB
of RAM. What the record holds of it:

- ``chunks(fmt)``: the stream split into its events (SSE blocks, NDJSON lines) one
  at a time, read back from the spool, for ``fmt.reassemble`` (which walks them
  once): the reassembled response is stored whole;
- ``kept_chunks``: the raw chunks the row stores, the first ``MAX_CHUNKS`` of them
  (and ``MAX_CHUNK_BYTES`` of text), then one line saying how many were left out;
- ``text(limit)``: the body as text, its first ``limit`` bytes (a JSON answer is
  stored whole below the limit).
"""

from __future__ import annotations

import codecs
import tempfile
from collections.abc import Iterator
from typing import Any

MEMORY = 4 * 1024 * 1024  # bytes held in memory before the spool goes to disk
MAX_CHUNKS = 2000  # raw chunks a wire row stores of one stream ...
MAX_CHUNK_BYTES = 2 * 1024 * 1024  # ... and of their text
READ = 1024 * 1024


class Spool:
    """The bytes of one response, written as relayed, read back for the record."""

    def __init__(self) -> None:
        self._file: Any = tempfile.SpooledTemporaryFile(max_size=MEMORY)  # noqa: SIM115
        self.size = 0
        self.kept_chunks: list[str] = []
        self.left_out = 0  # chunks not kept
        self.left_out_bytes = 0

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self.size += len(data)

    def close(self) -> None:
        self._file.close()

    def text(self, limit: int) -> str:
        """The body's first ``limit`` bytes as text (UTF-8, bad bytes replaced)."""
        self._file.seek(0)
        head: bytes = self._file.read(limit)
        return head.decode("utf-8", "replace")

    def chunks(self, fmt: Any) -> Iterator[str]:
        """The stream's chunks as ``fmt.split_stream`` frames them, one at a time; the
        first ones are kept (``kept_chunks``), the rest counted."""
        sep = "\n" if fmt.split_stream("a\nb") == ["a\n", "b\n"] else "\n\n"
        decode = codecs.getincrementaldecoder("utf-8")("replace")
        self._file.seek(0)
        rest = ""
        kept_bytes = 0
        while True:
            piece = self._file.read(READ)
            text = rest + decode.decode(piece, final=not piece)
            if piece and text.endswith("\r"):  # (a CRLF cut in two)
                text, rest = text[:-1], "\r"
            else:
                rest = ""
            text = text.replace("\r\n", "\n")
            if piece:
                cut = text.rfind(sep)
                whole, rest = (text[:cut + len(sep)], text[cut + len(sep):] + rest) if (
                    cut >= 0) else ("", text + rest)
            else:
                whole = text
            for chunk in fmt.split_stream(whole) if whole else ():
                if len(self.kept_chunks) < MAX_CHUNKS and kept_bytes < MAX_CHUNK_BYTES:
                    self.kept_chunks.append(chunk)
                    kept_bytes += len(chunk)
                else:
                    self.left_out += 1
                    self.left_out_bytes += len(chunk)
                yield chunk
            if not piece:
                return

    def stored_chunks(self) -> list[str]:
        """``kept_chunks``, with a last line saying what was left out (if anything)."""
        if not self.left_out:
            return self.kept_chunks
        return [*self.kept_chunks, (f"[looptrace: {self.left_out} more chunks "
                                   f"({self.left_out_bytes} bytes) not stored; the response "
                                   "body holds the stream reassembled]")]
