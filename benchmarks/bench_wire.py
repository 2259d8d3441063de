"""Measure the wire tools: ``uv run --frozen python benchmarks/bench_wire.py [N]``.

Prints: the emulator's round trip per provider (JSON and streamed, recorded
into a trace database), the recording proxy's added latency, one agent run per
adapter end to end, and the offline rendering / side-by-side view per model
call. Everything on 127.0.0.1, no network.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tracer.wire.providers import PROVIDERS

BODIES: dict[str, tuple[str, dict[str, object]]] = {
    "openai": ("/v1/chat/completions", {"model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": "What's the weather in Oslo?"}]}),
    "anthropic": ("/v1/messages", {"model": "claude-haiku-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": "What's the weather in Oslo?"}]}),
    "ollama": ("/api/chat", {"model": "llama3.1", "messages": [
        {"role": "user", "content": "What's the weather in Oslo?"}]}),
}


def _post(url: str, body: dict[str, object]) -> bytes:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer sk-bench-0000000000000000"})
    with urllib.request.urlopen(req, timeout=30) as r:
        data: bytes = r.read()
        return data


def _time(fn: Callable[[], object], n: int) -> tuple[float, float]:
    xs = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t0) * 1000)
    xs.sort()
    return statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.95))]


def main(n: int = 50) -> None:
    from tracer.wire.proxy import WireServer

    tmp = Path(tempfile.mkdtemp(prefix="looptrace-wire-bench-"))
    print(f"requests per figure: {n}")
    with WireServer(mode="emulate", db=tmp / "emu.db") as emu, \
            WireServer(mode="emulate") as bare, \
            WireServer(mode="forward", provider="openai", upstream=bare.url,
                       db=tmp / "proxy.db") as proxy:
        for p in PROVIDERS:
            path, body = BODIES[p]
            for stream in (False, True):
                url, b = emu.url + path, {**body, "stream": stream}
                med, p95 = _time(lambda url=url, b=b: _post(url, b), n)  # type: ignore[misc]
                print(f"emulator+record {p:9} {'stream' if stream else 'json  '}  "
                      f"median {med:6.2f} ms  p95 {p95:6.2f} ms")
        path, body = BODIES["openai"]
        direct = _time(lambda: _post(bare.url + path, body), n)
        via = _time(lambda: _post(proxy.url + path, body), n)
        print(f"openai json direct to emulator (no recording): median {direct[0]:.2f} ms; "
              f"through the recording proxy: median {via[0]:.2f} ms "
              f"(+{via[0] - direct[0]:.2f} ms)")

    from tracer.demo.providers import record_provider_demos

    t0 = time.perf_counter()
    record_provider_demos(tmp / "cold.db")
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    ids = record_provider_demos(tmp / "demo.db")
    warm = time.perf_counter() - t0
    print(f"record_provider_demos (6 agent runs, 21 model calls): first {cold:.2f} s "
          f"(adapter imports included), again {warm:.2f} s")

    from tracer.read.loader import TraceDB
    from tracer.read.steps import build_replay

    from tracer.wire.render import model_call, model_call_events, render_request
    from tracer.wire.view import call_view

    per: dict[str, list[float]] = {p: [] for p in PROVIDERS}
    views: list[float] = []
    with TraceDB(tmp / "demo.db") as db:
        for rid in ids:
            run = db.run(rid)
            replay = build_replay(run)
            rows = db.wire(rid)
            for enter in model_call_events(run):
                call = model_call(replay, enter)
                for p in PROVIDERS:
                    t0 = time.perf_counter()
                    render_request(p, call.lc_messages(), model="m", tools=call.tools)
                    per[p].append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                call_view(replay, enter, rows)
                views.append((time.perf_counter() - t0) * 1000)
    for p, xs in per.items():
        print(f"render_request {p:9} median {statistics.median(xs):6.2f} ms over {len(xs)} calls")
    print(f"call_view (3 bodies + annotations) median {statistics.median(views):.2f} ms, "
          f"max {max(views):.2f} ms over {len(views)} model calls")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
