"""Presenter: the replay for a projector.

Large type, no sidebar: a step counter, the caption as narration, the graph
beside the message list, the floor plan; keyboard only.
"""

from __future__ import annotations

import streamlit as st

from ..replay.page import show_replay

STYLE = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
.block-container, [data-testid="stMainBlockContainer"] { padding-top: 1.2rem; max-width: 100%; }
</style>"""


def presenter_page() -> None:
    st.html(STYLE)
    show_replay(presenter=True)
