"""The replay's findings panel: what ``tracer.checks.run`` found in the run.

Each finding (severity, rule, provider, the plain message as text, never
markdown) with a button that pauses the replay, moves it to the finding's step
and highlights the messages involved. The badge in its title is the Runs
page's health badge (``tracer.checks.saved.health_badge``).
"""

from __future__ import annotations

from collections import Counter

import streamlit as st

from ...data.run_view import RunView
from ...data.runs import health_badge
from ...kit import state

SEVERITY_COLOUR = {"error": "red", "warning": "orange", "info": "blue"}
SEVERITY_ICON = {"error": ":material/error:", "warning": ":material/warning:",
                 "info": ":material/info:"}
MAX_BUTTONS = 12  # beyond these, the findings are a table (hundreds of buttons are slow)


def render_findings(view: RunView, *, key: str = "finding") -> None:
    """The panel (outside the replay fragment: it does not change per step)."""
    if view.findings_pending:
        st.caption("Checking this run for protocol and loop problems…")
    if view.findings_error:
        st.warning("The run checks failed; the replay is unaffected.", icon=":material/warning:")
        st.text(view.findings_error)
    findings = view.findings
    if not findings:
        return
    badge = health_badge(Counter(str(f.severity) for f in findings))
    with st.expander(f"Findings ({badge})", expanded=False, icon=":material/health_and_safety:"):
        if len(findings) > MAX_BUTTONS:
            st.dataframe([{"severity": f.severity, "rule": f.rule, "provider": f.provider or "",
                           "step": None if s is None else s + 1, "message": f.message}
                          for f, s in zip(findings, view.finding_indexes)],
                         hide_index=True, key=f"{key}s_table")
            st.caption(f"The first {MAX_BUTTONS} findings, with a jump to their step:")
        for i, (f, step) in enumerate(zip(findings[:MAX_BUTTONS], view.finding_indexes)):
            sev = str(f.severity)
            cols = st.columns([1.3, 6.0, 1.4], vertical_alignment="top")
            cols[0].badge(sev, color=SEVERITY_COLOUR.get(sev, "gray"),  # type: ignore[arg-type]
                          icon=SEVERITY_ICON.get(sev))
            with cols[1]:
                st.text(f"{f.rule} · {f.provider or 'all providers'}")
                st.text(str(f.message))
            cols[2].button(f"Step {step + 1}" if step is not None else "Show",
                           key=f"{key}_{i}", icon=":material/my_location:",
                           on_click=state.show_finding, args=(step, tuple(f.message_keys)))
