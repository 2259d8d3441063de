"""A local spool for a PostgreSQL store that cannot be written now (down, restarting,
unreachable, a connection dropped mid-batch): the writer keeps each batch it could not
commit as one file here, and sends them, oldest first, each in one transaction, once
the server is back (``tracer.db.writer``). The agent never waits for any of it.

One folder per store (the URL without its password), under ``LOOPTRACE_SPOOL_DIR``
(default ``$XDG_CACHE_HOME/looptrace/spool``, else ``~/.cache/looptrace/spool``). A
batch file is written whole (a temporary file renamed) and named by the process that
wrote it: each process sends its own in order (a run's later rows never reach the
store before its earlier ones). A dead process's files are sent by the next process
that writes to the store, which first claims them: each is renamed (``os.rename``,
atomic) to a name of the claimer's that keeps its place in the order and the dead
process's id (``T-CLAIMER-N-DEAD.json``), so that of two processes draining at once
only one gets each file, and a claimer that dies in its turn leaves them to the next.
A dead process's half-written file (``.*.tmp``) is removed, never sent. Its size is
bounded (``LOOPTRACE_SPOOL_MB``, default 512):
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

from .processes import process_gone
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


def _fields(name: str) -> tuple[int, int, str, int | None] | None:
    """A batch file's name ``T-PID-N[-DEAD].json``: its time (ns), the process that
    holds it, its number, and the dead process it was claimed from (None: its own)."""
    parts = name.removesuffix(".json").split("-")
    if len(parts) not in (3, 4) or not all(p.isdigit() for p in parts):
        return None
    return (int(parts[0]), int(parts[1]), parts[2],
            int(parts[3]) if len(parts) == 4 else None)


def _dead(pid: int, at_ns: int) -> bool:
    """Whether process ``pid``, alive at ``at_ns``, is gone (its pid reused counts)."""
    return pid != os.getpid() and process_gone(pid, at_ns / 1e9)


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

    def claim(self) -> int:
        """Take the batches of processes that are gone: each renamed to this process's
        name (atomic: of two processes claiming at once, one gets it, the other finds
        it gone); their half-written files removed. How many were claimed."""
        me, got = os.getpid(), 0
        gone: dict[int, bool] = {}  # (each process looked at once: /proc per file is slow)
        for p in self._files():
            f = _fields(p.name)
            if f is None or f[1] == me:
                continue
            if f[1] not in gone:
                gone[f[1]] = _dead(f[1], f[0])  # (its oldest file's time: the earliest
            if not gone[f[1]]:                  # it was known alive)
                continue
            t, pid, n, origin = f
            name = f"{t:020d}-{me}-{n}-{origin if origin is not None else pid}.json"
            try:
                os.rename(p, self.folder / name)
            except OSError:  # (another process claimed it first)
                continue
            got += 1
        with contextlib.suppress(OSError):
            for tmp in self.folder.glob(".*.json.tmp"):
                f = _fields(tmp.name[1:].removesuffix(".tmp"))
                if f is not None and _dead(f[1], f[0]):
                    with contextlib.suppress(OSError):
                        tmp.unlink()
        return got

    def mine(self) -> list[Path]:
        """The batches this process may send now, oldest first: its own, and those it
        claimed from processes that are gone (``claim``)."""
        self.claim()
        return self.held()

    def held(self) -> list[Path]:
        """The batches this process holds, oldest first (claims nothing)."""
        me = os.getpid()
        return [p for p in self._files() if (f := _fields(p.name)) is not None and f[1] == me]

    @staticmethod
    def origin(path: Path) -> int | None:
        """The dead process a claimed batch came from (None: this process's own)."""
        f = _fields(path.name)
        return None if f is None else f[3]

    def pending(self) -> bool:
        """Whether this process has batches waiting (then new ones wait behind them)."""
        return bool(self.held())

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
