"""The Runs page over a file of a few hundred runs: a page of 100 top-level runs at a
time with their subagent runs nested, Next / Previous, filters in SQL, and the
health column read from (or, the first time, written to) the stored checks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from app_kit import app_test, runs_table
from scale_kit import Spec, write_runs
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Spec]]:
    path = tmp_path_factory.mktemp("page") / "page.db"
    return path, write_runs(path, 260)


@pytest.fixture
def page(made, monkeypatch: pytest.MonkeyPatch) -> AppTest:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LOOPTRACE_DB", str(made[0]))
    at = app_test("runs", timeout=60).run()
    assert not at.exception and not at.error, (at.exception, at.error)
    return at


def roots_newest_first(specs: list[Spec]) -> list[Spec]:
    return sorted((s for s in specs if s.parent_id is None),
                  key=lambda s: (s.started_at, s.id), reverse=True)


def shown(at: AppTest) -> list[str]:
    return list(runs_table(at)["id"])


def expected_rows(specs: list[Spec], roots: list[Spec]) -> list[str]:
    out = []
    for r in roots:
        out.append(r.id)
        out += [s.id for s in specs if s.parent_id == r.id]
    return out


def test_pages_of_top_level_runs_with_their_subagent_runs(made, page: AppTest) -> None:  # type: ignore[no-untyped-def]
    _, specs = made
    roots = roots_newest_first(specs)
    assert shown(page) == expected_rows(specs, roots[:100])
    assert any(c.value.endswith(f"1–100 of {len(roots)}") for c in page.caption)
    page.button(key="runs_next").click().run()
    assert shown(page) == expected_rows(specs, roots[100:200])
    page.button(key="runs_next").click().run()
    assert shown(page) == expected_rows(specs, roots[200:])
    assert page.button(key="runs_next").disabled
    page.button(key="runs_prev").click().run()
    assert shown(page) == expected_rows(specs, roots[100:200])


def test_a_filter_starts_at_its_first_page(made, page: AppTest) -> None:  # type: ignore[no-untyped-def]
    _, specs = made
    page.button(key="runs_next").click().run()
    page.pills(key="status_filter").set_value(["error"]).run()
    roots = [s for s in roots_newest_first(specs) if s.status == "error"]
    assert shown(page) == expected_rows(specs, roots)
    page.pills(key="health_filter").set_value(["warning"]).run()
    assert shown(page) == expected_rows(specs, [s for s in roots if s.flaw == "no-answer"])


def test_the_health_column_is_stored_once(made, page: AppTest) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    df = runs_table(page)
    by_id = {s.id: s for s in specs}
    want = {"recursion": "1 error", "no-answer": "1 warning", None: "ok"}
    for rid, badge in zip(df["id"], df["health"], strict=True):
        assert badge == want[by_id[rid].flaw], (rid, badge)
    conn = sqlite3.connect(path)
    kept = {r[0] for r in conn.execute("SELECT run_id FROM run_checks")}
    conn.close()
    ended = {rid for rid in df["id"] if by_id[rid].status != "running"}
    assert ended <= kept and not kept & (set(df["id"]) - ended)
