"""The pytest plugin (entry point ``pytest11``; off unless asked).

``pytest --looptrace[=DB]`` records every LangChain / LangGraph run the tests make
(through LangChain's configure hook, ``tracer.record.autotrace``: a run that carries a
``TraceCallbackHandler`` already is not recorded twice) into ``DB`` (default
``looptrace-tests.db``), each run tagged with the test that made it
(``runs.metadata["pytest"]["nodeid"]``). A failed test's report names its runs and an
HTML replay of each is written to ``--looptrace-html DIR`` (default: ``looptrace-html``
beside the database), so CI artifacts hold a replay of the failure.

The ``looptrace`` fixture gives a test its runs and assertions (``assert_clean``,
``assert_tools``, ``assert_laps``) and cassettes (``looptrace.cassette(path)``:
``tracer.testing.fixture``). Using the fixture turns recording on for the session even
without ``--looptrace`` (into a temporary database).

Under pytest-xdist (``-n N``) each worker records: into the one database (SQLite's WAL
takes the writers of several processes; the controller creates the file before the
workers start, and runs no test itself, so it records nothing), or into one per worker
when the path holds ``{worker}`` (``--looptrace=trace-{worker}.db``: ``gw0``, ``gw1``
...; ``main`` without xdist). Each run's tag also names its worker
(``metadata["pytest"]["worker"]``), and the workers share the controller's session id.

Nothing here imports LangChain until recording is asked for: a suite without
LangChain runs with the plugin installed, and the plugin never changes the outcome
of a test (a failure of its own, on a test that does not use the fixture, is only
said in the report).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from tracer.db.url import safe
from tracer.errors import LooptraceError

DEFAULT_DB = "looptrace-tests.db"
_STATE = pytest.StashKey["_Recording"]()


class _Recording:
    """The session's recording: the database, the handler, the test running now."""

    def __init__(self, db: Path, html_dir: Path | None, record: bool,
                 session: str | None = None, worker: str | None = None) -> None:
        self.db = db
        self.html_dir = html_dir
        self.record = record
        self.nodeid: str | None = None
        self.handler: Any = None
        self.error: str | None = None
        # (a database kept between sessions: this one's runs; an xdist worker gets the
        # controller's)
        self.session = session or uuid.uuid4().hex
        self.worker = worker

    def start(self) -> Any:
        """Install the configure hook (once): the handler, or None without LangChain."""
        if self.handler is not None or self.error is not None:
            return self.handler
        try:
            from tracer.record import autotrace
        except ImportError as exc:
            self.error = f"not recording: {exc}"
            return None
        self.db.parent.mkdir(parents=True, exist_ok=True)
        self.handler = autotrace.push(self.db, how="pytest --looptrace", tag=self._tag,
                                      namer=self._name)
        return self.handler

    def stop(self) -> None:
        """Uninstall the configure hook's handler, its runs committed: the process
        records as it did before the session (a session run inside another one's
        process, as pytester's in-process runs are, leaves nothing behind)."""
        if self.handler is not None:
            from tracer.record import autotrace

            handler, self.handler = self.handler, None
            autotrace.uninstall(handler)

    def _name(self) -> str | None:
        """A top-level run is named after the test that made it: its id without the
        file (``test_weather[openai]``, ``TestShop::test_total``)."""
        return self.nodeid.split("::", 1)[-1] if self.nodeid else None

    def _tag(self) -> dict[str, Any] | None:
        if not self.nodeid:
            return None
        tag = {"nodeid": self.nodeid, "session": self.session}
        if self.worker is not None:
            tag["worker"] = self.worker
        return {"pytest": tag}

    def flush(self) -> None:
        if self.handler is not None:
            self.handler.flush()

    def run_ids(self, nodeid: str) -> list[str]:
        """The ids of the root runs ``nodeid`` made, oldest first."""
        if self.handler is None or not self.db.exists():
            return []
        self.flush()
        from tracer.read.loader import TraceDB

        with TraceDB(self.db) as db:
            rows = db.query(
                "SELECT id FROM runs WHERE parent_id IS NULL AND "
                "json_extract(metadata, '$.pytest.nodeid') = ? AND "
                "json_extract(metadata, '$.pytest.session') = ? ORDER BY started_at, id",
                (nodeid, self.session))
        return [str(r[0]) for r in rows]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("looptrace", "looptrace: record agent runs made by the tests")
    group.addoption("--looptrace", nargs="?", const=DEFAULT_DB, default=None, metavar="DB",
                    help=f"record every LangChain/LangGraph run into DB (default {DEFAULT_DB}), "
                         "tagged with the test's node id")
    group.addoption("--looptrace-html", default=None, metavar="DIR",
                    help="where the HTML replays of a failed test's runs go "
                         "(default: looptrace-html beside the database)")
    group.addoption("--looptrace-record", action="store_true",
                    help="cassettes: a model call the cassette does not hold is sent to the "
                         "model and the test's run added to the cassette")


WORKER = "{worker}"


def _xdist_worker(config: pytest.Config) -> tuple[str | None, str | None]:
    """(the xdist worker id, the controller's session id) in a worker, else Nones."""
    given = getattr(config, "workerinput", None)
    if not isinstance(given, dict):
        return None, None
    return str(given.get("workerid")), given.get("looptrace_session")


def _xdist_controller(config: pytest.Config) -> bool:
    """This process hands the tests to xdist workers and runs none itself."""
    return getattr(config, "workerinput", None) is None and bool(
        getattr(config.option, "numprocesses", None)) and getattr(
        config.option, "dist", "no") != "no"


def pytest_configure(config: pytest.Config) -> None:
    db = config.getoption("looptrace")
    html = config.getoption("looptrace_html")
    record = bool(config.getoption("looptrace_record"))
    worker, session = _xdist_worker(config)
    if db is None:
        # (the database is chosen when a test asks for the fixture)
        state = _Recording(Path("looptrace.db"), Path(html).resolve() if html else None, record,
                           session, worker)
        config.stash[_STATE] = state
        state.error = "off"  # (turned on by the fixture)
        return
    path = Path(db.replace(WORKER, worker or "main")).resolve()
    state = _Recording(path, Path(html).resolve() if html else path.parent / "looptrace-html",
                       record, session, worker)
    config.stash[_STATE] = state
    try:
        if _xdist_controller(config):
            state.error = "the xdist controller runs no test"
            if WORKER not in db:
                # one file for every worker: made now, so no two workers create it at once
                from tracer.db.schema import connect

                connect(path).close()
            return
        state.start()
    except (LooptraceError, OSError) as exc:  # (not SQLite, someone else's, newer ...)
        # one line, as the command line says it (was: 44 lines of INTERNALERROR)
        msg = f"looptrace: --looptrace={safe(db)}: {exc}"
        raise pytest.UsageError(msg) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.stop()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """(xdist, in the controller) each worker gets the session's id."""
    node.workerinput["looptrace_session"] = _state(node.config).session


def _state(config: pytest.Config) -> _Recording:
    return config.stash[_STATE]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    # (set-up, call and teardown: a run made by a fixture is the test's too)
    state = _state(item.config)
    state.nodeid = item.nodeid
    try:
        return (yield)
    finally:
        state.flush()
        state.nodeid = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        try:
            _note_failure(_state(item.config), item, report)
        except Exception as exc:  # noqa: BLE001 - never change a test's outcome
            report.sections.append(("looptrace", f"could not export the runs: {exc!r}"))
    return report


def _safe(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:120]


def _note_failure(state: _Recording, item: pytest.Item, report: pytest.TestReport) -> None:
    ids = state.run_ids(item.nodeid)
    if not ids:
        return
    lines = [f"{len(ids)} run(s) recorded in {state.db}:"]
    if state.html_dir is None:
        state.html_dir = state.db.parent / "looptrace-html"
    from tracer.interop.html_export import export_html

    for rid in ids:
        out = state.html_dir / f"{_safe(item.nodeid)}-{rid[:12]}.html"
        export_html(state.db, rid, out)
        lines.append(f"  run {rid}: {out}")
    report.sections.append(("looptrace runs", "\n".join(lines)))


@pytest.fixture
def looptrace(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """This test's recorded runs, assertions on them, and cassettes (``tracer.testing.fixture``)."""
    state = _state(request.config)
    if state.handler is None and state.error == "off":
        state.error = None
        state.db = tmp_path_factory.getbasetemp() / "looptrace.db"
        state.start()
    if state.handler is None:
        pytest.skip(f"looptrace: {state.error}")
    from .fixture import Looptrace

    return Looptrace(state, request.node.nodeid)
