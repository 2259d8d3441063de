"""What a command imports at start: the commands that need no LangChain start without it
(``looptrace --help``, ``runs``, ``check``, ``debug``'s own process, ``run``'s, a ``--wire``
proxy whose traffic a traced agent claims), and a process that creates a file does not
import pandas and numpy through sqlite-utils (``tracer.db.ddl``): each was seconds of
start-up, in every ``looptrace run`` and in the tests that start one.

Each command runs in a fresh interpreter, which then prints the heavy modules it holds."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.db.schema import connect

HEAVY = ("langchain_core", "langchain", "langgraph", "pandas", "numpy", "sqlite_utils")

DRIVER = """
import contextlib, io, json, sys
from tracer.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main(json.loads(sys.argv[1]))
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)))
"""


def imported_by(*argv: str, cwd: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(argv), json.dumps(HEAVY)],
                          capture_output=True, text=True, timeout=120, cwd=cwd, check=False)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("startup") / "t.db"
    connect(str(path)).close()
    return path


@pytest.mark.parametrize("argv", [
    ["--help"], ["runs", "--db", "DB"], ["check", "--db", "DB"], ["debug", "--help"],
    ["run", "--db", "DB", "--", sys.executable, "-c", "pass"],
    ["run", "--wire", "--db", "DB", "--", sys.executable, "-c", "pass"],
], ids=["help", "runs", "check", "debug", "run", "run-wire"])
def test_a_command_that_needs_no_langchain_starts_without_it(
        argv: list[str], db: Path, tmp_path: Path) -> None:
    # (before: --help imported the demo's scenarios, runs and debug the writer's
    # serializer with LangChain's messages, run --wire the wire's traffic builder)
    assert imported_by(*[str(db) if a == "DB" else a for a in argv], cwd=tmp_path) == []


def test_creating_a_file_leaves_pandas_out_and_the_programs_own_sqlite_utils_whole(
        tmp_path: Path) -> None:
    code = f"""
import sys
from tracer.db.schema import connect
connect({str(tmp_path / "new.db")!r}).close()
print(sorted(m for m in ("pandas", "numpy", "sqlite_utils") if m in sys.modules))
import sqlite_utils.db
print(sqlite_utils.db.pd is not None and sqlite_utils.db.np is not None)
# the lean copy writes the very statements the usual one does
from unittest import mock
from tracer.db import schema
lean = schema.schema_sql()
with mock.patch.object(schema, "memory_db", lambda: sqlite_utils.Database(memory=True)):
    print(schema.schema_sql() == lean and len(lean) > 20)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    # the file was made without them; the program's own import later gets the usual one
    assert done.stdout.splitlines() == ["[]", "True", "True"]
    tables = {r[0] for r in sqlite3.connect(tmp_path / "new.db").execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "events", "messages", "wire", "state", "notes", "debug_pauses"} <= tables


def test_the_refusal_is_the_importing_threads_only() -> None:
    """(another thread of the program importing pandas while sqlite-utils is imported
    lean gets it: the finder refuses the importing thread's imports only)"""
    import threading

    from tracer.db.ddl import _Refuse

    finder = _Refuse(["pandas"])
    with pytest.raises(ModuleNotFoundError):
        finder.find_spec("pandas.core.api")
    assert finder.find_spec("pandasx") is None and finder.find_spec("json") is None
    seen: list[object] = []
    other = threading.Thread(target=lambda: seen.append(finder.find_spec("pandas")))
    other.start()
    other.join()
    assert seen == [None]
