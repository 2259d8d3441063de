"""Which engine a database name picks: a ``postgresql://`` (or ``postgres://``) URL is a
PostgreSQL store (``tracer.db.pg``); anything else is a SQLite file's path, as before.

A URL is checked here before anything connects (``parse``): a malformed one is one line
that names the problem. Whatever looptrace prints of a URL goes through ``safe``: the
password never appears in output, logs, the record, the app or MCP answers. The
password is best not written in the URL at all: libpq reads ``PGPASSWORD``, a
``PGPASSFILE`` (``~/.pgpass``), or ``passfile=`` in the URL's query; looptrace itself
also reads ``LOOPTRACE_DB_PASSWORD_FILE`` (a file holding the password). Every other
query parameter (``sslmode``, ``sslrootcert``, ``connect_timeout`` ...) is passed to
libpq as it is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from tracer.errors import InvalidOption

SCHEMES = ("postgresql", "postgres")
PASSWORD_FILE_ENV = "LOOPTRACE_DB_PASSWORD_FILE"
_URL_RE = re.compile(r"^(postgresql|postgres)://", re.IGNORECASE)
# libpq's connection parameters that may stand in a URL's query (a misspelt one would be
# refused by libpq with the whole string in its message: refused here, by name)
LIBPQ_PARAMS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "channel_binding",
    "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode",
    "requiressl", "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode",
    "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer", "ssl_min_protocol_version",
    "ssl_max_protocol_version", "krbsrvname", "gsslib", "gssdelegation", "service",
    "target_session_attrs", "load_balance_hosts", "require_auth",
})


def is_url(db: str | os.PathLike[str] | None) -> bool:
    """Whether ``db`` names a PostgreSQL store (a ``postgresql://`` or ``postgres://``
    URL) rather than a SQLite file."""
    return isinstance(db, str) and bool(_URL_RE.match(db.strip()))


def safe(db: str | os.PathLike[str]) -> str:
    """``db`` as it may be shown: a URL without its password (``****`` in its place,
    in the userinfo and in a ``password=`` query parameter); a path as it is."""
    text = os.fspath(db)
    if not is_url(text):
        return text
    try:
        parts = urlsplit(text.strip())
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hosts = netloc.rpartition("@")
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:****@{hosts}" if ":" in userinfo else f"{user}@{hosts}"
        query = "&".join(
            f"{k}={'****' if k == 'password' or k == 'sslpassword' else quote(v, safe='/')}"
            for k, v in parse_qsl(parts.query, keep_blank_values=True))
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        # (a URL too broken to take apart: nothing after the scheme is shown)
        return text.split("://", 1)[0] + "://…"


def parse(db: str) -> str:
    """Check the URL ``db`` and return the connection string to give libpq: the URL,
    with the password of ``LOOPTRACE_DB_PASSWORD_FILE`` added when it has none (and
    the environment has no ``PGPASSWORD``). Raise ``InvalidOption`` (one line, no
    password) for a URL that is malformed."""
    text = db.strip()
    shown = safe(text)
    try:
        parts = urlsplit(text)
        port = parts.port  # (raises for a port that is not a number)
    except ValueError as exc:
        msg = f"{shown} is not a valid PostgreSQL URL ({exc})"
        raise InvalidOption(msg) from None
    if parts.fragment:
        msg = f"{shown} is not a valid PostgreSQL URL (it has a #fragment)"
        raise InvalidOption(msg)
    dbname = unquote(parts.path.lstrip("/"))
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not dbname and not any(k == "dbname" for k, _ in query):
        msg = f"{shown} names no database (postgresql://USER@HOST:PORT/DATABASE)"
        raise InvalidOption(msg)
    if "/" in dbname:
        msg = f"{shown} is not a valid PostgreSQL URL (the database name holds a /)"
        raise InvalidOption(msg)
    for key, _ in query:
        if key not in LIBPQ_PARAMS:
            msg = f"{shown}: unknown connection parameter {key!r} in the URL"
            raise InvalidOption(msg)
    if port is not None and not 0 < port < 65536:
        msg = f"{shown} is not a valid PostgreSQL URL (port {port})"
        raise InvalidOption(msg)
    password_file = os.environ.get(PASSWORD_FILE_ENV)
    has_password = (parts.password is not None or any(k == "password" for k, _ in query)
                    or os.environ.get("PGPASSWORD"))
    if password_file and not has_password:
        try:
            password = Path(password_file).read_text(encoding="utf-8").strip("\r\n")
        except OSError as exc:
            msg = f"{PASSWORD_FILE_ENV}={password_file} cannot be read ({exc.strerror})"
            raise InvalidOption(msg) from None
        sep = "&" if parts.query else ""
        text = urlunsplit((parts.scheme, parts.netloc, parts.path,
                           f"{parts.query}{sep}password={quote(password, safe='')}", ""))
    return text


def store_key(db: str) -> str:
    """What names one store whatever the password: the URL without its password (the
    key of the process's writer for it, and of its spool folder)."""
    return safe(db)


def absolute(db: str | os.PathLike[str]) -> str:
    """``db`` as a child process in another folder names the same store: a URL as it
    is, a path made absolute."""
    text = os.fspath(db)
    return text if is_url(text) else os.path.abspath(text)


def engine_of(conn: object) -> str:
    """``"postgresql"`` for a connection to a PostgreSQL store (``tracer.db.pg``),
    ``"sqlite"`` for a SQLite file's."""
    return str(getattr(conn, "dialect", "sqlite"))


def for_child(db: str) -> tuple[str, dict[str, str]]:
    """What to give a child process (``looptrace rerun --db ...``) for the store ``db``:
    the URL without its password for its command line (process listings show it), and
    the password in ``PGPASSWORD`` for its environment; a path as it is, and nothing."""
    if not is_url(db):
        return db, {}
    try:
        parts = urlsplit(db.strip())
        password = parts.password
    except ValueError:
        return db, {}
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    in_query = next((v for k, v in query if k == "password"), None)
    if password is None and in_query is None:
        return db, {}
    netloc = parts.netloc
    if password is not None:
        userinfo, _, hosts = netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}@{hosts}"
    rest = "&".join(f"{k}={quote(v, safe='/')}" for k, v in query if k != "password")
    url = urlunsplit((parts.scheme, netloc, parts.path, rest, ""))
    return url, {"PGPASSWORD": unquote(password) if password is not None else str(in_query)}


DB_ENV = "LOOPTRACE_DB"
DEFAULT_FILE = "looptrace.db"


def default_db() -> str:
    """The store used when none is named: ``$LOOPTRACE_DB`` when set (a path or a
    PostgreSQL URL), else ``looptrace.db`` in the current folder. Every command's
    ``--db``, the debugger's and autotrace's fallbacks read it here."""
    return os.environ.get(DB_ENV) or DEFAULT_FILE
