"""genai-prices' answers, kept between processes, so that a runs list whose calls were
priced before does not import genai-prices again (``tracer.read.cost``).

Importing ``genai_prices`` and loading its table takes 0.6 to 1.8 s (more where Python
writes no bytecode), most of ``looptrace runs``' time. Its answer for one model call
depends only on what it was given (token counts, model, provider, the call's time) and
on the table installed: each answer is kept in a small JSON file in the user's cache
folder, named after the installed table's file (its size and time) and ``FORMAT``, so
that upgrading genai-prices, or a looptrace that asks it otherwise, starts a new one. An answer read back is the one genai-prices gave,
to the last digit (amounts are kept as decimal strings).

The folder: ``$LOOPTRACE_CACHE_DIR``, else ``$XDG_CACHE_HOME/looptrace``, else
``~/.cache/looptrace``. A folder that cannot be written leaves the answers in memory.
The user's own prices (``--prices``) are never kept: they come first, and change.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path

__all__ = ["CACHE_ENV", "Answer", "PriceMemo", "cache_dir", "memo"]

CACHE_ENV = "LOOPTRACE_CACHE_DIR"
# (part of the file's name: a looptrace that asks genai-prices otherwise, or words its
# answers otherwise, changes it and starts a new file)
FORMAT = 1
MAX_ANSWERS = 20_000  # (a file of about 2 MB; the oldest answers go first)
MAX_FILE_BYTES = 16 * 2**20  # a bigger file is not ours as written: not read

# (total, input, output, why unknown, priced by), as ``Prices.price`` returns them
Answer = tuple[Decimal | None, Decimal | None, Decimal | None, str | None, str | None]


def cache_dir() -> Path:
    """The folder of looptrace's cache files."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "looptrace"


@cache
def _table_stamp() -> str | None:
    """The installed genai-prices table's identity (its data file's size and time),
    found without importing it, once a process; None when it is not installed."""
    try:
        spec = importlib.util.find_spec("genai_prices")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        st = os.stat(Path(next(iter(spec.submodule_search_locations))) / "data.py")
    except (OSError, StopIteration):
        return None
    return f"{st.st_size}-{st.st_mtime_ns}"


def _key(tokens: Mapping[str, int], model: str, provider: object, ts: float) -> str:
    return json.dumps([model, provider, repr(ts), sorted(tokens.items())],
                      separators=(",", ":"))


def _dec(v: object) -> Decimal | None:
    """An amount read back: a finite number of dollars from 0, or None; anything else
    (``NaN``, ``sNaN``, ``-1``, ``Infinity``: not a price) is ``ValueError``."""
    if not isinstance(v, str):
        return None
    d = Decimal(v)
    if not d.is_finite() or d < 0:
        raise ValueError(v)
    return d


class PriceMemo:
    """genai-prices' answers by what it was asked: in memory, and in ``path`` (None:
    in memory only), read on first use and written back by ``save``."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._answers: dict[str, list[str | None]] | None = None
        self._new = 0
        self._lock = threading.Lock()

    def _load(self) -> dict[str, list[str | None]]:
        if self._answers is None:
            answers: dict[str, list[str | None]] = {}
            if self.path is not None:
                with contextlib.suppress(OSError, ValueError):
                    if self.path.stat().st_size > MAX_FILE_BYTES:
                        raise ValueError("too big")
                    data = json.loads(self.path.read_text("utf-8"))
                    if isinstance(data, dict):
                        answers = {k: v for k, v in data.items()
                                   if isinstance(v, list) and len(v) == 5}
            self._answers = answers
        return self._answers

    def get(self, tokens: Mapping[str, int], model: str, provider: object,
            ts: float | None) -> Answer | None:
        """The answer kept for this call, or None (never asked, or no time: genai-prices
        then prices it as of now, which changes). ``provider``: whatever names the
        provider in the question (JSON)."""
        if ts is None:
            return None
        with self._lock:
            a = self._load().get(_key(tokens, model, provider, ts))
        if a is None:
            return None
        if not all(v is None or isinstance(v, str) for v in a):
            return None  # (a damaged file: ask genai-prices)
        try:  # (a number that is not a price: NaN, sNaN, negative or infinite)
            return _dec(a[0]), _dec(a[1]), _dec(a[2]), a[3], a[4]
        except (InvalidOperation, ValueError):  # (a damaged file: ask genai-prices)
            return None

    def put(self, tokens: Mapping[str, int], model: str, provider: object,
            ts: float | None, answer: Answer) -> None:
        if ts is None:
            return
        kept = [None if v is None else str(v) for v in answer]
        with self._lock:
            self._load()[_key(tokens, model, provider, ts)] = kept
            self._new += 1

    def save(self) -> None:
        """Write the answers found since the last save (the newest ``MAX_ANSWERS``,
        with what another process wrote meanwhile); quietly nothing when the folder
        cannot be written."""
        if self.path is None:
            return
        with self._lock:
            if not self._new or self._answers is None:
                return
            mine = self._answers
            self._new = 0
            theirs = PriceMemo(self.path)._load()
            merged = {**theirs, **mine}
            if len(merged) > MAX_ANSWERS:
                merged = dict(list(merged.items())[-MAX_ANSWERS:])
            self._answers = merged
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".prices-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(merged, f, separators=(",", ":"))
                os.replace(tmp, self.path)
            except OSError:
                Path(tmp).unlink(missing_ok=True)
                raise


_memos: dict[tuple[str, str | None], PriceMemo] = {}
_memos_lock = threading.Lock()


def memo() -> PriceMemo:
    """This process's memo of genai-prices' answers, for the cache folder and the table
    installed now (written back at exit as well)."""
    stamp = _table_stamp()
    folder = str(cache_dir())
    with _memos_lock:
        m = _memos.get((folder, stamp))
        if m is None:
            path = Path(folder) / f"genai-prices-{stamp}-{FORMAT}.json" if stamp else None
            m = _memos[(folder, stamp)] = PriceMemo(path)
            atexit.register(m.save)
    return m
