"""Recorded runs as tests: what the pytest plugin's ``looptrace`` fixture gives a test.

- ``runs`` / ``run_ids``: the runs the test made so far (root runs, oldest first);
- ``assert_clean()``: no error-level finding of ``looptrace check`` in them;
- ``assert_tools([...])``: the tool calls, in order (one entry per model turn: a name,
  or a set of names for calls made in parallel);
- ``assert_laps(max=...)``: a bound on the laps of each run;
- ``state()`` / ``assert_state(key=value, ...)``: a run's final state as recorded (every
  key but ``messages``: Deep Agents' ``todos`` and ``files``, ``structured_response``, a
  middleware's own keys), each given key equal to its value or passing its predicate;
- ``cassette(path)``: a context manager that answers the agent's model calls from a
  recorded run (``tracer.whatif.cassette``'s matcher, through ``tracer.whatif.player.RerunCache``).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tracer.errors import CassetteMiss, InvalidOption, LooptraceError
from tracer.vocab.words import plural

__all__ = ["CassetteMiss", "Looptrace", "play"]


def _tool_turns(run: Any) -> list[Any]:
    out: list[Any] = []
    for m in run.messages:
        if m.type != "ai" or not m.tool_calls:
            continue
        names = [str(c.get("name")) for c in m.tool_calls]
        out.append(names[0] if len(names) == 1 else frozenset(names))
    return out


def _show(turns: Sequence[Any]) -> str:
    return "[" + ", ".join(repr(t) if isinstance(t, str) else "{" + ", ".join(
        repr(x) for x in sorted(t)) + "}" for t in turns) + "]"


def _brief(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


class Looptrace:
    """The ``looptrace`` fixture (see the module doc)."""

    def __init__(self, state: Any, nodeid: str) -> None:
        self._state = state
        self.nodeid = nodeid
        self.db = state.db

    # -- the runs ------------------------------------------------------------------
    @property
    def run_ids(self) -> list[str]:
        ids: list[str] = self._state.run_ids(self.nodeid)
        return ids

    @property
    def runs(self) -> list[Any]:
        from tracer.read.loader import TraceDB

        ids = self.run_ids
        with TraceDB(self.db) as db:
            return [db.run(i) for i in ids]

    def _need_runs(self) -> list[Any]:
        runs = self.runs
        if not runs:
            msg = f"no LangChain run was recorded for {self.nodeid}"
            raise AssertionError(msg)
        return runs

    # -- assertions ----------------------------------------------------------------
    def findings(self) -> dict[str, list[Any]]:
        from tracer.checks.run import check_db

        return check_db(self.db, self.run_ids, keep=False) if self.run_ids else {}

    def assert_clean(self) -> None:
        """No protocol error among the findings of this test's runs."""
        self._need_runs()
        errors = [(rid, f) for rid, fs in self.findings().items() for f in fs
                  if f.severity == "error"]
        if errors:
            lines = [f"{plural(len(errors), 'error finding')} in the recorded runs:"]
            for rid, f in errors:
                where = f"step seq {f.seq}" if f.seq is not None else "the run"
                lines.append(f"  run {rid[:12]} at {where}: {f.rule}: {f.message}")
            raise AssertionError("\n".join(lines))

    def tool_sequence(self) -> list[Any]:
        """The tool calls of this test's runs: a name per turn, a frozenset for
        parallel calls."""
        return [t for r in self._need_runs() for t in _tool_turns(r)]

    def assert_tools(self, expected: Sequence[Any]) -> None:
        want = [t if isinstance(t, str) else frozenset(t) for t in expected]
        got = self.tool_sequence()
        if got != want:
            first = next((i for i, (a, b) in enumerate(zip(got, want, strict=False))
                          if a != b), min(len(got), len(want)))
            msg = (f"tool calls differ at turn {first + 1}:\n  expected {_show(want)}\n"
                   f"  recorded {_show(got)}")
            raise AssertionError(msg)

    def assert_laps(self, max: int | None = None, min: int | None = None) -> None:
        for r in self._need_runs():
            laps = r.summary.laps
            if max is not None and laps > max:
                msg = f"run {r.id[:12]} took {plural(laps, 'lap')}, more than the {max} allowed"
                raise AssertionError(msg)
            if min is not None and laps < min:
                msg = f"run {r.id[:12]} took {plural(laps, 'lap')}, fewer than the {min} expected"
                raise AssertionError(msg)

    def state(self, run: int = -1) -> dict[str, Any]:
        """A run's final state as recorded.

        Args:
            run: which of this test's runs (root runs, oldest first); the last by default.

        Returns:
            Every state key but ``messages`` (those are ``runs[i].messages``), each value
            as recorded: JSON (a tuple is a list), redacted like messages.
        """
        final: dict[str, Any] = self._need_runs()[run].state.final()
        return final

    def assert_state(self, expected: Mapping[str, Any] | None = None, /, *, run: int = -1,
                     **keys: Any) -> None:
        """Each given key of a run's final state equals its value, or, for a callable,
        passes it (``visits=lambda n: n >= 2``).

        Args:
            expected: keys and values (for keys that are not Python names).
            run: which of this test's runs; the last by default.
            **keys: more keys and values.

        Raises:
            AssertionError: naming every key that is missing or differs, with what the
                record holds.
        """
        want = {**(expected or {}), **keys}
        if "messages" in want:
            msg = ("assert_state reads the keys other than messages: check the conversation "
                   "with assert_tools() or runs[i].messages")
            raise InvalidOption(msg)
        r = self._need_runs()[run]
        got = r.state.final()
        problems: list[str] = []
        for key, value in want.items():
            if key not in got:
                known = ", ".join(sorted(got)) or "none recorded"
                problems.append(f"  {key}: not in the state (its keys: {known})")
                continue
            if callable(value) and not isinstance(value, type):
                check: Callable[[Any], Any] = value
                if not check(got[key]):
                    name = getattr(value, "__name__", repr(value))
                    problems.append(f"  {key}: {_brief(got[key])} fails {name}")
            elif got[key] != value:
                problems.append(f"  {key}: expected {_brief(value)}\n"
                                f"  {' ' * len(key)}  recorded {_brief(got[key])}")
        if problems:
            head = f"the final state of run {r.id[:12]} differs:"
            raise AssertionError("\n".join([head, *problems]))

    # -- cassettes -----------------------------------------------------------------
    def cassette(self, source: str | Path) -> contextlib.AbstractContextManager[Any]:
        """Answer model calls from the cassette ``source`` (a ``.jsonl`` export) inside
        the block; with ``--looptrace-record`` a call it does not hold is sent to the
        model and this block's runs are added to the cassette."""
        return play(source, record=self._state.record, recording=self._state)


class _CassetteSession:
    """Model calls answered from every run of a cassette file, matched by content."""

    def __init__(self, cassettes: list[Any], record: bool) -> None:
        import threading

        from tracer.whatif.player import Session

        self.cassettes = cassettes
        self.record = record
        self.used: set[int] = set()
        self.lock = threading.Lock()
        self.misses = 0
        self.served = 0
        self.session = Session(cassettes[0]) if cassettes else None

    def invoke_model(self, serving: Any, prompt: str) -> list[Any] | None:
        from tracer.whatif.cassette import ModelCall, request_of_messages
        from tracer.whatif.player import generations_of, messages_of_prompt

        request = request_of_messages(messages_of_prompt(prompt), system=None, tools=None)
        with self.lock:
            everything = []
            for c in self.cassettes:
                for rid in c.runs:
                    # (the callbacks' view of each call when the run has it, else the
                    # middleware's: a run recorded by both holds each call twice)
                    calls = c.model_calls.get(rid, [])
                    hook = "model" if any(m.hook == "model" for m in calls) else None
                    found = c.match_model(rid, request, self.used, hook=hook)
                    if isinstance(found, ModelCall):
                        self.used.add(id(found))
                        self.served += 1
                        return generations_of(found.outcomes[0]) if found.outcomes else None
                    everything += [m for m in calls if hook is None or m.hook == hook]
            self.misses += 1
            if self.record:
                return None  # sent to the model; the block's run is written as the cassette
            if not self.cassettes:
                msg = "the cassette holds no model call"
                raise CassetteMiss(msg)
            miss = self.cassettes[0].miss(everything, request, self.used)
            msg = (f"model call {self.served + self.misses}: not in the cassette "
                   f"(--looptrace-record sends it to the model and adds it): {miss.explain()}")
            raise CassetteMiss(msg)


class _Serving:
    def __init__(self, session: _CassetteSession) -> None:
        self.session = session


def load_cassettes(path: Path, work: Path) -> list[Any]:
    """Every root run of the cassette file ``path``, read as ``Cassette``s (imported
    into a database under ``work``: an older schema's rows are migrated as they are
    imported)."""
    from tracer.interop.exchange import import_trace
    from tracer.read.loader import TraceDB
    from tracer.whatif.cassette import Cassette

    db_path = work / "cassette.db"
    ids = import_trace(path, db_path)
    with TraceDB(db_path) as db:
        roots = [i for i in ids if db.summary(i).parent_id is None]
        return [Cassette.load(db, i) for i in roots]


@contextlib.contextmanager
def play(source: str | Path, *, record: bool = False, recording: Any = None) -> Iterator[Any]:
    """Answer the model calls made inside the block from the cassette ``source``.

    ``record``: a call the cassette does not hold is sent to the model, and at the end
    the runs ``recording`` (the pytest plugin's state) saw in the block are added to the
    cassette file, the runs it held kept (``tracer.whatif.cassette_file``). Without it such a
    call raises ``CassetteMiss``."""
    from tracer.whatif import player

    path = Path(source)
    with tempfile.TemporaryDirectory(prefix="looptrace-cassette-") as tmp:
        if path.exists():
            cassettes = load_cassettes(path, Path(tmp))
        elif record:
            cassettes = []
        else:
            msg = (f"{path}: no such cassette (run the test with --looptrace-record to "
                   "record it)")
            raise LooptraceError(msg)
        session = _CassetteSession(cassettes, record)
        before = set(recording.run_ids(recording.nodeid)) if (
            record and recording is not None and recording.nodeid) else set()
        player.install()
        token = player.SERVING.set(_Serving(session))  # type: ignore[arg-type]
        try:
            yield session
        finally:
            player.SERVING.reset(token)
            player.uninstall()
        if record and recording is not None and (session.misses or not path.exists()):
            from tracer.whatif.cassette_file import append_runs

            append_runs(path, recording.db, [i for i in recording.run_ids(recording.nodeid)
                                             if i not in before],
                        migrated=Path(tmp) / "cassette.db" if cassettes else None)
