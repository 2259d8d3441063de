"""The replay app in AppTest: open any of its pages, as a URL would.

The app's pages are functions (``st.Page(function)``, listed in
``app/navigation.py``) and AppTest's ``switch_page`` reaches file pages only, so
``app_test(page)`` runs the app's own navigation (``app.navigation.main``) with
``page`` as the page a bare URL opens. ``app/main.py`` itself is run by
``AppTest.from_file(MAIN)`` (tests/app/test_app_structure.py) and by the browser tests.

The replay is played in the browser by the replayer component
(``app/panes/replayer_component.py``), and AppTest runs no JavaScript: ``replayer(at)``
reads what the component was given, and ``browser_sends`` / ``report_step`` play
the browser's part, sending the component's events (a step it settled on, a
speed, "Open subagent", a reload) so the app's callbacks run as they do live.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")
PAGES = ("runs", "replay", "timeline", "presenter", "wire", "compare", "threads", "playground")


def _app(page: str) -> None:
    from app.navigation import main

    main(default=page)


class PaintingAppTest(AppTest):
    """AppTest that plays the browser's "painted": a session's first replay page is drawn
    lean (the replayer only, ``app/screens/replay/page.py``) and a real browser says at once when
    it has painted the run; after each run that drew a lean page, this sends it (as
    ``browser_sends``), so the page is drawn whole, as live. ``paint = False``: not sent
    (a test of the lean page itself)."""

    paint = True

    def _run(self, widget_state: Any = None, timeout: float | None = None) -> AppTest:
        at = super()._run(widget_state, timeout)
        sent: dict[str, Any] = self.__dict__.setdefault("sent_runs", {})
        for c in self.get("bidi_component"):
            data = json.loads(c.proto.json)
            if data.get("run") is not None:  # (what the browser then holds, by version)
                sent[data["key"]] = data["run"]
        if self.paint:
            for c in self.get("bidi_component"):
                data = json.loads(c.proto.json)
                if c.proto.id.endswith("-" + REPLAYER_KEY) and data.get("paint"):
                    return browser_sends(self, "painted", f"{data['key']}|0")
        return at


def app_test(page: str = "runs", *, timeout: float = 30, paint: bool = True,
             **query: str) -> AppTest:
    """AppTest of the app at ``/page?query`` (not run yet); ``paint=False``: the
    browser's "painted" is not played (``PaintingAppTest``)."""
    at = AppTest.from_function(_app, args=(page,), default_timeout=timeout)
    at.__class__ = PaintingAppTest
    at.paint = paint  # type: ignore[attr-defined]
    for k, v in query.items():
        at.query_params[k] = v
    return at


# -- the replayer component in AppTest (it runs no JavaScript) ---------------------------
REPLAYER_KEY = "lt_replayer"  # the replay page's replayer (app/kit/state.py: REPLAYER)


def replayer(at: AppTest, key: str = REPLAYER_KEY) -> dict[str, Any]:
    """The data the replayer component ``key`` was given on the last run (see
    ``app/panes/replayer_component.py``: ``replayer_data``). Where the app sent no run
    because the browser holds that version (``run: null``), the run it holds, as the
    browser plays it, with ``held`` True (``PaintingAppTest`` keeps what was sent)."""
    for c in at.get("bidi_component"):
        if c.proto.id.endswith("-" + key):
            data: dict[str, Any] = json.loads(c.proto.json)
            kept = at.__dict__.get("sent_runs", {})
            if data.get("run") is None and data.get("key") in kept:
                data["run"], data["held"] = kept[data["key"]], True
            return data
    raise AssertionError(f"no replayer {key!r} on the page")


def browser_sends(at: AppTest, event: str, value: str, key: str = REPLAYER_KEY) -> AppTest:
    """Run the app as the browser's replayer sending ``event`` (its ``setTriggerValue``:
    'step', 'speed', 'open', 'reload', 'need') with ``value``: the component's callback
    runs, then the script, as after a real trigger."""
    return browser_sends_all(at, [(event, value)], key)


def browser_sends_all(at: AppTest, events: list[tuple[str, str]],
                      key: str = REPLAYER_KEY) -> AppTest:
    """Several events that reach the server in one rerun (sent close together).
    (AppTest has no API for a component's trigger: the widget state is put together
    here, as the frontend does.)"""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    (el,) = [c for c in at.get("bidi_component") if c.proto.id.endswith("-" + key)]
    states = at._tree.get_widget_states()
    trigger = WidgetState(id=_make_trigger_id(el.proto.id, "events"))
    trigger.json_trigger_value = json.dumps([{"event": e, "value": v} for e, v in events])
    states.widgets.append(trigger)
    return at._run(states)


def report_step(at: AppTest, index: int, held: str | None = None) -> AppTest:
    """The browser settled on step ``index`` (the user stepped there, or playback
    paused there). Its report names the version of the run it holds (``held``: the
    component's ``key``, by default the one it was last given)."""
    version = held if held is not None else replayer(at)["key"]
    return browser_sends(at, "step", f"{version}|{index}")


# -- the Runs page's table (app/screens/runs/runs_grid.py, a component: AppTest runs no JavaScript) ----
RUNS_TABLE_KEY = "runs_table"  # (app/kit/state.py: RUNS_TABLE)


def runs_grid(at: AppTest) -> dict[str, Any] | None:
    """What the Runs page's table was given on the last run (``runs_grid.grid_data``:
    its columns, rows and selected run), or None when the page shows no table."""
    for c in at.get("bidi_component"):
        if c.proto.id.endswith("-" + RUNS_TABLE_KEY):
            data: dict[str, Any] = json.loads(c.proto.json)
            return data
    return None


def runs_table(at: AppTest) -> Any:
    """The Runs page's rows as a DataFrame, each value as the browser was sent it (an
    int stays an int, an empty cell is None: ``dtype=object``, nothing converted)."""
    import pandas as pd

    data = runs_grid(at)
    assert data is not None, "no runs table on the page"
    return pd.DataFrame(data["rows"], dtype=object)


def click_run_row(at: AppTest, run_id: str) -> AppTest:
    """The browser's table sending a click on the row of ``run_id``."""
    return browser_sends(at, "select", run_id, key=RUNS_TABLE_KEY)
