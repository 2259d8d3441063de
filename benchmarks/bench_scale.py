"""Benchmark: reading and writing a database of many runs.  (Not a pytest test.)

    uv run --frozen python benchmarks/bench_scale.py [--sizes 1000 10000 100000] [--dir DIR]

For each size, a file of that many two-lap runs (plus a subagent run for every
10th) is built by writing copies of a real recorded ``create_agent`` run through
``tracer.db.writer.Writer``, the tracer's own writer (``tests/scale_kit.py``: the
records are serialised, redacted and committed as when recording; every 7th run
fails, every 11th has no final answer, some are interrupted or still running).
Files are kept in ``--dir`` and reused when they are there. Then, per size:

- record:   the writer thread's CPU time per run (serialising, redacting, SQLite,
            checkpoints), one commit per run (as an evaluation suite records), in
            this file and in an empty one, alternately in blocks of 25 runs, 200
            runs each; and their ratio;
- size:     file bytes per run;
- open:     ``TraceDB.run(id)`` of a two-lap run (median of 50 random runs); and
            with ``build_replay`` (what the app does to open it);
- list:     one page of the Runs page: 100 top-level runs, their subagent runs and
            the count (``RunFilter(top_level=True)``); with a status filter; with a
            search for a word in 1 run of 24, and for a text in 1 run (the FTS index);
- runs CLI: ``looptrace runs --json`` as a subprocess, start-up included (median of 3);
- check:    ``looptrace check`` over every run as a subprocess: the first time (the
            findings found and kept) and again (read back): runs per second;
- search:   a search of a word in every run ("weather") as the Runs page makes it:
            the first page of 100 top-level runs, their subagent runs and the count
            up to the next page (``app.data.runs.runs_page``), median of 5;
- browser:  the Runs page in Chromium (Playwright, Debian's /usr/bin/chromium), from
            ``page.goto`` until the table and its "of N" caption show: the first
            visit after ``streamlit run`` starts the server (the 100 newest runs,
            just recorded, are checked then), a reload (median of 3), and the
            first visit after ``python -m app.serve`` starts it;
- ui:       the app as ``looptrace ui`` starts it (``app/serve.py`` run as a script):
            how long until it prints its URL, then the Runs page's first visit
            from the moment the URL is printed until its table's first row shows
            (target < 1.5 s), and the same moment as the page saw it (from the
            navigation's start: no Playwright round trips); then every page
            visited (Runs, Replay, Timeline, Presenter, Wire, Compare, each until its
            script run ends) and the server's RSS and peak RSS (target < 500 MB).
            ``--root DIR`` runs this part with another checkout's app (e.g. an
            earlier commit, ``git archive``-d there), for a before/after.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from scale_kit import records, specs, template, write_runs

from tracer.db.prune import file_bytes
from tracer.db.writer import Writer
from tracer.read.loader import TraceDB
from tracer.read.run_list import RunFilter
from tracer.read.steps import build_replay


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def build(path: Path, n: int) -> float:
    if path.exists():
        return 0.0
    tmp = path.with_name(path.name + ".part")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{tmp}{suffix}").unlink(missing_ok=True)
    t = time.perf_counter()
    write_runs(tmp, n)
    import sqlite3

    conn = sqlite3.connect(tmp)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    tmp.rename(path)
    return time.perf_counter() - t


class _TimedWriter(Writer):
    """The tracer's writer, adding up the CPU time its thread spends per run: building
    the rows (serialising, redacting) and committing them (SQLite, checkpoints included)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.cpu = 0.0

    def _build(self, items: list[Any], into: Any) -> None:
        t = time.thread_time()
        super()._build(items, into)
        self.cpu += time.thread_time() - t

    def _commit(self, rows: Any) -> bool:
        t = time.thread_time()
        try:
            return super()._commit(rows)
        finally:
            self.cpu += time.thread_time() - t


def record_cost(path: Path, empty: Path, rounds: int = 8, block: int = 25) -> tuple[float, float]:
    """The writer thread's CPU time per run (one commit per run, as an evaluation suite
    records: put a run's records, flush), in ``path`` and in ``empty``: blocks of
    ``block`` runs, alternately; the total over all blocks, per run."""
    run = template()
    with TraceDB(path) as db:  # (new runs start after every run in the file, as they do)
        last = db.runs(limit=1)[0].started_at or 0.0
    fresh = [s for s in specs(rounds * block * 2 * 2, seed=f"rec-{time.time()}", t0=last + 60)
             if s.parent_id is None and s.status != "running"]
    writers = {p: _TimedWriter(str(p)) for p in (path, empty)}
    done = {p: 0 for p in writers}
    try:
        k = 0
        for _ in range(rounds):
            for p, w in writers.items():
                batch = [records(s, run) for s in fresh[k:k + block]]
                k += block
                for recs in batch:
                    for rec in recs:
                        w.put(rec)
                    w.flush()
                done[p] += len(batch)
    finally:
        for w in writers.values():
            w.close()
    return writers[path].cpu / done[path], writers[empty].cpu / done[empty]


def open_cost(db: TraceDB, ids: list[str]) -> tuple[float, float]:
    loads, replays = [], []
    for rid in ids:
        t = time.perf_counter()
        run = db.run(rid)
        loads.append(time.perf_counter() - t)
        build_replay(run)
        replays.append(time.perf_counter() - t)
    return statistics.median(loads), statistics.median(replays)


def list_cost(db: TraceDB, flt: RunFilter, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        page = db.runs(flt, limit=100)
        db.count_runs(flt)
        if flt.top_level:
            db.subagent_runs([r.id for r in page])
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cli(*args: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tracer", *args], cwd=ROOT, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


@contextlib.contextmanager
def preloaded_server(db: Path) -> Iterator[str]:
    """The app started by ``python -m app.serve`` (pandas and the app imported
    before the first visit), on a free port; its base URL."""
    from browser_support import free_port, wait_healthy

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.serve", "--server.address", "127.0.0.1", "--server.port",
         str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env={**os.environ, "LOOPTRACE_DB": str(db)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout=120)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def browser_times(path: Path, total_roots: int) -> dict[str, float] | None:
    """Seconds from ``page.goto`` until the Runs page's table is drawn (its caption
    and the data grid's canvas): the first visit after ``streamlit run`` started the
    server (a fresh browser profile), a reload (median of 3), and the first visit
    after ``python -m app.serve`` started it."""
    try:
        from browser_support import CHROMIUM_ARGS, chromium_path, streamlit_server, wait_connected
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    exe = chromium_path()
    if exe is None:
        return None
    caption = f"of {total_roots:,}"

    def visits(url: str, n: int) -> list[float]:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            out = []
            for _ in range(n):
                t = time.perf_counter()
                page.goto(url + "/")
                wait_connected(page, timeout=120_000)
                page.get_by_text(caption).first.wait_for(timeout=120_000)
                page.locator(TABLE).first.wait_for(state="visible", timeout=120_000)
                out.append(time.perf_counter() - t)
            return out
        finally:
            browser.close()

    with sync_playwright() as pw:
        with streamlit_server(db=path) as url:
            plain = visits(url, 4)
        with preloaded_server(path) as url:
            preloaded = visits(url, 1)
    return {"first": plain[0], "reload": statistics.median(plain[1:]),
            "first_preloaded": preloaded[0]}


def search_cost(db: TraceDB, word: str, repeat: int = 5) -> float:
    """A search as the Runs page makes it (``app.data.runs.runs_page``): the first page of
    100 top-level runs, their subagent runs, and the count up to the next page."""
    flt = RunFilter(top_level=True, search=word)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        page = db.runs(flt, limit=100)
        db.count_runs(flt, at_most=101)
        db.subagent_runs([r.id for r in page])
        times.append(time.perf_counter() - t)
    return statistics.median(times)


PAGES = ("runs", "replay", "timeline", "presenter", "wire", "compare")
# The Runs page's table drawn: its first row (app/screens/runs/runs_grid.py, in a component's shadow
# root: Playwright's CSS reaches in), or the canvas of the st.dataframe it replaced (an
# earlier checkout's, ``--root``).
TABLE = '[data-testid="lt-runs-table"] tbody tr, [data-testid="stDataFrame"] canvas'
# The same moment seen in the page (``performance.now()``: from the navigation's start),
# checked every frame: Playwright's own waits add their round trips on a loaded machine.
TABLE_SHOWN = """
(() => {
  const probe = () => {
    const grid = document.querySelector('[data-testid="stDataFrame"] [role="gridcell"]');
    const hosts = document.querySelectorAll('[data-testid="stBidiComponentIsolated"]');
    const rows = [...hosts].some((h) => h.shadowRoot
      && h.shadowRoot.querySelector('[data-testid="lt-runs-table"] tbody tr'));
    if (grid || rows) window.__ltTable = performance.now();
    else requestAnimationFrame(probe);
  };
  requestAnimationFrame(probe);
})();
"""


def _rss_mb(pid: int) -> tuple[float, float]:
    """(RSS, peak RSS) of process ``pid``, MB."""
    fields = dict(line.split(":", 1) for line in
                  Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)


def ui_times(path: Path, total_roots: int, root: Path) -> dict[str, Any] | None:
    """The app as ``looptrace ui`` starts it: seconds until its URL is printed; the Runs
    page's first visit counted from then; the server's RSS after every page."""
    from browser_support import CHROMIUM_ARGS, chromium_path, ui_server, wait_connected
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    if exe is None:
        return None
    out: dict[str, Any] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.add_init_script(TABLE_SHOWN)
        try:
            with ui_server(path, root=root) as (url, printed_s, pid):
                t = time.perf_counter()  # (the URL has just been printed)
                page.goto(url + "/")
                wait_connected(page, timeout=120_000)
                page.get_by_text(f"of {total_roots:,}").first.wait_for(timeout=120_000)
                page.locator(TABLE).first.wait_for(state="visible", timeout=120_000)
                out["first"] = time.perf_counter() - t
                page.wait_for_function("window.__ltTable !== undefined", timeout=120_000)
                out["first_in_page"] = page.evaluate("window.__ltTable") / 1000
                out["printed"] = printed_s
                out["rss_start"] = _rss_mb(pid)[0]
                for name in PAGES:
                    t = time.perf_counter()
                    try:
                        page.goto(f"{url}/{name}")
                        wait_connected(page, timeout=120_000)
                        page.locator('[data-testid="stMain"] [data-testid="stElementContainer"]'
                                     ).first.wait_for(timeout=120_000)
                        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]'
                                     ).wait_for(timeout=120_000)
                        out[f"page_{name}"] = time.perf_counter() - t
                    except Exception as exc:  # noqa: BLE001 - the other pages still count
                        print(f"/{name}: {str(exc).splitlines()[0]}", flush=True)
                    print(f"/{name} visited, RSS {_rss_mb(pid)[0]:.0f} MB", flush=True)
                time.sleep(3.0)  # (background work a page started: a check, the adapters)
                out["rss"], out["rss_peak"] = _rss_mb(pid)
        finally:
            browser.close()
    return out


def bench(n: int, folder: Path, empty: Path, browser: bool,
          root: Path = ROOT, only_ui: bool = False) -> dict[str, Any]:
    path = folder / f"scale-{n}.db"
    built = build(path, n)
    out: dict[str, Any] = {"runs": n, "built_s": built}
    with TraceDB(path) as db:
        total = db.count_runs()
        roots = db.count_runs(RunFilter(top_level=True))
        out["total"] = total
        out["search_common"] = search_cost(db, "weather")
    if only_ui:
        out["ui"] = ui_times(path, roots, root)
        return out
    with TraceDB(path) as db:
        out["bytes_per_run"] = file_bytes(path) / total
        rng = random.Random(n)
        one_lap = [str(r[0]) for r in db.query(
            "SELECT id FROM runs WHERE parent_id IS NULL AND status = 'completed'"
            " LIMIT 2000")]
        out["open"], out["open_replay"] = open_cost(db, rng.sample(one_lap, 50))
        out["list"] = list_cost(db, RunFilter(top_level=True))
        out["list_status"] = list_cost(db, RunFilter(top_level=True, status=("error",)))
        out["list_search"] = list_cost(db, RunFilter(top_level=True, search="hello"))
        out["list_search_rare"] = list_cost(db, RunFilter(search="city number 77?"))
    out["runs_json"] = statistics.median(cli("runs", "--db", str(path), "--json")
                                         for _ in range(3))
    first = cli("check", "--db", str(path))
    again = cli("check", "--db", str(path))
    out["check_first"] = total / first
    out["check_again"] = total / again
    out["record"], out["record_empty"] = record_cost(path, empty)
    if browser:
        with TraceDB(path) as db:  # (the recording above added runs)
            roots = db.count_runs(RunFilter(top_level=True))
        out["browser"] = browser_times(path, roots)
        out["ui"] = ui_times(path, roots, root)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "looptrace-bench-scale"))
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--only-ui", action="store_true",
                    help="only the common-word search and the `looptrace ui` visits")
    ap.add_argument("--root", default=str(ROOT),
                    help="the checkout whose app/serve.py the ui visits start (default: this)")
    args = ap.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    empty = folder / f"empty-{os.getpid()}.db"
    rows = []
    try:
        for n in args.sizes:
            r = bench(n, folder, empty, not args.no_browser, Path(args.root), args.only_ui)
            rows.append(r)
            print(r, flush=True)
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{empty}{suffix}").unlink(missing_ok=True)
    print()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"ui: app/serve.py of {args.root}")
    print("| runs in the file | " + " | ".join(f"{r['total']:,}" for r in rows) + " |")
    print("| --- |" + " --- |" * len(rows))

    def line(label: str, fmt: Any) -> None:
        print(f"| {label} | " + " | ".join(fmt(r) for r in rows) + " |")

    def get(key: str, fmt: Any) -> Any:
        return lambda r: fmt(r[key]) if r.get(key) is not None else "not measured"

    def ui(key: str, fmt: Any) -> Any:
        return lambda r: (fmt(r["ui"][key]) if r.get("ui") and r["ui"].get(key) is not None
                          else "not measured")

    line("search a word in every run: first page + count (target < 50 ms)",
         get("search_common", ms))
    line("`looptrace ui`: until it prints its URL", ui("printed", lambda v: f"{v:.1f} s"))
    line("... Runs page first visit from the URL printed (target < 1.5 s)", ui("first", ms))
    line("... the same in the page: navigation start to the table's first row",
         ui("first_in_page", ms))
    for name in PAGES:
        line(f"... then /{name}, until its script run ends", ui(f"page_{name}", ms))
    line("... server RSS after the first visit", ui("rss_start", lambda v: f"{v:.0f} MB"))
    line("... server RSS after every page (target < 500 MB)", ui("rss", lambda v: f"{v:.0f} MB"))
    line("... server peak RSS", ui("rss_peak", lambda v: f"{v:.0f} MB"))
    if args.only_ui:
        return
    line("`looptrace check`, first time (found and kept)", lambda r: f"{r['check_first']:,.0f} runs/s")
    line("`looptrace check`, again (read back)", lambda r: f"{r['check_again']:,.0f} runs/s")
    line("Runs page data: 100 top-level runs + subagents + count", lambda r: ms(r["list"]))
    line("... with a status filter", lambda r: ms(r["list_status"]))
    line("... searching a word in 1 run of 24", lambda r: ms(r["list_search"]))
    line("... searching a text in 1 run", lambda r: ms(r["list_search_rare"]))
    line("`looptrace runs --json` (subprocess, start-up included)", lambda r: ms(r["runs_json"]))
    line("open one run: `TraceDB.run`", lambda r: ms(r["open"]))
    line("open one run and build its replay", lambda r: ms(r["open_replay"]))
    def browser(key: str) -> Any:
        return lambda r: ms(r["browser"][key]) if r.get("browser") else "not measured"

    line("Runs page in Chromium, until the table shows: first visit (`streamlit run`)",
         browser("first"))
    line("... first visit (`python -m app.serve`: pandas and the app imported at start)",
         browser("first_preloaded"))
    line("... a reload", browser("reload"))
    line("recording: the writer's CPU per run (one commit per run)", lambda r: ms(r["record"]))
    line("... in an empty file, interleaved", lambda r: ms(r["record_empty"]))
    line("... ratio", lambda r: f"{r['record'] / r['record_empty']:.2f}x")
    line("file size per run", lambda r: f"{r['bytes_per_run'] / 1000:.1f} KB")


if __name__ == "__main__":
    main()
