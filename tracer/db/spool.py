"""A local spool for a PostgreSQL store that cannot be written now (down, restarting,
unreachable, a connection dropped mid-batch): the writer keeps each batch it could not
commit as one file here, and sends them, oldest first, each in one transaction, once
the server is back (``tracer.db.writer``). The agent never waits for any of it.

One folder per store (the URL without its password), under ``LOOPTRACE_SPOOL_DIR``
(default ``$XDG_CACHE_HOME/looptrace/spool``, else ``~/.cache/looptrace/spool``). A
batch file is written whole (a temporary file renamed) and named by the process that
wrote it: each process sends its own in order (a run's later rows never reach the
store before its earlier ones); a dead process's files are sent by the next process
that writes to the store. Its size is bounded (``LOOPTRACE_SPOOL_MB``, default 512):
past that, batches are dropped, and that is said once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .url import store_key

DIR_ENV = "LOOPTRACE_SPOOL_DIR"
MB_ENV = "LOOPTRACE_SPOOL_MB"
DEFAULT_MB = 512


def spool_root() -> Path:
    given = os.environ.get(DIR_ENV)
    if given:
        return Path(given)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "looptrace" / "spool"


def max_bytes() -> int:
    try:
        mb = float(os.environ.get(MB_ENV, DEFAULT_MB))
    except ValueError:
        mb = DEFAULT_MB
    return max(0, int(mb * 1024 * 1024))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


class Spool:
    """The spool folder of one store."""

    def __init__(self, db: str, root: Path | None = None, limit: int | None = None) -> None:
        key = hashlib.sha256(store_key(db).encode()).hexdigest()[:16]
        self.folder = (root or spool_root()) / key
        self.limit = max_bytes() if limit is None else limit
        self._n = 0
        self.full = False  # the last put found the spool at its bound

    def _files(self) -> list[Path]:
        try:
            return sorted(p for p in self.folder.iterdir() if p.suffix == ".json")
        except OSError:
            return []

    def size(self) -> int:
        total = 0
        for p in self._files():
            with contextlib.suppress(OSError):
                total += p.stat().st_size
        return total

    def put(self, batch: dict[str, Any]) -> bool:
        """Keep ``batch`` (JSON-able rows) as one file; False when the spool is full
        (nothing written) or the disk refused it."""
        text = json.dumps(batch, separators=(",", ":"), allow_nan=True)
        if self.size() + len(text) > self.limit:
            self.full = True
            return False
        self.full = False
        self._n += 1
        name = f"{time.time_ns():020d}-{os.getpid()}-{self._n:08d}.json"
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = self.folder / f".{name}.tmp"
            with tmp.open("w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.folder / name)
        except OSError:
            return False
        return True

    def mine(self) -> list[Path]:
        """The batches this process may send now, oldest first: its own, and those of
        processes that are gone."""
        out = []
        for p in self._files():
            try:
                pid = int(p.name.split("-")[1])
            except (IndexError, ValueError):
                continue
            if pid == os.getpid() or not _alive(pid):
                out.append(p)
        return out

    def pending(self) -> bool:
        """Whether this process has batches waiting (then new ones wait behind them)."""
        return any(int(p.name.split("-")[1]) == os.getpid() for p in self._files()
                   if p.name.count("-") >= 2 and p.name.split("-")[1].isdigit())

    def read(self, path: Path) -> dict[str, Any] | None:
        """The batch kept in ``path`` (None: gone meanwhile, or unreadable, which is
        moved aside as ``.bad`` so that it never blocks the ones after it)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise TypeError
            return data
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError):
            with contextlib.suppress(OSError):
                path.rename(path.with_suffix(".bad"))
            return None

    @staticmethod
    def done(path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    def __iter__(self) -> Iterator[Path]:
        return iter(self.mine())
