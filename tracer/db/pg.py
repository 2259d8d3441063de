"""The PostgreSQL store: the same schema and the same SQL as the SQLite file, through a
thin dialect layer (psycopg 3).

Why not SQLAlchemy Core and Alembic: looptrace's store is some hundred hand-written
statements over ``sqlite3`` (``?`` parameters, ``INSERT OR REPLACE``, SQLite's JSON
functions), with its own in-place migrations keyed by ``meta.schema_version``. Core would
mean rewriting each statement and Alembic a second migration history beside the one the
SQLite files already carry. Instead a ``PgConnection`` answers the part of
``sqlite3.Connection`` looptrace uses, and ``translate`` turns each statement into
PostgreSQL's dialect once (cached): ``?`` -> ``%s``; ``INSERT OR REPLACE`` /
``INSERT OR IGNORE`` -> ``ON CONFLICT`` on the table's key; ``LIKE`` -> ``ILIKE``
(SQLite's ``LIKE`` folds ASCII case); ``a IS b`` -> ``IS NOT DISTINCT FROM``;
``PRAGMA table_info`` and ``sqlite_master`` -> the information schema. What SQLite has and
PostgreSQL lacks is made as functions in the store's schema (``FUNCTIONS_SQL``):
``json_valid``, ``json_extract``, ``json_each``, ``instr``, ``sum(boolean)``,
``bigint + boolean``. PostgreSQL's errors reach callers as ``sqlite3.OperationalError``
(connection lost, server down) or ``sqlite3.DatabaseError`` (the rest), so the error
handling written for SQLite holds for both engines, and no message carries the password.

Search uses ``pg_trgm``: a GIN trigram index on ``messages.text`` answers the same
``ILIKE '%text%'`` the SQLite file's FTS5 trigram index answers, and a test of the
text's ASCII-folded form keeps to what SQLite's ``LIKE`` matches (``tracer.db.search``).
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, Self

from tracer.errors import (
    AccessDenied,
    DatabaseUnavailable,
    InvalidOption,
    LooptraceError,
    NewerSchemaError,
    NotALooptraceDatabase,
)

from . import url as store_url

# the primary key of each table (the conflict target of INSERT OR REPLACE / OR IGNORE)
KEYS: dict[str, tuple[str, ...]] = {
    "meta": ("key",), "runs": ("id",), "events": ("run_id", "seq"),
    "messages": ("run_id", "position", "seq"), "wire": ("id",),
    "state": ("run_id", "seq", "key"), "state_values": ("run_id", "hash"),
    "run_stats": ("run_id",), "run_checks": ("run_id",), "findings": ("run_id", "n"),
    "search_runs": ("n",), "search_pending": ("id",), "debug_breaks": ("id",),
    "debug_pauses": ("id",), "notes": ("id",),
}
# tables whose ``id`` is made by the store (an INSERT gives ``lastrowid``)
SERIAL = frozenset({"wire", "search_pending", "debug_breaks", "debug_pauses", "notes"})

ACCESS_DENIED = ("password authentication failed", "authentication failed",
                 "no pg_hba.conf entry", "role \"", "permission denied")


# -- the dialect ---------------------------------------------------------------------

_INSERT_OR = re.compile(r"^\s*INSERT\s+OR\s+(REPLACE|IGNORE)\s+INTO\s+(\w+)\s*\(([^)]*)\)",
                        re.IGNORECASE)
_PRAGMA_INFO = re.compile(r"^\s*PRAGMA\s+table_info\((\w+)\)\s*$", re.IGNORECASE)
_IS = re.compile(r"\bIS\s+(?!NOT\b|NULL\b|TRUE\b|FALSE\b|DISTINCT\b)", re.IGNORECASE)
_IS_NOT = re.compile(r"\bIS\s+NOT\s+(?!NULL\b|TRUE\b|FALSE\b|DISTINCT\b)", re.IGNORECASE)
_LIKE = re.compile(r"(?<![\w])LIKE(?![\w])")
_BEGIN = re.compile(r"^\s*BEGIN(\s+(IMMEDIATE|EXCLUSIVE|DEFERRED))?\s*(TRANSACTION)?\s*;?\s*$",
                    re.IGNORECASE)
_INSERT_INTO = re.compile(r"^\s*INSERT\s+INTO\s+(\w+)", re.IGNORECASE)
_MASTER = ("(SELECT 'table'::text AS type, table_name::text AS name, table_name::text AS"
           " tbl_name FROM information_schema.tables WHERE table_schema = current_schema()"
           " UNION ALL SELECT 'index', indexname::text, tablename::text FROM pg_indexes"
           " WHERE schemaname = current_schema()) AS sqlite_master")


def _outside_quotes(sql: str, fn: Any) -> str:
    """Apply ``fn`` to the parts of ``sql`` outside single-quoted literals."""
    parts = sql.split("'")
    for i in range(0, len(parts), 2):
        parts[i] = fn(parts[i])
    return "'".join(parts)


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> tuple[str, str | None]:
    """``sql`` in PostgreSQL's dialect, and the table of an INSERT that makes an id
    (its ``RETURNING id`` gives ``lastrowid``); kind ``"noop"`` for a statement that has
    nothing to do there (``PRAGMA`` but ``table_info``), ``"begin"``/``"commit"``/
    ``"rollback"`` for transaction control."""
    text = sql.strip().rstrip(";")
    m = _PRAGMA_INFO.match(text)
    if m:
        return ("SELECT ordinal_position - 1, column_name::text, data_type::text,"
                " (is_nullable = 'NO')::int, column_default, 0"
                " FROM information_schema.columns WHERE table_schema = current_schema()"
                f" AND table_name = '{m.group(1).lower()}' ORDER BY ordinal_position"), None
    upper = text[:16].upper()
    if upper.startswith("PRAGMA"):
        return "", "noop"
    if _BEGIN.match(text):
        return "", "begin"
    if upper.startswith(("COMMIT", "END")):
        return "", "commit"
    if upper.startswith("ROLLBACK"):
        return "", "rollback"
    suffix = ""
    m = _INSERT_OR.match(text)
    if m:
        verb, table, cols = m.group(1).upper(), m.group(2), [c.strip() for c in
                                                             m.group(3).split(",")]
        key = KEYS.get(table.lower(), ())
        text = f"INSERT INTO {table}({m.group(3)})" + text[m.end():]
        rest = [c for c in cols if c not in key]
        if verb == "IGNORE" or not rest or not key:
            suffix = " ON CONFLICT DO NOTHING"
        else:
            sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in rest)
            suffix = f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET {sets}"

    def fix(part: str) -> str:
        part = part.replace("%", "%%").replace("?", "%s")
        part = part.replace("sqlite_master", _MASTER)
        part = _IS_NOT.sub("IS DISTINCT FROM ", part)
        part = _IS.sub("IS NOT DISTINCT FROM ", part)
        part = _LIKE.sub("ILIKE", part)
        # SQLite's LIMIT -1 is no limit; PostgreSQL's is LIMIT NULL
        part = re.sub(r"\bLIMIT %s", "LIMIT NULLIF(GREATEST(%s::bigint, -1), -1)", part)
        return re.sub(r"\bAS\s+REAL\b", "AS DOUBLE PRECISION", part, flags=re.IGNORECASE)

    text = _outside_quotes(text, fix)
    # (inside literals too, '%' is the driver's: doubled)
    parts = text.split("'")
    for i in range(1, len(parts), 2):
        parts[i] = parts[i].replace("%", "%%")
    text = "'".join(parts) + suffix
    serial = None
    m = _INSERT_INTO.match(text)
    if m and m.group(1).lower() in SERIAL and "RETURNING" not in text.upper():
        serial = m.group(1).lower()
    return text, serial


# -- the connection ------------------------------------------------------------------

class Row(tuple[Any, ...]):
    """A row that answers by index and by column name (as ``sqlite3.Row`` does)."""

    _names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names.index(key))
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


class PgCursor:
    """What a statement gave: its rows (read at once), ``rowcount``, ``lastrowid``."""

    def __init__(self, rows: list[Any], rowcount: int = -1, lastrowid: int | None = None,
                 description: Sequence[Any] | None = None) -> None:
        self._rows = rows
        self.rowcount = rowcount
        self.lastrowid = lastrowid
        self.description = description

    def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    def fetchmany(self, size: int = 1) -> list[Any]:
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    def __iter__(self) -> Iterator[Any]:
        while self._rows:
            yield self._rows.pop(0)

    def close(self) -> None:
        self._rows = []


def _error(exc: Exception) -> sqlite3.Error:
    """PostgreSQL's error as the ``sqlite3`` error the callers handle: lost connections
    and a server going away are ``OperationalError`` (try again), the rest
    ``DatabaseError``. (The server's messages never hold the password.)"""
    import psycopg

    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
        return sqlite3.OperationalError(text)
    if isinstance(exc, psycopg.errors.SerializationFailure | psycopg.errors.DeadlockDetected):
        return sqlite3.OperationalError(f"database is locked ({text})")
    if isinstance(exc, psycopg.IntegrityError):
        return sqlite3.IntegrityError(text)
    return sqlite3.DatabaseError(text)


class PgConnection:
    """The part of ``sqlite3.Connection`` looptrace uses, over a psycopg connection:
    ``execute``/``executemany`` take SQLite's statements (``translate``), ``with conn:``
    commits (or rolls back) a transaction, ``row_factory`` may be ``sqlite3.Row``."""

    dialect = "postgresql"

    def __init__(self, raw: Any, url: str, release: Any = None) -> None:
        self.raw = raw
        self._release = release  # (a pooled connection: gives it back, tracer.db.pool)
        self._released = False
        self.url = store_url.safe(url)
        self.row_factory: Any = None
        self.isolation_level: str | None = ""

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(self.raw.info.transaction_status != TransactionStatus.IDLE)

    def _rows(self, cur: Any) -> list[Any]:
        if cur.description is None:
            return []
        rows: list[Any] = cur.fetchall()
        factory = self.row_factory
        if factory is None:
            return rows
        if factory is sqlite3.Row:
            names = tuple(d.name for d in cur.description)
            out = []
            for r in rows:
                row = Row(r)
                row._names = names
                out.append(row)
            return out
        return [factory(cur, r) for r in rows]

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        text, kind = translate(sql)
        if kind == "noop":
            return PgCursor([])
        if kind == "begin":
            if self.raw.autocommit:
                self.raw.execute("BEGIN")
            return PgCursor([])
        if kind in ("commit", "rollback"):
            self.commit() if kind == "commit" else self.rollback()
            return PgCursor([])
        if kind is not None:  # (an INSERT into a table that makes the id)
            text += " RETURNING id"
        try:
            cur = self.raw.execute(text, list(params) if not isinstance(params, dict)
                                   else params)
            rows = self._rows(cur) if kind is None else []
            lastrowid = None
            if kind is not None:
                got = cur.fetchone()
                lastrowid = int(got[0]) if got else None
            return PgCursor(rows, cur.rowcount, lastrowid, cur.description)
        except Exception as exc:
            import psycopg

            if isinstance(exc, psycopg.Error):
                self._reset()
                raise _error(exc) from None
            raise

    def executemany(self, sql: str, seq: Any) -> PgCursor:
        text, kind = translate(sql)
        if kind == "noop":
            return PgCursor([])
        params = [list(p) for p in seq]
        if not params:
            return PgCursor([], 0)
        try:
            with self.raw.cursor() as cur:
                cur.executemany(text, params)
                return PgCursor([], cur.rowcount)
        except Exception as exc:
            import psycopg

            if isinstance(exc, psycopg.Error):
                self._reset()
                raise _error(exc) from None
            raise

    def executescript(self, script: str) -> None:
        for stmt in script.split(";"):
            if stmt.strip():
                self.execute(stmt)

    def _reset(self) -> None:
        """After an error: a failed transaction takes no more statements until rolled
        back (SQLite's failed statement leaves the transaction usable; the writer
        retries the whole batch, so roll back)."""
        import contextlib

        if not self.raw.closed and not self.raw.autocommit:
            with contextlib.suppress(Exception):
                self.raw.rollback()

    def commit(self) -> None:
        try:
            self.raw.commit()
        except Exception as exc:
            import psycopg

            if isinstance(exc, psycopg.Error):
                raise _error(exc) from None
            raise

    def rollback(self) -> None:
        import contextlib

        with contextlib.suppress(Exception):
            self.raw.rollback()

    def close(self) -> None:
        import contextlib

        if self._release is not None:
            release, self._release = self._release, None
            self._released = True
            release(self.raw)
            return
        with contextlib.suppress(Exception):
            self.raw.close()

    @property
    def closed(self) -> bool:
        return self._released or bool(self.raw.closed)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()


def _numeric_loader() -> Any:
    """numeric -> int when whole, else float (SUM and AVG over integers are numeric in
    PostgreSQL: the callers expect SQLite's numbers, not ``Decimal``)."""
    from psycopg.adapt import Loader

    class NumericLoader(Loader):
        def load(self, data: Any) -> Any:
            s = bytes(data).decode()
            if s in ("NaN", "Infinity", "-Infinity"):
                return float(s)
            return int(s) if "." not in s and "e" not in s.lower() else float(s)

    return NumericLoader


def open_raw(db: str, *, connect_timeout: float = 10.0) -> Any:
    """A psycopg connection to the store ``db`` (autocommit), or a one-line error
    naming the problem without the password: a malformed URL (``InvalidOption``), a
    server that cannot be reached (``DatabaseUnavailable``), credentials refused
    (``AccessDenied``), a database that does not exist (``NotALooptraceDatabase``)."""
    import psycopg

    conninfo = store_url.parse(db)
    shown = store_url.safe(db)
    try:
        raw = psycopg.connect(conninfo, autocommit=True,
                              connect_timeout=max(1, int(connect_timeout)),
                              application_name="looptrace")
    except psycopg.ProgrammingError as exc:  # (libpq refused the string itself)
        msg = f"{shown} is not a valid PostgreSQL URL ({_first_line(exc)})"
        raise InvalidOption(msg) from None
    except psycopg.Error as exc:
        text = _first_line(exc)
        low = text.lower()
        if "does not exist" in low and "database" in low:
            msg = f"{shown}: {text} (create it first: createdb)"
            raise NotALooptraceDatabase(msg) from None
        if any(s in low for s in ACCESS_DENIED):
            msg = f"{shown}: the server refused the credentials ({text})"
            raise AccessDenied(msg) from None
        msg = f"{shown}: cannot reach the PostgreSQL server ({text})"
        raise DatabaseUnavailable(msg) from None
    raw.adapters.register_loader("numeric", _numeric_loader())
    return raw


def _first_line(exc: BaseException) -> str:
    """The server's or libpq's message, on one line, without a password (libpq's
    messages hold none; a conninfo echoed back would be cut at ``password``)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return re.sub(r"password=\S+", "password=****", text)


# -- the schema ----------------------------------------------------------------------

_TYPES = {str: "TEXT", int: "BIGINT", float: "DOUBLE PRECISION"}

FUNCTIONS_SQL = (
    # SQLite's JSON functions, on text (NULL for text that is not JSON: json_valid first)
    """CREATE OR REPLACE FUNCTION json_valid(t text) RETURNS boolean LANGUAGE plpgsql
IMMUTABLE AS $f$ BEGIN
  IF t IS NULL THEN RETURN NULL; END IF;
  PERFORM t::jsonb; RETURN true;
EXCEPTION WHEN others THEN RETURN false; END $f$""",
    """CREATE OR REPLACE FUNCTION json_extract(t text, path text) RETURNS text
LANGUAGE sql IMMUTABLE AS $f$ SELECT (t::jsonb) #>> string_to_array(
  regexp_replace(regexp_replace(substr(path, 2), '\\[(\\d+)\\]', '.\\1', 'g'), '^\\.', ''),
  '.') $f$""",
    """CREATE OR REPLACE FUNCTION json_each(t text) RETURNS TABLE(key text, value text)
LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN
  IF jsonb_typeof(t::jsonb) = 'array' THEN
    RETURN QUERY SELECT (x.n - 1)::text, x.v FROM jsonb_array_elements_text(t::jsonb)
      WITH ORDINALITY AS x(v, n);
  ELSIF jsonb_typeof(t::jsonb) = 'object' THEN
    RETURN QUERY SELECT e.key, e.value FROM jsonb_each_text(t::jsonb) AS e;
  END IF; END $f$""",
    """CREATE OR REPLACE FUNCTION json_type(t text) RETURNS text
LANGUAGE sql IMMUTABLE AS $f$ SELECT CASE jsonb_typeof(t::jsonb)
  WHEN 'string' THEN 'text' WHEN 'boolean' THEN (t::jsonb)::text
  WHEN 'number' THEN CASE WHEN (t::jsonb)::text ~ '^-?[0-9]+$' THEN 'integer' ELSE 'real' END
  ELSE jsonb_typeof(t::jsonb) END $f$""",
    """CREATE OR REPLACE FUNCTION instr(a text, b text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $f$ SELECT strpos(a, b) $f$""",
    # SQLite counts with booleans: SUM(x = y), n + (x = y)
    """CREATE OR REPLACE FUNCTION looptrace_bool_sum(s bigint, b boolean) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $f$ SELECT COALESCE(s, 0) + COALESCE(b::int, 0) $f$""",
    """DO $f$ BEGIN
  CREATE AGGREGATE sum(boolean) (SFUNC = looptrace_bool_sum, STYPE = bigint);
EXCEPTION WHEN duplicate_function THEN NULL; END $f$""",
    """CREATE OR REPLACE FUNCTION looptrace_int_bool(a bigint, b boolean) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $f$ SELECT a + b::int $f$""",
    """DO $f$ BEGIN
  CREATE OPERATOR + (LEFTARG = bigint, RIGHTARG = boolean, FUNCTION = looptrace_int_bool);
EXCEPTION WHEN duplicate_function OR duplicate_object THEN NULL; END $f$""",
)


def _table(name: str, cols: dict[str, type], key: tuple[str, ...],
           not_null: tuple[str, ...] = ()) -> str:
    defs = []
    for col, typ in cols.items():
        sql = f"{col} {_TYPES[typ]}"
        if name in SERIAL and col == "id":
            sql = "id BIGINT GENERATED BY DEFAULT AS IDENTITY"
        if name == "search_runs" and col == "n":
            sql = "n BIGINT GENERATED BY DEFAULT AS IDENTITY"
        if col in not_null:
            sql += " NOT NULL"
        defs.append(sql)
    defs.append(f"PRIMARY KEY ({', '.join(key)})")
    return f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(defs)})"


def schema_sql() -> list[str]:
    """Every table, index and trigger of the store, as the SQLite file has them (the
    column lists are ``tracer.db.schema``'s), and the functions of the dialect."""
    from . import tables as s

    out = list(FUNCTIONS_SQL)
    out += [
        _table("meta", {"key": str, "value": str}, ("key",)),
        _table("runs", s.RUNS_COLUMNS, ("id",), ("status",)),
        _table("events", s.EVENTS_COLUMNS, ("run_id", "seq")),
        _table("messages", s.MESSAGES_COLUMNS, ("run_id", "position", "seq")),
        _table("wire", s.WIRE_COLUMNS, ("id",)),
        _table("state", s.STATE_COLUMNS, ("run_id", "seq", "key")),
        _table("state_values", s.STATE_VALUES_COLUMNS, ("run_id", "hash")),
        _table("run_stats", s.RUN_STATS_COLUMNS, ("run_id",)),
        _table("run_checks", s.RUN_CHECKS_COLUMNS, ("run_id",)),
        _table("findings", s.FINDINGS_COLUMNS, ("run_id", "n")),
        _table("search_runs", s.SEARCH_RUNS_COLUMNS, ("n",), ("run_id", "messages")),
        _table("search_pending", s.SEARCH_PENDING_COLUMNS, ("id",)),
        _table("debug_breaks", s.DEBUG_BREAKS_COLUMNS, ("id",), ("spec",)),
        _table("debug_pauses", s.DEBUG_PAUSES_COLUMNS, ("id",), ("run_id",)),
        _table("notes", s.NOTES_COLUMNS, ("id",), ("run_id", "text")),
    ]
    for table, cols in s.INDEXES:
        unique = "UNIQUE " if table == "search_runs" else ""
        out.append(f"CREATE {unique}INDEX IF NOT EXISTS idx_{table}_{'_'.join(cols)}"
                   f" ON {table}({', '.join(cols)})")
    out += [
        "CREATE INDEX IF NOT EXISTS idx_debug_pauses_run_id ON debug_pauses(run_id)",
        "CREATE INDEX IF NOT EXISTS idx_notes_run_id_seq ON notes(run_id, seq)",
        "CREATE INDEX IF NOT EXISTS idx_wire_run_id_id ON wire(run_id, id)",
        # the runs still running, by their writer's lock (tracer.db.liveness)
        "CREATE INDEX IF NOT EXISTS idx_runs_running ON runs(writer) WHERE status = 'running'",
        # search: the trigram index answers ILIKE '%text%' (tracer.db.search); the
        # extension is the database's, in whichever schema made it first (its operator
        # class named with that schema: stores in other schemas of it use it too)
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        """DO $f$ DECLARE nsp text; BEGIN
  SELECT n.nspname INTO nsp FROM pg_extension e JOIN pg_namespace n
    ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
  EXECUTE format('CREATE INDEX IF NOT EXISTS idx_messages_text_trgm ON messages'
    ' USING gin (text %I.gin_trgm_ops)', nsp);
END $f$""",
        # a deleted run takes what hangs on it along (the SQLite file's triggers)
        """CREATE OR REPLACE FUNCTION looptrace_run_deleted() RETURNS trigger
LANGUAGE plpgsql AS $f$ BEGIN
  DELETE FROM search_pending WHERE run_id = OLD.id;
  DELETE FROM search_runs WHERE run_id = OLD.id;
  DELETE FROM run_stats WHERE run_id = OLD.id;
  DELETE FROM run_checks WHERE run_id = OLD.id;
  DELETE FROM findings WHERE run_id = OLD.id;
  DELETE FROM state WHERE run_id = OLD.id;
  DELETE FROM state_values WHERE run_id = OLD.id;
  DELETE FROM debug_pauses WHERE run_id = OLD.id;
  DELETE FROM notes WHERE run_id = OLD.id;
  RETURN OLD; END $f$""",
        "DROP TRIGGER IF EXISTS runs_derived_delete ON runs",
        ("CREATE TRIGGER runs_derived_delete AFTER DELETE ON runs FOR EACH ROW"
        " EXECUTE FUNCTION looptrace_run_deleted()"),
    ]
    return out


# version -> the step that takes a store from that version to the next (PostgreSQL
# stores begin at schema 6: nothing older exists)
def _debug_owners(conn: PgConnection) -> None:
    """Schema 7 (``tracer.db.schema._debug_owners``): who a breakpoint or a pause
    belongs to."""
    for table, cols in (("debug_breaks", (("owner", "TEXT"), ("owner_only", "BIGINT"))),
                        ("debug_pauses", (("owner", "TEXT"),))):
        for name, kind in cols:
            conn.raw.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {name} {kind}")


# version -> the step that takes a store from that version to the next (as the SQLite
# file's ``tracer.db.schema.MIGRATIONS``; a PostgreSQL store starts at 6)
def _to_schema_8(conn: PgConnection) -> None:
    """Schema 8 (``tracer.db.schema._to_schema_8``): the kept errors counted again (a
    person's rejection is not one)."""
    from .summaries import recount_errors

    recount_errors(conn)  # type: ignore[arg-type]


def _to_schema_9(conn: PgConnection) -> None:
    """Schema 9 (``tracer.db.schema._to_schema_9``): ``runs.writer``, the lock of a
    running run's writer (``tracer.db.liveness``); its index is ``schema_sql``'s."""
    conn.raw.execute("ALTER TABLE runs ADD COLUMN IF NOT EXISTS writer BIGINT")


MIGRATIONS: dict[int, Any] = {6: _debug_owners, 7: _to_schema_8, 8: _to_schema_9}
FIRST_VERSION = 6
_LOCK_KEY = 0x6C6F6F70  # "loop": the advisory lock of creating and migrating a store


def check_schema(conn: PgConnection) -> int:
    """The schema version of the store (0: the schema holds no table yet); a one-line
    error for a database that is someone else's or a newer looptrace's."""
    from .tables import APP_ID, SCHEMA_VERSION

    shown = conn.url
    tables = {r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = current_schema()")}
    if not tables:
        return 0
    if "meta" not in tables:
        msg = f"{shown} is a PostgreSQL database but not a looptrace one (no meta table)"
        raise NotALooptraceDatabase(msg)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        msg = f"{shown} has an unreadable meta table ({exc})"
        raise NotALooptraceDatabase(msg) from None
    if meta.get("app") != APP_ID:
        msg = f"{shown} is a PostgreSQL database but not a looptrace one"
        raise NotALooptraceDatabase(msg)
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        msg = f"{shown} has no valid looptrace schema version"
        raise NotALooptraceDatabase(msg) from None
    if version > SCHEMA_VERSION:
        msg = (f"{shown} was written by a newer looptrace (schema {version}; this one reads "
               f"up to {SCHEMA_VERSION}): upgrade looptrace to open it")
        raise NewerSchemaError(msg)
    return version


def create_or_migrate(conn: PgConnection, version: int) -> None:
    """Create the schema (``version`` 0) or bring it to ``SCHEMA_VERSION``, in one
    transaction under an advisory lock: processes starting together never see half a
    schema, and a failure leaves the store as it was."""
    from .tables import APP_ID, SCHEMA_VERSION

    if version >= SCHEMA_VERSION:
        return
    raw = conn.raw
    with raw.transaction():
        raw.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
        version = check_schema(conn)  # (read again under the lock)
        if not version:
            for sql in schema_sql():
                raw.execute(sql)
            raw.execute("INSERT INTO meta(key, value) VALUES ('app', %s),"
                        " ('schema_version', %s) ON CONFLICT DO NOTHING",
                        [APP_ID, str(SCHEMA_VERSION)])
            return
        for v in range(max(version, FIRST_VERSION), SCHEMA_VERSION):
            MIGRATIONS[v](conn)
        # (idempotent: what a later version adds is made if missing)
        for sql in schema_sql():
            raw.execute(sql)
        raw.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'",
                    [str(SCHEMA_VERSION)])


def connect(db: str, *, create: bool = True, readonly: bool = False,
            busy_timeout: float = 30.0, connect_timeout: float = 10.0) -> PgConnection:
    """Open the PostgreSQL store ``db`` (a URL), validating what is there, as
    ``tracer.db.schema.connect`` opens a SQLite file: created or migrated in place when
    opened for writing; read as it is, and never written, when ``readonly``."""
    raw = open_raw(db, connect_timeout=connect_timeout)
    conn = PgConnection(raw, db)
    try:
        raw.execute(f"SET lock_timeout = {int(busy_timeout * 1000)}")
        version = check_schema(conn)
        if readonly:
            if not version:
                msg = f"{conn.url} is empty: no looptrace runs recorded yet"
                raise NotALooptraceDatabase(msg)
            raw.execute("SET default_transaction_read_only = on")
        elif version or create:
            create_or_migrate(conn, version)
            raw.autocommit = False
        else:
            msg = f"{conn.url} is empty: no looptrace runs recorded yet"
            raise NotALooptraceDatabase(msg)
    except LooptraceError:
        conn.close()
        raise
    except sqlite3.Error as exc:
        conn.close()
        msg = f"{conn.url} cannot be used ({exc})"
        raise DatabaseUnavailable(msg) from None
    except Exception as exc:
        conn.close()
        import psycopg

        if isinstance(exc, psycopg.Error):
            low = str(exc).lower()
            cls = AccessDenied if "permission denied" in low else DatabaseUnavailable
            msg = f"{conn.url} cannot be used ({_first_line(exc)})"
            raise cls(msg) from None
        raise
    return conn
