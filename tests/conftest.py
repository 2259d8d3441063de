"""Shared fixtures: temporary databases, the sample-trace database, a real browser."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from browser_support import ARTIFACTS, CHROMIUM_ARGS, chromium_path


def pytest_configure(config: pytest.Config) -> None:
    """Import the provider SDKs once, in the main thread, before any test. AppTest runs
    a page in a thread of its own, and the Wire page imports the adapters: a page left
    running by a timed-out AppTest while a later test imports ``langchain_openai`` met
    a half-initialised ``openai`` ("cannot import name ... partially initialized
    module"), an error no user can meet (``looptrace ui`` imports them before it
    listens: ``app/serve.py``)."""
    # genai-prices' answers are kept in a cache folder (``tracer.read.price_memo``): the
    # tests', and the commands they start, in one of their own, never the user's.
    import tempfile

    os.environ.setdefault("LOOPTRACE_CACHE_DIR", tempfile.mkdtemp(prefix="looptrace-cache-"))
    for mod in ("openai", "anthropic", "ollama", "langchain_openai", "langchain_anthropic",
                "langchain_ollama"):
        try:
            importlib.import_module(mod)
        except ImportError:
            continue


SLOW_FILES = frozenset(
    line.split("#")[0].strip()
    for line in (Path(__file__).parent / "slow_files.txt").read_text().splitlines()
    if line.split("#")[0].strip())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tiers: every test in ``tests/browser/`` (a real Chromium), of the real
    tracing backends, and of the files ``tests/slow_files.txt`` lists (measured) is
    ``slow``; ``-m "not slow"`` is the fast tier (tests/README.md, "Tiers")."""
    slow = pytest.mark.slow
    root = Path(__file__).parent.parent
    for item in items:
        parts = item.path.parts
        if ("browser" in parts or item.get_closest_marker("backends") is not None
                or item.path.relative_to(root).as_posix() in SLOW_FILES):
            item.add_marker(slow)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh database file path (not created yet)."""
    return tmp_path / "trace.db"


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database built from every bundled sample trace."""
    from tracer.interop.exchange import build_sample_db

    return build_sample_db(tmp_path_factory.mktemp("samples") / "samples.db")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's Chromium driven by Playwright (skips if it is not installed).

    Module-scoped: Playwright's sync API keeps an asyncio loop running while it is
    open, so a session-wide one made every later ``asyncio.run`` test fail."""
    exe = chromium_path()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run must install Debian's chromium")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def clean_streamlit_caches() -> Iterator[None]:
    """Clear st.cache_data / st.cache_resource around an AppTest test."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str | None]:
    """A PostgreSQL database for the store tests (``tests/pg_kit.py``); None: none here."""
    from pg_kit import cluster

    with cluster() as url:
        yield url


ENGINES = ("sqlite", "postgresql")


@pytest.fixture(scope="session", params=ENGINES)
def engine(request: pytest.FixtureRequest, pg_url: str | None) -> str:
    """The matrix (issue 46, item 8): a test that takes a store through ``store_db``,
    ``new_store`` or ``sample_store`` runs once on each engine, ``[sqlite]`` then
    ``[postgresql]``. Without PostgreSQL the second is skipped, except in CI, where
    .ci/run must provide it. Session-scoped, so one test's stores are all of one engine
    and the samples are copied into PostgreSQL once per session (``sample_store``)."""
    if request.param == "postgresql" and pg_url is None:
        if os.environ.get("CI"):
            pytest.fail("no PostgreSQL: .ci/run must start one (LOOPTRACE_TEST_PG_URL)")
        pytest.skip("no PostgreSQL here (Debian's postgresql package)")
    return str(request.param)


@pytest.fixture
def new_store(engine: str, tmp_path: Path, pg_url: str | None) -> Iterator[Callable[..., str]]:
    """Make a new, empty store on the test's engine: ``new_store("name.db")`` is that
    file in ``tmp_path`` (SQLite), or a PostgreSQL schema of its own; the same name
    twice is the same store on both. After a test on PostgreSQL the process's writers
    and pools are closed: each keeps a connection for its life, and a session's
    hundreds of stores ran the server out of them ("too many clients already")."""
    from pg_kit import store_on

    made: dict[str, str] = {}

    def make(name: str = "trace.db") -> str:
        if name not in made:
            made[name] = store_on(engine, tmp_path, pg_url, name)
        return made[name]

    yield make
    if engine == "postgresql":
        from tracer.db import pool, writer

        writer.close_all()
        pool.close_all()


@pytest.fixture
def store_db(new_store: Callable[..., str]) -> str:
    """A new, empty store on each engine: a SQLite file's path (``tmp_path/trace.db``),
    then a PostgreSQL URL (its own schema)."""
    return new_store()


@pytest.fixture(scope="session")
def sample_store(engine: str, sample_db: Path, pg_url: str | None) -> str:
    """The bundled samples' store on each engine, to read (never to write: it is the
    session's): the SQLite file of ``sample_db``, or a PostgreSQL schema of their own
    built once per session (about 2 s) the way ``build_sample_db`` builds the file, each
    sample file imported in turn, so that the stores' own ids (notes) are the same.
    (``looptrace copy`` would number the notes in the runs' order, not the files'.)"""
    if engine == "sqlite":
        return str(sample_db)
    from pg_kit import fresh_store

    from tracer.interop.exchange import import_many, sample_files

    assert pg_url is not None
    url = fresh_store(pg_url)
    import_many(sample_files(), url)
    return url


@pytest.fixture
def app_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The app's PostgreSQL connections drawn from a pool, as under ``looptrace ui``
    (which sets ``LOOPTRACE_PG_POOL=1`` for its Streamlit): for AppTest pages on the
    matrix (without it a page opened a connection per read, each checking the schema:
    the Compare page over the samples took 26 s on PostgreSQL against 7 s on SQLite).
    The pools are closed after the test (each holds a connection per store)."""
    from tracer.db import pool

    monkeypatch.setenv(pool.ENV, "1")
    yield
    pool.close_all()
