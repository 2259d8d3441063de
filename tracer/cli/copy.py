"""``looptrace copy --from A --to B``: every run of one store into another, SQLite or
PostgreSQL (``tracer.interop.copy``)."""

from __future__ import annotations

import argparse

from tracer.db.url import safe
from tracer.interop.copy import copy_store
from tracer.vocab.terminal import safe_text
from tracer.vocab.words import plural

from . import read_db


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("copy", help="copy every run of one store into another "
                                    "(SQLite file or postgresql:// URL)")
    p.add_argument("--from", dest="src", required=True, type=read_db, metavar="A",
                   help="the store to copy from (a path or a postgresql:// URL)")
    p.add_argument("--to", dest="dst", required=True, metavar="B",
                   help="the store to copy into (created if new)")
    p.set_defaults(func=copy)


def copy(args: argparse.Namespace) -> int:
    got = copy_store(args.src, args.dst)
    print(safe_text(f"copied {plural(got.runs, 'run')} ({plural(got.trees, 'top-level run')}, "
                    f"{plural(got.debug_records, 'debugger record')}, "
                    f"{plural(got.findings, 'kept finding')}) from {safe(args.src)} "
                    f"to {safe(args.dst)}"))
    return 0
