"""The replay app in AppTest: open any of its pages, as a URL would.

The app's pages are functions (``st.Page(function)``, listed in
``app/navigation.py``) and AppTest's ``switch_page`` reaches file pages only, so
``app_test(page)`` runs the app's own navigation (``app.navigation.main``) with
``page`` as the page a bare URL opens. ``app/main.py`` itself is run by
``AppTest.from_file(MAIN)`` (tests/test_app_structure.py) and by the browser tests.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")
PAGES = ("runs", "replay", "timeline", "presenter", "wire", "compare")


def _app(page: str) -> None:
    from app.navigation import main

    main(default=page)


def app_test(page: str = "runs", *, timeout: float = 30, **query: str) -> AppTest:
    """AppTest of the app at ``/page?query`` (not run yet)."""
    at = AppTest.from_function(_app, args=(page,), default_timeout=timeout)
    for k, v in query.items():
        at.query_params[k] = v
    return at
