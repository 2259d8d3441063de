"""The app's one lock: ``looptrace ui --host ... --password`` (or ``--token``).

Streamlit has no authentication of its own. When ``$LOOPTRACE_TOKEN`` is set (by
``looptrace ui``), every page's script first asks for it: from the URL
(``?token=...``, the link ``looptrace ui`` prints) or from a password field; once
given, the browser session keeps it. A session without it sees the password field
and nothing else: no run, no message, no path. Every run's data reaches a browser
only through a page's script, so this guards all of it.

What it does not guard: Streamlit's own static files (the app's JavaScript, no
data) and its health endpoint; nor the wire: over plain HTTP the token and every
page travel in clear text on the network (use an SSH tunnel, or Streamlit's
``--server.sslCertFile``/``--server.sslKeyFile``, across a network you do not trust).
"""

from __future__ import annotations

import hmac
import os

import streamlit as st

from . import state

ENV = "LOOPTRACE_TOKEN"


def gate() -> None:
    """Stop the page here unless this session has given the token (no-op without one)."""
    token = os.environ.get(ENV, "")
    if not token or state.get(state.ACCESS_OK):
        return
    given = st.query_params.get("token", "")
    if given and hmac.compare_digest(given.encode(), token.encode()):
        st.session_state[state.ACCESS_OK] = True
        return
    st.title("looptrace")
    typed = st.text_input("Password", type="password", key=state.ACCESS_PASSWORD)
    if typed and hmac.compare_digest(typed.encode(), token.encode()):
        st.session_state[state.ACCESS_OK] = True
        st.rerun()
    if typed:
        st.error("Wrong password.")
    st.stop()
