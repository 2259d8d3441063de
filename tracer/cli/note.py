"""``looptrace note RUN [--step N] [TEXT] [--tag T]...``: a note on a run or one of its
steps (``tracer.db.notes.add_note``); without TEXT, the run's notes (``TraceDB.notes``);
``--delete ID`` deletes one (``tracer.db.notes.delete_note``).

The one command besides ``import``, ``prune`` and the recorders that writes to the
database: it opens it for writing for the one row, then closes it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tracer.cli import INT64_MAX, int_range
from tracer.db.notes import add_note, delete_note
from tracer.errors import UsageError
from tracer.interop.show import render_notes
from tracer.read.loader import TraceDB
from tracer.vocab.terminal import safe_text

from . import DEFAULT_DB


class _Intermixed(argparse.ArgumentParser):
    """A parser that takes its options between its positionals too (``note RUN --step 3
    TEXT``: argparse alone leaves TEXT over, having matched ``[TEXT]`` to nothing)."""

    _mixing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._mixing:  # (parse_known_intermixed_args parses through here)
            return super().parse_known_args(args, namespace)
        self._mixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._mixing = False


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "note", help="write a note on a run or one of its steps (or list a run's notes)",
        description=(
            "Write a note (text and tags) on a run, or with --step N on its step N (counted "
            "from 1, as the replay shows them). Without TEXT, list the run's notes. Notes "
            "show in `looptrace show`, the app (the inspector, the replayer's tick strip, the "
            "Runs page's tag filter), the HTML export and MCP; `looptrace runs --search` "
            "finds their text and --tag their tags; export and import carry them."))
    p.add_argument("run", metavar="RUN", help="run id, a unique prefix, a name or name@N")
    p.add_argument("text", metavar="TEXT", nargs="?",
                   help="the note (quote it); leave it out to list the run's notes")
    p.add_argument("--db", default=DEFAULT_DB, help="trace database")
    p.add_argument("--step", type=int_range(-INT64_MAX - 1), metavar="N",
                   help="on step N (from 1) rather than on the whole run")
    p.add_argument("--tag", action="append", metavar="TAG",
                   help="a tag: one short word such as bug, good-example, workshop (repeatable)")
    p.add_argument("--author", metavar="NAME", help="who wrote it")
    p.add_argument("--delete", type=int_range(1), metavar="ID",
                   help="delete the run's note ID (as listed) instead")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)
    p.__class__ = _Intermixed


def run(args: argparse.Namespace) -> int:
    with TraceDB(args.db) as db:
        rid = db.resolve(args.run)
    if args.delete is not None:
        if args.text is not None or args.step is not None or args.tag:
            msg = "--delete ID takes no TEXT, --step or --tag"
            raise UsageError(msg)
        delete_note(args.db, rid, args.delete)
        print(safe_text(f"deleted note {args.delete} of run {rid[:12]}"))
        return 0
    if args.text is None:
        if args.step is not None or args.tag or args.author:
            msg = "--step, --tag and --author go with a TEXT to write (none given)"
            raise UsageError(msg)
        with TraceDB(args.db) as db:
            notes = db.notes(rid)
        if args.json:
            print(json.dumps([n.to_dict() for n in notes], indent=2, ensure_ascii=False))
        else:
            print(f"run {rid}: {len(notes)} note{'' if len(notes) == 1 else 's'}")
            text = render_notes([n.to_dict() for n in notes])
            if text:
                print(text, end="")
        return 0
    note = add_note(args.db, rid, args.text, step=args.step, tags=args.tag or (),
                    author=args.author)
    if args.json:
        print(json.dumps(note.to_dict(), indent=2, ensure_ascii=False))
        return 0
    where = f"step {note.step} of run" if note.step is not None else "run"
    tags = f" [{', '.join(note.tags)}]" if note.tags else ""
    print(safe_text(f"note {note.id} on {where} {rid[:12]}{tags}"))
    return 0
