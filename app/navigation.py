"""The app's pages and its navigation (``st.navigation`` over ``app/screens/``).

The page at ``/name`` is the function ``name_page`` of ``screens/name/page.py``;
``main()`` sets the page config and runs the page the URL names (``/runs``,
``/replay``, ``/timeline``, ``/presenter``, ``/wire``, ``/compare``, ``/threads``, ``/playground``, each also
with a trailing ``/``), and at ``/`` the default page (the Runs page). Streamlit
serves its default page at ``/`` only (``/runs`` would be "Page not found"), so
the default is a hidden page of its own (``/start``) that draws the default
screen, and every screen keeps its own path.
Pages link to each other with ``st.page_link(page("replay"), query_params=...)``:
switching pages through the sidebar drops the query parameters, a page link
carries them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import NamedTuple, cast

import streamlit as st

from .kit.access import gate


class Screen(NamedTuple):
    url_path: str
    title: str
    icon: str

    @property
    def show(self) -> Callable[[], None]:
        """The function that draws the page, imported when first asked for (a page's
        imports wait until it is opened; and the pages link to each other through
        this module)."""
        module = importlib.import_module(f"{__package__}.screens.{self.url_path}.page")
        show: Callable[[], None] = getattr(module, f"{self.url_path}_page")
        return show

    def __call__(self) -> None:
        self.show()


SCREENS = (
    Screen("runs", "Runs", ":material/list:"),
    Screen("replay", "Replay", ":material/play_circle:"),
    Screen("timeline", "Timeline", ":material/timeline:"),
    Screen("presenter", "Presenter", ":material/slideshow:"),
    Screen("wire", "Wire", ":material/swap_horiz:"),
    Screen("compare", "Compare", ":material/compare:"),
    Screen("threads", "Conversations", ":material/forum:"),
    Screen("playground", "Playground", ":material/science:"),
)
DEFAULT = "runs"
START = "start"  # the hidden default page's own path (Streamlit serves it at ``/``)


def page(url_path: str) -> st.Page:
    """The page at ``/url_path``, for ``st.page_link``."""
    s = next(s for s in SCREENS if s.url_path == url_path)
    return st.Page(cast("Callable[[], None]", s), title=s.title, icon=s.icon, url_path=s.url_path)


def start_page(default: str = DEFAULT) -> st.Page:
    """The page at ``/``: screen ``default``, drawn there (not a redirect: no second run)."""
    s = next(s for s in SCREENS if s.url_path == default)
    return st.Page(cast("Callable[[], None]", s), title=s.title, icon=s.icon, url_path=START,
                   default=True, visibility="hidden")


def main(*, default: str = DEFAULT) -> None:
    """Run the page the URL names (``default``: the page of a bare URL)."""
    # The favicon is an emoji (drawn from a data: URL): a ":material/...:" favicon, or a
    # page's material icon used as one, is fetched from fonts.gstatic.com, a request off
    # the machine.
    st.set_page_config(page_title="looptrace", page_icon="🔁", layout="wide")
    gate()  # (``looptrace ui --password``: nothing below runs without it)
    st.navigation([start_page(default), *(page(s.url_path) for s in SCREENS)]).run()
