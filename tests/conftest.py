"""Shared fixtures: temporary databases, the sample-trace database, a real browser."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
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


def _slow_files() -> dict[str, float]:
    """{file: its measured seconds} from ``tests/slow_files.txt`` ("path  # 899 s")."""
    out: dict[str, float] = {}
    for line in (Path(__file__).parent / "slow_files.txt").read_text().splitlines():
        path, _, note = line.partition("#")
        if path.strip():
            word = note.split()[0] if note.split() else ""
            out[path.strip()] = float(word) if word.replace(".", "", 1).isdigit() else 15.0
    return out


SLOW_FILES = _slow_files()
BROWSER_S = 30.0  # (a browser file's weight for the order below: most take 20-60 s)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tiers: every test in ``tests/browser/`` (a real Chromium), of the real
    tracing backends, and of the files ``tests/slow_files.txt`` lists (measured) is
    ``slow``; ``-m "not slow"`` is the fast tier (tests/README.md, "Tiers").

    And the order: the heaviest files first (their measured seconds), each file's tests
    in their own order. Under ``-n 2 --dist loadscope`` a worker takes a whole file, and
    the heaviest (the pytest plugin's, about 7 minutes on one worker) came last by name:
    the other worker sat idle at the end. Longest first, the two finish together."""
    slow = pytest.mark.slow
    root = Path(__file__).parent.parent
    weight: dict[Path, float] = {}
    for item in items:
        parts = item.path.parts
        name = item.path.relative_to(root).as_posix()
        if ("browser" in parts or item.get_closest_marker("backends") is not None
                or name in SLOW_FILES):
            item.add_marker(slow)
            weight.setdefault(item.path, SLOW_FILES.get(name, BROWSER_S))
    items.sort(key=lambda item: -weight.get(item.path, 0.0))  # (stable: files keep order)


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


@pytest.fixture(params=["sqlite", "postgresql"])
def store_db(request: pytest.FixtureRequest, tmp_path: Path, pg_url: str | None) -> str:
    """A new, empty store on each engine (the matrix: a test taking it runs on both):
    a SQLite file's path, then a PostgreSQL URL (its own schema). Without PostgreSQL
    the second is skipped, except in CI, where .ci/run must provide it."""
    if request.param == "sqlite":
        return str(tmp_path / "trace.db")
    if pg_url is None:
        if os.environ.get("CI"):
            pytest.fail("no PostgreSQL: .ci/run must start one (LOOPTRACE_TEST_PG_URL)")
        pytest.skip("no PostgreSQL here (Debian's postgresql package)")
    from pg_kit import fresh_store

    return fresh_store(pg_url)
