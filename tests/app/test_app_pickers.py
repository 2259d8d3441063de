"""The Compare and Wire pages' run pickers over a file of a few hundred runs: one page
of 100 runs at a time (newest first, subagent runs among them), Previous / Next, and
the run picked (or named by a link) kept and offered whatever page is shown.

Expected runs are computed from ``scale_kit``'s specs, never from the app's queries.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from app_kit import app_test
from scale_kit import Spec, write_runs
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")

PAGE = 100


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Spec]]:
    path = tmp_path_factory.mktemp("pickers") / "pickers.db"
    return path, write_runs(path, 230)


def newest_first(specs: list[Spec]) -> list[str]:
    return [s.id for s in sorted(specs, key=lambda s: (s.started_at, s.id), reverse=True)]


def offered(at: AppTest, key: str) -> list[str]:
    """The ids (their first 12 characters: the labels end with them) a picker offers."""
    out = []
    for label in at.selectbox(key=key).options:
        m = re.search(r"([0-9a-f]{12})(  \(subagent\))?$", label)
        assert m, label
        out.append(m.group(1))
    return out


def short(ids: list[str]) -> list[str]:
    return [i[:12] for i in ids]


def caption(at: AppTest, text: str) -> bool:
    return any(c.value == text for c in at.caption)


def open_page(monkeypatch: pytest.MonkeyPatch, path: Path, page: str, **query: str) -> AppTest:
    monkeypatch.setenv("LOOPTRACE_DB", str(path))
    at = app_test(page, timeout=60, **query).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_compare_pickers_turn_pages_and_keep_the_pick(made, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    ids = newest_first(specs)
    assert len(ids) == 253  # (230 runs and a subagent run for every 10th)
    at = open_page(monkeypatch, path, "compare")
    # No two runs of one agent among... every 5th run has the same name: a default pair.
    assert offered(at, "cmp_a") == short(ids[:PAGE])
    assert offered(at, "cmp_b") == short(ids[:PAGE])
    assert caption(at, f"runs 1–100 of {len(ids)}")
    assert at.button(key="cmp_a_prev").disabled
    at.selectbox(key="cmp_a").set_value(ids[3]).run()
    at.button(key="cmp_a_next").click().run()
    # page 2 of A, with the run picked on page 1 first; B still on its first page
    assert offered(at, "cmp_a") == short([ids[3], *ids[PAGE:2 * PAGE]])
    assert offered(at, "cmp_b") == short(ids[:PAGE])
    assert at.selectbox(key="cmp_a").value == ids[3]
    assert caption(at, f"runs 101–200 of {len(ids)}")
    at.button(key="cmp_a_next").click().run()
    assert offered(at, "cmp_a") == short([ids[3], *ids[2 * PAGE:]])
    assert at.button(key="cmp_a_next").disabled
    assert caption(at, f"runs 201–{len(ids)} of {len(ids)}")
    at.selectbox(key="cmp_a").set_value(ids[-1]).run()  # the oldest run
    at.selectbox(key="cmp_b").set_value(ids[1]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert (at.query_params["a"], at.query_params["b"]) in ((ids[-1], ids[1]),
                                                            ([ids[-1]], [ids[1]]))
    assert at.get("bidi_component")  # the two runs, compared
    at.button(key="cmp_a_prev").click().run()
    assert offered(at, "cmp_a") == short([ids[-1], *ids[PAGE:2 * PAGE]])
    assert at.selectbox(key="cmp_a").value == ids[-1]


def test_compare_link_to_runs_past_the_first_page(made, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    ids = newest_first(specs)
    old, older = ids[150], ids[240]
    at = open_page(monkeypatch, path, "compare", a=old[:12], b=older)
    assert (at.selectbox(key="cmp_a").value, at.selectbox(key="cmp_b").value) == (old, older)
    assert offered(at, "cmp_a") == short([old, *ids[:PAGE]])
    assert offered(at, "cmp_b") == short([older, *ids[:PAGE]])


def test_wire_picker_pages_and_follows_a_link(made, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    ids = newest_first(specs)
    at = open_page(monkeypatch, path, "wire")
    assert at.selectbox(key="wire_run").value == ids[0]
    assert offered(at, "wire_run") == short(ids[:PAGE])
    assert caption(at, f"runs 1–100 of {len(ids)}")
    at.button(key="wire_run_next").click().run()
    assert offered(at, "wire_run") == short([ids[0], *ids[PAGE:2 * PAGE]])
    at.selectbox(key="wire_run").set_value(ids[150]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["run"] in (ids[150], [ids[150]])
    old = ids[222]
    linked = open_page(monkeypatch, path, "wire", run=old[:12])
    assert linked.selectbox(key="wire_run").value == old
    assert offered(linked, "wire_run") == short([old, *ids[:PAGE]])
    assert not linked.error, [e.value for e in linked.error]


def test_run_labels_tell_same_named_runs_apart() -> None:
    """Issue 47, in the way 1 (issue 44, item 10): the pickers labelled runs with 8
    characters of their id, and runs of one name started in the same seconds share
    them ("shopper · completed · 6b16d8d7" three times). A label has 12 characters of
    the id and the time the run started."""
    import time

    from app.panes.subagents import run_label

    from tracer.read.loader import RunSummary

    def summary(rid: str, started: float) -> RunSummary:
        return RunSummary(id=rid, parent_id=None, parent_tool_call_id=None, name="shopper",
                          thread_id="t", agent_name=None, status="completed",
                          started_at=started, ended_at=started + 1, error=None, model=None,
                          provider=None, input_tokens=None, output_tokens=None,
                          total_tokens=None, source=None)

    t = time.mktime((2026, 12, 7, 17, 3, 12, 0, 0, -1))
    a = run_label(summary("6b16d8d7a1b2c3d4", t))
    b = run_label(summary("6b16d8d7e5f6a7b8", t + 2))
    assert a == "shopper · completed · 6b16d8d7a1b2 · 17:03:12"
    assert b == "shopper · completed · 6b16d8d7e5f6 · 17:03:14"
