"""The Runs page's table (``app/screens/runs/runs_grid.py``, an HTML table in a component) in a real
browser: it lists the newest runs with their subagent runs nested, pages, sorts by a
column (numbers as numbers, empty cells last), searches, opens a run (a clicked row is
picked, "Open in replay" opens it), shows a run's name as text, and keeps a filter set
in the "More filters" popover once it is closed. Debian's Chromium driven by Playwright;
what is expected is computed from the specs of the runs written (tests/scale_kit.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import streamlit_server, wait_connected
from playwright.sync_api import Page, expect
from scale_kit import Spec, write_runs
from tracer_kit import get_weather, make_agent, two_lap_model

from tracer import TraceMiddleware
from tracer.read.loader import TraceDB

TABLE = '[data-testid="lt-runs-table"]'
ROWS = TABLE + " tbody tr"
# A run name a careless (or hostile) agent could give: HTML and markdown, kept as text.
HOSTILE = '<img src=x onerror="window.__pwned=1"> **bold** [a](http://127.0.0.1:9/)'


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Spec], str]]:
    db = tmp_path_factory.mktemp("runs-page") / "runs.db"
    specs = write_runs(db, 120)  # 120 top-level runs (two pages), 12 subagent runs
    trace = TraceMiddleware(db=db, run_name=HOSTILE)  # (recorded now: the newest)
    make_agent(two_lap_model(), [get_weather], [trace]).invoke({"messages": [("user", "hi")]})
    trace.close()
    with TraceDB(db) as t:
        hostile = next(r.id for r in t.runs() if r.name == HOSTILE)
    with streamlit_server(db) as url:
        yield url, specs, hostile


def expected(specs: list[Spec], roots: list[str]) -> list[str]:
    """Rows for top-level runs ``roots`` in order, each followed by its subagent runs."""
    out = []
    for r in roots:
        out.append(r)
        out += [s.id for s in specs if s.parent_id == r]
    return out


def newest_roots(specs: list[Spec]) -> list[str]:
    return [s.id for s in sorted((s for s in specs if s.parent_id is None),
                                 key=lambda s: s.started_at, reverse=True)]


def shown(page: Page) -> list[str]:
    return [str(r.get_attribute("data-id")) for r in page.locator(ROWS).all()]


def expect_rows(page: Page, ids: list[str], timeout: float = 30_000) -> None:
    """Wait until the table shows exactly the rows ``ids``, in order."""
    rows = page.locator(ROWS)
    expect(rows).to_have_count(len(ids), timeout=timeout)
    expect(rows.first).to_have_attribute("data-id", ids[0], timeout=timeout)
    expect(rows.last).to_have_attribute("data-id", ids[-1], timeout=timeout)
    assert shown(page) == ids


def opened(browser, url: str) -> Page:  # type: ignore[no-untyped-def]
    page: Page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url + "/")
    wait_connected(page, 60_000)
    page.locator(ROWS).first.wait_for(timeout=60_000)
    return page


def test_lists_pages_and_searches(browser, made) -> None:  # type: ignore[no-untyped-def]
    url, specs, hostile = made
    page = opened(browser, url)
    roots = [hostile, *newest_roots(specs)]
    expect_rows(page, expected(specs, roots[:100]))
    expect(page.get_by_text("1–100 of 121")).to_be_visible()
    # the name is text: no image made of it, no script run, no link
    cell = page.locator(f'{ROWS}[data-id="{hostile}"] td[data-key="run"]')
    expect(cell).to_have_text(HOSTILE)
    assert page.locator(f"{TABLE} img").count() == 0
    assert page.locator(f'{TABLE} td[data-key="run"] a').count() == 0
    assert page.evaluate("window.__pwned") is None
    # every run's link to its replay
    link = page.locator(f'{ROWS}[data-id="{roots[1]}"] td[data-key="open"] a')
    expect(link).to_have_text("replay ↗")
    assert link.get_attribute("href") == f"replay?run={roots[1]}"
    page.locator('.st-key-runs_next button:visible').click()
    expect_rows(page, expected(specs, roots[100:]))
    expect(page.get_by_text("101–121 of 121")).to_be_visible()
    page.locator('.st-key-runs_prev button:visible').click()
    expect_rows(page, expected(specs, roots[:100]))
    # a search: the one run whose question holds the text (scale_kit: "city number 77?")
    box = page.locator('.st-key-search input')
    box.fill("city number 77?")
    box.press("Enter")
    (run77,) = [s.id for s in specs if s.question.endswith("city number 77?")]
    expect_rows(page, [run77])
    box.fill("")
    box.press("Enter")
    expect_rows(page, expected(specs, roots[:100]))
    page.close()


def header(page: Page, key: str):  # type: ignore[no-untyped-def]
    return page.locator(f'{TABLE} th[data-key="{key}"]')


def test_sorts_by_a_column(browser, sample_db: Path) -> None:  # type: ignore[no-untyped-def]
    """The bundled samples' tokens: 77 (weather) before 460 (ollama-shopping) as numbers
    (as text, "460" came first); openai-shopping reported no usage: empty, last both ways."""
    with TraceDB(sample_db) as t:
        roots = [r for r in t.runs() if r.parent_id is None]
        tokens = {r.id: r.total_tokens for r in roots}
        by_name = {r.name: r.id for r in roots}
    with streamlit_server(sample_db) as url:
        page = opened(browser, url)
        page_order = [i for i in shown(page) if i in tokens]
        header(page, "tokens").locator("button").click()
        expect(header(page, "tokens")).to_have_attribute("aria-sort", "ascending")
        up = [i for i in shown(page) if i in tokens]
        counted = [i for i in up if tokens[i]]
        assert [tokens[i] for i in counted] == sorted(tokens[i] for i in counted)
        assert up.index(by_name["weather"]) < up.index(by_name["ollama-shopping"])
        assert tokens[by_name["openai-shopping"]] is None
        # said as everywhere else (issue 39, item 6), not an empty cell and not 0
        expect(page.locator(f'{ROWS}[data-id="{by_name["openai-shopping"]}"]'
                            ' td[data-key="tokens"]')).to_have_text("not reported")
        assert up[-1] == by_name["openai-shopping"] or not tokens[up[-1]]
        assert up.index(by_name["openai-shopping"]) > up.index(counted[-1])
        header(page, "tokens").locator("button").click()
        expect(header(page, "tokens")).to_have_attribute("aria-sort", "descending")
        down = [i for i in shown(page) if i in tokens]
        counted = [i for i in down if tokens[i]]
        assert [tokens[i] for i in counted] == sorted((tokens[i] for i in counted), reverse=True)
        assert down.index(by_name["openai-shopping"]) > down.index(counted[-1])  # still last
        header(page, "tokens").locator("button").click()  # the third: the page's own order
        expect(header(page, "tokens")).to_have_attribute("aria-sort", "none")
        assert [i for i in shown(page) if i in tokens] == page_order
        # the order stays through the fragment's refresh every 2 s
        header(page, "status").locator("button").click()
        page.wait_for_timeout(2_500)
        statuses = [page.locator(f'{ROWS}[data-id="{i}"] td[data-key="status"]').text_content()
                    for i in shown(page) if i in tokens]
        assert statuses == sorted(statuses)
        page.close()


def test_opens_a_run(browser, made) -> None:  # type: ignore[no-untyped-def]
    url, specs, _hostile = made
    page = opened(browser, url)
    child = next(s for s in specs if s.parent_id and s.parent_id in newest_roots(specs)[:99])
    row = page.locator(f'{ROWS}[data-id="{child.id}"]')
    row.locator('td[data-key="status"]').click()
    expect(row).to_have_attribute("aria-selected", "true")
    # the server heard it: the picker shows the run (app.panes.subagents.run_label)
    expect(page.locator(".st-key-open_pick input")).to_have_value(
        re.compile(rf"^↳ researcher · completed · {child.id[:12]} · \d\d:\d\d:\d\d$"))
    page.get_by_text("Open in replay").click()
    page.wait_for_url(f"**/replay?run={child.id}*", timeout=60_000)
    expect(page.locator('[data-testid="lt-replayer"]')).to_have_attribute(
        "data-run", child.id, timeout=60_000)
    page.close()


def test_a_popover_filter_stays_when_closed(browser, made) -> None:  # type: ignore[no-untyped-def]
    url, specs, _hostile = made
    page = opened(browser, url)
    parent = next(s for s in specs if any(c.parent_id == s.id for c in specs))
    page.get_by_text("More filters").first.click()
    box = page.locator(".st-key-parent_filter input")
    box.fill(parent.id)
    box.press("Enter")
    kids = [s.id for s in specs if s.parent_id == parent.id]
    expect_rows(page, kids)
    page.keyboard.press("Escape")  # (the popover closes: its widgets are not drawn)
    expect(box).to_have_count(0)
    page.wait_for_timeout(2_500)  # (the table's fragment reran meanwhile)
    expect_rows(page, kids)
    expect(page.get_by_text(f"More filters: subagent runs of {parent.id}")).to_be_visible()
    page.close()


def test_sorts_by_cost_in_dollars(browser, sample_db: Path) -> None:  # type: ignore[no-untyped-def]
    """Issue 37: the cost column sorts by its dollars (its text would put "$0.000828"
    before "$0.0000394"), the runs of unknown cost last both ways. By hand: openai-weather
    $0.0000394 < anthropic-weather $0.000307 < anthropic-shopping $0.000828."""
    with TraceDB(sample_db) as t:
        by_name = {r.name: r.id for r in t.runs() if r.parent_id is None}
    priced = [by_name[n] for n in ("openai-weather", "anthropic-weather", "anthropic-shopping")]
    with streamlit_server(sample_db) as url:
        page = opened(browser, url)
        header(page, "cost").locator("button").click()
        expect(header(page, "cost")).to_have_attribute("aria-sort", "ascending")
        up = shown(page)
        assert [i for i in up if i in priced] == priced
        assert up.index(by_name["weather"]) > up.index(priced[-1])  # unknown: last
        assert page.locator(f'{ROWS}[data-id="{by_name["weather"]}"] td[data-key="cost"]'
                            ).text_content() == "unknown"
        header(page, "cost").locator("button").click()
        expect(header(page, "cost")).to_have_attribute("aria-sort", "descending")
        down = shown(page)
        assert [i for i in down if i in priced] == priced[::-1]
        assert down.index(by_name["weather"]) > down.index(priced[0])  # still last
        page.close()
