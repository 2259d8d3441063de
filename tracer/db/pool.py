"""Connections to a PostgreSQL store drawn from a pool (psycopg_pool), in the processes
that live long and open one per request: the app (``looptrace ui``), the MCP server and
``looptrace collect``. Each ``connect`` there would otherwise be a TCP connection, its
authentication and the schema's check (some milliseconds a page, a tool call, a batch
of spans); a pooled one is a round trip (the pool's ``check``: the server may have
restarted since).

Not for the agent's writer (one connection for the process's life, kept by its thread;
a pool would only add a thread) nor the debugger's channel (one connection per debugger
for its life, and its ``LISTEN`` connection must never be shared: a pooled connection
given back would keep listening). A process turns the pool on with ``enable()``, or its
parent with ``LOOPTRACE_PG_POOL=1`` in its environment (``looptrace ui``'s Streamlit).

The first connection to a store is opened as ``tracer.db.pg.connect`` opens one: the
URL, the server, the credentials and the schema checked, each failure one line, the
schema made or migrated. Only then is a pool made for it (per store and per mode: read
only, or read-write); a pool that cannot give a connection in time falls back to that
path, so a server gone away is said the same way with or without a pool.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

ENV = "LOOPTRACE_PG_POOL"
MAX_SIZE = 8  # connections per store and mode: the app's and MCP's threads
_enabled = False
_pools: dict[tuple[str, bool], Any] = {}
_lock = threading.Lock()

__all__ = ["ENV", "close_all", "connect", "enable", "enabled"]


def enable() -> None:
    """Draw this process's PostgreSQL connections from pools from now on."""
    global _enabled
    _enabled = True


def enabled() -> bool:
    return _enabled or os.environ.get(ENV) == "1"


def _pool(db: str, readonly: bool, busy_timeout: float, connect_timeout: float) -> Any:
    from psycopg_pool import ConnectionPool

    from . import pg
    from . import url as store_url

    def configure(raw: Any) -> None:
        raw.adapters.register_loader("numeric", pg._numeric_loader())
        raw.execute(f"SET lock_timeout = {int(busy_timeout * 1000)}")
        if readonly:
            raw.execute("SET default_transaction_read_only = on")

    pool = ConnectionPool(
        store_url.parse(db), min_size=1, max_size=MAX_SIZE, open=False,
        kwargs={"autocommit": True, "connect_timeout": max(1, int(connect_timeout)),
                "application_name": "looptrace"},
        configure=configure, check=ConnectionPool.check_connection,
        name=f"looptrace-{'ro' if readonly else 'rw'}", timeout=connect_timeout)
    pool.open(wait=False)
    return pool


def connect(db: str, *, create: bool = True, readonly: bool = False,
            busy_timeout: float = 30.0, connect_timeout: float = 10.0) -> Any:
    """``tracer.db.pg.connect``'s connection, drawn from the store's pool (its
    ``close()`` gives it back, its transaction rolled back)."""
    from . import pg

    key = (db, readonly)
    with _lock:
        pool = _pools.get(key)
    if pool is None:
        first = pg.connect(db, create=create, readonly=readonly, busy_timeout=busy_timeout,
                           connect_timeout=connect_timeout)  # (checked, made, migrated)
        with _lock:
            if key not in _pools:
                _pools[key] = _pool(db, readonly, busy_timeout, connect_timeout)
        return first
    from psycopg_pool import PoolTimeout, TooManyRequests

    try:
        raw = pool.getconn(timeout=connect_timeout)
    except (PoolTimeout, TooManyRequests):
        # (the server away, or every connection busy: the path that says which)
        return pg.connect(db, create=create, readonly=readonly, busy_timeout=busy_timeout,
                          connect_timeout=connect_timeout)
    if not readonly:
        raw.autocommit = False
    return pg.PgConnection(raw, db, release=lambda r: _give_back(pool, r))


def _give_back(pool: Any, raw: Any) -> None:
    with contextlib.suppress(Exception):
        if not raw.closed:
            raw.rollback()
            raw.autocommit = True
    with contextlib.suppress(Exception):
        pool.putconn(raw)


def close_all() -> None:
    """Close every pool (their connections)."""
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        with contextlib.suppress(Exception):
            pool.close(timeout=5)
