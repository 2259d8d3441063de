"""Export as runs finish: watch a database and send each run tree once it has ended.

``follow(db, url)`` polls the runs table for root runs that are no longer
``running`` and sends each (with its subagent runs) to the OTLP endpoint. What
was sent is remembered in a side file next to the database
(``<db>.otlp-sent.jsonl``: one line per run sent, with the endpoint and how the
run stood), so a restart does not send it again, while a run that changed since
(an interrupted run resumed and finished) is sent again, and the receiver
replaces it. A send that fails is retried at the next poll; nothing is marked
sent until the endpoint accepted it. The database is only read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from tracer.errors import LooptraceError, OtlpExportError
from tracer.read.loader import RunSummary, TraceDB

from .export import DEFAULT_TIMEOUT, send_spans, traces_url
from .runspans import run_spans


def ledger_path(db_path: str | Path) -> Path:
    return Path(str(db_path) + ".otlp-sent.jsonl")


def _stamp(run: RunSummary) -> str:
    """How a finished run stands: it changes if the run is resumed and ends again."""
    return f"{run.status}:{run.ended_at!r}:{run.events}"


class Ledger:
    """The runs already sent to each endpoint (an append-only JSON Lines side file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sent: dict[tuple[str, str], str] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                    self.sent[(rec["url"], rec["run"])] = rec["stamp"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a crash: that run is sent again

    def is_sent(self, url: str, run: RunSummary) -> bool:
        return self.sent.get((url, run.id)) == _stamp(run)

    def mark(self, url: str, run: RunSummary) -> None:
        stamp = _stamp(run)
        self.sent[(url, run.id)] = stamp
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"url": url, "run": run.id, "stamp": stamp}) + "\n")


def send_finished(db_path: str | Path, url: str, ledger: Ledger, *,
                  headers: dict[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT,
                  service: str | None = None,
                  on_sent: Callable[[RunSummary, int], None] | None = None,
                  on_error: Callable[[RunSummary, Exception], None] | None = None) -> int:
    """One poll: send every finished root run not sent yet; return how many were sent."""
    endpoint = traces_url(url)
    count = 0
    with TraceDB(db_path) as db:
        runs = [r for r in db.runs() if r.parent_id is None and r.status != "running"]
        runs.sort(key=lambda r: r.ended_at or r.started_at or 0)
        for run in runs:
            if ledger.is_sent(endpoint, run):
                continue
            try:
                n = send_spans(run_spans(db, run.id, service), endpoint, headers=headers, timeout=timeout)
            except OtlpExportError as exc:
                if on_error is not None:
                    on_error(run, exc)
                break  # the endpoint is down: try again at the next poll, in order
            ledger.mark(endpoint, run)
            count += 1
            if on_sent is not None:
                on_sent(run, n)
    return count


def follow(db_path: str | Path, url: str, *, interval: float = 1.0,
           stop: threading.Event | None = None, headers: dict[str, str] | None = None,
           timeout: float = DEFAULT_TIMEOUT, service: str | None = None,
           on_sent: Callable[[RunSummary, int], None] | None = None,
           on_error: Callable[[RunSummary | None, Exception], None] | None = None) -> int:
    """Poll ``db_path`` every ``interval`` seconds until ``stop`` is set (or Ctrl-C);
    return how many runs were sent."""
    url = traces_url(url)  # a bad URL fails here, once
    stop = stop or threading.Event()
    ledger = Ledger(ledger_path(db_path))
    total = 0
    while not stop.is_set():
        try:
            total += send_finished(db_path, url, ledger, headers=headers, timeout=timeout,
                                   service=service, on_sent=on_sent, on_error=on_error)
        except LooptraceError as exc:  # no database yet, locked ...: wait for it
            if on_error is not None and not isinstance(exc, OtlpExportError):
                on_error(None, exc)
        stop.wait(interval)
    return total
