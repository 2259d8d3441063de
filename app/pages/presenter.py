"""Presenter: the replay for a projector (large type, keyboard only)."""

from __future__ import annotations

from app.bootstrap import ensure_navigation

ensure_navigation()

import streamlit as st

from app.replay_view import replay_page

st.html("""<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
.block-container, [data-testid="stMainBlockContainer"] { padding-top: 1.2rem; max-width: 100%; }
</style>""")
replay_page(presenter=True)
