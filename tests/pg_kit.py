"""A throwaway PostgreSQL for the tests: ``LOOPTRACE_TEST_PG_URL`` when set (``.ci/run``
starts one), else a cluster started here with ``.ci/pg-start`` (Debian's PostgreSQL;
stopped at the end of the session); None when neither can be had. Each store is a
schema of its own in that database (``fresh_store``): the URL names it through libpq's
``options=-csearch_path=...``."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
ENV = "LOOPTRACE_TEST_PG_URL"


def _binaries() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@contextmanager
def cluster() -> Iterator[str | None]:
    """The URL of a PostgreSQL database the tests may use (None: none to be had)."""
    url = os.environ.get(ENV)
    if url:
        yield url
        return
    bin_dir = _binaries()
    if bin_dir is None or shutil.which("su") is None:
        yield None
        return
    folder = tempfile.mkdtemp(prefix="looptrace-pg-test.")
    try:
        out = subprocess.run(["bash", str(ROOT / ".ci" / "pg-start"), folder],  # noqa: S607
                             capture_output=True, text=True, timeout=120, check=True)
    except (subprocess.SubprocessError, OSError):
        shutil.rmtree(folder, ignore_errors=True)
        yield None
        return
    try:
        yield out.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["su", "postgres", "-s", "/bin/bash", "-c",  # noqa: S607
                        f"'{bin_dir}/pg_ctl' -D '{folder}/data' -m immediate stop"],
                       capture_output=True, timeout=60, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def fresh_store(url: str) -> str:
    """A URL naming a new, empty schema of ``url``'s database: a store of its own."""
    import psycopg

    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={name}')}"


def store_on(engine: str, folder: Path, pg_url: str | None, name: str = "trace.db") -> str:
    """A new, empty store on ``engine``: the file ``folder/name`` (SQLite), or a schema
    of its own in ``pg_url``'s database (``fresh_store``; the name unused). What the
    ``new_store`` fixture makes, for a fixture of a wider scope than a test's."""
    if engine == "sqlite":
        return str(folder / name)
    assert pg_url is not None, "the engine fixture skips PostgreSQL without a database"
    return fresh_store(pg_url)


def untouched(db: str) -> bool:
    """Whether nothing was written to the store ``db``: no SQLite file made, or no table
    in the PostgreSQL schema (``fresh_store`` makes it empty)."""
    if not db.startswith("postgresql://"):
        return not Path(db).exists()
    import psycopg

    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT COUNT(*) FROM information_schema.tables"
                           " WHERE table_schema = current_schema()").fetchone()
    return row is not None and row[0] == 0


class OwnCluster:
    """A cluster of a test's own, to stop and start again (an outage): ``start()``
    gives its URL (the same port each time), ``stop()`` stops it (``-m fast``: the
    connections cut, what was committed kept; ``-m immediate`` on a cluster started
    with ``fsync=off`` would lose committed rows, a fault of the test's server)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.bin = _binaries()

    def start(self) -> str:
        out = subprocess.run(["bash", str(ROOT / ".ci" / "pg-start"), str(self.folder)],  # noqa: S607
                             capture_output=True, text=True, timeout=120, check=True)
        return out.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        subprocess.run(["su", "postgres", "-s", "/bin/bash", "-c",  # noqa: S607
                        f"'{self.bin}/pg_ctl' -D '{self.folder}/data' -m fast stop"],
                       capture_output=True, timeout=60, check=False)


def can_run_cluster() -> bool:
    return _binaries() is not None and shutil.which("su") is not None and os.geteuid() == 0


@contextmanager
def own_cluster_for(name: str) -> Iterator[OwnCluster]:
    """An ``OwnCluster`` in a new folder (``looptrace-pg-NAME.*``), not started; stopped
    and removed at the end. Without PostgreSQL's binaries (or root) the test is skipped,
    except in CI, where .ci/run must provide them."""
    import pytest

    if not can_run_cluster():
        if os.environ.get("CI"):
            pytest.fail("CI must be able to start PostgreSQL (.ci/run installs it)")
        pytest.skip("no PostgreSQL binaries (or not root) here")
    c = OwnCluster(Path(tempfile.mkdtemp(prefix=f"looptrace-pg-{name}.")))
    try:
        yield c
    finally:
        c.stop()
        shutil.rmtree(c.folder, ignore_errors=True)
