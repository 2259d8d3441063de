"""The SQLite schema, declared once, with a version number.

Tables:

``runs``      one row per run (a parent run and its nested subagent runs).
``events``    every hook firing, ordered by a gapless per-run ``seq``.
``messages``  every message at the event where it first appeared, and again at
              each event that replaced it by another version (``version`` 1;
              first appearances have 0 or NULL).
``wire``      provider HTTP exchanges (requests/responses) linked to model calls.
``meta``      ``schema_version`` and ``app``.
``state``     every state key other than ``messages`` (todos, files, structured_response,
              a middleware's own keys ...), as versions: a row when the tracer saw the
              key take another value (``hash`` NULL: the key left the state), with who
              changed it (``by``: a graph node or hook) and the tool call whose
              ``Command(update=...)`` did (schema 4; ``tracer.record.state_keys``).
``state_values``  the values, content-addressed per run (``hash``: of the stored JSON),
              so that a value met again (a file read back five times) is stored once.

Derived from those, so that reading costs what is shown, not the size of the file
(schema 3; kept in step by the write side and by triggers, rebuilt by the migration):

``run_stats``     a run's counts (laps, model calls, tool calls, errors, events), kept
                  when it ends (``tracer.db.summaries``); ``gen`` counts the refreshes.
``run_checks``    the health of a run as ``tracer.checks.run`` found it, for a rules version
                  and a ``gen`` of its counts; ``findings`` the findings themselves
                  (``tracer.checks.saved``).
``messages_fts``  a full-text index (FTS5, trigram) of ``messages.text``; ``search_runs``
                  gives each run a block of its rowids; ``search_pending`` holds the
                  text of messages written since the index was last brought up to date,
                  with their run (``tracer.db.search``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO
from urllib.parse import quote

from tracer.errors import (
    DatabaseUnavailable,
    InvalidOption,
    NewerSchemaError,
    NotALooptraceDatabase,
    open_error,
)
from tracer.vocab.records import MODEL_HOOKS

from .ddl import memory_db
from .url import is_url

if TYPE_CHECKING:
    import sqlite_utils

# (declared in tracer.db.tables, which tracer.db.pg reads too)
from .tables import (
    APP_ID,
    DEBUG_BREAKS_COLUMNS,
    DEBUG_PAUSES_COLUMNS,
    DROPPED_INDEXES,
    EVENTS_COLUMNS,
    FINDINGS_COLUMNS,
    INDEXES,
    MESSAGES_COLUMNS,
    NOTES_COLUMNS,
    RUN_CHECKS_COLUMNS,
    RUN_STATS_COLUMNS,
    RUNS_COLUMNS,
    SCHEMA_VERSION,
    SEARCH_PENDING_COLUMNS,
    SEARCH_RUNS_COLUMNS,
    STATE_COLUMNS,
    STATE_VALUES_COLUMNS,
    WIRE_COLUMNS,
)

FTS_SQL = ("CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5("
           "text, tokenize = 'trigram', detail = 'none')")

# A block of 2**32 rowids per run: a run's rows are found (and deleted) by range.
FTS_BLOCK = 1 << 32
FTS_LAST = FTS_BLOCK - 1  # the last rowid offset of a block

TRIGGERS_SQL = tuple(sql.format(FTS_BLOCK=FTS_BLOCK, FTS_LAST=FTS_LAST) for sql in (
    # Every message's text is searchable from the transaction that writes it: it waits
    # in search_pending, with its run, until the index takes a batch of them and gives
    # them their rowids (tracer.db.search.catch_up: one segment of the index per batch,
    # rather than one per commit). (No statement here may meet a conflict: the
    # writer's INSERT OR REPLACE would make it a REPLACE.)
    """CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
  INSERT INTO search_pending(run_id, text) VALUES (NEW.run_id, NEW.text);
END""",
    # a deleted run takes what was derived from it along
    """CREATE TRIGGER IF NOT EXISTS runs_derived_delete AFTER DELETE ON runs BEGIN
  DELETE FROM messages_fts WHERE rowid BETWEEN
    (SELECT n * {FTS_BLOCK} FROM search_runs WHERE run_id = OLD.id)
    AND (SELECT n * {FTS_BLOCK} + {FTS_LAST} FROM search_runs WHERE run_id = OLD.id);
  DELETE FROM search_pending WHERE run_id = OLD.id;
  DELETE FROM search_runs WHERE run_id = OLD.id;
  DELETE FROM run_stats WHERE run_id = OLD.id;
  DELETE FROM run_checks WHERE run_id = OLD.id;
  DELETE FROM findings WHERE run_id = OLD.id;
END""",
))

DERIVED_TABLES = ("run_stats", "run_checks", "findings", "search_runs", "search_pending",
                  "messages_fts")


def schema_sql() -> list[str]:
    """The statements that create the schema, declared once through sqlite-utils.

    (``messages`` has no rowid, so sqlite-utils' ``enable_fts``, which indexes a
    table by its rowids, cannot index it: ``messages_fts`` and its triggers are
    declared here, with rowids of their own.)"""
    db = memory_db()  # (only to create a file: the read side starts without sqlite-utils)
    out = [
        _if_missing(db.create_table_sql("meta", {"key": str, "value": str}, pk="key")),
        _if_missing(db.create_table_sql("runs", RUNS_COLUMNS, pk="id", not_null={"status"})),
        # Clustered on their primary key (WITHOUT ROWID): the key is stored once, not twice.
        _if_missing(db.create_table_sql("events", EVENTS_COLUMNS, pk=("run_id", "seq")))
        + " WITHOUT ROWID",
        _if_missing(db.create_table_sql("messages", MESSAGES_COLUMNS,
                                        pk=("run_id", "position", "seq"))) + " WITHOUT ROWID",
        _if_missing(db.create_table_sql("wire", WIRE_COLUMNS, pk="id")),
        *state_sql(db),
        *derived_sql(db),
        *debug_notes_sql(db),
    ]
    return out


def debug_notes_sql(db: sqlite_utils.Database) -> list[str]:
    """The debugger's channel and the notes (what schema 6 adds); a deleted run takes
    its pauses and notes along."""
    return [
        _if_missing(db.create_table_sql("debug_breaks", DEBUG_BREAKS_COLUMNS, pk="id",
                                        not_null={"spec"})),
        _if_missing(db.create_table_sql("debug_pauses", DEBUG_PAUSES_COLUMNS, pk="id",
                                        not_null={"run_id"})),
        _if_missing(db.create_table_sql("notes", NOTES_COLUMNS, pk="id",
                                        not_null={"run_id", "text"})),
        "CREATE INDEX IF NOT EXISTS idx_debug_pauses_run_id ON debug_pauses(run_id)",
        "CREATE INDEX IF NOT EXISTS idx_notes_run_id_seq ON notes(run_id, seq)",
        """CREATE TRIGGER IF NOT EXISTS runs_notes_delete AFTER DELETE ON runs BEGIN
  DELETE FROM debug_pauses WHERE run_id = OLD.id;
  DELETE FROM notes WHERE run_id = OLD.id;
END""",
    ]


def state_sql(db: sqlite_utils.Database) -> list[str]:
    """The state tables (what schema 4 adds), and the trigger that deletes a run's
    state with the run."""
    return [
        _if_missing(db.create_table_sql("state", STATE_COLUMNS, pk=("run_id", "seq", "key")))
        + " WITHOUT ROWID",
        _if_missing(db.create_table_sql("state_values", STATE_VALUES_COLUMNS,
                                        pk=("run_id", "hash"))) + " WITHOUT ROWID",
        """CREATE TRIGGER IF NOT EXISTS runs_state_delete AFTER DELETE ON runs BEGIN
  DELETE FROM state WHERE run_id = OLD.id;
  DELETE FROM state_values WHERE run_id = OLD.id;
END""",
    ]


def derived_sql(db: sqlite_utils.Database) -> list[str]:
    """The derived tables, their indexes and triggers (what schema 3 adds)."""
    out = [
        _if_missing(db.create_table_sql("run_stats", RUN_STATS_COLUMNS, pk="run_id"))
        + " WITHOUT ROWID",
        _if_missing(db.create_table_sql("run_checks", RUN_CHECKS_COLUMNS, pk="run_id"))
        + " WITHOUT ROWID",
        _if_missing(db.create_table_sql("findings", FINDINGS_COLUMNS, pk=("run_id", "n")))
        + " WITHOUT ROWID",
        _if_missing(db.create_table_sql("search_runs", SEARCH_RUNS_COLUMNS, pk="n",
                                        not_null={"run_id", "messages"})),
        _if_missing(db.create_table_sql("search_pending", SEARCH_PENDING_COLUMNS, pk="id")),
        FTS_SQL,
    ]
    for name in DROPPED_INDEXES:
        out.append(f"DROP INDEX IF EXISTS {name}")
    for table, cols in INDEXES:
        unique = "UNIQUE " if table == "search_runs" else ""
        out.append(f"CREATE {unique}INDEX IF NOT EXISTS idx_{table}_{'_'.join(cols)}"
                   f" ON {table}({', '.join(cols)})")
    out.extend(TRIGGERS_SQL)
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


def _add_derived(conn: sqlite3.Connection) -> None:
    """Schema 3: the derived tables, filled from what the file holds: every run's
    message text indexed for search, every ended run's counts kept. (Findings are
    not: they are found when first asked for.)"""
    for sql in derived_sql(memory_db()):
        conn.execute(sql)
    from .summaries import refresh_all

    index_all(conn)
    refresh_all(conn)


def index_all(conn: sqlite3.Connection) -> None:
    """Index the text of every message already stored (the schema 3 migration): each
    run gets its block of rowids, its messages numbered within it."""
    conn.execute("INSERT OR IGNORE INTO search_runs(run_id, messages)"
                 " SELECT DISTINCT run_id, 0 FROM messages")
    conn.execute(
        "INSERT INTO messages_fts(rowid, text)"
        f" SELECT s.n * {FTS_BLOCK} + m.k, m.text FROM (SELECT run_id, text,"
        " ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY position, seq) AS k FROM messages) m"
        " JOIN search_runs s ON s.run_id = m.run_id")
    conn.execute("UPDATE search_runs SET messages ="
                 " (SELECT COUNT(*) FROM messages m WHERE m.run_id = search_runs.run_id)")


def _add_state(conn: sqlite3.Connection) -> None:
    """Schema 4: the state tables (empty: older runs recorded messages only)."""
    for sql in state_sql(memory_db()):
        conn.execute(sql)


def _pending_by_run(conn: sqlite3.Connection) -> None:
    """Schema 5: ``search_pending`` names each message's run (and the index gives it
    its rowid when it takes it). What waits there in the schema 4 form (a rowid
    already given) goes into the index first, as schema 4 would have put it; then the
    table and the triggers that wrote it are made anew."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(search_pending)")}
    if "fts" not in cols:  # (made at schema 5 already: a schema 2 file's migration)
        return
    conn.execute("INSERT INTO messages_fts(rowid, text)"
                 " SELECT fts, text FROM search_pending ORDER BY fts")
    conn.execute("DROP TABLE search_pending")
    conn.execute("DROP TRIGGER IF EXISTS messages_fts_insert")
    conn.execute("DROP TRIGGER IF EXISTS runs_derived_delete")
    for sql in derived_sql(memory_db()):
        conn.execute(sql)


def _add_debug_notes(conn: sqlite3.Connection) -> None:
    """Schema 6: the debugger's channel and the notes (empty)."""
    for sql in debug_notes_sql(memory_db()):
        conn.execute(sql)


# A run's tokens are unknown (NULL) when it asked a model and no call reported usage.
UNREPORTED_TOKENS_SQL = (
    "COALESCE(input_tokens, 0) = 0 AND COALESCE(output_tokens, 0) = 0"
    " AND COALESCE(total_tokens, 0) = 0 AND EXISTS (SELECT 1 FROM events e"
    " WHERE e.run_id = runs.id AND e.phase = 'enter' AND e.hook IN"
    f" ({', '.join(repr(h) for h in sorted(MODEL_HOOKS))}))")


def _unreported_tokens(conn: sqlite3.Connection) -> None:
    """Schema 6: tokens no model call reported are NULL ("not reported"), not 0: a run
    that asked a model and holds 0 tokens was told no usage (a call that reports usage
    uses at least one token). A run that asked none keeps its 0."""
    conn.execute("UPDATE runs SET input_tokens = NULL, output_tokens = NULL,"
                 f" total_tokens = NULL WHERE {UNREPORTED_TOKENS_SQL}")


def _to_schema_6(conn: sqlite3.Connection) -> None:
    """Schema 6: the debugger's tables and notes; tokens not reported NULL; the kept
    errors counted as errors, each once (``tracer.db.summaries.ERRORS``), no longer as
    error events."""
    from .summaries import recount_errors

    _add_debug_notes(conn)
    _unreported_tokens(conn)
    recount_errors(conn)


def _debug_owners(conn: sqlite3.Connection) -> None:
    """Schema 7: who a breakpoint or a pause belongs to (idempotent: a column there
    already is kept)."""
    for table, cols in (("debug_breaks", (("owner", "TEXT"), ("owner_only", "INTEGER"))),
                        ("debug_pauses", (("owner", "TEXT"),))):
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        for name, kind in cols:
            if name not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


def _to_schema_8(conn: sqlite3.Connection) -> None:
    """Schema 8: the kept errors counted again (``tracer.db.summaries.ERRORS``): a
    person's rejection of a tool call is no longer one. Idempotent: counting again
    gives the same counts."""
    from .summaries import recount_errors

    recount_errors(conn)


def _to_schema_9(conn: sqlite3.Connection) -> None:
    """Schema 9: ``runs.writer`` (NULL in a SQLite file: ``tracer.db.liveness``).
    Idempotent: a column there already is kept."""
    if "writer" not in {r[1] for r in conn.execute("PRAGMA table_info(runs)")}:
        conn.execute("ALTER TABLE runs ADD COLUMN writer INTEGER")


# version -> the step that takes a file from that version to the next
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _add_message_versions,
    2: _add_derived,
    3: _add_state,
    4: _pending_by_run,
    5: _to_schema_6,
    6: _debug_owners,
    7: _to_schema_8,
    8: _to_schema_9,
}


def migrate(conn: sqlite3.Connection, version: int) -> None:
    """Bring a file written with schema ``version`` up to ``SCHEMA_VERSION``, in place,
    in one transaction (the DDL included): nothing recorded is lost, and a failure
    leaves the file as it was."""
    if version >= SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        # (read again under the lock: another process may have just migrated it)
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = max(int(row[0]) if row else version, 1)
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


def verify_pages(conn: sqlite3.Connection, path: str | Path,
                 done: str = "nothing was written") -> None:
    """Raise ``NotALooptraceDatabase`` if ``conn``'s file fails ``PRAGMA quick_check``
    (a damaged page: reads of the rest go on, but a write could spread the damage),
    saying how to recover what still reads."""
    try:
        first = str(conn.execute("PRAGMA quick_check(1)").fetchone()[0])
    except sqlite3.OperationalError:
        raise  # locked ...: not a verdict on the file
    except sqlite3.DatabaseError as exc:
        first = str(exc)
    if first == "ok":
        return
    what = " ".join(first.split())[:200]
    msg = (f"{path} is damaged (quick_check: {what}); {done}: recover what still reads "
           f"with `sqlite3 {path} .recover | sqlite3 recovered.db` (or looptrace export "
           "the runs that read) and use the copy")
    raise NotALooptraceDatabase(msg)


def writable_dir(path: str) -> bool:
    """Whether the folder of ``path`` takes new files (not on a read-only filesystem,
    and writable by this user): SQLite makes a WAL file's ``-shm`` there to read it."""
    folder = Path(path).resolve().parent
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return False
    except OSError:
        return False
    return os.access(folder, os.W_OK)


# -- files written beside a database ----------------------------------------------------

DB_COMPANIONS = ("", "-wal", "-shm", "-journal")  # the file, and what SQLite keeps beside it


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # (one of them does not exist)
        return False


def refuse_database(out: str | os.PathLike[str], db_path: str | os.PathLike[str]) -> None:
    """Raise ``InvalidOption`` when writing ``out`` would write over the trace database
    ``db_path`` or one of the files SQLite keeps beside it (``-wal``, ``-shm``,
    ``-journal``): the same path once links are resolved, or the same file (a hard
    link)."""
    target = Path(out)
    db = Path(db_path)
    for base in dict.fromkeys((db, db.resolve())):
        for suffix in DB_COMPANIONS:
            own = Path(f"{base}{suffix}")
            if target.resolve() == own.resolve() or _same_file(target, own):
                msg = (f"{out} is the trace database {db_path}"
                       f"{f' ({suffix} file)' if suffix else ''}: refusing to write over it "
                       "(choose another output file)")
                raise InvalidOption(msg)


@contextlib.contextmanager
def written_whole(out: str | os.PathLike[str]) -> Iterator[TextIO]:
    """A text file to write ``out`` through: a temporary file in the same folder, renamed
    over ``out`` only once it is complete, so that a write that fails (a full disk, an
    error half-way) leaves any earlier ``out`` as it was and no half-written file. A
    link is written through (its target replaced), an existing file's mode is kept."""
    import secrets

    target = Path(out)
    if target.is_symlink():
        target = target.resolve()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with tmp.open("x", encoding="utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if target.exists():
            shutil.copymode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def readonly_uri(path: str) -> str:
    """The URI that opens ``path`` for reading only: ``mode=ro``; on a read-only
    filesystem or folder also ``immutable=1`` (SQLite then makes no ``-shm`` file and
    takes no lock: nobody can be writing there). A write-ahead log left beside such a
    file (``-wal`` not empty) would be ignored: that is an error, not stale runs."""
    uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
    if writable_dir(path):
        return uri
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0 and not Path(f"{path}-shm").exists():
        msg = (f"{path} is on a read-only filesystem with a write-ahead log ({wal.name}) "
               "SQLite cannot read there: copy the file with its -wal to a writable folder")
        raise DatabaseUnavailable(msg)
    return uri + "&immutable=1"


def _use_wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """Switch ``conn``'s file to WAL, waiting up to ``busy_timeout`` seconds for it.

    SQLite answers ``PRAGMA journal_mode = WAL`` with "database is locked" at once,
    without calling the busy handler, while another connection holds a lock on the
    file (several writers creating one new file meet it): ask again, briefly apart,
    until the mode is WAL (another connection may have switched it meanwhile).
    """
    deadline = time.monotonic() + busy_timeout
    pause = 0.005
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                return
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def connect(path: str | Path, *, create: bool = True, readonly: bool = False,
            busy_timeout: float = 30.0, verify: bool = False,
            done: str = "nothing was written") -> sqlite3.Connection:
    """Open ``path`` as a looptrace database (WAL), validating what is there; a
    ``postgresql://`` URL opens a PostgreSQL store instead (``tracer.db.pg``: a
    connection that takes the same statements).

    A file that is not a looptrace database raises ``NotALooptraceDatabase`` (or
    ``NewerSchemaError``); one that cannot be used right now (locked, read-only,
    unopenable) raises ``DatabaseUnavailable``. With ``verify`` (the write commands,
    and the writer: once per process) an existing file whose pages fail SQLite's
    ``quick_check`` is refused before anything is written to it (``verify_pages``;
    ``done`` says so).
    """
    path_s = str(path)
    if is_url(path_s):  # a PostgreSQL store (tracer.db.pg)
        from . import pg, pool

        if pool.enabled():  # (a long-lived process: the app, MCP, collect)
            return pool.connect(path_s, create=create,  # type: ignore[no-any-return]
                                readonly=readonly, busy_timeout=busy_timeout)
        return pg.connect(path_s, create=create, readonly=readonly,  # type: ignore[return-value]
                          busy_timeout=busy_timeout)
    if readonly and not Path(path_s).exists():
        msg = f"{path_s}: no such database"
        raise NotALooptraceDatabase(msg)
    try:
        if readonly:
            conn = sqlite3.connect(readonly_uri(path_s), uri=True, check_same_thread=False,
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
        if verify and has_schema and not readonly:
            verify_pages(conn, path_s, done)
        if not readonly:
            if not has_schema and create:
                # A file that can shrink when runs are pruned (``tracer.db.prune``): set
                # before the first table and before WAL, or it does not hold.
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            if path_s != ":memory:":
                _use_wal(conn, busy_timeout)
            conn.execute("PRAGMA synchronous = NORMAL")
            if has_schema:
                migrate(conn, has_schema)
            elif create:
                create_schema(conn, path_s)
        elif not has_schema:
            msg = f"{path_s} is empty: no looptrace runs recorded yet"
            raise NotALooptraceDatabase(msg)
    except sqlite3.DatabaseError as exc:  # (OperationalError included: open_error says which)
        conn.close()
        raise open_error(path_s, exc) from None
    except Exception:
        conn.close()
        raise
    return conn
