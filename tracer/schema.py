"""The SQLite schema, declared once, with a version number.

Tables:

``runs``      one row per run (a parent run and its nested subagent runs).
``events``    every hook firing, ordered by a gapless per-run ``seq``.
``messages``  every message at the event where it first appeared, and again at
              each event that replaced it by another version (``version`` 1;
              first appearances have 0 or NULL).
``wire``      provider HTTP exchanges (requests/responses) linked to model calls.
``meta``      ``schema_version`` and ``app``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import sqlite_utils

from .errors import DatabaseUnavailable, NewerSchemaError, NotALooptraceDatabase

SCHEMA_VERSION = 2
# Schema history (every older file is migrated in place when opened for writing;
# read-only, it is read as it is):
#   1  first release
#   2  messages.version: a row may be a later version of a message (same key);
#      messages.key: the key the writer gave it (the read side uses the same)
APP_ID = "looptrace"

RUN_STATUSES = ("running", "completed", "error", "interrupted")

RUNS_COLUMNS = {
    "id": str,
    "parent_id": str,
    "parent_tool_call_id": str,
    "name": str,
    "thread_id": str,
    "agent_name": str,
    "status": str,
    "started_at": float,
    "ended_at": float,
    "error": str,
    "model": str,
    "provider": str,
    "input_tokens": int,
    "output_tokens": int,
    "total_tokens": int,
    "source": str,  # "middleware", "callbacks", "import"
    "pid": int,
    "metadata": str,  # JSON
}

EVENTS_COLUMNS = {
    "run_id": str,
    "seq": int,
    "ts": float,
    "hook": str,
    "phase": str,
    "duration_ms": float,
    "middleware": str,
    "lap": int,
    "tool_call_id": str,
    "task": str,
    "payload": str,  # JSON
}

MESSAGES_COLUMNS = {
    "run_id": str,
    "position": int,  # index in the conversation (system prompt excluded)
    "seq": int,  # the event at which it first appeared
    "msg_id": str,
    "type": str,  # human / ai / tool / system
    "tool_call_id": str,
    "text": str,  # plain text, for search
    "data": str,  # JSON: {"type": ..., "data": ...} as messages_to_dict writes it
    "version": int,  # 0/NULL: the message as it first appeared; 1: a later version
    "key": str,  # the message's key as the writer knew it (tracer.records.message_key)
}

WIRE_COLUMNS = {
    "id": int,
    "run_id": str,
    "seq": int,  # the model-call event it belongs to (may be NULL)
    "ts": float,
    "provider": str,
    "method": str,
    "url": str,
    "request_headers": str,
    "request_body": str,
    "status": int,
    "response_headers": str,
    "response_body": str,
    "chunks": str,  # JSON list of raw streamed chunks
    "error": str,
    "duration_ms": float,
}


def schema_sql() -> list[str]:
    """The statements that create the schema, declared once through sqlite-utils."""
    db = sqlite_utils.Database(memory=True)
    out = [
        _if_missing(db.create_table_sql("meta", {"key": str, "value": str}, pk="key")),
        _if_missing(db.create_table_sql("runs", RUNS_COLUMNS, pk="id", not_null={"status"})),
        # Clustered on their primary key (WITHOUT ROWID): the key is stored once, not twice.
        _if_missing(db.create_table_sql("events", EVENTS_COLUMNS, pk=("run_id", "seq")))
        + " WITHOUT ROWID",
        _if_missing(db.create_table_sql("messages", MESSAGES_COLUMNS,
                                        pk=("run_id", "position", "seq"))) + " WITHOUT ROWID",
        _if_missing(db.create_table_sql("wire", WIRE_COLUMNS, pk="id")),
    ]
    for table, cols in (("runs", ("parent_id",)), ("runs", ("thread_id", "status")),
                        ("wire", ("run_id", "seq"))):
        out.append(f"CREATE INDEX IF NOT EXISTS idx_{table}_{'_'.join(cols)}"
                   f" ON {table}({', '.join(cols)})")
    return out


def _if_missing(sql: str) -> str:
    return sql.strip().rstrip(";").replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1)


def create_schema(conn: sqlite3.Connection, path: str | Path = "") -> None:
    """Create every table and index and stamp the version, in one transaction: two
    processes (or threads) creating the same new file never see half a schema."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not check_schema(conn, path):  # (another connection may have just made it)
            for sql in schema_sql():
                conn.execute(sql)
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('app', ?),"
                         " ('schema_version', ?)", [APP_ID, str(SCHEMA_VERSION)])
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _add_message_versions(conn: sqlite3.Connection) -> None:
    cols = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    if "version" not in cols:
        conn.execute("ALTER TABLE messages ADD COLUMN version INTEGER")
    if "key" not in cols:
        conn.execute("ALTER TABLE messages ADD COLUMN key TEXT")


# version -> the step that takes a file from that version to the next
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _add_message_versions,
}


def migrate(conn: sqlite3.Connection, version: int) -> None:
    """Bring a file written with schema ``version`` up to ``SCHEMA_VERSION``, in place,
    in one transaction (the DDL included): nothing recorded is lost, and a failure
    leaves the file as it was."""
    if version >= SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for v in range(version, SCHEMA_VERSION):
            MIGRATIONS[v](conn)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                     [str(SCHEMA_VERSION)])
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def check_schema(conn: sqlite3.Connection, path: str | Path) -> int:
    """Return the schema version of ``conn``'s looptrace database (0 if empty).

    Raise a one-line error for a file that is not SQLite, is someone else's
    database, or was written by a newer looptrace.
    """
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.OperationalError:
        raise  # locked, unreadable ...: not a verdict on the file
    except sqlite3.DatabaseError as exc:
        msg = f"{path} is not a SQLite database ({exc})"
        raise NotALooptraceDatabase(msg) from None
    if not tables:
        return 0
    if "meta" not in tables:
        msg = f"{path} is a SQLite database but not a looptrace one (no meta table)"
        raise NotALooptraceDatabase(msg)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        msg = f"{path} has an unreadable meta table ({exc})"
        raise NotALooptraceDatabase(msg) from None
    if meta.get("app") != APP_ID:
        msg = f"{path} is a SQLite database but not a looptrace one"
        raise NotALooptraceDatabase(msg)
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        msg = f"{path} has no valid looptrace schema version"
        raise NotALooptraceDatabase(msg) from None
    if version > SCHEMA_VERSION:
        msg = (
            f"{path} was written by a newer looptrace (schema {version}; this one reads "
            f"up to {SCHEMA_VERSION}): upgrade looptrace to open it"
        )
        raise NewerSchemaError(msg)
    return max(version, 1)


def connect(path: str | Path, *, create: bool = True, readonly: bool = False,
            busy_timeout: float = 30.0) -> sqlite3.Connection:
    """Open ``path`` as a looptrace database (WAL), validating what is there.

    A file that is not a looptrace database raises ``NotALooptraceDatabase`` (or
    ``NewerSchemaError``); one that cannot be used right now (locked, read-only,
    unopenable) raises ``DatabaseUnavailable``.
    """
    path_s = str(path)
    if readonly and not Path(path_s).exists():
        msg = f"{path_s}: no such database"
        raise NotALooptraceDatabase(msg)
    try:
        if readonly:
            conn = sqlite3.connect(f"file:{path_s}?mode=ro", uri=True, check_same_thread=False,
                                   timeout=10)
        else:
            if path_s != ":memory:":
                Path(path_s).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path_s, check_same_thread=False, timeout=30)
    except (OSError, sqlite3.Error) as exc:
        msg = f"{path_s} cannot be opened ({exc})"
        raise DatabaseUnavailable(msg) from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        has_schema = check_schema(conn, path_s)
        if not readonly:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal" and path_s != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            if has_schema:
                migrate(conn, has_schema)
            elif create:
                create_schema(conn, path_s)
        elif not has_schema:
            msg = f"{path_s} is empty: no looptrace runs recorded yet"
            raise NotALooptraceDatabase(msg)
    except sqlite3.OperationalError as exc:
        conn.close()
        msg = f"{path_s} cannot be used right now ({exc})"
        raise DatabaseUnavailable(msg) from None
    except sqlite3.DatabaseError as exc:
        conn.close()
        msg = f"{path_s} is not a usable SQLite database ({exc})"
        raise NotALooptraceDatabase(msg) from None
    except Exception:
        conn.close()
        raise
    return conn
