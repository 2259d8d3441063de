"""``looptrace proxy`` (the recording proxy, or the provider emulator, on 127.0.0.1) and
``looptrace traffic`` (recorded exchanges no traced run claims, made into runs): the
command line over ``tracer.wire``."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any

from tracer.cli import PORT_MAX, int_range
from tracer.db.url import safe
from tracer.errors import UsageError
from tracer.vocab.terminal import safe_text
from tracer.wire.providers import PROVIDERS, formats_of

from . import DEFAULT_DB, serve


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "proxy", help="record a provider's HTTP traffic (or emulate the provider)",
        description=(
            "Listen on 127.0.0.1 and forward every request to the provider while recording "
            "both directions into the trace database; point the client's base_url at it "
            "(OpenAI: http://127.0.0.1:PORT/v1, for chat completions and the Responses API; "
            "Anthropic and Ollama: http://127.0.0.1:PORT). "
            "With --emulate, answer from a scripted conversation instead: no key, no network."))
    p.add_argument("--provider", choices=PROVIDERS, required=True)
    p.add_argument("--upstream", help="upstream base URL (default: the provider's public API; "
                                      "Ollama: http://127.0.0.1:11434)")
    p.add_argument("--emulate", metavar="SCRIPT",
                   help="emulate instead of forwarding: weather, shopping, echo, auto, "
                        "or module:function")
    p.add_argument("--rerun", "--replay", metavar="RUN", dest="rerun", action=_Renamed,  # words: keep
                   help="rerun recorded run RUN (in --db) through the proxy: serve its "
                        "responses to requests that match it; others are forwarded to "
                        "--upstream when given, else answered by --emulate (default echo). "
                        "--replay is its older name")  # words: keep
    p.add_argument("--db", default=DEFAULT_DB, help="trace database")
    p.add_argument("--port", type=int_range(0, PORT_MAX), default=0, help="port (default: a free one)")
    p.add_argument("--max-request", type=float, default=32, metavar="MB",
                   help="largest request body forwarded (default 32 MB): 413 past it")
    p.add_argument("--upstream-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="an upstream silent this long is recorded as an error: 504, or its "
                        "response cut short (default 300)")
    p.set_defaults(func=proxy)
    t = sub.add_parser(
        "traffic", help="turn recorded exchanges no traced run claims into runs",
        description=(
            "A proxy turns the exchanges of a loop it sees without the tracer into runs as "
            "they come. This does the same for a file's exchanges that are still unlinked "
            "(recorded by an older looptrace, or by a proxy that was killed)."))
    t.add_argument("--db", default=DEFAULT_DB, help="trace database")
    t.set_defaults(func=traffic)


class _Renamed(argparse.Action):
    """An option with an older name that still works: used by that name, it says so."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if option_string is not None and option_string != self.option_strings[0]:
            print(f"looptrace {parser.prog.split()[-1]}: {option_string} is now "
                  f"{self.option_strings[0]} (the old name still works, for now)",
                  file=sys.stderr)
        setattr(namespace, self.dest, values)


def traffic(args: argparse.Namespace) -> int:
    from tracer.wire.capture import link_wire
    from tracer.wire.traffic import build_runs

    if not os.path.exists(args.db):
        msg = f"no such database: {safe(args.db)}"
        raise UsageError(msg)
    link_wire(args.db)
    ids = build_runs(args.db)
    print(safe_text(f"{len(ids)} run{'' if len(ids) == 1 else 's'} from traffic"
                    + (": " + ", ".join(i[:12] for i in ids) if ids else "")))
    return 0


def proxy(args: argparse.Namespace, ready: threading.Event | None = None) -> int:
    from tracer.wire.proxy import WireServer

    if args.emulate and args.upstream:
        msg = "--emulate and --upstream exclude each other"
        raise UsageError(msg)
    if args.port and not 0 < args.port < 65536:
        msg = f"--port {args.port} is not a port number"
        raise UsageError(msg)
    for flag, value in (("--max-request", args.max_request),
                        ("--upstream-timeout", args.upstream_timeout)):
        if not value > 0:
            msg = f"{flag} must be positive, not {value}"
            raise UsageError(msg)
    script = args.emulate
    if getattr(args, "rerun", None):  # (tracer/wire/cassette_script.py)
        from tracer.wire.cassette_script import rerun_script

        script = rerun_script(args, UsageError)
    try:
        srv = WireServer(mode="emulate" if script else "forward", provider=args.provider,
                         upstream=args.upstream, script=script, db=args.db,
                         port=args.port or 0, on_exchange=_print_exchange,
                         max_request=int(args.max_request * 1024 * 1024),
                         upstream_timeout=args.upstream_timeout)
    except OSError as exc:
        msg = f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}"
        raise UsageError(msg) from None
    paths = ", ".join(f.path for f in formats_of(args.provider))
    base = srv.url + ("/v1" if args.provider == "openai" else "")
    what = f"emulating {args.provider} ({args.rerun or args.emulate})" if script else (
        f"forwarding {args.provider} to {srv.upstream}")
    if script and srv.upstream:
        what += f", forwarding what the record does not hold to {srv.upstream}"
    print(safe_text(f"looptrace proxy: {what}; recording into {safe(args.db)}"), flush=True)
    print(f"  base_url = {base}   (endpoints {paths})", flush=True)
    if ready is not None:
        ready.set()
    serve(srv)
    return 0


def _print_exchange(ex: object) -> None:
    from tracer.wire.capture import Exchange

    if isinstance(ex, Exchange):
        err = f"  ERROR {ex.error}" if ex.error else ""
        link = f" -> run {ex.run_id[:12]} seq {ex.seq}" if ex.run_id else ""
        print(safe_text(f"{ex.method} {ex.url} {ex.status} {ex.duration_ms or 0:.0f} ms{link}{err}"),
              file=sys.stdout, flush=True)
