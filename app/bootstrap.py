"""Make every page run under the app's own navigation.

Streamlit keeps a legacy mode for apps with a ``pages/`` folder next to the
entry script: the first session of a fresh server that lands on a page URL
(a deep link such as ``/replay?run=...``) runs that page file directly, with
no ``st.navigation``, no page config and a "page not found" dialog for the
others. ``ensure_navigation()``, called at the top of every page, switches that
legacy mode off and reruns, so the entry script and its ``st.navigation``
run instead (the URL, with its query, is kept).
"""

from __future__ import annotations

import streamlit as st


def ensure_navigation() -> None:
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without the legacy mode
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()
