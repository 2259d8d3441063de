"""Benchmark: what does tracing cost a real ``create_agent`` loop?  (Not a pytest test.)

    uv run python benchmarks/bench_tracer.py [--runs N] [--quick] [--back-to-back | --group | --peers]
        [--db postgresql://...]   (looptrace writing to that store too, beside SQLite)

Scenarios ("lap" as the glossary counts it: one model call and what it asked for): 1x1,
2 laps (2 model calls, 1 tool call), and 10x3, 11 laps (10 of them asking for 3 parallel
tool calls), both a real ``create_agent`` driven by a scripted model. Variants are interleaved run by run, in a
new shuffled order each round (seeded), so that drift in the machine's load, and what the
run before leaves in the CPU caches, hit every variant alike:

  baseline      no middleware, no callbacks
  floor         a do-nothing middleware with all six hooks (sync and async twins)
  wrap floor    a do-nothing middleware with the two wrap hooks only (lean mode's floor)
  looptrace     TraceMiddleware (writes to SQLite on its background thread)
  lean          TraceMiddleware(lean=True): wrap hooks only
  collector     LangChain's in-memory RunCollectorCallbackHandler
  openinference OpenInference's LangChain instrumentation + in-memory OTel span exporter

Each run is measured two ways: the wall time of ``invoke``, which is what the agent feels
and what the targets are about (the writer commits on its own thread, off the agent's
path), and the CPU time of the whole process from the start of ``invoke`` until the
tracer's writer has committed the run, which adds the writer's work (serialising,
redacting, SQLite): the total cost of tracing to a machine that is busy anyway. Medians.
Interleaved, each run is flushed (one commit per run, the writer's worst case); back to
back, a block of runs is flushed once at its end and its CPU time shared by its runs
(the writer's group commit, as when an evaluation suite runs). A peer's flush (its
exporter's) counts the same way. ``--group``: interleaved, but no flush after a run: the
writers commit on their own timer (as when an agent runs with the tracer on); each run's
CPU leaves out what the writer threads did meanwhile (their own CPU clocks), and each
writer's CPU over the whole measurement is shared by its variant's runs.
On a 2-core machine the 2-lap ratios move by a few hundredths from one invocation to the
next (a 2-lap run is about 3 ms): run it twice before reading a difference that small.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the test kits

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.record.middleware import TraceBase
from tracer.record.watch import _LIVE as _WATCHED


@tool
def get_price(item: str) -> str:
    """Price of an item."""
    return f"{item}: 10 EUR"


def shape(tool_laps: int, width: int) -> str:
    """A scenario as the glossary counts it: ``scripted(tool_laps, width)`` asks for
    ``width`` tool calls ``tool_laps`` times, then answers: ``tool_laps + 1`` model calls,
    each a lap ("1x1" is 2 laps, "10x3" is 11)."""
    laps, calls = tool_laps + 1, tool_laps * width
    at_once = f", {width} at a time" if width > 1 else ""
    return (f"{laps} laps ({laps} model calls, {calls} tool call{'s' if calls != 1 else ''}"
            f"{at_once})")


def scripted(laps: int, width: int) -> ScriptedChatModel:
    turns = [AIMessage(content=f"lap {lap}", tool_calls=[
        call("get_price", {"item": f"item-{lap}-{j}"}, f"c{lap}-{j}") for j in range(width)])
        for lap in range(laps)]
    turns.append(AIMessage(content="All priced."))
    return ScriptedChatModel(script=turn_script(turns))


class WrapOnly(AgentMiddleware):  # type: ignore[type-arg]
    """The two wrap hooks, sync and async, doing nothing: the floor of the lean mode."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


class DoNothing(WrapOnly):
    """All six hooks, sync and async, doing nothing: the floor any middleware tracer pays."""

    def before_agent(self, state: Any, runtime: Any) -> None:
        return None

    def before_model(self, state: Any, runtime: Any) -> None:
        return None

    def after_model(self, state: Any, runtime: Any) -> None:
        return None

    def after_agent(self, state: Any, runtime: Any) -> None:
        return None

    async def abefore_agent(self, state: Any, runtime: Any) -> None:
        return None

    async def abefore_model(self, state: Any, runtime: Any) -> None:
        return None

    async def aafter_model(self, state: Any, runtime: Any) -> None:
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> None:
        return None


class Variant:
    """One way of running the agent; ``before``/``after`` run outside the timed region."""

    def __init__(self, name: str, agent: Any, *, config: Any = None, trace: Any = None,
                 setup: Any = None, teardown: Any = None, check: Any = None) -> None:
        self.name = name
        self.agent = agent
        self.config = config
        self.trace = trace
        self.setup = setup
        self.teardown = teardown
        self.check = check
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.looptrace = isinstance(trace, TraceBase)

    def run_once(self, question: str, flush: bool = True,
                 others: Any = None) -> None:
        if self.setup:
            self.setup()
        config = self.config() if callable(self.config) else None
        # looptrace's invocation watcher (``tracer.record.watch``) is in every callback manager
        # while a TraceMiddleware is alive: a cost of looptrace, not of the floor or a
        # peer, so it is switched off around their runs.
        live = None if self.looptrace else set(_WATCHED)
        if live:
            _WATCHED.clear()
        x0 = others() if others else 0.0
        c0 = time.process_time()
        w0 = time.perf_counter()
        try:
            self.agent.invoke({"messages": [("user", question)]}, config=config)
        finally:
            if live:
                _WATCHED.update(live)
        w1 = time.perf_counter()
        if self.trace is not None and flush:
            self.trace.flush()  # the writer's work is part of the cost
        c1 = time.process_time()
        if others:  # (the writers' work in this window is shared by their own runs)
            c1 -= others() - x0
        if self.teardown:
            self.teardown()
        if self.check:
            self.check(config)
        self.wall.append((w1 - w0) * 1000)
        self.cpu.append((c1 - c0) * 1000)


def build_variants(laps: int, width: int, tmp: Path) -> list[Variant]:
    from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

    def agent(mw: list[Any]) -> Any:
        return create_agent(scripted(laps, width), tools=[get_price], middleware=mw)

    trace = TraceMiddleware(db=tmp / f"bench-{laps}x{width}.db")
    lean = TraceMiddleware(db=tmp / f"bench-lean-{laps}x{width}.db", lean=True,
                           name="LeanTrace")
    armed = TraceMiddleware(db=tmp / f"bench-debug-{laps}x{width}.db", debug=True,
                            name="DebugTrace")
    variants = [
        Variant("baseline", agent([])),
        Variant("floor (6 no-op hooks)", agent([DoNothing()])),
        Variant("floor (2 no-op wrap hooks)", agent([WrapOnly()])),
        Variant("looptrace", agent([trace]), trace=trace),
        *([Variant(f"looptrace on {engine_of_url(OTHER_DB[0])}", agent([other]), trace=other)
           for other in [TraceMiddleware(db=OTHER_DB[0], name="OtherTrace")]]
          if OTHER_DB[0] else []),
        Variant("looptrace lean", agent([lean]), trace=lean),
        # the debugger armed with no breakpoint that hits (it still reads the
        # breakpoints armed from outside every half second): its cost per hook
        Variant("looptrace debug armed", agent([armed]), trace=armed),
        Variant("RunCollector (in-memory)", agent([]),
                config=lambda: {"callbacks": [RunCollectorCallbackHandler()]},
                check=lambda cfg: _nonempty(cfg["callbacks"][0].traced_runs)),
    ]
    oi = _openinference(agent([]))
    if oi is not None:
        variants.append(oi)
    return variants


def _wrap_layers(n: int) -> list[Any]:
    """``n`` do-nothing wrap layers with names of their own (a real stack's PII,
    context editing, fallback, retry ... without their work)."""
    return [type(f"Layer{i}", (WrapOnly,), {})() for i in range(n)]


def build_layer_variants(laps: int, width: int, tmp: Path, n: int = 4) -> list[Variant]:
    """The cost of ``trace.around``: a probe inside each of ``n`` wrap layers."""

    def agent(mw: list[Any]) -> Any:
        return create_agent(scripted(laps, width), tools=[get_price], middleware=mw)

    first = TraceMiddleware(db=tmp / f"layers-first-{laps}x{width}.db")
    around = TraceMiddleware(db=tmp / f"layers-around-{laps}x{width}.db", name="AroundTrace")
    return [
        Variant(f"{n} wrap layers, no tracer", agent(_wrap_layers(n))),
        Variant(f"floor (6 no-op hooks) + {n} layers", agent([DoNothing(), *_wrap_layers(n)])),
        Variant(f"looptrace first + {n} layers", agent([first, *_wrap_layers(n)]), trace=first),
        Variant(f"looptrace.around({n} layers)", agent(around.around(*_wrap_layers(n))),
                trace=around),
    ]


def _nonempty(seq: Any) -> None:
    assert seq, "the peer tracer recorded nothing"


def _openinference(agent: Any) -> Variant | None:
    try:
        from openinference.instrumentation.langchain import LangChainInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        return None
    import logging

    logging.getLogger("opentelemetry").setLevel(logging.ERROR)  # "Attributes dict is full"
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    inst = LangChainInstrumentor()

    def setup() -> None:
        exporter.clear()
        inst.instrument(tracer_provider=provider)

    def teardown() -> None:
        inst.uninstrument()

    def check(_cfg: Any) -> None:
        _nonempty(exporter.get_finished_spans())

    return Variant("OpenInference + OTel (in-memory)", agent, setup=setup, teardown=teardown,
                   check=check)


SINK = textwrap.dedent("""
    # A local sink for the peers' exporters: answers every request with 200 and {}.
    import sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class H(BaseHTTPRequestHandler):
        def _answer(self):
            n = int(self.headers.get("content-length") or 0)
            if n:
                self.rfile.read(n)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            print(self.command, self.path, n, file=sys.stderr, flush=True)
        do_GET = do_POST = do_PUT = do_PATCH = _answer
        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
""")


class Sink:
    """The local sink, in its own process (its CPU is not the bench's): every request a
    peer sends lands here, on 127.0.0.1, and nothing leaves the machine."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self._err = log.open("w")
        self.proc = subprocess.Popen([sys.executable, "-c", SINK], stdout=subprocess.PIPE,
                                     stderr=self._err, text=True)
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}"

    def requests(self) -> list[str]:
        self._err.flush()
        return self.log.read_text().splitlines()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._err.close()


class _Flush:
    """What the bench calls after each run (``Variant.trace``): a peer's own flush."""

    def __init__(self, fn: Any) -> None:
        self.flush = fn


def _langsmith(agent: Any, sink: Sink) -> Variant | None:
    """LangSmith's ``LangChainTracer``, its client pointed at the local sink."""
    try:
        from langchain_core.tracers.langchain import LangChainTracer
        from langsmith import Client
    except ImportError:
        return None
    client = Client(api_url=sink.url, api_key="lsv2_pt_local_sink_only",
                    auto_batch_tracing=True)
    tracer = LangChainTracer(client=client, project_name="bench")

    def flush() -> None:
        tracer.wait_for_futures()
        client.flush()

    return Variant("LangSmith LangChainTracer (sink)", agent,
                   config=lambda: {"callbacks": [tracer]}, trace=_Flush(flush))


def _langfuse(agent: Any, sink: Sink) -> Variant | None:
    """Langfuse's ``CallbackHandler``, its client pointed at the local sink."""
    try:
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler
    except ImportError:
        return None
    client = Langfuse(public_key="pk-lf-local", secret_key="sk-lf-local-sink-only",
                      base_url=sink.url, tracing_enabled=True)
    handler = CallbackHandler(public_key="pk-lf-local")
    return Variant("Langfuse CallbackHandler (sink)", agent,
                   config=lambda: {"callbacks": [handler]}, trace=_Flush(client.flush))


def build_peer_variants(laps: int, width: int, tmp: Path) -> list[Variant]:
    """The floor, looptrace and lean, and every peer that can be pointed at a local sink."""
    def agent(mw: list[Any]) -> Any:
        return create_agent(scripted(laps, width), tools=[get_price], middleware=mw)

    trace = TraceMiddleware(db=tmp / f"peers-{laps}x{width}.db")
    lean = TraceMiddleware(db=tmp / f"peers-lean-{laps}x{width}.db", lean=True,
                           name="LeanTrace")
    variants = [
        Variant("baseline", agent([])),
        Variant("floor (6 no-op hooks)", agent([DoNothing()])),
        Variant("looptrace", agent([trace]), trace=trace),
        *([Variant(f"looptrace on {engine_of_url(OTHER_DB[0])}", agent([other]), trace=other)
           for other in [TraceMiddleware(db=OTHER_DB[0], name="OtherTrace")]]
          if OTHER_DB[0] else []),
        Variant("looptrace lean", agent([lean]), trace=lean),
    ]
    sink = SINKS[0]
    for make in (_langsmith, _langfuse):
        v = make(agent([]), sink) if sink is not None else None
        if v is not None:
            variants.append(v)
    oi = _openinference(agent([]))
    if oi is not None:
        variants.append(oi)
    return variants


SINKS: list[Sink | None] = [None]


def bench(laps: int, width: int, runs: int, warmup: int, tmp: Path,
          build: Any = None) -> list[Variant]:
    variants = (build or build_variants)(laps, width, tmp)
    for i in range(warmup):
        for v in variants:
            v.run_once(f"warm-up {i}")
    for v in variants:
        v.wall.clear()
        v.cpu.clear()
    shuffle = random.Random(20261130).shuffle
    if BACK_TO_BACK[0]:
        # As an evaluation suite runs: one variant's runs in a row, in blocks of 30,
        # the variants' blocks in a shuffled order each round (one block per variant
        # for the whole measurement measures the machine's drift more than the tracer).
        block = min(30, runs)
        for start in range(0, runs, block):
            order = list(variants)
            shuffle(order)
            for v in order:
                # CPU: the block's, until the writer has committed its last run, per
                # run (each run's own flush would force one commit per run, where the
                # writer commits every run that ended within its linger together)
                c0 = time.process_time()
                n = len(v.cpu)
                for i in range(start, min(start + block, runs)):
                    v.run_once(f"question {i}", flush=False)
                if v.trace is not None:
                    v.trace.flush()
                per_run = (time.process_time() - c0) * 1000 / (len(v.cpu) - n)
                v.cpu[n:] = [per_run] * (len(v.cpu) - n)
        return variants
    if GROUP[0]:
        return _grouped(variants, runs, shuffle)
    for i in range(runs):
        order = list(variants)
        shuffle(order)
        for v in order:
            v.run_once(f"question {i}")
    return variants


def _grouped(variants: list[Variant], runs: int, shuffle: Any) -> list[Variant]:
    """Interleaved without a flush after each run: each looptrace writer commits on its
    own timer, every run that ended within its linger together (as when an agent runs
    with the tracer on). A run's CPU is the process's over its ``invoke`` less what the
    writer threads did meanwhile (on their own CPU clocks: they may be writing another
    variant's runs); each writer's CPU over the whole measurement, until its last
    commit, is then shared by its own variant's runs."""
    clocks: dict[int, int] = {}
    for n, v in enumerate(variants):
        thread = v.trace.recorder.writer._thread if v.looptrace else None
        if thread is not None and thread.ident is not None:
            v.trace.flush()
            clocks[n] = time.pthread_getcpuclockid(thread.ident)

    def writers() -> float:
        return sum(time.clock_gettime(c) for c in clocks.values())

    start = {n: time.clock_gettime(c) for n, c in clocks.items()}
    for i in range(runs):
        order = list(variants)
        shuffle(order)
        for v in order:
            v.run_once(f"question {i}", flush=False, others=writers)
    for n, c in clocks.items():
        v = variants[n]
        v.trace.flush()
        share = (time.clock_gettime(c) - start[n]) * 1000 / len(v.cpu)
        v.cpu[:] = [x + share for x in v.cpu]
    return variants


OTHER_DB: list[str | None] = [None]  # ``--db``: looptrace writing there too, beside SQLite


def engine_of_url(db: str) -> str:
    from tracer.db.url import is_url

    return "PostgreSQL" if is_url(db) else "another SQLite file"


BACK_TO_BACK = [False]
GROUP = [False]  # interleaved, the writers committing on their own (``--group``)


def table(title: str, variants: list[Variant]) -> str:
    base = variants[0]
    floor = variants[1]
    b_cpu, b_wall = statistics.median(base.cpu), statistics.median(base.wall)
    f_cpu, f_wall = statistics.median(floor.cpu), statistics.median(floor.wall)
    lines = [title,
             (f"{'variant':34} {'cpu ms':>8} {'x base':>7} {'x floor':>8}"
              f" {'wall ms':>8} {'x base':>7} {'x floor':>8}")]
    for v in variants:
        c, w = statistics.median(v.cpu), statistics.median(v.wall)
        lines.append(f"{v.name:34} {c:8.2f} {c / b_cpu:7.2f} {c / f_cpu:8.2f}"
                     f" {w:8.2f} {w / b_wall:7.2f} {w / f_wall:8.2f}")
    return "\n".join(lines)


def storage_10x3(tmp: Path) -> tuple[int, int]:
    """Bytes of row data of one 10x3 run, and how much it grows a VACUUMed file."""
    import sqlite3

    from tracer.db.schema import connect

    def vacuumed(path: Path) -> int:
        conn = sqlite3.connect(path)
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        return path.stat().st_size

    empty = tmp / "empty.db"
    connect(empty).close()
    db = tmp / "storage.db"
    trace = TraceMiddleware(db=db)
    create_agent(scripted(10, 3), tools=[get_price], middleware=[trace]).invoke(
        {"messages": [("user", "Price everything")]})
    trace.close()
    conn = sqlite3.connect(db)
    total = 0
    for table_, key in (("runs", "id"), ("events", "run_id"), ("messages", "run_id")):
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table_})")]
        expr = " + ".join(f"COALESCE(LENGTH(CAST({c} AS BLOB)), 0)" for c in cols)
        total += conn.execute(f"SELECT COALESCE(SUM({expr}), 0) FROM {table_}").fetchone()[0]
    conn.close()
    return total, vacuumed(db) - vacuumed(empty)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=0, help="timed runs per variant (0: default)")
    ap.add_argument("--quick", action="store_true", help="few runs, for a smoke test")
    ap.add_argument("--back-to-back", action="store_true",
                    help="each variant's runs one after the other (as an evaluation suite"
                         " runs them) instead of interleaved run by run")
    ap.add_argument("--peers", action="store_true",
                    help="looptrace, lean and the peers (LangSmith, Langfuse, OpenInference,"
                         " each exporting to a local sink or in memory) beside the floor:"
                         " 2 laps and 10x3, interleaved and back to back, in one run")
    ap.add_argument("--group", action="store_true",
                    help="interleaved without a flush after each run: the writers commit"
                         " on their own timer, their thread's CPU shared by their runs")
    ap.add_argument("--scenario", choices=("1x1", "10x3"), default=None,
                    help="only this scenario (1x1: 2 laps, 1 tool call; 10x3: 11 laps, 30 tool"
                         " calls, 3 at a time)")
    ap.add_argument("--layers", action="store_true",
                    help="only the cost of trace.around (a probe in each of 4 wrap layers)")
    ap.add_argument("--db", metavar="URL",
                    help="also a looptrace writing to this store (a postgresql:// URL: a"
                         " PostgreSQL store beside the SQLite one, against the same floor)")
    args = ap.parse_args()
    OTHER_DB[0] = args.db
    if args.runs < 0:
        ap.error("--runs must be 0 (the default) or more")
    BACK_TO_BACK[0] = args.back_to_back
    GROUP[0] = args.group and not args.back_to_back
    if args.group and (args.peers or args.layers or args.back_to_back):
        ap.error("--group is for the default interleaved variants only")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.peers:
            peers(args, tmp)
            return
        if args.layers:
            for laps, width, runs in _scenarios(args, ((1, 1, 300), (10, 3, 40))):
                n = args.runs or (5 if args.quick else runs)
                title = f"\n== {shape(laps, width)}, 4 wrap layers: {n} runs per variant =="
                variants = bench(laps, width, n, 2 if args.quick else 5, tmp,
                                 build_layer_variants)
                print(table(title, variants[:1] + variants[1:]), flush=True)
            return
        for laps, width, runs in _scenarios(args, ((1, 1, 300), (10, 3, 40))):
            n = args.runs or (5 if args.quick else runs)
            how = ("back to back" if args.back_to_back else
                   "interleaved, the writers committing on their own" if args.group else
                   "interleaved")
            title = f"\n== {shape(laps, width)}: {n} runs per variant, {how} =="
            print(table(title, bench(laps, width, n, 2 if args.quick else 5, tmp)), flush=True)
        rows_bytes, file_bytes = storage_10x3(tmp)
        print(f"\nstorage of one 10x3 run ({shape(10, 3)}): {rows_bytes} bytes of row data; "
              f"a VACUUMed file grows by {file_bytes} bytes (target: at most 40 KiB, 40960)")


def _scenarios(args: Any, all_: tuple[tuple[int, int, int], ...]
               ) -> list[tuple[int, int, int]]:
    return [s for s in all_ if args.scenario in (None, f"{s[0]}x{s[1]}")]


def _load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def peers(args: Any, tmp: Path) -> None:
    """Every tracer beside the floor, both orders, both scenarios, in one process."""
    # nothing may reach the network: no tracing to a real endpoint by environment
    for k in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_ENDPOINT",
              "LANGFUSE_HOST", "LANGFUSE_BASE_URL"):
        os.environ.pop(k, None)
    sink = Sink(tmp / "sink.log")
    SINKS[0] = sink
    try:
        for order in (False, True):
            BACK_TO_BACK[0] = order
            for laps, width, runs in _scenarios(args, ((1, 1, 120), (10, 3, 20))):
                n = args.runs or (4 if args.quick else runs)
                how = "back to back" if order else "interleaved"
                before = _load()
                variants = bench(laps, width, n, 2 if args.quick else 3, tmp,
                                 build_peer_variants)
                title = (f"\n== peers, {shape(laps, width)}: {n} runs"
                         f" per variant, {how} ({before} before, {_load()} after) ==")
                print(table(title, variants), flush=True)
        hosts = {ln.split()[1].split("?")[0] for ln in sink.requests() if ln.strip()}
        print(f"\nthe local sink ({sink.url}) got {len(sink.requests())} requests: "
              f"{', '.join(sorted(hosts)) or 'none'}")
    finally:
        sink.close()


if __name__ == "__main__":
    main()
